"""`gpusizer` command line (docs/contract.md section 2).

Exit codes: 0 a choice was made; 2 invalid input (message on stderr, no
traceback); 3 valid input but no feasible offer (the output still explains
every rejection). Imports nothing from Pulumi or cloud SDKs on this path.
"""

from __future__ import annotations

import argparse
import json
import sys

from gpusizer import redact

EXIT_OK, EXIT_INVALID, EXIT_INFEASIBLE, EXIT_BUG = 0, 2, 3, 1


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    from gpusizer.catalog.offer import PROVIDERS, PURCHASES

    p = argparse.ArgumentParser(prog="gpusizer", description="GPU right-sizing: from a workload spec to the cheapest adequate GPU offer.",
        epilog="Also: gpusizer preview --stack NAME [--format table|markdown] - the policy gate "
               "offline, under Pulumi mocks (needs the [pulumi] extra).")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True)

    plan = sub.add_parser("plan", help="size a workload and choose the cheapest adequate offer")
    plan.add_argument("spec", help="workload spec YAML")
    plan.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    plan.add_argument("--catalog", help="catalog directory or CSV (default: the freshest of cache and snapshot)")
    plan.add_argument("--pools", help="on-prem pools YAML (hybrid)")
    plan.add_argument("--top", type=int, default=8, help="candidates shown per group in table/markdown")

    est = sub.add_parser("estimate", help="requirements and the minimum count of each GPU model")
    est.add_argument("spec")
    est.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    est.add_argument("--catalog")

    sub.add_parser("schema", help="print the workload spec's JSON Schema")

    diff = sub.add_parser("diff", help="compare two plan (or preview) JSONs: choices, $/month and why they moved")
    diff.add_argument("base", help="base plan JSON, or `gpusizer preview --format json` output")
    diff.add_argument("head", help="head plan JSON, or `gpusizer preview --format json` output")
    diff.add_argument("--format", choices=("table", "markdown", "json"), default="table")

    cal = sub.add_parser("calibrate", help="fit per-GPU MBU/MFU from vLLM benchmark_serving.py results or training runs")
    cal.add_argument("results", nargs="+", metavar="RESULT.json")
    cal.add_argument("--out", metavar="FILE", help="write the calibration YAML here (default: print it)")
    cal.add_argument("--gpu", help="GPU of vLLM results that lack --metadata gpu=...")
    cal.add_argument("--gpu-count", type=int, help="tensor-parallel GPUs of vLLM results that lack tensor_parallel_size")

    obs = sub.add_parser("observe", help="measured GPU usage from DCGM metrics in Prometheus; re-plan each spec with it")
    obs.add_argument("specs", nargs="+", metavar="SPEC", help="workload spec YAML (its name is the gpusizer_workload label)")
    obs.add_argument("--prometheus", required=True, metavar="URL", help="Prometheus base URL, e.g. http://prometheus:9090")
    obs.add_argument("--window", default="7d", help="how far back to look (Prometheus duration; default 7d)")
    obs.add_argument("--end", metavar="RFC3339", help="end of the window (default: now)")
    obs.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    obs.add_argument("--catalog")
    obs.add_argument("--pools", help="on-prem pools YAML (hybrid)")

    if _wants_preview(argv):
        from policies import offline  # Pulumi is imported only when it is installed and this runs

        offline.add_parser(sub)

    cat = sub.add_parser("catalog", help="inspect the offers")
    cat_sub = cat.add_subparsers(dest="catalog_command", required=True)
    lst = cat_sub.add_parser("list", help="list offers with their source and date")
    lst.add_argument("--provider", choices=PROVIDERS)
    lst.add_argument("--region")
    lst.add_argument("--gpu")
    lst.add_argument("--min-gpu-memory-gib", type=float)
    lst.add_argument("--purchase", choices=PURCHASES)
    lst.add_argument("--catalog")
    lst.add_argument("--format", choices=("table", "json"), default="table")
    ref = cat_sub.add_parser("refresh", help="fetch live prices, shapes and quotas into the local cache")
    ref.add_argument("--provider", choices=("aws", "gcp"), action="append", help="default: both")
    ref.add_argument("--region", action="append", help="default: every region in the current catalog")
    return p


def _wants_preview(argv: list[str]) -> bool:
    """Register `gpusizer preview` only when asked for it and the [pulumi] extra is installed,
    so the other commands never import Pulumi."""
    import importlib.util

    return "preview" in argv[:3] and importlib.util.find_spec("pulumi_policy") is not None


def _catalog(path):
    from gpusizer.catalog import Catalog

    return Catalog.load(path)


def _cmd_plan(args) -> int:
    import gpusizer
    from gpusizer import report

    pools = gpusizer.load_pools(args.pools) if args.pools else ()
    decision = gpusizer.plan(args.spec, catalog=_catalog(args.catalog), pools=pools)
    print(redact.redact(report.render(decision, args.format, top=args.top)))
    return EXIT_OK if decision.chosen is not None else EXIT_INFEASIBLE


def _cmd_estimate(args) -> int:
    import gpusizer
    from gpusizer import report

    print(redact.redact(report.render(gpusizer.estimate(args.spec, catalog=_catalog(args.catalog)), args.format)))
    return EXIT_OK


def _cmd_diff(args) -> int:
    from gpusizer import diff

    base, base_policy = diff.load(args.base, "BASE")
    head, head_policy = diff.load(args.head, "HEAD")
    print(diff.render(diff.compare(base, head), args.format, (base_policy, head_policy)))
    return EXIT_OK


def _cmd_observe(args) -> int:
    """Exit 0 when every workload had data for the whole window, 3 when some had none or part (one line each)."""
    import gpusizer
    from gpusizer.measure import observe, prometheus

    window_s = prometheus.parse_duration(args.window)
    end = prometheus.parse_time(args.end)
    client = prometheus.Client(args.prometheus)
    pools = gpusizer.load_pools(args.pools) if args.pools else ()
    doc = observe.run(args.specs, client, window_s, end, _catalog(args.catalog).with_pools(pools))
    print(redact.redact(observe.render(doc, args.format)))
    missing = observe.complete(doc)
    for line in missing:
        print(f"gpusizer: {line}", file=sys.stderr)
    return EXIT_INFEASIBLE if missing else EXIT_OK


def _cmd_calibrate(args) -> int:
    import yaml

    from gpusizer.estimate import calibration
    from gpusizer.measure import calibrate

    cal = calibrate.fit(args.results, args.gpu, args.gpu_count, out=args.out or "-")
    text = yaml.safe_dump(cal.to_dict(), sort_keys=False, width=200)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        for gpu, factors in sorted(cal.gpus.items()):
            for k, v in factors.items():
                print(f"{gpu:<10} {k:<14} {v:.3f}  (default {calibration.DEFAULTS[k]})")
            for line in cal.sources[gpu]:
                print(f"  from {line}")
        print(f"wrote {args.out}; use it with sizing.calibration: {args.out} or GPUSIZER_CALIBRATION={args.out}")
    else:
        print(text, end="")
    return EXIT_OK


def _cmd_schema(args) -> int:
    from gpusizer import spec

    print(json.dumps(spec.json_schema(), indent=2, allow_nan=False))
    return EXIT_OK


def _cmd_catalog_list(args) -> int:
    from gpusizer import hardware

    gpu = None
    if args.gpu:
        gpu = hardware.canonical_gpu(args.gpu)
        if gpu is None:
            from gpusizer.errors import SpecError

            raise SpecError(f"--gpu: unknown GPU {args.gpu!r}. To fix: use one of {', '.join(hardware.load_gpus())}", "--gpu")
    rows = []
    for o in _catalog(args.catalog).offers:
        if (args.provider and o.provider != args.provider) or (args.region and o.region != args.region):
            continue
        if (gpu and o.gpu != gpu) or (args.min_gpu_memory_gib and o.gpu_memory_gib < args.min_gpu_memory_gib):
            continue
        for purchase in ((args.purchase,) if args.purchase else ("on-demand", "spot")):
            price = o.price(purchase)
            if price is None:
                continue
            rows.append(
                {
                    "provider": o.provider, "region": o.region, "zone": o.zone, "instance_type": o.instance_type,
                    "gpu": o.gpu, "gpu_count": o.gpu_count, "gpu_fraction": o.gpu_fraction,
                    "gpu_memory_gib": round(o.gpu_memory_gib, 2), "vcpus": o.vcpus, "ram_gib": o.ram_gib,
                    "nvlink": o.nvlink, "fabric": o.fabric, "opt_in": o.opt_in, "purchase": purchase,
                    "hourly_usd": price, "source": o.source, "as_of": o.as_of,
                }
            )
    rows.sort(key=lambda r: (r["hourly_usd"], r["provider"], r["region"], r["zone"] or "", r["instance_type"], r["purchase"]))
    if args.format == "json":
        print(json.dumps(rows, indent=2, allow_nan=False))
    else:
        print(f"{'provider':<8} {'where':<22} {'instance type':<32} {'GPUs':<18} {'purchase':<9} {'$/h':>10}  as of")
        for r in rows:
            gpus = f"{r['gpu_count']} x {r['gpu']}" if r["gpu_fraction"] == 1 else f"1/{round(1 / r['gpu_fraction'])} x {r['gpu']}"
            print(f"{r['provider']:<8} {(r['zone'] or r['region']):<22} {r['instance_type']:<32} {gpus:<18} "
                  f"{r['purchase']:<9} {r['hourly_usd']:>10.4f}  {r['as_of']}")
        print(f"{len(rows)} offers")
    return EXIT_OK


def _cmd_catalog_refresh(args) -> int:
    """Exit 0 when everything was refreshed, 1 when something kept its previous data (listed, one line each)."""
    from gpusizer import inputs
    from gpusizer.catalog import cache, refresh

    problems = []
    for provider in args.provider or refresh.PROVIDERS:
        try:
            lines = refresh.refresh(provider, args.region)
        except OSError as exc:  # the file system refused: the previous cache is untouched
            reason = exc.strerror or str(exc) or type(exc).__name__
            print(redact.redact(f"gpusizer: error: {provider}: could not write the catalog cache "
                                f"{inputs.quote(str(cache.cache_dir()))}: {reason}; the previous cache is intact"),
                  file=sys.stderr)
            return EXIT_BUG
        problems += lines
        status = "refreshed" if not lines else f"{len(lines)} part(s) kept their previous data"
        print(f"{provider}: {status} (cache: {cache.cache_dir()})")
    for line in problems:
        print(f"  could not refresh: {line}")
    return 1 if problems else EXIT_OK


_COMMANDS = {"plan": _cmd_plan, "estimate": _cmd_estimate, "schema": _cmd_schema, "diff": _cmd_diff,
             "observe": _cmd_observe, "calibrate": _cmd_calibrate}


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    argv = sys.argv[1:] if argv is None else argv
    args = _parser(argv).parse_args(argv)
    from gpusizer import errors

    handler = _COMMANDS.get(args.command)
    if args.command == "preview":
        from policies import offline

        handler = offline.run
    if args.command == "catalog":
        handler = {"list": _cmd_catalog_list, "refresh": _cmd_catalog_refresh}[args.catalog_command]
    try:
        return handler(args)
    except errors.SizingError as exc:
        print(f"gpusizer: error: {redact.redact(str(exc))}", file=sys.stderr)
        return EXIT_INVALID
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug: say so plainly; --debug shows the traceback
        if args.debug:
            raise
        detail = redact.redact(f"{type(exc).__name__}: {exc}")[:500]
        print(f"gpusizer: internal error ({detail}); rerun with --debug and report it", file=sys.stderr)
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
