"""The README's examples run as written."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def test_python_api_example_runs(monkeypatch):
    monkeypatch.chdir(REPO)
    (block,) = re.findall(r"```python\n(.*?)```", README, re.S)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["decision"].chosen is not None


def test_policy_config_example_is_valid_for_the_pack():
    from gpusizer.policies import rules

    (block,) = [b for b in re.findall(r"```json\n(.*?)```", README, re.S) if "gpusizer-no-overprovisioning" in b]
    for name, cfg in json.loads(block).items():
        rules.BY_NAME[name].settings(cfg)  # raises on an unknown key or a wrong type


def test_quick_start_commands_match_ci():
    ci = (REPO / ".ci/run").read_text()
    test_cmd = next(line for line in README.splitlines() if line.startswith("python3 -m venv") and "pytest" in line)
    assert test_cmd in ci
