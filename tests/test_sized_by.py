"""Decision.sized_by names what really set the size (the label the policy pack may exempt on)."""

from __future__ import annotations

import yaml

import gpusizer
from tests.conftest import REPO


def _spec(name: str, **changes) -> dict:
    spec = yaml.safe_load((REPO / "stacks/examples" / name).read_text())
    for dotted, value in changes.items():
        at = spec
        *path, last = dotted.split(".")
        for key in path:
            at = at.setdefault(key, {})
        at[last] = value
    return spec


def _cheaper(d):
    return [
        x for x in d.candidates if x is not d.chosen and x.hourly_usd is not None and x.hourly_usd < d.chosen.hourly_usd
    ]


def test_lora_example_is_labelled_per_job_cost_not_deadline():
    # The case: 8 x B200 runs the 200M-token LoRA in ~0.37 h against a 24 h deadline; many cheaper
    # shapes meet the deadline, so the deadline did not set the size: the whole run's cost did.
    d = gpusizer.plan(_spec("lora-8b.yaml"))
    assert d.chosen.fit.train_hours < 1 < 24 == d.workload.spec.train.deadline_hours
    assert any(x.feasible for x in _cheaper(d))
    assert d.sized_by == "per-job-cost"


def test_deadline_only_when_a_cheaper_shape_would_miss_it():
    # Ranked per hour, nothing cheaper is adequate; the LoRA run on 2e9 tokens in 2 h is too slow on
    # the cheaper shapes that hold its memory.
    d = gpusizer.plan(
        _spec("lora-8b.yaml", **{"sizing.objective": "hourly", "training.tokens": 2.0e9, "training.deadline_hours": 2})
    )
    cheaper = _cheaper(d)
    assert not any(x.feasible for x in cheaper)
    assert "deadline" in {x.rejection.code for x in cheaper}
    assert d.sized_by == "deadline"


def test_memory_when_every_cheaper_shape_lacks_memory():
    d = gpusizer.plan(_spec("lora-8b.yaml", **{"sizing.objective": "hourly", "training.deadline_hours": 10000}))
    # "image": a family with no supported machine image (g6f, p3) is excluded before sizing.
    # "precision": 4 x T4 holds it with tensor parallelism (training memory models TP) but has no bf16.
    assert {x.rejection.code for x in _cheaper(d)} <= {
        "memory",
        "opt-in",
        "image",
        "host-ram",
        "host-vcpu",
        "quota",
        "precision",
    }
    assert d.sized_by == ("precision" if "precision" in {x.rejection.code for x in _cheaper(d)} else "memory")
