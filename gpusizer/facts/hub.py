"""Models by Hugging Face id: config.json and safetensors metadata through huggingface_hub (the [hf] extra).

Algorithm:
1. `config.json` of the repo comes from `huggingface_hub.hf_hub_download`,
   which reads the local cache (HF_HUB_CACHE / HF_HOME) and, unless
   HF_HUB_OFFLINE is set, checks the Hub first (falling back to the cache
   when the Hub cannot be reached). It is parsed by the registry's one
   config parser (`registry.from_hf_config`).
2. The exact parameter count comes from the safetensors headers (each file
   starts with an 8-byte length and a JSON header listing every tensor's
   dtype and shape: huggingface.co/docs/safetensors, "Format"): from the
   cached snapshot when its shards are there
   (`huggingface_hub.get_local_safetensors_metadata`), else, online, from
   the Hub by range requests (`huggingface_hub.get_safetensors_metadata`,
   headers only, no weights downloaded). When neither is possible the count
   derived from config.json stands and the model's `source` says so.
   Before going online, a 2-second probe (`reachable`) checks that the Hub
   answers at all; when it does not, only the cache is read, so an offline
   machine gets one line in seconds instead of huggingface_hub's retries.
3. The model keeps its Hugging Face id as its name.

huggingface_hub is imported lazily: nothing else in the engine needs it.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib

from gpusizer.base import errors, memo
from gpusizer.facts import registry

FIELD = "model.hf_id"
_TRUE = {"1", "ON", "YES", "TRUE"}


def offline() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub reads it ("1", "ON", "YES", "TRUE"), read at call time."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in _TRUE


def _hub():
    try:
        import huggingface_hub
        import huggingface_hub.errors
    except ImportError:
        raise errors.SpecError(
            f"{FIELD}: reading a model by Hugging Face id needs huggingface_hub. "
            "To fix: pip install 'gpusizer[hf]', or give model.hf_config: path/to/config.json",
            FIELD,
        ) from None
    return huggingface_hub


# How long the reachability probe waits for the Hub's name and a TCP connection: huggingface_hub itself retries
# an unreachable Hub for about 24 s (five backoffs, measured here 2026-11-26), printing each retry.
PROBE_SECONDS = 2.0


def reachable(timeout: float = PROBE_SECONDS) -> bool:
    """Whether the Hub (HF_ENDPOINT, default https://huggingface.co) accepts a TCP connection within `timeout`
    seconds, name lookup included (run in a daemon thread: getaddrinfo has no timeout of its own)."""
    import socket
    import threading
    import urllib.parse

    url = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    done, ok = threading.Event(), []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            ok.append(True)
        except OSError:
            pass
        finally:
            done.set()

    threading.Thread(target=probe, daemon=True).start()
    done.wait(timeout)
    return bool(ok)


def _cache_dir() -> str | None:
    return os.environ.get("HF_HUB_CACHE") or None


def model_from_hub(repo_id: str, revision: str | None = None) -> registry.ModelArch:
    """The architecture of Hugging Face repo `repo_id`, named after it (read once per gpusizer.reuse scope).

    Raises:
        SpecError: naming model.hf_id: the extra missing, the repo unknown,
            gated or absent from the cache when offline.
    """
    return memo.remembered(("hub", repo_id, revision), lambda: _read(repo_id, revision), errors.SpecError)


def _read(repo_id: str, revision: str | None) -> registry.ModelArch:
    hub = _hub()
    local = offline() or not reachable()  # unreachable: the cache or one line, not half a minute of retries
    try:
        config = hub.hf_hub_download(
            repo_id, "config.json", revision=revision, cache_dir=_cache_dir(), local_files_only=local
        )
    except hub.errors.GatedRepoError:
        raise errors.SpecError(
            f"{FIELD}: {repo_id} is gated on the Hugging Face Hub. To fix: accept its licence and set HF_TOKEN, "
            "or give model.hf_config: path/to/config.json",
            FIELD,
        ) from None
    except (hub.errors.RepositoryNotFoundError, hub.errors.HFValidationError):
        raise errors.SpecError(
            f"{FIELD}: no Hugging Face repo {repo_id!r} (or it is private). To fix: check the id "
            "(organisation/name) or set HF_TOKEN",
            FIELD,
        ) from None
    except (hub.errors.LocalEntryNotFoundError, hub.errors.EntryNotFoundError, OSError) as exc:
        why = (
            "HF_HUB_OFFLINE is set and it is not in the local cache"
            if offline()
            else f"the Hub ({os.environ.get('HF_ENDPOINT') or 'https://huggingface.co'}) is unreachable and it is not "
            "in the local cache"
            if local
            else f"it could not be fetched ({type(exc).__name__})"
        )
        raise errors.SpecError(
            f"{FIELD}: config.json of {repo_id} is unavailable: {why}. To fix: run "
            f"`hf download {repo_id} config.json` (huggingface_hub's CLI) where the Hub is reachable, or give model.hf_config",
            FIELD,
        ) from None
    model = registry.from_hf_config(config)
    counts, where = _parameter_counts(hub, repo_id, pathlib.Path(config).parent, revision, local)
    return _named(model, repo_id, counts, where)


def _parameter_counts(
    hub, repo_id: str, snapshot: pathlib.Path, revision: str | None, local: bool = False
) -> tuple[dict[str, int], str]:
    """Parameters per safetensors dtype, from the cached snapshot or the Hub's headers; ({}, why) if neither."""
    try:
        meta = hub.get_local_safetensors_metadata(snapshot)
        return dict(meta.parameter_count), "safetensors headers in the local cache"
    except (hub.errors.NotASafetensorsRepoError, hub.errors.SafetensorsParsingError, OSError, ValueError):
        pass
    if offline() or local:
        why = "HF_HUB_OFFLINE set" if offline() else "the Hub unreachable"
        return {}, f"config.json only (safetensors not cached; {why})"
    try:
        meta = hub.get_safetensors_metadata(repo_id, revision=revision)
        return dict(meta.parameter_count), "safetensors headers on the Hugging Face Hub"
    except Exception as exc:  # noqa: BLE001 - any Hub failure leaves the config-derived count, said out loud
        return {}, f"config.json only (safetensors headers unavailable: {type(exc).__name__})"


def _named(model: registry.ModelArch, repo_id: str, counts: dict[str, int], where: str) -> registry.ModelArch:
    """`model` named `repo_id`, with the exact parameter count when the headers gave one.

    MoE active parameters scale with the total (the config-derived ratio).
    """
    update: dict = {"key": repo_id.lower(), "display_name": repo_id, "hf_id": repo_id}
    total = sum(counts.values())
    if total:
        update["params"] = total
        update["active_params"] = max(1, min(total, round(model.active_params * total / model.params)))
        by_dtype = ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))
        update["source"] = f"Hugging Face {repo_id}: config.json; {total:,} parameters ({by_dtype}) from {where}"
    else:
        update["source"] = f"Hugging Face {repo_id}: {where}; parameters counted from the architecture"
    return dataclasses.replace(model, **update)
