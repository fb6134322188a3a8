"""Every provider is registered once and every place that lists providers reads that registry."""

from __future__ import annotations

import inspect
import pathlib

import pytest

import gpusizer
from gpusizer import cli
from gpusizer import spec as spec_mod
from gpusizer.base import providers
from gpusizer.catalog import offer as offer_mod
from gpusizer.catalog import store
from tests import offer_contract
from tests.conftest import REPO

SNAPSHOT = pathlib.Path(gpusizer.__file__).parent / "data" / "catalog"


class TestAwsOffers(offer_contract.OfferContract):
    provider = "aws"
    region_pattern = r"[a-z]{2}(-gov)?-[a-z]+-\d"  # us-east-1, us-gov-west-1

    def offers(self):
        return store.load_offers(SNAPSHOT / "aws.csv")


class TestGcpOffers(offer_contract.OfferContract):
    provider = "gcp"
    region_pattern = r"[a-z]+-[a-z]+\d+"  # us-central1, europe-west4

    def offers(self):
        return store.load_offers(SNAPSHOT / "gcp.csv")


class TestOnpremOffers(offer_contract.OfferContract):
    provider = "onprem"

    def offers(self):
        # The pool of the bundled hybrid stack, priced from its cost of ownership.
        import yaml

        config = yaml.safe_load((REPO / "stacks" / "Pulumi.hybrid.yaml").read_text())["config"]
        return [o for p in gpusizer.parse_pools(config["gpusizer:pools"]) for o in p.to_offers()]


def test_every_registered_provider_passes_the_offer_contract():
    checked = {c.provider for c in offer_contract.OfferContract.__subclasses__()}
    assert checked == set(providers.NAMES)


def test_every_list_of_providers_is_the_registry():
    names = list(providers.NAMES)
    assert list(spec_mod.Provider.__args__) == names
    assert "PROVIDERS" not in vars(offer_mod)  # one list of names: gpusizer.base.providers.NAMES
    parser = cli._parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["catalog"]
    catalog_sub = next(a for a in sub._actions if a.dest == "catalog_command").choices
    listed = next(a for a in catalog_sub["list"]._actions if a.dest == "provider").choices
    refreshed = next(a for a in catalog_sub["refresh"]._actions if a.dest == "provider").choices
    assert list(listed) == names
    assert list(refreshed) == [p.name for p in providers.REGISTRY if p.refresher]


def test_an_unregistered_provider_is_refused_by_the_spec_and_the_catalog(tiny_catalog):
    with pytest.raises(gpusizer.SpecError) as exc:
        gpusizer.load_spec({"name": "x", "model": {"name": "llama-3.1-8b"}, "placement": {"providers": ["azure"]}})
    assert exc.value.field == "placement.providers.0"
    assert "'aws', 'gcp' or 'onprem'" in str(exc.value)
    import dataclasses

    with pytest.raises(gpusizer.CatalogError):
        dataclasses.replace(tiny_catalog.offers[0], provider="azure")


@pytest.mark.parametrize("provider", providers.REGISTRY, ids=lambda p: p.name)
def test_each_provider_has_its_modules_with_the_shared_signatures(provider):
    if provider.builder:
        assert list(inspect.signature(provider.module("builder").build).parameters) == ["sources"]
        assert (SNAPSHOT / f"{provider.name}.csv").is_file()  # the snapshot ships its CSV
    if provider.refresher:
        params = list(inspect.signature(provider.module("refresher").refresh).parameters)
        assert params[:4] == ["regions", "previous", "now", "session"]
    component = provider.module("component")
    assert list(inspect.signature(component.provision).parameters) == ["name", "plan", "args", "opts"]
    assert list(inspect.signature(component.check).parameters) == ["plan", "args"]


def test_a_provider_without_a_module_for_a_concern_says_so():
    with pytest.raises(LookupError) as exc:
        providers.get("onprem").module("refresher")
    assert "onprem has no refresher" in str(exc.value)


def test_aws_quota_classes_follow_the_service_quota_families():
    # AWS "Running On-Demand G and VT instances" vs "Running On-Demand P instances".
    aws = providers.get("aws")
    assert [aws.quota_class(t) for t in ("g6.xlarge", "vt1.3xlarge", "p5.48xlarge")] == ["G", "G", "P"]


def test_the_engine_tells_owned_capacity_by_the_registry_flag_not_by_name():
    # "onprem" is named by its registry entry and its own catalog module; everything else reads
    # providers.OWNED (or Provider.owned), so a second owned provider needs no edit elsewhere.
    own = {REPO / "gpusizer/base/providers.py", REPO / "gpusizer/catalog/onprem.py"}
    named = [
        p.relative_to(REPO).as_posix()
        for p in (REPO / "gpusizer").rglob("*.py")
        if p not in own and '"onprem"' in p.read_text()
    ]
    assert named == []
    assert providers.OWNED == tuple(p.name for p in providers.REGISTRY if p.owned) == ("onprem",)


def test_the_pack_reads_sizing_for_every_registered_provider():
    from gpusizer.policies import resources

    assert set(resources.SIZING) == set(providers.NAMES)
    assert {k.provider for k in resources.KINDS.values()} <= set(providers.NAMES)
