"""Offline `pulumi preview --policy-pack policies`: the program under mocks, every resource through the pack.

`gpusizer preview --stack NAME` runs the Pulumi program (__main__.py, or
--program) with stacks/Pulumi.NAME.yaml as its config twice under Pulumi's
mocks (policies/mocks.py): once as a first `pulumi preview` sees it (no ids,
unknown outputs) and once as `pulumi up` does (everything known). Each time
it sends every registered resource to the policy pack's analyzer in-process
(policies/analyzer.py), as Analyze and AnalyzeStack requests built the way
the engine builds them (type, camelCase properties with unknowns as the
engine's sentinels, URN, parent, dependencies). It prints the decisions and
the policy results of both, marking those seen at one only, and exits 1 on a
mandatory violation, 2 on invalid input, 0 otherwise. This is how CI without
cloud credentials or the Pulumi CLI gates a change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import pathlib
import runpy
import sys

import pulumi

import gpusizer
from gpusizer import reuse
from gpusizer.base import errors, inputs, memo, providers, redact
from gpusizer.catalog import paths
from gpusizer.contract import OUTPUT_VERSION, audit
from gpusizer.policies import analyzer, fork, manifests, mocks, rules
from gpusizer.policies import view as v
from gpusizer.render import table

REPO = pathlib.Path(__file__).resolve().parents[1]
PHASES = ("preview", "up")  # a first preview (unknowns), then the update (all known)


@dataclasses.dataclass(frozen=True)
class Finding:
    """A policy result, and the phases it was seen at ("preview", "up", or both)."""

    policy: str
    level: str
    resource: str
    message: str
    phases: tuple[str, ...] = PHASES


# What stands in for a `secure:` value: the ciphertext needs the stack's secrets provider
# (passphrase, cloud KMS or Pulumi Cloud), which the offline preview does not have.
SECRET_PLACEHOLDER = v.OFFLINE_SECRET


def _without_ciphertext(config: dict) -> tuple[dict, list[str]]:
    """Stack config with every `{secure: CIPHERTEXT}` (as `pulumi config set --secret [--path]` stores it)
    replaced by SECRET_PLACEHOLDER, and the top-level keys that held one, to be marked secret."""
    secret_keys = []
    replaced = False  # whether strip() replaced a value: compared values would miss nothing but NaN

    def strip(value):
        nonlocal replaced
        if isinstance(value, dict) and set(value) == {"secure"} and isinstance(value["secure"], str):
            replaced = True
            return SECRET_PLACEHOLDER
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()}
        return [strip(v) for v in value] if isinstance(value, list) else value

    plain = {}
    for key, value in config.items():
        replaced = False
        plain[key] = strip(value)
        if replaced:
            secret_keys.append(key)
    return plain, secret_keys


def _stack_config(stack_file: pathlib.Path) -> tuple[dict, list[str]]:
    """The stack file's config as the program will read it, and its secret keys: keys are names, values
    JSON can carry (the CLI passes structured config as JSON), `secure:` ciphertext replaced."""
    doc = inputs.read_yaml(stack_file, "stack file", "--stack")
    config = (doc.get("config") if isinstance(doc, dict) else None) or {}
    if not isinstance(config, dict):
        raise errors.SpecError(f"stack file {stack_file}: config: must be a mapping of keys", "--stack")
    odd_keys = [k for k in config if not isinstance(k, str)]  # a number, a date, null ...
    if odd_keys:
        raise errors.SpecError(
            f"stack file {stack_file}: config key {inputs.quote(odd_keys[0])} is not a name. "
            "To fix: write keys as namespace:name (gpusizer:workloads, aws:region)",
            "--stack",
        )
    config, secret_keys = _without_ciphertext(config)
    for key, value in config.items():  # the program reads structured config as JSON, as the CLI passes it
        misfit = inputs.not_json(value, key)
        if misfit:  # an explicit !!timestamp, !!binary or !!set tag, a key that is a number, .nan
            raise errors.SpecError(
                f"stack file {stack_file}: config {misfit.place} holds {misfit.what}, which JSON "
                "cannot carry. To fix: write it as plain text (quoted), a number, a list or a "
                "mapping",
                "--stack",
            )
    if secret_keys:
        print(
            f"note: {', '.join(secret_keys)} hold(s) secure values the offline preview cannot decrypt; "
            "placeholders stand in for them (resources and policies are checked, credentials are not)",
            file=sys.stderr,
        )
    return config, secret_keys


def preview(
    stack: str,
    stacks_dir: pathlib.Path,
    program: pathlib.Path,
    policy_config: dict | None = None,
    parallel: bool | None = None,
):
    """Run the program for `stack` as a first preview and as an update, the pack over each:
    (exports, resources, findings). Findings seen in both phases are listed once.

    Secure (encrypted) config values cannot be decrypted here: placeholders stand in for them
    (they only feed provider credentials, which mocks never use) and a note on stderr says so.

    parallel: run the first preview in a forked child while this process runs the update
    (policies/fork.py); default where fork.available(). The result is the same either way.
    """
    config, secret_keys = _stack_config(stacks_dir / f"Pulumi.{stack}.yaml")

    def phase(name: str) -> tuple[dict, list]:
        """The program run once under mocks: (its exports resolved to plain values, the resources recorded)."""
        try:
            recorder, exports = mocks.run_program(
                lambda: runpy.run_path(str(program), run_name="__main__") and None,
                config,
                secret_keys,
                stack=stack,
                preview=name == "preview",
                project=_project(program),
            )
        except SystemExit as exc:  # a program that leaves early never reaches the pack: that is no pass
            raise RuntimeError(f"the program exited (SystemExit {exc.code!r}) instead of finishing") from None
        return _decisions(exports), analyzer.recorded(recorder.resources)

    def judged(resources: list) -> list[tuple]:
        return [dataclasses.astuple(f) for f in analyzer.analyze(resources, stack, policy_config)]

    if parallel is None:
        parallel = fork.available()
    # relative paths in resource inputs are read from the program's directory, as the Pulumi CLI runs it there
    # The pack's catalog: the packaged snapshot (a program could write the refresh cache), read here, before any
    # program runs, and inherited by every child forked from this process.
    with paths.packaged_only(), memo.scope(), manifests.based(program.resolve().parent):
        audit.types_of("aws"), gpusizer.load_catalog()  # loaded now: the judging children inherit them
        _preload(config, program)
        # The program runs in forked children and the pack judges in this process (or in a child forked from it:
        # this process never runs the program), as the Pulumi CLI keeps program and pack apart: a program cannot patch the pack or the catalog it re-plans with,
        # and one that exits (sys.exit, os._exit) leaves no result, which is an error, never a pass.
        if not fork.forks():
            first, last = phase("preview"), phase("up")
            runs = [("preview", judged(first[1])), ("up", judged(last[1]))]
        elif parallel:  # two CPUs: both runs at once, and the first judged (in a child forked from this clean
            # process) while the second still runs
            program_runs = [fork.Child(lambda: phase("preview")), fork.Child(lambda: phase("up"))]
            first = program_runs[0].result()
            judging = fork.Child(lambda: judged(first[1]))
            last = program_runs[1].result()
            found = judged(last[1])
            runs = [("preview", judging.result()), ("up", found)]
        else:
            first = fork.Child(lambda: phase("preview")).result()
            last = fork.Child(lambda: phase("up")).result()
            runs = [("preview", judged(first[1])), ("up", judged(last[1]))]
        exports, resources = last
    seen: dict[tuple, list[str]] = {}
    for name, found in runs:
        for key in dict.fromkeys(found):  # a finding twice in one phase is listed once
            seen.setdefault(key, []).append(name)
    findings = [Finding(*key, tuple(phases)) for key, phases in seen.items()]
    return exports, resources, findings


def _project(program: pathlib.Path) -> str:
    """The program's project name, as the CLI reads it from the Pulumi.yaml beside it (`pulumi.Config()` reads
    that namespace); gpusizer's own when there is none."""
    try:
        doc = inputs.read_yaml(program.resolve().parent / "Pulumi.yaml", "Pulumi.yaml", "--program")
    except Exception:  # noqa: BLE001 - no Pulumi.yaml, or one that does not read: gpusizer's own name
        return "gpusizer"
    name = doc.get("name") if isinstance(doc, dict) else None
    return name if isinstance(name, str) and name.strip() else "gpusizer"


def _preload(config: dict, program: pathlib.Path) -> None:
    """Plan the stack's workloads, work out what each GpuWorkload exports from its plan, and import
    the SDK modules their providers' components use, once, before the phases run: the forked phase
    inherits all of it instead of repeating it (for a 50-workload stack on two clouds, about 2 s of
    CPU: 1.6 s of SDK imports, 0.4 s of plans, 0.2 s of the plans' lazily judged parts).

    It reads the config keys __main__.py reads (gpusizer:workloads, gpusizer:pools) and plans them
    the same way (gpusizer.reuse.in_order). Whatever fails here (a bad spec, an infeasible one)
    fails again in the program, which reports it; here it only ends the preload.
    """
    from gpusizer.components import workload

    items = config.get("gpusizer:workloads")
    if not isinstance(items, list):
        return
    used = set()
    try:
        where = program.resolve().parent  # as __main__.py resolves its own directory
        specs = [gpusizer.load_spec(where / item if isinstance(item, str) else item) for item in items]
        from gpusizer.policies import need

        for decision, pools in reuse.in_order(specs, gpusizer.parse_pools(config.get("gpusizer:pools") or [])):
            if decision.chosen is None:
                break
            workload.decision_summary(decision)  # judges what the plan JSON reads (sized_by, next cheaper ...)
            used.add(decision.chosen.offer.provider)
            need.preplan(decision.workload.spec, pools)  # the same spec without its pins, as the pack compares
    except errors.SizingError:
        pass
    for name in sorted(used):
        for module in providers.get(name).module("component").SDK_MODULES:
            parts = module.split(".")
            for depth in range(2, len(parts) + 1):  # the package and every subpackage on the way
                # The SDKs register subpackages lazily (pulumi._utils.lazy_import): import_module returns a
                # placeholder, and the first attribute read outside its introspection set runs the module.
                hasattr(importlib.import_module(".".join(parts[:depth])), "__all__")


def _resolved(value):
    if isinstance(value, pulumi.Output):
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(value.future())
        finally:
            loop.close()
    return value


def _decisions(exports: dict) -> dict[str, dict]:
    """Each workload's export, resolved (the program exports one dict per workload, its plan JSON under "decision")."""
    return {
        name: ({k: _resolved(v) for k, v in e.items()} if isinstance(e, dict) else {"value": _resolved(e)})
        for name, e in exports.items()
    }


def _decision_line(e: dict) -> str:
    """ "aws us-east-1 g6e.xlarge (1 x L40S), on-demand: 2 replicas x $1.86/h = $3.72/h, $2,717.06/month"."""
    from gpusizer.base import cost
    from gpusizer.render import report

    plan = e.get("decision") if isinstance(e.get("decision"), dict) else {}
    choice = plan.get("choice") or {}
    bought = e.get("purchase")
    if choice.get("consumption") not in (None, bought):  # flex-start, a reservation, a Capacity Block
        bought = f"{bought} as {choice['consumption']}"
    line = f"{e.get('provider')} {e.get('region')} {e.get('instance_type')} ({e.get('gpu')}), {bought}"
    if choice.get("hourly_usd") is not None:
        line += f": {report.cost_text(cost.from_choice(choice))}"
        if plan.get("objective"):
            line += f" (ranked by {cost.objective_text(plan['objective'], plan.get('task', 'inference'))})"
        if choice.get("autoscaling"):
            line += f"; autoscaling {report.scaling_text(choice['autoscaling'])}"
    elif e.get("hourly_usd") is not None:
        line += f": ${e['hourly_usd']}/h"
    if e.get("burst"):
        line += f" - BURST: {e['burst']}"
    return line


def notes(resources: list, policy_config: dict | None = None) -> list[str]:
    """What the offline preview cannot see, and the exceptions the pack config allows (with their reasons)."""
    from gpusizer.policies import need, sizing
    from gpusizer.policies import view as v

    out = []
    rendered = sorted({r.typ for r in resources if r.typ in manifests.RENDERED})
    if rendered:
        out.append(
            f"{sum(r.typ in manifests.RENDERED for r in resources)} provider-side component(s) ({', '.join(rendered)}): "
            "the offline preview judged their inputs (manifests, values); a real `pulumi preview --policy-pack "
            "policies` also judges the children they render"
        )
    rule = rules.BY_NAME["gpusizer-no-overprovisioning"]
    try:
        cfg = rule.settings(rules.settings_of((policy_config or {}).get(rule.name, {})))
    except ValueError:
        return out
    for r in resources:
        if r.typ == sizing.WORKLOAD and cfg.allow_pins:
            w = sizing.StackResource(r.typ, v.View(r.inputs), r.urn, r.name)
            try:
                out += [f"exception: {line}" for line in need.exceptions(w, cfg.max_ratio, cfg)]
            except Exception:  # noqa: BLE001 - a note, never a reason to fail the preview's output
                continue
    return out


# Inputs shown beside a resource in the tree, as `pulumi preview --diff` names them: what it is and how many.
_KEY_FIELDS = (
    ("instanceType",),
    ("machineType",),
    ("instanceMarketOptions", "marketType"),
    ("scheduling", "provisioningModel"),
    ("desiredCapacity",),
    ("minSize",),
    ("maxSize",),
    ("targetSize",),
    ("spec", "replicas"),
    ("spec", "hard", "requests.nvidia.com/gpu"),
    ("minReplicaCount",),
    ("maxReplicaCount",),
)
_GPU_TAGS = (("tags", "gpusizer:gpu"), ("labels", "gpusizer-gpu"), ("metadata", "annotations", "gpusizer.io/gpu"))


def _dig(inputs, path: tuple[str, ...]):
    for key in path:
        if not isinstance(inputs, dict) or key not in inputs:
            return None
        inputs = inputs[key]
    return inputs


def _key_fields(r) -> dict[str, object]:
    """The inputs that say what a resource buys (type, purchase, count, GPUs), by their last name."""
    found = {
        path[-1]: int(value) if isinstance(value, float) and value.is_integer() else value
        for path in _KEY_FIELDS
        if (value := _dig(r.inputs, path)) is not None and not isinstance(value, (dict, list))
    }
    overrides = _dig(r.inputs, ("mixedInstancesPolicy", "launchTemplate", "overrides"))
    if isinstance(overrides, list):  # an Auto Scaling group over ranked types (capacity failover)
        types = [o.get("instanceType") for o in overrides if isinstance(o, dict) and o.get("instanceType")]
        if types:
            found = {"instanceTypes": ",".join(types), **found}
    gpu = next((g for path in _GPU_TAGS if isinstance(g := _dig(r.inputs, path), str)), None)
    return {"gpu": gpu, **found} if found and gpu else found


def resource_tree(resources: list) -> list[tuple[int, object]]:
    """(depth, resource) in the order `pulumi preview` lists them: each resource under its parent, depth 0 the
    children of the stack."""
    urns = {r.urn for r in resources}
    children: dict[str, list] = {}
    for r in resources:
        children.setdefault(r.parent if r.parent in urns else "", []).append(r)
    out: list[tuple[int, object]] = []

    seen: set[int] = set()

    def walk(urn: str, depth: int) -> None:
        for r in children.get(urn, ()):
            if id(r) in seen:  # a resource recorded without a URN of its own lists once
                continue
            seen.add(id(r))
            out.append((depth, r))
            if r.urn and r.urn != urn:
                walk(r.urn, depth + 1)

    walk("", 0)
    return out


def _tree_lines(resources: list, stack: str) -> list[str]:
    """The resources as `pulumi preview` draws them: `+ type  name  key=value ...`, indented under parents."""
    rows = [
        (depth, r, ", ".join(f"{k}={v}" for k, v in _key_fields(r).items())) for depth, r in resource_tree(resources)
    ]
    width = max((2 * d + len(r.typ) for d, r, _ in rows), default=0)
    lines = [f"Resources ({len(rows)} to create):", f"  + pulumi:pulumi:Stack  {stack}"]
    for depth, r, fields in rows:
        typ = "  " * depth + r.typ
        lines.append(f"    + {typ.ljust(width)}  {r.name}" + (f"  {fields}" if fields else ""))
    return lines


def render(
    exports: dict,
    resources: list,
    findings: list[Finding],
    fmt: str,
    stack: str = "",
    policy_config: dict | None = None,
) -> str:
    if fmt == "json":
        doc = to_json(exports, resources, findings)
        doc["policy"]["notes"] = notes(resources, policy_config)
        return json.dumps(doc, indent=2, default=str)
    md = fmt == "markdown"
    out = ["### gpusizer preview" if md else "Decisions:"]
    for name, e in _decisions(exports).items():
        line = f"{name}: {_decision_line(e)}"
        out.append(f"- {line}" if md else f"  {line}")
    out.append("")
    tree = _tree_lines(resources, stack or "(stack)")
    out += (["", "```", *tree, "```"] if md else tree) + [""]
    out.append(f"Policy results ({len(resources)} resources):")
    if not findings:
        out.append("- none: every policy passed" if md else "  none: every policy passed")
    rows = []
    for f in sorted(findings, key=lambda f: (f.level != "mandatory", f.policy, f.resource)):
        when = "" if f.phases == PHASES else f" (at {' and '.join(f.phases)} only)"
        rows.append((f"{f.level}{when}", f.policy, f"`{f.resource}`", f.message))
        if not md:
            out.append(f"  [{f.level}]{when} {f.policy} on {f.resource}: {f.message}")
    if md and rows:
        out += ["", *table.markdown(("level", "policy", "resource", "message"), rows)]
    extra = notes(resources, policy_config)
    if extra:
        out += [""] + [f"- note: {n}" if md else f"  note: {n}" for n in extra]
    mandatory = sum(f.level == "mandatory" for f in findings)
    out += ["", f"{mandatory} mandatory violation(s)" + (": preview FAILED" if mandatory else ": preview passed")]
    return "\n".join(out)


def to_json(exports: dict, resources: list, findings: list[Finding]) -> dict:
    """The preview as one document for `gpusizer diff` (docs/contract.md section 6).

    {"workloads": {NAME: PLAN_JSON}, "resources": [{type, name, parent, fields}], "policy": {"resources",
    "mandatory", "passed", "findings": [...]}}
    """
    workloads = {name: e["decision"] for name, e in _decisions(exports).items() if isinstance(e.get("decision"), dict)}
    mandatory = sum(f.level == "mandatory" for f in findings)
    return {
        "version": OUTPUT_VERSION,
        "workloads": workloads,
        "resources": [
            {"type": r.typ, "name": r.name, "parent": r.parent, "fields": _key_fields(r)}
            for _, r in resource_tree(resources)
        ],
        "policy": {
            "resources": len(resources),
            "mandatory": mandatory,
            "passed": mandatory == 0,
            "findings": [dataclasses.asdict(f) for f in findings],
        },
    }


def _program(given: str | None) -> pathlib.Path:
    """--program (default: the repository's __main__.py): a readable file of valid Python, else SpecError."""
    if given is None:
        return REPO / "__main__.py"
    text = inputs.read_text(given, "Pulumi program", "--program")  # a regular file, UTF-8, size-capped
    try:
        compile(text, given, "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        where = f" at line {exc.lineno}: {exc.msg}" if getattr(exc, "lineno", None) else f": {getattr(exc, 'msg', exc)}"
        raise errors.SpecError(
            f"--program {inputs.quote(given)}: invalid Python{where}. "
            "To fix: correct the program (python -m py_compile shows the same)",
            "--program",
        ) from None
    return pathlib.Path(given)


def run(args) -> int:
    """The `gpusizer preview` command (its arguments: gpusizer/cli.py); exit 1 on a mandatory violation."""
    stacks_dir = pathlib.Path(args.stacks_dir or REPO / "stacks")
    if not (stacks_dir / f"Pulumi.{args.stack}.yaml").is_file():
        known = sorted(p.name.split(".")[1] for p in stacks_dir.glob("Pulumi.*.yaml"))
        raise errors.SpecError(
            f"--stack: no {stacks_dir}/Pulumi.{args.stack}.yaml. To fix: use one of {', '.join(known)}", "--stack"
        )
    policy_config = (
        inputs.read_json(args.policy_config, "policy config", "--policy-config") if args.policy_config else None
    )
    if policy_config is not None:
        rules.validate_config(policy_config)
    program = _program(args.program)
    try:
        exports, resources, findings = preview(
            args.stack, stacks_dir, program, policy_config, parallel=False if args.serial else None
        )
    except pulumi.RunError as exc:
        raise errors.SpecError(f"stack {args.stack}: {exc}", "") from None
    except errors.SizingError:
        raise
    except Exception as exc:  # a user's --program failed (ours turns its errors into RunErrors): not our bug
        if args.program is None or getattr(args, "debug", False):
            raise
        raise errors.SpecError(
            f"--program {inputs.quote(args.program)} raised {type(exc).__name__}: {exc}. "
            "To fix: correct the program (--debug shows the traceback)",
            "--program",
        ) from None
    print(redact.redact(render(exports, resources, findings, args.format, f"gpusizer-{args.stack}", policy_config)))
    sys.stdout.flush()
    return 1 if any(f.level == "mandatory" for f in findings) else 0
