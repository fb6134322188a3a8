"""Each example spec's decision matches its reviewed golden file, so a catalog or model change shows as a diff."""

from __future__ import annotations

import json

import pytest

from tests import golden_decisions as golden


@pytest.mark.parametrize("example", golden.examples(), ids=lambda p: p.stem)
def test_example_decision_matches_its_reviewed_golden(example):
    path = golden.golden_path(example)
    assert path.is_file(), f"no golden decision for {example.name}. To fix: run `{golden.COMMAND}` and review it"
    got = golden.plan(example)
    want = json.loads(path.read_text())
    assert got == want, (
        f"the decision for {example.name} moved from {path.relative_to(golden.REPO)}. If the change is "
        f"intended, regenerate with `{golden.COMMAND}` and review `git diff tests/golden/`.\n"
        f"now:\n{golden.render(got)}"
    )


def test_every_golden_file_has_its_example():
    stems = {p.stem for p in golden.examples()}
    assert {p.stem for p in golden.GOLDEN.glob("*.json")} == stems
