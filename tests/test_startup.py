"""A command loads only what it uses: what `gpusizer plan` leaves unimported (issue 11, cold start)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

PROBE = (
    "import sys, json, contextlib, io\n"
    "from gpusizer import cli\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    code = cli.main(sys.argv[1:])\n"
    "print(json.dumps([code, sorted(m for m in sys.modules if m.startswith(('gpusizer', 'difflib')))]))"
)


def _loaded(tmp_path, *args, cache=None):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GPUSIZER_CACHE_DIR": str(cache or tmp_path / "no-cache")}
    r = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, cwd=REPO, env=env, check=True
    )
    return json.loads(r.stdout)


def test_plan_builds_no_pool_or_hugging_face_model_and_reads_no_absent_cache(tmp_path):
    code, modules = _loaded(tmp_path, "plan", REPO / "stacks/examples/chat-8b.yaml", "--format", "json")
    assert code == 0
    assert "gpusizer.planner" in modules and "gpusizer.catalog.compact" in modules
    unused = {
        "gpusizer.catalog.onprem",
        "gpusizer.facts.hf_config",
        "gpusizer.facts.hub",
        "gpusizer.catalog.cache",
        "gpusizer.tco",
        "gpusizer.diff",
        "difflib",
    }
    assert unused & set(modules) == set()


def test_an_existing_cache_directory_is_still_read(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    code, modules = _loaded(tmp_path, "plan", REPO / "stacks/examples/chat-8b.yaml", cache=cache)
    assert code == 0 and "gpusizer.catalog.cache" in modules
