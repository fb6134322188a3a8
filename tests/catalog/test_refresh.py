"""Live refresh and the trust rules: EC2 on moto, Pricing and Service Quotas through botocore's Stubber."""

from __future__ import annotations

import datetime
import json

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

import gpusizer
from gpusizer.catalog import Catalog, cache
from gpusizer.catalog import refresh as refresh_mod
from gpusizer.catalog.refresh import aws

NOW = datetime.datetime(2026, 11, 23, 10, 0, tzinfo=datetime.UTC)
G6_PRICE = 0.7777  # a price no snapshot has, so the test sees the refreshed one


def _price_item(itype: str, usd: float) -> str:
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": itype, "regionCode": "us-east-1"}},
            "terms": {"OnDemand": {"X.Y": {"priceDimensions": {"X.Y.Z": {"pricePerUnit": {"USD": str(usd)}}}}}},
        }
    )


class StubbedSession:
    """EC2 from moto; Pricing and Service Quotas stubbed (moto does not implement them)."""

    def __init__(self, pricing_errors=(), quota_value=64.0, pricing_ok=True):
        self.real = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
        self.pricing = self.real.client("pricing", region_name="us-east-1")
        self.stub_p = Stubber(self.pricing)
        for code in pricing_errors:
            self.stub_p.add_client_error("get_products", service_error_code=code, http_status_code=400)
        if pricing_ok:
            self.stub_p.add_response(
                "get_products",
                {
                    "PriceList": [_price_item("g6.xlarge", G6_PRICE), _price_item("p5.48xlarge", 55.04)],
                    "FormatVersion": "aws_v1",
                },
                {"ServiceCode": "AmazonEC2", "Filters": ANY},
            )
        self.stub_p.activate()
        self.sq = self.real.client("service-quotas", region_name="us-east-1")
        self.stub_q = Stubber(self.sq)
        for code in aws.QUOTAS.values():
            self.stub_q.add_response(
                "get_service_quota",
                {"Quota": {"Value": quota_value, "QuotaCode": code}},
                {"ServiceCode": "ec2", "QuotaCode": code},
            )
        self.stub_q.activate()

    def client(self, service, region_name=None, config=None):
        if service == "pricing":
            return self.pricing
        if service == "service-quotas":
            return self.sq
        return self.real.client(service, region_name=region_name, config=config)


@pytest.fixture
def moto_ec2():
    with mock_aws():
        yield


# moto's EC2 backend loads its instance-type and offering tables (JSON, tens of MB) on first use:
# 3-10 s per test here even with DescribeInstanceTypes filtered to the G and P families.
slow_moto = pytest.mark.slow


@slow_moto
def test_refresh_writes_live_offers_quotas_and_a_manifest(moto_ec2):
    errors = refresh_mod.refresh("aws", ["us-east-1"], NOW, session=StubbedSession())
    assert errors == []
    entries, problems = cache.read()
    assert problems == []
    entry = entries["aws"]
    g6 = [o for o in entry.offers if o.instance_type == "g6.xlarge" and o.region == "us-east-1"]
    assert g6 and all(o.on_demand_usd == G6_PRICE and o.as_of == "2026-11-23" and o.zone for o in g6)
    assert entry.quotas[("aws", "us-east-1", "on-demand", "G")] == 64.0
    # Regions not refreshed keep their previous offers with their original dates.
    assert any(o.region == "us-east-2" and o.as_of < "2026-11-23" for o in entry.offers)


@slow_moto
def test_freshest_of_cache_and_snapshot_is_used(moto_ec2):
    refresh_mod.refresh("aws", ["us-east-1"], NOW, session=StubbedSession())
    cat = Catalog.load(today=NOW.date())
    assert any(o.on_demand_usd == G6_PRICE for o in cat.offers)
    assert any(n.startswith("aws: refreshed cache fetched 2026-11-23") for n in cat.notes)
    assert any(n.startswith("gcp embedded snapshot") or "gcp embedded snapshot" in n for n in cat.notes)
    # A cache older than the snapshot loses to it.
    old = NOW.replace(year=2024)
    entry = cache.read()[0]["aws"]
    cache.write(cache.CachedProvider("aws", entry.offers, old, entry.quotas))
    assert not any(o.on_demand_usd == G6_PRICE for o in Catalog.load(today=NOW.date()).offers)


def test_stale_prices_are_warned_loudly_with_a_configurable_bound(monkeypatch):
    notes = Catalog.load(today=datetime.date(2026, 11, 23)).notes
    assert any(n.startswith("WARNING") and "older than 90 days" in n for n in notes)
    monkeypatch.setenv("GPUSIZER_MAX_PRICE_AGE_DAYS", "1000")
    assert not any(n.startswith("WARNING") for n in Catalog.load(today=datetime.date(2026, 11, 23)).notes)


@slow_moto
def test_failed_provider_keeps_last_good_data_and_reports_one_line(moto_ec2):
    assert refresh_mod.refresh("aws", ["us-east-1"], NOW, session=StubbedSession()) == []
    later = NOW + datetime.timedelta(days=1)
    session = StubbedSession(pricing_errors=["AccessDeniedException"], pricing_ok=False)
    errors = refresh_mod.refresh("aws", ["us-east-1"], later, session=session)
    assert len(errors) == 1 and "\n" not in errors[0]
    assert "us-east-1: prices not refreshed (AccessDeniedException" in errors[0] and "kept" in errors[0]
    entry = cache.read()[0]["aws"]
    assert entry.fetched_at == NOW  # the last good refresh stands
    assert any(o.on_demand_usd == G6_PRICE for o in entry.offers)


def test_no_credentials_is_one_line(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    errors = refresh_mod.refresh("aws", ["us-east-1"], NOW, session=boto3.Session(region_name="us-east-1"))
    assert errors and "NoCredentialsError" in errors[0]
    assert cache.read()[0] == {}  # nothing refreshed: no cache written, the snapshot stays in use


@slow_moto
def test_corrupt_cache_is_ignored_and_reported(moto_ec2):
    refresh_mod.refresh("aws", ["us-east-1"], NOW, session=StubbedSession())
    path = cache.generation_dir() / "aws.csv"
    path.write_text(path.read_text()[: len(path.read_text()) // 2])  # a torn write
    cat = Catalog.load(today=NOW.date())
    assert any("ignored" in n and "checksum" in n for n in cat.notes)
    assert not any(o.on_demand_usd == G6_PRICE for o in cat.offers)  # never half-used
    assert any(o.provider == "aws" for o in cat.offers)  # the snapshot stands in


@slow_moto
def test_quotas_from_a_refresh_reject_offers_that_exceed_them(moto_ec2):
    refresh_mod.refresh("aws", ["us-east-1"], NOW, session=StubbedSession(quota_value=8.0))
    spec = {
        "name": "big",
        "model": {"name": "llama-3.1-70b"},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
    }
    d = gpusizer.plan(spec)
    p5 = [
        c
        for c in d.candidates
        if c.offer.instance_type == "p5.48xlarge"
        and c.purchase == "on-demand"
        and c.offer.region == "us-east-1"
        and not c.offer.opt_in
    ]
    assert p5 and all(c.rejection and c.rejection.code == "quota" for c in p5)
    assert "quota in us-east-1 is 8" in p5[0].rejection.detail
