"""`gpusizer preview` on a stack whose secrets are stored as Pulumi stores them (`secure:` ciphertext)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from gpusizer.policies import offline
from tests.conftest import REPO

# What `pulumi config set --secret --path 'gpusizer:kubeconfigs.rack-a' ...` writes into the stack file
# (Pulumi docs, "Configuration: Secrets"): the value becomes a mapping with one `secure` key.
CIPHERTEXT = "v1:dGVzdC1ub25jZQ==:AAABAHRlc3QtY2lwaGVydGV4dC1ub3QtcmVhbA=="


def test_secure_values_are_replaced_and_their_keys_marked_secret():
    config = {
        "aws:region": "us-east-1",
        "gpusizer:kubeconfigs": {"rack-a": {"secure": CIPHERTEXT}},
        "gpusizer:kubeconfig": {"secure": CIPHERTEXT},
        "gpusizer:pools": [{"name": "rack-a", "secure": 1}],
    }
    plain, secret_keys = offline._without_ciphertext(config)
    assert plain["gpusizer:kubeconfigs"] == {"rack-a": offline.SECRET_PLACEHOLDER}
    assert plain["gpusizer:kubeconfig"] == offline.SECRET_PLACEHOLDER
    assert plain["gpusizer:pools"] == config["gpusizer:pools"]  # a `secure` field beside others is data
    assert sorted(secret_keys) == ["gpusizer:kubeconfig", "gpusizer:kubeconfigs"]
    assert CIPHERTEXT not in str(plain)


@pytest.mark.slow
def test_preview_runs_a_stack_with_secure_kubeconfigs_and_says_so(tmp_path):
    doc = yaml.safe_load((REPO / "stacks/Pulumi.hybrid.yaml").read_text())
    doc["config"]["gpusizer:kubeconfigs"] = {"rack-a": {"secure": CIPHERTEXT}}
    (tmp_path / "Pulumi.hybrid.yaml").write_text(yaml.safe_dump(doc))
    r = subprocess.run(
        [sys.executable, "-m", "gpusizer.cli", "preview", "--stack", "hybrid", "--stacks-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "preview passed" in r.stdout
    assert "gpusizer:kubeconfigs" in r.stderr and "cannot decrypt" in r.stderr
    assert CIPHERTEXT not in r.stdout + r.stderr
