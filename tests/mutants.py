"""Mutation testing of the engine's core rules: does the suite catch a subtle bug in each?

Run it from the repository root (it edits files in place, one mutant at a time, and restores each):

    .venv/bin/python -m tests.mutants            # every mutant
    .venv/bin/python -m tests.mutants zero2 gqa  # those named

Each mutant is one small, plausible bug in a rule the issue tracker named or a reviewer would expect to
be guarded (a ZeRO stage that stops sharding gradients, a KV cache split over more GPUs than it has
heads, an output version not checked, ...). A mutant is *killed* when its tests fail. The score goes in
CONTRIBUTING.md; it is not part of every CI run (each mutant runs its tests: minutes in all).
Mutants whose code has moved are reported as `stale` (fix the snippet), never as survivors.
"""

from __future__ import annotations

import dataclasses
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


MUTANTS = (
    Mutant(
        "zero1",
        "gpusizer/estimate/memory.py",
        "opt = opt / dp if level >= 1",
        "opt = opt / dp if level >= 2",
        ("tests/test_published_memory_rules.py", "tests/test_memory.py"),
        "ZeRO-1 no longer shards optimizer states",
    ),
    Mutant(
        "zero2",
        "gpusizer/estimate/memory.py",
        "grads = grads / dp if level >= 2",
        "grads = grads / dp if level >= 3",
        ("tests/test_published_memory_rules.py", "tests/test_memory.py"),
        "ZeRO-2 no longer shards gradients",
    ),
    Mutant(
        "zero3",
        "gpusizer/estimate/memory.py",
        "weights = weights / dp if level >= 3",
        "weights = weights / dp if level >= 4",
        ("tests/test_published_memory_rules.py", "tests/test_memory.py"),
        "ZeRO-3 no longer shards weights",
    ),
    Mutant(
        "gqa",
        "gpusizer/estimate/memory.py",
        "kv /= min(gpus, model.kv_heads)",
        "kv /= gpus",
        ("tests/test_published_memory_rules.py", "tests/test_memory.py"),
        "the KV cache split over every TP GPU, ignoring head replication past the KV head count",
    ),
    Mutant(
        "kv-bytes",
        "gpusizer/estimate/memory.py",
        "per_token_layer = 2 * model.kv_heads",
        "per_token_layer = 1 * model.kv_heads",
        ("tests/test_published_memory_rules.py", "tests/test_memory.py"),
        "the V of the KV cache forgotten",
    ),
    Mutant(
        "master-weights",
        "gpusizer/estimate/memory.py",
        'master = 0.0 if train_precision == "fp32" or master_weights == "none" else 4.0',
        'master = 0.0 if train_precision == "fp32" or master_weights == "none" else 2.0',
        ("tests/test_published_memory_rules.py", "tests/test_memory.py", "tests/test_precision.py"),
        "a 16-bit master copy instead of fp32",
    ),
    Mutant(
        "month",
        "gpusizer/base/cost.py",
        "HOURS_PER_MONTH = units.HOURS_PER_YEAR // 12",
        "HOURS_PER_MONTH = 720",
        ("tests/test_cost_report.py", "tests/test_diff.py", "gpusizer/base/cost.py"),
        "a 720-hour month",
    ),
    Mutant(
        "output-version",
        "gpusizer/contract/output.py",
        "    if version not in KNOWN_VERSIONS:",
        "    if False:",
        ("tests/test_output_contract.py",),
        "diff reads a document of any version",
    ),
    Mutant(
        "md-escape",
        "gpusizer/render/table.py",
        'return " ".join(str(cell).replace("|", "\\\\|").splitlines())',
        'return " ".join(str(cell).splitlines())',
        ("gpusizer/render/table.py", "tests/test_cost_report.py", "tests/test_diff.py"),
        "a | in a cell breaks a markdown table",
    ),
    Mutant(
        "cron-either",
        "gpusizer/autoscaling.py",
        "either = not (any_dom or any_dow)",
        "either = False",
        ("tests/test_autoscaling.py", "gpusizer/autoscaling.py"),
        "a window restricted by day of month and day of week runs only on days matching both",
    ),
    Mutant(
        "cron-dom",
        "gpusizer/autoscaling.py",
        "in_dom = any_dom or day in dom_set",
        "in_dom = True or day in dom_set",
        ("tests/test_autoscaling.py", "gpusizer/autoscaling.py"),
        "day of month ignored (the old bug)",
    ),
    Mutant(
        "sts-keys",
        "gpusizer/base/redact.py",
        "(?:AKIA|ASIA|",
        "(?:AKIA|",
        ("tests/test_redact.py", "tests/test_inputs.py"),
        "STS ASIA... keys not redacted",
    ),
    Mutant(
        "overprov-exemption",
        "policies/sizing.py",
        "        if cheaper is None:\n            continue\n",
        "",
        ("tests/policies/test_overprovisioning_bounds.py",),
        "a resource flagged although no cheaper adequate offer exists",
    ),
    Mutant(
        "overprov-boundary",
        "policies/sizing.py",
        "        if ratio <= max_ratio:",
        "        if ratio < max_ratio:",
        ("tests/policies/test_overprovisioning_bounds.py",),
        "exactly maxRatio flagged",
    ),
    Mutant(
        "fraction-memory",
        "gpusizer/contract/audit.py",
        "o.gpu_memory_gib / o.gpu_fraction,",
        "o.gpu_memory_gib,",
        ("tests/policies/test_overprovisioning_bounds.py",),
        "a fractional GPU's memory counted as its fraction twice",
    ),
    Mutant(
        "headroom",
        "gpusizer/estimate/fit.py",
        "    if need > usable:",
        "    if need > usable * 1.05:",
        ("tests/test_optimizer.py", "tests/test_memory.py", "tests/test_estimate.py", "tests/test_golden_decisions.py"),
        "5% more memory than a GPU holds accepted",
    ),
)


def _passes(tests: list[str]) -> bool:
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "slow or not slow", *tests],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    return r.returncode == 0


def run(m: Mutant) -> str:
    """killed, SURVIVED, stale (the snippet moved) or unsound (its tests fail without the mutant: no verdict)."""
    path = REPO / m.path
    original = path.read_text()
    if original.count(m.old) != 1:
        return "stale"
    tests = [t for t in m.tests if (REPO / t).exists()]
    if not _passes(tests):
        return "unsound"
    path.write_text(original.replace(m.old, m.new))
    try:
        caught = not _passes(tests)
    finally:
        path.write_text(original)
    return "killed" if caught else "SURVIVED"


def main(names: list[str]) -> int:
    chosen = [m for m in MUTANTS if not names or m.name in names]
    results = {}
    for m in chosen:
        t = time.monotonic()
        results[m.name] = run(m)
        print(f"{results[m.name]:<9} {m.name:<16} {time.monotonic() - t:5.1f} s  {m.why}", flush=True)
    scored = [r for r in results.values() if r in ("killed", "SURVIVED")]
    killed = sum(r == "killed" for r in scored)
    other = len(results) - len(scored)
    print(f"score: {killed} of {len(scored)} killed" + (f"; {other} stale or unsound" if other else ""))
    return 0 if killed == len(scored) and len(scored) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
