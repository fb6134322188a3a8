"""The packaged data files' JSON twins: current, equal to the YAML, and never used stale."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

import gpusizer
from gpusizer.base import packaged
from tests.conftest import REPO

PACKAGE = REPO / "gpusizer"


def test_every_data_file_is_listed_and_every_twin_is_current(capsys):
    assert sorted(f"data/{p.name}" for p in (PACKAGE / "data").glob("*.yaml")) == sorted(packaged.FILES)
    assert packaged.main(["--check"]) == 0, "a twin is stale: run `python -m gpusizer.base.packaged`"


@pytest.mark.parametrize("relpath", packaged.FILES)
def test_a_twin_holds_exactly_what_the_yaml_says(relpath):
    # Compared by JSON text as well as by value: 1 == 1.0 and True == 1 in Python, not in JSON.
    parsed = yaml.safe_load((PACKAGE / relpath).read_text(encoding="utf-8"))
    loaded = packaged.load(relpath)
    assert loaded == parsed and json.dumps(loaded, sort_keys=True) == json.dumps(parsed, sort_keys=True)


def _copy(tmp_path, relpath: str):
    root = tmp_path / "pkg"
    (root / "data").mkdir(parents=True)
    for name in (relpath, relpath.replace(".yaml", ".json")):
        shutil.copy(PACKAGE / name, root / name)
    return root


def test_after_an_edit_the_yaml_is_read_not_the_stale_twin(tmp_path):
    root = _copy(tmp_path, "data/gpus.yaml")
    text = (root / "data/gpus.yaml").read_text(encoding="utf-8")
    assert "memory_gib: 80.0" in text  # the edit below changes a figure the twin still holds
    (root / "data/gpus.yaml").write_text(text.replace("memory_gib: 80.0", "memory_gib: 81.5", 1), encoding="utf-8")
    edited = packaged.load("data/gpus.yaml", root)
    assert 81.5 in [g["memory_gib"] for g in edited["gpus"].values()]
    assert edited == yaml.safe_load((root / "data/gpus.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "twin",
    ["", "{not json", '{"yaml_sha256": "00", "data": {}}', "[]"],
    ids=["empty", "damaged", "other digest", "not a map"],
)
def test_a_damaged_or_foreign_twin_is_ignored(tmp_path, twin):
    root = _copy(tmp_path, "data/images.yaml")
    (root / "data/images.json").write_text(twin, encoding="utf-8")
    assert packaged.load("data/images.yaml", root) == yaml.safe_load(
        (PACKAGE / "data/images.yaml").read_text(encoding="utf-8")
    )
    (root / "data/images.json").unlink()
    assert packaged.load("data/images.yaml", root) == yaml.safe_load(
        (PACKAGE / "data/images.yaml").read_text(encoding="utf-8")
    )


@pytest.mark.parametrize(
    "text, named, fix",
    [
        ("as_of: !!timestamp 2026-11-23\n", "x.as_of", "quote it"),
        ("m:\n  8: a\n", "x.m: key 8", "quote it"),
        ("l: [1, !!timestamp 2026-01-01]\n", "x.l[1]", "quote it"),
        ("bw: .inf\n", "x.bw", "give a finite number"),
    ],
)
def test_a_value_json_would_change_is_refused_with_its_place(text, named, fix):
    with pytest.raises(ValueError, match=f"To fix: {fix}") as exc:
        packaged.twin_text(text.encode(), "x")
    assert str(exc.value).startswith(named)


def test_a_data_file_is_read_as_every_yaml_is_a_plain_date_as_text_a_key_twice_refused():
    assert json.loads(packaged.twin_text(b"as_of: 2026-11-23\n", "x"))["data"] == {"as_of": "2026-11-23"}
    with pytest.raises(gpusizer.SpecError, match="gpusizer/x.*duplicate key 'a'"):
        packaged.twin_text(b"a: 1\na: 2\n", "x")


def test_a_current_twin_is_what_a_start_reads(tmp_path):
    # A twin whose digest matches is used without parsing the YAML: mark its data and see the mark come back.
    root = _copy(tmp_path, "data/images.yaml")
    twin = json.loads((root / "data/images.json").read_text(encoding="utf-8"))
    twin["data"]["marked"] = []
    (root / "data/images.json").write_text(json.dumps(twin), encoding="utf-8")
    assert packaged.load("data/images.yaml", root)["marked"] == []
