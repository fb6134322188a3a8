"""The JSON documents of `plan` and `estimate` (docs/contract.md section 2), versioned.

Each document carries `version` (gpusizer.contract.OUTPUT_VERSION); gpusizer.contract.output models
it as pydantic models, so `gpusizer diff` can read it back and `gpusizer schema
--output plan` can print its JSON Schema. Building the dict here reads only the
decision: nothing is validated on the way out (start-up cost), and a test holds
every produced document to its model.
"""

from __future__ import annotations

import typing

from gpusizer.base import units
from gpusizer.catalog import consumption
from gpusizer.contract import OUTPUT_VERSION
from gpusizer.decide import misses
from gpusizer.decide.candidate import BRIEF_KEYS, Candidate
from gpusizer.decide.decision import Decision
from gpusizer.estimate.fit import Fit
from gpusizer.estimate.workload import Workload
from gpusizer.facts import registry

if typing.TYPE_CHECKING:  # planner builds estimates; the type only
    from gpusizer.planner import Estimate


def document(obj: Decision | Estimate, top: int | None = None) -> dict:
    """The versioned JSON document of a Decision (the plan JSON) or an Estimate: `gpusizer.document`.

    >>> import gpusizer
    >>> doc = gpusizer.document(gpusizer.plan({"name": "chat", "model": {"name": "llama-3.1-8b"}}), top=1)
    >>> doc["version"], doc["choice"]["gpu"] is not None
    ('1', True)
    """
    return plan(obj, top) if isinstance(obj, Decision) else estimate(obj)


def plan(d: Decision, top: int | None = None) -> dict:
    """The plan JSON of docs/contract.md section 2 (plus explanation fields).

    Args:
        top: None lists every candidate; N lists the top N feasible ones and the nearest
            rejected one per reason (`rejections_by_reason` and `candidates_total` count them all).
    """
    nxt = d.next_cheaper
    return {
        "version": OUTPUT_VERSION,
        "workload": d.workload.spec.name,
        "model": d.workload.model.key,
        "resolved_model": resolved_model(d.workload),
        "task": d.workload.spec.task,
        "objective": d.objective,
        "spec": d.workload.spec.model_dump(mode="json", exclude_none=True),
        "requirements": requirements(d.workload),
        "choice": choice(d),
        "margin": d.margin(),
        "next_cheaper": None if nxt is None else {**_brief(nxt), "lacked": nxt.rejection.detail},
        "burst": d.burst,
        "sized_by": d.sized_by if d.chosen else None,
        "notes": list(d.notes),
        "nearest_misses": [m.to_dict() for m in misses.nearest(d.workload, d.judged)],
        "rejections_by_reason": d.rejections_by_reason,
        "candidates_total": d.candidate_count,
        "candidates": [_with_performance(c) for c in (d.candidates if top is None else d.trimmed(top))],
    }


def choice(d: Decision) -> dict | None:
    """The plan JSON's `choice`: the chosen candidate with its cost, performance, sharding,
    calibration and autoscaling; None when nothing is feasible. Reads no other candidate."""
    if d.chosen is None:
        return None
    chosen = d.chosen.to_dict()
    for k in ("feasible", "reasons", "reason_code"):
        chosen.pop(k)
    f = d.chosen.fit
    chosen.update(d.chosen.cost.to_dict())
    chosen["performance"] = _performance(f)
    chosen["sharding"] = f.sharding if f else None
    cal = d.workload.calibration
    chosen["calibration"] = cal.describe(d.chosen.offer.gpu) if cal else None
    scaled = d.autoscaling
    chosen["autoscaling"] = scaled.to_dict() if scaled else None
    chosen["consumption"] = consumption_model(d)
    if chosen["consumption"] == "capacity-block":
        rate = consumption.capacity_block_usd(d.chosen.offer.instance_type, d.chosen.offer.region)
        # One replica (all its nodes) for an hour at the published block rate; None where none is published.
        chosen["capacity_block_hourly_usd"] = None if rate is None else round(rate * d.chosen.nodes, 4)
        chosen["capacity_block_rate_source"] = (
            f"{consumption.CAPACITY_BLOCK_SOURCE}, {consumption.CAPACITY_BLOCK_AS_OF}"
        )
    return chosen


def consumption_model(d: Decision) -> str:
    """What the choice is bought as (gpusizer.catalog.consumption): on-demand, spot, flex-start, or the
    reservation / Capacity Block deploy.capacity_reservation names."""
    c, deploy = d.chosen, d.workload.spec.deploy
    return consumption.model(
        c.offer.provider,
        c.offer.instance_type,
        c.purchase,
        reservation=deploy.capacity_reservation is not None,
        capacity_block=deploy.capacity_block,
    )


def estimate(e: Estimate) -> dict:
    """The estimate JSON: requirements, calibration, and per GPU model the fewest GPUs that run it."""
    w = e.workload
    return {
        "version": OUTPUT_VERSION,
        "workload": w.spec.name,
        "model": w.model.key,
        "resolved_model": resolved_model(w),
        "task": w.spec.task,
        "requirements": requirements(w),
        "calibration": w.calibration.to_dict() | {"file": w.calibration.path} if w.calibration else None,
        "per_gpu": list(e.per_gpu),
    }


def resolved_model(w: Workload) -> dict:
    """What the spec's `model` resolved to: the registry name (or the config's), display name, Hugging Face id,
    trained context and the context limit the spec may use (x model.rope_scaling.factor), how it was named,
    and a note when a loose alias chose a version or variant the spec did not name."""
    m, ref, r = w.model, w.spec.model, w.resolution
    if ref.hf_id or (ref.name and r is None):
        requested, how = ref.hf_id or ref.name, "hf_id"
    elif r is not None:
        requested, how = r.requested, "loose-alias" if r.loose else "name"
    elif ref.hf_config:
        requested, how = ref.hf_config, "hf_config"
    else:
        requested, how = None, "architecture"
    # The checkpoint: the Hugging Face id the spec wrote (meta-llama/Llama-3.1-8B-Instruct, which the server loads,
    # components/serving.model_id), else the registry entry's; registry_hf_id is the entry's own (its base model).
    named = requested if how == "name" and requested and "/" in requested else None
    return {
        "name": m.key,
        "display_name": m.display_name,
        "hf_id": ref.hf_id or named or m.hf_id or (ref.name if how == "hf_id" else None),
        "registry_hf_id": m.hf_id if how in ("name", "loose-alias") else None,
        "max_context": m.max_context,
        "context_limit": registry.context_limit(m, ref.rope_scaling and ref.rope_scaling.factor),
        "rope_scaling": ref.rope_scaling.model_dump() if ref.rope_scaling else None,
        "requested": requested,
        "matched_by": how,
        "note": r.note(m) if r is not None and r.loose else None,
    }


def _with_performance(c: Candidate) -> dict:
    """A candidate row with its own speed (every candidate, not only the choice's)."""
    out = c.to_dict()
    out["performance"] = _performance(c.fit) if c.fit is not None and c.fit.need_gib else None
    return out


def _brief(c: Candidate) -> dict:
    d = c.to_dict()
    return {k: d[k] for k in BRIEF_KEYS}


def _performance(f: Fit | None) -> dict:
    if f is None:
        return {}
    out: dict[str, typing.Any] = {
        "gpu_memory_needed_gib_per_gpu": round(f.need_gib, 2),
        "gpu_memory_usable_gib_per_gpu": round(f.usable_gib, 2),
    }
    if f.speed:
        out.update(
            ttft_ms=round(f.speed.ttft_ms, 1),
            tpot_ms=round(f.speed.tpot_ms, 2),
            tokens_per_second=round(f.speed.tokens_per_second, 1),
            bound=f.speed.bound,
            allreduce_ms_per_token=round(f.speed.allreduce_ms, 3),
            pipeline_ms_per_token=round(f.speed.pipeline_ms, 3),
            link=f.speed.link or None,
            tensor_parallel=f.tensor_parallel,
            pipeline_stages=f.pipeline_stages,
            replicas_per_node=f.replicas_per_node,
            concurrency=f.speed.concurrency,
            max_concurrency=f.speed.max_concurrency or None,
            ttft_idle_ms=round(f.speed.ttft_idle_ms, 1),
            e2e_ms=round(f.speed.e2e_ms, 1),
            step_overhead_ms=round(f.speed.overhead_ms, 3),
            requests_per_second=round(f.speed.requests_per_second, 3),
        )
    if f.precision_note:
        out["precision_fallback"] = f.precision_note
    if f.placement_note:
        out["placement"] = f.placement_note
    if f.train_hours is not None:
        out["train_hours"] = round(f.train_hours, 2)
        out["tensor_parallel"] = f.tensor_parallel
        out["pipeline_stages"] = f.pipeline_stages
        out["context_parallel"] = f.context_parallel
        if f.fixed is not None:
            out["fixed_hours"] = round(f.fixed.total, 4)
    return out


def requirements(w: Workload) -> dict:
    """The requirements block shared by the plan and estimate JSON."""
    b = w.breakdown
    out: dict[str, typing.Any] = {
        "memory_gib": b.to_gib(),
        "weights_precision": "nf4" if w.spec.method == "qlora" else w.spec.precision,
        "host": {
            "vcpus_per_gpu": w.min_vcpus(1),
            "ram_gib_one_gpu_node": round(w.min_ram_gib(1), 1),  # scales as 1 / GPUs per node
            "disk_gib": w.disk_gib,
        },
    }
    if w.spec.task == "inference" and w.model.kind != "llm":
        # Encoders, vision and diffusion models: no KV cache, no token targets (issue 10).
        out["batch_size"] = w.spec.serving.batch_size
        out["targets"] = {"min_replicas": w.spec.deploy.replicas}
    elif w.spec.task == "inference":
        inf = w.spec.serving
        t = w.targets
        out["kv_cache_precision"] = w.kv_precision
        out["kv_cache_gib_per_sequence"] = round(units.gib(b.kv_cache / inf.batch_size), 3)
        out["targets"] = {
            "tokens_per_second": t.tokens_per_second,
            "ttft_ms": t.ttft_ms,
            "tpot_ms": t.tpot_ms,
            "min_replicas": w.spec.deploy.replicas,
        }
    elif w.training_flops:
        out["training_flops"] = w.training_flops
        out["deadline_hours"] = w.spec.train.deadline_hours
    return out
