"""Unknown regions, zones and GPU names are input errors naming the field and the nearest known names."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer import cli
from gpusizer.catalog import Catalog
from tests.conftest import make_offer

SPEC = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "placement": {"providers": ["aws"]}}


def _with_placement(**placement):
    return {**SPEC, "placement": {**SPEC["placement"], **placement}}


def test_unknown_region_names_the_field_and_the_nearest_region():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.plan(_with_placement(regions=["us-east-9"]))
    assert e.value.field == "placement.regions"
    assert "us-east-1" in str(e.value) and "To fix" in str(e.value)


def test_region_and_gpu_names_are_case_insensitive():
    d = gpusizer.plan(_with_placement(regions=["US-EAST-1"], gpus=["l4", "nvidia-l40s"]))
    assert d.chosen is not None
    assert d.chosen.offer.region == "us-east-1"
    assert d.workload.spec.placement.gpus == ["L4", "L40S"]


def test_a_zone_is_a_known_placement():
    offers = (
        make_offer("g6.xlarge", "L4", 1, 22.35, 0.805, zone="use1-az1"),
        make_offer("g6.2xlarge", "L4", 1, 22.35, 0.9, zone="use1-az2"),
    )
    d = gpusizer.plan(_with_placement(regions=["use1-az2"]), catalog=Catalog(offers))
    assert d.chosen.offer.zone == "use1-az2"


def test_unknown_gpu_names_the_nearest_known_gpu():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.plan(_with_placement(gpus=["H10"]))
    assert e.value.field == "placement.gpus"
    assert "H100" in str(e.value)


def test_cli_exits_2_on_an_unknown_region(tmp_path, capsys):
    path = tmp_path / "spec.yaml"
    path.write_text("name: chat\nmodel: {name: llama-3.1-8b}\nplacement: {providers: [aws], regions: [eu-wst-1]}\n")
    assert cli.main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "placement.regions" in err and "eu-west-1" in err and "Traceback" not in err


def test_with_on_prem_allowed_and_no_pools_a_spec_naming_no_known_place_is_an_input_error():
    # Providers left open include on-prem, whose pool locations are unknown without --pools: one unknown
    # name among known ones may be a pool's location (a stack plans the spec with its pools), but when no
    # name is known nothing could run (it used to exit 3 with an empty table).
    spec = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "placement": {"regions": ["us-east-9"]}}
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.plan(spec)
    assert e.value.field == "placement.regions" and "us-east-1" in str(e.value) and "--pools" in str(e.value)
    mixed = gpusizer.plan({**spec, "placement": {"regions": ["us-east-1", "fra-dc1"]}})
    assert mixed.chosen is not None and mixed.chosen.offer.region == "us-east-1"
