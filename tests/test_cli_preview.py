"""`gpusizer preview` is always a command; the policy side is imported only when it runs."""

from __future__ import annotations

import subprocess
import sys

from gpusizer import cli


def test_preview_is_listed_in_help_without_importing_pulumi():
    code = (
        "import sys, contextlib, io\n"
        "from gpusizer import cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try: cli.main(['--help'])\n"
        "    except SystemExit: pass\n"
        "print('preview' in out.getvalue(), any(m.split('.')[0] in ('pulumi', 'policies') for m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["True", "False"]


def test_preview_without_the_pulumi_extra_exits_2_naming_it(monkeypatch, capsys):
    from gpusizer import policies

    # `from policies import offline` now fails as it does without Pulumi installed.
    monkeypatch.delattr(policies, "offline", raising=False)
    monkeypatch.setitem(sys.modules, "gpusizer.policies.offline", None)
    assert cli.main(["preview", "--stack", "dev"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[pulumi] extra" in err and "pip install 'gpusizer[pulumi]'" in err
