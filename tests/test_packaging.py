"""What the distribution installs: the engine's packages, with the Pulumi components and the policy pack under
the distribution's own name (gpusizer.components, gpusizer.policies), never as generic top-level packages."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from tests.conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def test_every_package_folder_is_listed_and_the_pulumi_side_is_mapped_under_gpusizer():
    found = {".".join(p.relative_to(REPO).parent.parts) for p in (REPO / "gpusizer").rglob("__init__.py")}
    mapped = {name: folder for name, folder in SETUPTOOLS["package-dir"].items() if name}
    assert mapped == {"gpusizer.components": "components", "gpusizer.policies": "policies"}
    assert set(SETUPTOOLS["packages"]) == found | set(mapped)
    assert all(p.split(".")[0] == "gpusizer" for p in SETUPTOOLS["packages"])


@pytest.mark.slow
def test_the_wheel_holds_one_top_level_package(tmp_path):
    # Built from a copy: pip builds a local directory in place (its build/ folder).
    src = tmp_path / "src"
    shutil.copytree(
        REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", "venv", "build", "*.egg-info", "__pycache__")
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("gpusizer-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"gpusizer"}
    for expected in (
        "gpusizer/components/workload.py",
        "gpusizer/policies/pack.py",
        "gpusizer/policies/accelerator_families.yaml",
        "gpusizer/data/gpus.json",
    ):
        assert expected in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def _modules(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    return [f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if m.name != "__main__"]


# The Pulumi side's doctests, imported by their installed names (pytest's --doctest-modules would import the
# folders as top-level `components` and `policies`, a second copy of each module).
@pytest.mark.parametrize("name", _modules("gpusizer.components") + _modules("gpusizer.policies"))
def test_doctests_of_the_pulumi_side(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
