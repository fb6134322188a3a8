"""Machine images per family (gpusizer/data/images.yaml): coverage, sources, and the engine's rejection."""

from __future__ import annotations

import csv

import pytest

import gpusizer
from gpusizer.catalog import Catalog
from gpusizer.facts import images
from tests.components.conftest import REPO
from tests.conftest import make_offer


@pytest.mark.parametrize("provider", ["aws", "gcp"])
def test_every_packaged_catalog_family_has_a_row(provider):
    with open(REPO / f"gpusizer/data/catalog/{provider}.csv") as f:
        families = {images.family(provider, row["instance_type"]) for row in csv.DictReader(f)}
    assert families and all(
        images.for_type(provider, f"{fam}.x" if provider == "aws" else f"{fam}-x") for fam in families
    ), families


def test_every_row_names_its_source_and_either_an_image_or_a_reason():
    for row in images.table():
        assert row.source and row.families
        assert (row.unsupported is None) != (row.name is None and row.image is None)


SPEC = {
    "name": "chat",
    "model": {"name": "qwen2.5-1.5b"},
    "inference": {"batch_size": 1},
    "precision": "fp16",
    "placement": {"providers": ["aws"]},
}


def test_family_without_a_supported_image_is_rejected_and_the_plan_says_why():
    # g6f (half an L4, enough for the model, $0.20) is cheaper than g6 but needs GRID drivers no DLAMI ships.
    catalog = Catalog(
        (make_offer("g6f.2xlarge", "L4", 1, 11.0, 0.2, gpu_fraction=0.5), make_offer("g6.xlarge", "L4", 1, 22.0, 0.8))
    )
    d = gpusizer.plan(SPEC, catalog=catalog)
    assert d.chosen.offer.instance_type == "g6.xlarge"
    (lost,) = [c for c in d.candidates if c.offer.instance_type == "g6f.2xlarge"]
    assert lost.rejection.code == "image" and "GRID" in lost.rejection.detail
    assert "deploy.machine_image" in lost.rejection.detail


def test_own_machine_image_lifts_the_rejection():
    catalog = Catalog((make_offer("p3.2xlarge", "V100", 1, 15.8, 3.06),))
    assert gpusizer.plan(SPEC, catalog=catalog).chosen is None
    own = {**SPEC, "deploy": {"machine_image": "ami-0123456789abcdef0"}}
    assert gpusizer.plan(own, catalog=catalog).chosen.offer.instance_type == "p3.2xlarge"
