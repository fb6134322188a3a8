"""How long an `hf_id` plan takes to fail without the Hugging Face Hub (issue 26: target under 5 s).

Run: .venv/bin/python benchmarks/offline_hf.py

Times `python -m gpusizer plan` of a spec whose model.hf_id is not in an empty cache, three ways: with
HF_HUB_OFFLINE=1, with HF_ENDPOINT at a closed local port (refused at once), and with HF_ENDPOINT at a
name that does not resolve (as on a machine without network or DNS). Each prints wall seconds and the
number of stderr lines; the target is under 5 s and one line each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

CASES = {
    "HF_HUB_OFFLINE=1": {"HF_HUB_OFFLINE": "1"},
    "closed port": {"HF_ENDPOINT": "http://127.0.0.1:9"},
    "no such host": {"HF_ENDPOINT": "https://hub.invalid"},
}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "hf.yaml")
        with open(spec, "w") as f:
            f.write("name: x\nmodel: {hf_id: acme/not-cached}\n")
        worst = 0.0
        for name, env in CASES.items():
            full = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
            full.update(env, HF_HUB_CACHE=os.path.join(tmp, "cache"))
            start = time.perf_counter()
            r = subprocess.run(
                [sys.executable, "-m", "gpusizer", "plan", spec], capture_output=True, text=True, env=full
            )
            took = time.perf_counter() - start
            worst = max(worst, took)
            print(f"{name:<18} {took:5.2f} s  exit {r.returncode}  {r.stderr.count(chr(10))} stderr line(s)")
        print(f"worst {worst:.2f} s (target < 5 s)")
        return 0 if worst < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
