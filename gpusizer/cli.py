"""`gpusizer` command line (docs/contract.md section 2).

Exit codes: 0 a choice was made; 2 invalid input (message on stderr, no
traceback); 3 valid input but no feasible offer (the output still explains
every rejection). Imports nothing from Pulumi or cloud SDKs on this path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

from gpusizer import startup
from gpusizer.base import redact

EXIT_OK, EXIT_INVALID, EXIT_INFEASIBLE, EXIT_BUG = 0, 2, 3, 1
EXIT_OUTPUT = startup.EXIT_OUTPUT  # the output could not be written (a full disk): 120, as the interpreter
DEBUG_HELP = "show tracebacks of internal errors (accepted anywhere on the command line)"


def _add_plan(plan: argparse.ArgumentParser) -> None:
    plan.add_argument("spec", help="workload spec YAML")
    plan.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    plan.add_argument("--catalog", help="catalog directory or CSV (default: the freshest of cache and snapshot)")
    plan.add_argument("--pools", help="on-prem pools YAML (hybrid)")
    plan.add_argument(
        "--top",
        type=_whole("--top"),
        default=8,
        help="feasible candidates listed (table, markdown and json), plus the nearest rejected per reason",
    )
    plan.add_argument("--all", action="store_true", help="json: list every candidate, not only the top ones")
    plan.add_argument(
        "--quiet-age", action="store_true", help="acknowledge old prices: no price-age line (also GPUSIZER_QUIET_AGE=1)"
    )


def _add_estimate(est: argparse.ArgumentParser) -> None:
    est.add_argument("spec")
    est.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    est.add_argument("--catalog")


def _add_tco(tco: argparse.ArgumentParser) -> None:
    tco.add_argument("spec")
    tco.add_argument("--pools", required=True, help="on-prem pools YAML")
    tco.add_argument(
        "--months",
        type=_whole("--months"),
        default=36,
        help="at most the longest lifetime a pool may declare, in months",
    )
    tco.add_argument(
        "--utilization", type=float, help="share of hours the workload runs (default: the pool's utilization)"
    )
    tco.add_argument("--format", choices=("table", "markdown", "json", "png"), default="table")
    tco.add_argument(
        "--out",
        metavar="FILE",
        help="write the output here and print its path (--format png: default "
        "tco-<workload>.png in the current directory; other formats: default stdout)",
    )
    tco.add_argument("--catalog")


def _add_models(mod: argparse.ArgumentParser) -> None:
    mod.add_argument("--format", choices=("table", "json"), default="table")


def _add_preview(pre: argparse.ArgumentParser) -> None:
    pre.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml")
    pre.add_argument("--stacks-dir", help="default: the repository's stacks/")
    pre.add_argument("--program", help="Pulumi program file; default: the repository's __main__.py")
    pre.add_argument("--policy-config", help="JSON file as for `pulumi preview --policy-pack-config`")
    pre.add_argument(
        "--serial",
        action="store_true",
        help="run the first preview and the update one after the "
        "other in this process (default on Linux with 2+ CPUs: at once, the first in a forked child)",
    )
    pre.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="json: {workloads: {NAME: plan JSON}, policy: {...}}, the input of `gpusizer diff`",
    )


def _add_diff(diff: argparse.ArgumentParser) -> None:
    diff.add_argument("base", help="base plan JSON, or `gpusizer preview --format json` output")
    diff.add_argument("head", help="head plan JSON, or `gpusizer preview --format json` output")
    diff.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    diff.add_argument(
        "--max-chars",
        type=_whole("--max-chars"),
        metavar="N",
        help="table and markdown: cut the report at a line so it fits N characters, with a note "
        "(a GitHub comment holds 65,536)",
    )
    diff.add_argument("--full-report", metavar="URL", help="with --max-chars: where the note says the whole report is")


def _add_calibrate(cal: argparse.ArgumentParser) -> None:
    cal.add_argument("results", nargs="+", metavar="RESULT.json")
    cal.add_argument("--out", metavar="FILE", help="write the calibration YAML here (default: print it)")
    cal.add_argument("--gpu", help="GPU of vLLM results that lack --metadata gpu=...")
    cal.add_argument(
        "--gpu-count",
        type=_whole("--gpu-count"),
        help="tensor-parallel GPUs of vLLM results that lack tensor_parallel_size",
    )


def _add_observe(obs: argparse.ArgumentParser) -> None:
    obs.add_argument(
        "specs", nargs="+", metavar="SPEC", help="workload spec YAML (its name is the gpusizer_workload label)"
    )
    obs.add_argument(
        "--prometheus", required=True, metavar="URL", help="Prometheus base URL, e.g. http://prometheus:9090"
    )
    obs.add_argument("--window", default="7d", help="how far back to look (Prometheus duration; default 7d)")
    obs.add_argument("--end", metavar="RFC3339", help="end of the window (default: now)")
    obs.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    obs.add_argument("--catalog")
    obs.add_argument("--pools", help="on-prem pools YAML (hybrid)")
    obs.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="total seconds one Prometheus request may take (default 15)",
    )
    auth = obs.add_argument_group("authentication (docs/observe.md; or user:password in the URL)")
    auth.add_argument("--user", help="basic auth user; the password is read from --password-file")
    auth.add_argument("--password-file", metavar="FILE", help="basic auth password (first line)")
    auth.add_argument("--bearer-token-file", metavar="FILE", help="Authorization: Bearer token (first line)")
    auth.add_argument(
        "--auth",
        choices=("sigv4", "google"),
        help="sigv4: Amazon Managed Service for Prometheus (AWS credential chain, [aws] extra); "
        "google: Google Managed Service for Prometheus (Application Default Credentials, [gcp] extra)",
    )
    auth.add_argument(
        "--aws-region", help="--auth sigv4: the workspace's region (default: from the URL, else AWS_REGION)"
    )


def _add_catalog(cat: argparse.ArgumentParser) -> None:
    from gpusizer.base import providers
    from gpusizer.catalog.offer import PURCHASES

    cat_sub = cat.add_subparsers(dest="catalog_command", required=True, metavar="{list,refresh}")
    lst = cat_sub.add_parser("list", help="list offers with their source and date")
    lst.add_argument("--provider", choices=providers.NAMES)
    lst.add_argument("--region")
    lst.add_argument("--gpu")
    lst.add_argument("--min-gpu-memory-gib", type=_finite("--min-gpu-memory-gib"))
    lst.add_argument("--purchase", choices=PURCHASES)
    lst.add_argument("--catalog")
    lst.add_argument("--pools", help="on-prem pools YAML: list their offers at the amortized price")
    lst.add_argument("--format", choices=("table", "json"), default="table")
    ref = cat_sub.add_parser("refresh", help="fetch live prices, shapes and quotas into the local cache")
    refreshable = [p.name for p in providers.having("refresher")]
    ref.add_argument("--provider", choices=refreshable, action="append", help=f"default: {', '.join(refreshable)}")
    ref.add_argument("--region", action="append", help="default: every region in the current catalog")
    _debug_anywhere(cat_sub)


def _parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The CLI's parser. Where `argv` names a subcommand, only that one is built: building all
    of them (an ArgumentParser each, every help string through gettext) costs 3.2 ms more once
    warm, and a cold `gpusizer plan` ran 4 ms faster with one (fastest of 12 fresh processes
    each, this machine, 2026-11-25). Without one (`gpusizer --help`, a typo) every subcommand
    is there."""
    p = _ArgumentParser(
        prog="gpusizer", description="GPU right-sizing: from a workload spec to the cheapest adequate GPU offer."
    )
    p.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = p.add_subparsers(dest="command", required=True, metavar="{" + ",".join(_COMMANDS) + "}")
    named = _named_command(argv)
    for name, command in _COMMANDS.items():
        if named in _COMMANDS and name != named:
            continue
        parser = sub.add_parser(name, help=command.help)
        if command.add is not None:
            command.add(parser)
    _debug_anywhere(sub)
    return p


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, with its usage errors redacted: they quote the argument given, which may be a credential-bearing URL."""

    def error(self, message: str):
        super().error(redact.redact(message))


def _named_command(argv: Sequence[str]) -> str | None:
    """The subcommand argv names, where nothing but --debug (or a prefix argparse takes for it)
    comes before it; else None, and every subcommand is built: `gpusizer -h plan`, `--he`, `--`
    and a typo get the full parser's help and messages."""
    for arg in argv:
        if arg in _COMMANDS:
            return arg
        if not (len(arg) > 2 and "--debug".startswith(arg)):
            return None
    return None


def _debug_anywhere(sub) -> None:
    """--debug before or after the subcommand."""
    for parser in sub.choices.values():
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)


def _whole(option: str) -> Callable[[str], int]:
    """An argparse type for `option`: a whole number >= 1 in ASCII digits; argparse turns the error
    into a one-line exit-2 message."""

    def parse(text: str) -> int:
        digits = text.strip().lstrip("+")
        value = int(digits) if digits.isascii() and digits.isdecimal() else 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1; to fix: give {option} 1 or more")
        return value

    return parse


def _finite(option: str) -> Callable[[str], float]:
    """An argparse type for `option`: a finite number >= 0 (nan and inf would filter nothing, or everything)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not (0 <= value < float("inf")):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number >= 0; to fix: give {option} e.g. 24")
        return value

    return parse


def _catalog(path):
    from gpusizer import catalog

    return catalog.load_catalog(path)


def _cmd_plan(args) -> int:
    import gpusizer
    from gpusizer.render import report

    pools = gpusizer.load_pools(args.pools) if args.pools else ()
    decision = gpusizer.plan(args.spec, catalog=_catalog(args.catalog), pools=pools)
    _model_note(decision.workload)
    print(
        redact.redact(
            report.render(decision, args.format, top=None if args.all else args.top, quiet_age=args.quiet_age)
        )
    )
    from gpusizer.base import providers

    allowed = decision.workload.spec.placement.providers
    if pools and allowed is not None and not set(providers.OWNED) & set(allowed):
        owned = ", ".join(providers.OWNED)
        print(
            f"gpusizer: hint: --pools given, but placement.providers {list(allowed)} leaves out {owned}, so no pool "
            f"was considered. To use them: add {owned} to placement.providers",
            file=sys.stderr,
        )
    return EXIT_OK if decision.chosen is not None else EXIT_INFEASIBLE


def _cmd_estimate(args) -> int:
    import gpusizer
    from gpusizer.render import report

    est = gpusizer.estimate(args.spec, catalog=_catalog(args.catalog))
    _model_note(est.workload)
    print(redact.redact(report.render(est, args.format)))
    # No GPU model runs it with any layout: nothing feasible, as `plan` says with exit 3.
    return EXIT_OK if any(r.get("min_count") is not None for r in est.per_gpu) else EXIT_INFEASIBLE


def _model_note(w) -> None:
    """A model name that matched a loose alias (a version or variant the spec did not name): one line on stderr."""
    if w.resolution is not None and w.resolution.loose:
        print(f"gpusizer: note: {w.resolution.note(w.model)}", file=sys.stderr)


def _cmd_diff(args) -> int:
    from gpusizer import diff
    from gpusizer.render import diff as diff_view

    base, base_policy = diff.load(args.base, "BASE")
    head, head_policy = diff.load(args.head, "HEAD")
    text = redact.redact(diff_view.render(diff.compare(base, head), args.format, (base_policy, head_policy)))
    if args.max_chars is not None and args.format != "json":  # JSON cut short would not parse
        text = diff_view.truncated(text, args.max_chars, args.full_report and redact.redact(args.full_report))
    print(text)
    return EXIT_OK


def _cmd_observe(args) -> int:
    """Exit 0 when every workload had data for the whole window, 3 when some had none or part. Each reason is
    printed once: in the table or markdown (stdout), or, with --format json, one line each on stderr."""
    import gpusizer
    from gpusizer.measure import observe, prom_auth, prometheus
    from gpusizer.render import observe as observe_view

    window_s = prometheus.parse_duration(args.window)
    end = prometheus.parse_time(args.end)
    timeout_s = prometheus.parse_timeout(args.timeout)
    host = prometheus.split_url(args.prometheus).hostname
    auth = prom_auth.from_args(args.user, args.password_file, args.bearer_token_file, args.auth, args.aws_region, host)
    client = prometheus.Client(args.prometheus, timeout_s, auth)
    pools = gpusizer.load_pools(args.pools) if args.pools else ()
    doc = observe.run(args.specs, client, window_s, end, _catalog(args.catalog).with_pools(pools))
    print(redact.redact(observe_view.render(doc, args.format)))
    missing = observe.complete(doc)
    if args.format == "json":  # table and markdown already print each reason once, on stdout
        for line in missing:
            print(f"gpusizer: {line}", file=sys.stderr)
    return EXIT_INFEASIBLE if missing else EXIT_OK


def _cmd_tco(args) -> int:
    """Exit 3 when no cloud offer or no pool runs the workload."""
    import gpusizer
    from gpusizer import tco
    from gpusizer.render import tco as tco_view

    try:
        doc = tco.compare(
            args.spec, gpusizer.load_pools(args.pools), _catalog(args.catalog), args.months, args.utilization
        )
    except tco.NoOfferError as exc:
        print(f"gpusizer: {exc}", file=sys.stderr)
        return EXIT_INFEASIBLE
    if args.format == "png":
        import pathlib

        from gpusizer.base import errors, inputs

        path = pathlib.Path(args.out or f"tco-{doc['workload']}.png").resolve()
        if path.suffix.lower() != ".png" or path.is_dir():
            raise errors.SpecError(
                f"--out: {inputs.quote(args.out)} is {'a directory' if path.is_dir() else 'not a .png file'}"
                ". To fix: give a file name ending in .png, e.g. --out tco.png",
                "--out",
            )
        try:
            tco_view.chart(doc, str(path))
        except OSError as exc:
            raise errors.SpecError(
                f"--out: cannot write {inputs.quote(str(path))}: {exc.strerror or exc}. To fix: give "
                "a file in an existing directory you can write to",
                "--out",
            ) from None
        default = (
            "" if args.out else " (the default: tco-<workload>.png in the current directory; --out FILE.png to choose)"
        )
        print(f"wrote {path}{default}")
        return EXIT_OK
    text = redact.redact(tco_view.render(doc, args.format))
    if args.out:
        import pathlib

        _write_out(args.out, text + "\n")
        print(f"wrote {pathlib.Path(args.out).resolve()}")
    else:
        print(text)
    return EXIT_OK


def _cmd_calibrate(args) -> int:
    import yaml

    from gpusizer.estimate import efficiency
    from gpusizer.measure import calibrate

    cal = calibrate.fit(args.results, args.gpu, args.gpu_count, out=args.out or "-")
    text = redact.redact(yaml.safe_dump(cal.to_dict(), sort_keys=False, width=200))
    if args.out:
        _write_out(args.out, text)
        for gpu, factors in sorted(cal.gpus.items()):
            for k, v in factors.items():
                print(f"{gpu:<10} {k:<14} {v:.3f}  (default {efficiency.value(gpu, k)})")
            for line in cal.sources[gpu]:
                print(redact.redact(f"  from {line}"))
        print(f"wrote {args.out}; use it with sizing.calibration: {args.out} or GPUSIZER_CALIBRATION={args.out}")
    else:
        print(text, end="")
    return EXIT_OK


def _write_out(path: str, text: str) -> None:
    """Write `text` to `path`, or refuse as invalid input (exit 2) naming the path and the fix: a missing
    directory, a directory, no permission, a full disk. Written in place (a device or a pipe stays one);
    a regular file this call created is removed again when the write fails, so no half file is left."""
    import os

    from gpusizer.base import errors, inputs

    existed = os.path.lexists(path)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except (OSError, ValueError) as exc:
        if not existed:
            with contextlib.suppress(OSError, ValueError):
                os.unlink(path)
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise errors.SpecError(
            f"--out: cannot write {inputs.quote(path)}: {reason}. To fix: give a file in an "
            "existing directory you can write to",
            "--out",
        ) from None


def _add_schema(sch: argparse.ArgumentParser) -> None:
    from gpusizer.contract import output

    which = sch.add_mutually_exclusive_group()  # one schema per call: the spec's, a pools file's, or an output's
    which.add_argument(
        "--output",
        choices=tuple(output.DOCUMENTS),
        metavar="|".join(output.DOCUMENTS),
        help="print the JSON Schema of a command's JSON output instead of the spec's",
    )
    which.add_argument("--pools", action="store_true", help="print the JSON Schema of a pools file (--pools) instead")


def _cmd_schema(args) -> int:
    if args.pools:
        from gpusizer.catalog import onprem

        schema = onprem.json_schema()
    elif args.output:
        from gpusizer.contract import output

        schema = output.json_schema(args.output)
    else:
        from gpusizer import spec

        schema = spec.json_schema()
    print(json.dumps(schema, indent=2, allow_nan=False))
    return EXIT_OK


def _cmd_preview(args) -> int:
    """The policy gate offline; Pulumi is imported here only, so no other command needs it."""
    try:
        from gpusizer.policies import offline
    except ImportError as exc:
        from gpusizer.base import errors

        raise errors.MissingExtraError(
            f"gpusizer preview needs the [pulumi] extra ({exc.name or exc} is not installed). "
            "To fix: pip install 'gpusizer[pulumi]'"
        ) from None
    return offline.run(args)


def _cmd_catalog_list(args) -> int:
    import gpusizer
    from gpusizer import planner
    from gpusizer.facts import hardware

    gpu = (
        planner.known_name("--gpu", args.gpu, hardware.load_gpus(), lambda n: hardware.user_gpu(n, "--gpu"))
        if args.gpu
        else None
    )
    from gpusizer.base import providers
    from gpusizer.catalog import listing
    from gpusizer.render import listing as listing_view

    catalog = _catalog(args.catalog).with_pools(gpusizer.load_pools(args.pools) if args.pools else ())
    region = None
    if args.region:
        owned = ". On-prem pool locations are listed with --pools FILE" if not args.pools else ""
        region = planner.known_name("--region", args.region, catalog.places, also=owned)
    listed = listing.rows(catalog.offers, args.provider, region, gpu, args.min_gpu_memory_gib, args.purchase)
    print(redact.redact(listing_view.render(listed, args.format)))
    if not listed:
        print(
            f"gpusizer: hint: {listing.why_empty(catalog.offers, args.provider, region, gpu, args.purchase)}",
            file=sys.stderr,
        )
    if args.provider in providers.OWNED and not args.pools:
        print("gpusizer: hint: on-prem pools are not in the catalog; list them with --pools FILE", file=sys.stderr)
    return EXIT_OK


def _cmd_catalog_refresh(args) -> int:
    """Exit 0 when everything was refreshed, 1 when something kept its previous data (listed, one line each)."""
    from gpusizer.base import inputs, providers
    from gpusizer.catalog import paths, refresh

    problems = []
    for provider in args.provider or [p.name for p in providers.having("refresher")]:
        try:
            lines = refresh.refresh(provider, args.region)
        except OSError as exc:  # the file system refused: the previous cache is untouched
            reason = exc.strerror or str(exc) or type(exc).__name__
            print(
                redact.redact(
                    f"gpusizer: error: {provider}: could not write the catalog cache "
                    f"{inputs.quote(str(paths.cache_dir()))}: {reason}; the previous cache is intact"
                ),
                file=sys.stderr,
            )
            return EXIT_BUG
        problems += lines
        status = "refreshed" if not lines else f"{len(lines)} part(s) kept their previous data"
        print(f"{provider}: {status} (cache: {paths.cache_dir()})")
    for line in problems:
        print(f"  could not refresh: {line}")
    return 1 if problems else EXIT_OK


def _cmd_models(args) -> int:
    from gpusizer.facts import registry
    from gpusizer.render import table

    rows = [
        {
            "name": m.key,
            "display_name": m.display_name,
            "kind": m.kind,
            "params_b": round(m.params / 1e9, 2),
            "active_params_b": round(m.active_params / 1e9, 2),
            "max_context": m.max_context,
            "hf_id": m.hf_id,
            "aliases": list(m.aliases),
            "loose_aliases": list(m.loose_aliases),
        }
        for m in registry.load_models().values()
    ]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    head = ("name", "kind", "params (B)", "context", "Hugging Face id", "also accepted (* loose: reported when used)")
    lines = []
    for r in rows:
        params = f"{r['params_b']:g}" + (f"/{r['active_params_b']:g}" if r["active_params_b"] != r["params_b"] else "")
        also = ", ".join(r["aliases"] + [f"{a}*" for a in r["loose_aliases"]]) or "-"
        lines.append((r["name"], r["kind"], params, str(r["max_context"] or "-"), r["hf_id"] or "-", also))
    print("\n".join(table.text(head, lines)))
    print(
        f"{len(rows)} models; names match case- and separator-insensitively, with or without an org/ prefix and "
        "-Instruct/-it/-chat/-hf/-base. A loose name (*) leaves out a version or variant: the plan says which "
        "entry it chose. Any other Hugging Face id works as model.hf_id (needs the [hf] extra)"
    )
    return EXIT_OK


def _cmd_catalog(args) -> int:
    return {"list": _cmd_catalog_list, "refresh": _cmd_catalog_refresh}[args.catalog_command](args)


class _Command(NamedTuple):
    help: str
    add: Callable[[argparse.ArgumentParser], None] | None  # adds its arguments; None: it takes none
    run: Callable[[argparse.Namespace], int]


# The one list of subcommands: the parser's and the dispatcher's.
_COMMANDS: dict[str, _Command] = {
    "plan": _Command("size a workload and choose the cheapest adequate offer", _add_plan, _cmd_plan),
    "estimate": _Command("requirements and the minimum count of each GPU model", _add_estimate, _cmd_estimate),
    "schema": _Command("print the workload spec's JSON Schema (--output: a JSON output's)", _add_schema, _cmd_schema),
    "tco": _Command(
        "cumulative cost on the cheapest cloud offer vs an owned pool; break-even month", _add_tco, _cmd_tco
    ),
    "models": _Command("list the model registry (names model.name accepts)", _add_models, _cmd_models),
    "preview": _Command(
        "offline `pulumi preview --policy-pack policies` under mocks (needs the [pulumi] extra)",
        _add_preview,
        _cmd_preview,
    ),
    "diff": _Command("compare two plan (or preview) JSONs: choices, $/month and why they moved", _add_diff, _cmd_diff),
    "calibrate": _Command(
        "fit per-GPU MBU/MFU from vLLM benchmark_serving.py results or training runs", _add_calibrate, _cmd_calibrate
    ),
    "observe": _Command(
        "measured GPU usage from DCGM metrics in Prometheus; re-plan each spec with it", _add_observe, _cmd_observe
    ),
    "catalog": _Command("inspect the offers", _add_catalog, _cmd_catalog),
}


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it).

    Run as the command (argv None: the console script, `python -m gpusizer.cli`), the
    process ends here (gpusizer.startup.end_process) rather than in the interpreter's teardown, and
    before the command's settings are restored: the garbage collector, back on, would start a
    collection of the older generations on the next allocations (~10 ms of a `gpusizer plan`
    here, gc.callbacks timings, 2026-11-25).
    """
    with startup.command_settings():
        code = _main(argv)
        if argv is None:
            startup.end_process(code)
    return code


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser(argv).parse_args(argv)
    from gpusizer.base import errors

    try:
        with startup.guarded_output():
            return _COMMANDS[args.command].run(args)
    except errors.SizingError as exc:
        print(f"gpusizer: error: {redact.redact(str(exc))}", file=sys.stderr)
        return EXIT_INVALID
    except BrokenPipeError:
        return EXIT_OK
    except startup.OutputError as exc:
        startup.report_output_error(exc)
        return EXIT_OUTPUT
    except Exception as exc:  # a bug: say so plainly; --debug shows the traceback, redacted
        if args.debug:
            import traceback

            print(redact.redact(traceback.format_exc()), end="", file=sys.stderr)
            return EXIT_BUG
        detail = redact.redact(f"{type(exc).__name__}: {exc}")[:500]
        print(f"gpusizer: internal error ({detail}); rerun with --debug and report it", file=sys.stderr)
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
