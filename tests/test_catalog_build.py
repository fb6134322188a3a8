"""The embedded snapshot: reproducible from the dated sources, loadable, and each pricing rule holds.

The sources are in the repository (data/catalog-sources): nothing here is skipped.
"""

from __future__ import annotations

import collections
import json
import re

import pytest

from gpusizer.base import errors
from gpusizer.catalog import store
from gpusizer.catalog.builder import __main__ as build_main
from gpusizer.catalog.builder import aws, gcp, spot_offer
from gpusizer.catalog.offer import CATALOG_FIELDS
from gpusizer.facts import hardware
from tests.conftest import DATA, REPO

SOURCES = DATA / "catalog-sources"
PACKAGED = REPO / "gpusizer" / "data" / "catalog"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(output directory, offers per provider) of one build from data/catalog-sources."""
    out = tmp_path_factory.mktemp("catalog")
    return out, build_main.build(SOURCES, out)


@pytest.fixture(scope="module")
def by_key(built):
    """(provider, instance type, zone or region) -> offer."""
    return {(o.provider, o.instance_type, o.zone or o.region): o for offers in built[1].values() for o in offers}


# --- the snapshot as a whole ---------------------------------------------------------------------


def test_snapshot_is_reproducible_byte_for_byte(built):
    out, _ = built
    for name in ("aws.csv", "gcp.csv", "offers.json", "SOURCES.md"):
        assert (out / name).read_bytes() == (PACKAGED / name).read_bytes(), (
            f"{name} differs: run `python -m gpusizer.catalog.builder --out gpusizer/data/catalog`"
        )


def test_two_builds_give_the_same_bytes(built, tmp_path):
    build_main.build(SOURCES, tmp_path)
    for name in ("aws.csv", "gcp.csv", "offers.json", "SOURCES.md"):
        assert (tmp_path / name).read_bytes() == (built[0] / name).read_bytes()


def test_packaged_snapshot_loads_with_sensible_counts():
    offers = store.load_offers()
    count = collections.Counter(o.provider for o in offers)
    types = {p: len({o.instance_type for o in offers if o.provider == p}) for p in count}
    regions = {p: len({o.region for o in offers if o.provider == p}) for p in count}
    assert set(count) == {"aws", "gcp"}
    assert 200 <= count["aws"] <= 400 and 700 <= count["gcp"] <= 1200
    assert types["aws"] >= 40 and types["gcp"] >= 35
    assert regions["aws"] >= 20 and regions["gcp"] >= 25
    assert store.load_offers() == offers  # cached, and a fresh list each call
    assert store.load_offers() is not store.load_offers()


def test_header_is_catalog_fields_and_rows_are_sorted():
    for name in ("aws.csv", "gcp.csv"):
        lines = (PACKAGED / name).read_text().splitlines()
        assert tuple(lines[0].split(",")) == CATALOG_FIELDS
        offers = store.load_offers(PACKAGED / name)
        assert offers == sorted(offers, key=build_main.sort_key)


def test_every_catalog_gpu_is_in_the_hardware_table():
    assert {o.gpu for o in store.load_offers()} <= set(hardware.load_gpus())


# Dates of the source files that carry none in their name (data/README.md, "as of" column): the
# p-family extract says only "2026", so its oldest possible day; the per-zone subset is undated and
# holds p5.4xlarge (sold since 2025), so it gets the oldest dated AWS source, the Spot Advisor's.
UNDATED = {"aws-p-family-per-zone-extract.csv": "2026-01-01", "aws-gpu-per-zone-subset.csv": "2025-06-28"}


def test_every_offer_is_dated_by_the_oldest_source_it_names(built):
    for o in built[1]["aws"] + built[1]["gcp"]:
        dates = re.findall(r"\d{4}-\d{2}-\d{2}", o.source) + [d for f, d in UNDATED.items() if f in o.source]
        assert dates, f"{o.instance_type}: source names no dated file: {o.source}"
        assert o.oldest_as_of == min(dates), (o.instance_type, o.source, o.as_of, o.spot_as_of)


def test_each_price_is_dated_by_its_own_source(built):
    # us-east-1: on-demand from the 2026-07-20 price list, spot from the 2025-06-28 Spot Advisor estimate (their
    # file names); a plan buying on-demand there must not be called 515 days old for a spot figure it does not use.
    (g6e,) = [o for o in built[1]["aws"] if (o.region, o.zone, o.instance_type) == ("us-east-1", None, "g6e.xlarge")]
    assert (g6e.price_as_of("on-demand"), g6e.price_as_of("spot")) == ("2026-07-20", "2025-06-28")
    for o in built[1]["aws"] + built[1]["gcp"]:
        spot_dates = re.findall(r"spot = .*?(\d{4}-\d{2}-\d{2})", o.source)
        if o.spot_usd is not None and spot_dates:
            assert o.price_as_of("spot") == spot_dates[0], (o.instance_type, o.source)


def test_one_offer_per_type_and_place(built):
    for offers in built[1].values():
        keys = [(o.region, o.zone, o.instance_type) for o in offers]
        assert len(keys) == len(set(keys))


# --- AWS ------------------------------------------------------------------------------------------


def test_every_aws_nvidia_x86_family_is_present_and_nothing_else(built):
    families = {o.instance_type.split(".")[0] for o in built[1]["aws"]}
    assert {
        "g4dn",
        "g5",
        "g6",
        "g6e",
        "gr6",
        "g6f",
        "gr6f",
        "p3",
        "p3dn",
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "p5en",
        "p6-b200",
    } <= families
    assert not families & {"g4ad", "g5g", "dl1", "g7e", "p6-b300"}  # AMD, Graviton, Habana, GPUs not in the table


@pytest.mark.parametrize(
    "itype, gib",
    [
        ("g6.xlarge", 22.35),  # L4: AWS 22888 MiB (nvidia-smi shows more, 23034)
        ("g5.xlarge", 22.35),  # A10G: AWS 22888 MiB
        ("g6e.xlarge", 44.70),  # L40S: AWS 45776 MiB
        ("g4dn.xlarge", 15.0),  # T4: AWS 16384 MiB, nvidia-smi 15360
        ("p5.48xlarge", 79.65),  # H100: AWS 81920 MiB, nvidia-smi 81559
        ("p4d.24xlarge", 39.59),  # A100 40GB: AWS 40960 MiB, nvidia-smi 40536
        ("p4de.24xlarge", 80.0),  # A100 80GB: AWS and nvidia-smi 81920 MiB
        ("p5en.48xlarge", 140.4),  # H200: nvidia-smi 143771 MiB
        ("p6-b200.48xlarge", 179.06),  # B200: nvidia-smi 183359 MiB
        ("p3dn.24xlarge", 31.75),  # the 32 GB V100 variant: nvidia-smi 32510 MiB, not the 16 GB row
    ],
)
def test_aws_gpu_memory_is_reported_capped_by_the_driver(by_key, itype, gib):
    assert by_key[("aws", itype, "us-east-1")].gpu_memory_gib == pytest.approx(gib)


@pytest.mark.parametrize(
    "itype, fraction, gib",
    [
        ("g6f.large", 0.125, 2.79),  # 1/8 L4: 2861 MiB
        ("g6f.xlarge", 0.125, 2.79),
        ("g6f.2xlarge", 0.25, 5.59),
        ("g6f.4xlarge", 0.5, 11.18),
        ("gr6f.4xlarge", 0.5, 11.18),
    ],
)
def test_fractional_gpus_carry_their_partition(by_key, itype, fraction, gib):
    o = by_key[("aws", itype, "us-east-1")]
    assert (o.gpu, o.gpu_count, o.gpu_fraction, o.gpu_memory_gib) == ("L4", 1, fraction, gib)


def test_us_east_1_is_regional_from_the_instance_list(by_key, built):
    g6 = by_key[("aws", "g6.xlarge", "us-east-1")]
    assert (g6.zone, g6.on_demand_usd, g6.spot_usd) == (None, 0.8048, 0.4104)
    # Shape and on-demand from the 2026-07-20 price file; spot from the Spot Advisor estimate, dated apart.
    assert "Spot Advisor estimate" in g6.source and (g6.as_of, g6.spot_as_of) == ("2026-07-20", "2025-06-28")
    # No Spot Advisor estimate: the per-zone snapshot's lowest AZ, its spot price dated with that file.
    p5 = by_key[("aws", "p5.4xlarge", "us-east-1")]
    assert p5.spot_usd == 5.4046 and "snapshot" in p5.source and p5.price_as_of("spot") == "2026-01-01"
    # No spot at all: on-demand only, dated with the price file.
    g6f = by_key[("aws", "g6f.large", "us-east-1")]
    assert g6f.spot_usd is None and g6f.as_of == "2026-07-20"
    # us-east-1's own AZs do not repeat the regional offer; its Local Zone does.
    assert not any(o.region == "us-east-1" and o.zone and not o.opt_in for o in built[1]["aws"])


def test_spot_estimate_is_on_demand_times_advisor_savings():
    advisor = json.loads((SOURCES / aws.SPOT_ADVISOR).read_text())["spot_advisor"]["us-east-1"]["Linux"]
    for o in store.load_offers():
        if o.provider == "aws" and o.zone is None and "Spot Advisor" in o.source:
            saving = advisor[o.instance_type]["s"]
            assert o.spot_usd == pytest.approx(o.on_demand_usd * (1 - saving / 100), abs=1e-4), o.instance_type


def test_other_regions_are_per_zone_and_the_newer_extract_wins(by_key):
    assert by_key[("aws", "g5.xlarge", "euc1-az1")].region == "eu-central-1"
    # p5.48xlarge in use2-az1 is in both per-zone files; the v9 extract (2026) wins over the v8 subset.
    p5 = by_key[("aws", "p5.48xlarge", "use2-az1")]
    assert p5.as_of == "2026-01-01" and aws.P_FAMILY in p5.source and p5.spot_usd == 13.4628


def test_spot_at_or_above_on_demand_is_no_spot_offer(built, by_key):
    assert spot_offer(55.04, 55.04) is None and spot_offer(6.88, 6.9) is None and spot_offer(6.88, 5.4) == 5.4
    # Per-zone subset: p5.48xlarge in cac1-az4 has spot 63.296 == on-demand; p4d in euc1-az3
    # spot 27.433 > on-demand 27.43298. Both stay on-demand offers, without spot.
    for itype, zone, od in (("p5.48xlarge", "cac1-az4", 63.296), ("p4d.24xlarge", "euc1-az3", 27.43298)):
        o = by_key[("aws", itype, zone)]
        assert (o.on_demand_usd, o.spot_usd) == (od, None)
    for o in built[1]["aws"] + built[1]["gcp"]:
        assert o.spot_usd is None or o.on_demand_usd is None or o.spot_usd < o.on_demand_usd


def test_types_without_on_demand_are_spot_only(built):
    p5e = [o for o in built[1]["aws"] if o.instance_type == "p5e.48xlarge"]
    assert {o.zone for o in p5e} == {"use2-az2", "usw2-az3"}
    assert all(o.on_demand_usd is None and o.spot_usd and o.gpu == "H200" and o.gpu_count == 8 for o in p5e)


@pytest.mark.parametrize(
    "region, zone, opt_in",
    [
        ("us-east-1", "use1-atl2-az1", True),  # Atlanta Local Zone (id)
        ("us-east-1", "us-east-1-bos-1a", True),  # Boston Local Zone (name)
        ("us-west-2", "usw2-lax1-az1", True),
        ("af-south-1", "afs1-az1", True),  # opt-in region
        ("me-central-1", None, True),
        ("us-east-1", "use1-az1", False),
        ("us-east-1", "us-east-1a", False),
        ("eu-central-1", "euc1-az1", False),
    ],
)
def test_local_zones_and_opt_in_regions_are_marked(region, zone, opt_in):
    assert aws.is_opt_in(region, zone) is opt_in


def test_opt_in_marks_reach_the_catalog(built):
    offers = built[1]["aws"]
    assert any(o.opt_in and o.zone == "use1-atl2-az1" for o in offers)
    assert all(o.opt_in for o in offers if o.region in aws.OPT_IN_REGIONS)
    assert not any(o.opt_in for o in offers if o.region == "eu-central-1")


def test_aws_network_nvme_nvlink_and_efa(by_key):
    assert aws.network_gbps("Up to 10 Gigabit") == 10 and aws.network_gbps("4x 100 Gigabit") == 400
    g6 = by_key[("aws", "g6.xlarge", "us-east-1")]
    assert (g6.network_gbps, g6.local_nvme_gib, g6.nvlink, g6.fabric) == (10, 232.8, False, None)  # 250 GB NVMe
    assert by_key[("aws", "g6.8xlarge", "us-east-1")].fabric == "efa"  # EFA on a 1-GPU type counts
    p5 = by_key[("aws", "p5.48xlarge", "us-east-1")]
    assert (p5.network_gbps, p5.nvlink, p5.fabric) == (3200, True, "efa")
    assert by_key[("aws", "p4d.24xlarge", "us-east-1")].network_gbps == 400
    assert by_key[("aws", "p5e.48xlarge", "use2-az2")].network_gbps == 3200  # from the megabits table


# --- GCP ------------------------------------------------------------------------------------------


def test_gcp_price_is_host_plus_gpus_in_the_same_zone(by_key):
    # us-central1-a: g2-standard-48 host 1.7615 + the 4 x L4 row 2.24016
    g2 = by_key[("gcp", "g2-standard-48", "us-central1-a")]
    assert (g2.gpu, g2.gpu_count, g2.on_demand_usd) == ("L4", 4, pytest.approx(1.7615 + 2.24016))
    # N1: n1-standard-8 host 0.38 + the 2 x T4 row 0.70
    n1 = by_key[("gcp", "n1-standard-8+nvidia-tesla-t4x2", "us-central1-a")]
    assert (n1.gpu, n1.gpu_count, n1.vcpus, n1.on_demand_usd) == ("T4", 2, 8, pytest.approx(1.08))


def test_gcp_host_priced_zero_is_inside_the_gpu_row(by_key):
    # Host row 0.0 / 0.0, B200 x8 row 90.216 on-demand / 34.2368 spot: the GPU row is the whole price.
    a4 = by_key[("gcp", "a4-highgpu-8g", "us-central1-b")]
    assert (a4.gpu, a4.gpu_count, a4.spot_usd, a4.fabric) == ("B200", 8, 34.2368, "rdma")


@pytest.mark.parametrize(
    "itype, zone, listed",
    [
        ("a4-highgpu-8g", "us-central1-b", 90.216),  # the B200 x8 row's on-demand column
        ("a3-highgpu-1g", "asia-east1-c", 12.71266),  # host + H100 x1 rows
    ],
)
def test_gcp_types_not_sold_on_demand_get_no_on_demand_price(by_key, itype, zone, listed):
    # GCP sells A4, A3 Ultra and a3-highgpu-1g/2g/4g through reservations, flex-start and spot only:
    # the snapshot's on-demand column (`listed`) is no price any VM is billed at.
    o = by_key[("gcp", itype, zone)]
    assert o.on_demand_usd is None and o.spot_usd is not None
    assert "not sold on demand" in o.source
    assert listed  # the figure the snapshot carried and the builder dropped


def test_no_packaged_gcp_offer_not_sold_on_demand_has_an_on_demand_price(by_key):
    from gpusizer.catalog import consumption

    wrong = [
        k
        for k, o in by_key.items()
        if o.on_demand_usd is not None and not consumption.sold_on_demand(o.provider, o.instance_type)
    ]
    assert not wrong


@pytest.mark.parametrize(
    "itype, zone, gpu, count, nvlink, fabric",
    [
        ("g2-standard-4", "us-central1-a", "L4", 1, False, None),
        ("g2-standard-24", "us-central1-a", "L4", 2, False, None),
        ("g2-standard-96", "us-central1-a", "L4", 8, False, None),  # PCIe cards, 8 of them
        ("a2-highgpu-8g", "us-central1-a", "A100-40GB", 8, True, None),
        ("a2-megagpu-16g", "us-central1-a", "A100-40GB", 16, True, None),
        ("a2-ultragpu-8g", "us-east5-a", "A100-80GB", 8, True, None),
        ("a3-highgpu-2g", "us-east4-a", "H100", 2, True, None),
        ("a3-highgpu-8g", "us-east4-a", "H100", 8, True, "gpudirect-tcpx"),
        ("a3-megagpu-8g", "us-central1-a", "H100", 8, True, "gpudirect-tcpxo"),  # H100-MEGA is an H100
        ("a3-ultragpu-8g", "us-central1-b", "H200", 8, True, "rdma"),
        ("n1-standard-32+nvidia-tesla-v100x8", "us-central1-a", "V100", 8, True, None),
        ("n1-standard-16+nvidia-tesla-v100x4", "us-central1-a", "V100", 4, False, None),
    ],
)
def test_gcp_machine_families_come_with_their_gpus(by_key, itype, zone, gpu, count, nvlink, fabric):
    o = by_key[("gcp", itype, zone)]
    assert (o.gpu, o.gpu_count, o.nvlink, o.fabric) == (gpu, count, nvlink, fabric)


def test_gcp_n1_gpus_only_in_allowed_counts_on_the_smallest_host(built):
    n1 = [o for o in built[1]["gcp"] if o.instance_type.startswith("n1-")]
    counts = collections.defaultdict(set)
    for o in n1:
        host, accel = o.instance_type.split("+")
        counts[o.gpu].add(o.gpu_count)
        assert host == f"n1-standard-{gcp.N1_VCPUS_PER_GPU * o.gpu_count}" == f"n1-standard-{o.vcpus}"
        assert accel == f"{gcp.ACCELERATOR_TYPE[o.gpu]}x{o.gpu_count}"
        assert o.vcpus <= gcp.N1_MAX_VCPUS[o.gpu][o.gpu_count]
    assert dict(counts) == {"T4": {1, 2, 4}, "V100": {1, 2, 4, 8}, "P100": {1, 2, 4}, "P4": {1, 2, 4}}


def test_gcp_discounted_h100_on_demand_is_not_trusted(by_key):
    # us-central1: the H100 GPU row is 4.20 $/GPU-h, H100-MEGA there 10.34 and H100 in us-east4 9.80.
    tiers = gcp.discounted_tiers(gcp._read(SOURCES)[1])
    assert set(tiers) == {"A100-40GB", "A100-80GB", "B200", "H100", "H200"}  # L4, T4, V100 ... are one tier
    a3 = by_key[("gcp", "a3-highgpu-8g", "us-central1-a")]
    assert a3.on_demand_usd is None and a3.spot_usd == pytest.approx(3.86318 + 32.0104)  # spot only
    assert by_key[("gcp", "a3-megagpu-8g", "us-central1-a")].on_demand_usd == pytest.approx(9.46006 + 82.75421)
    assert by_key[("gcp", "a3-highgpu-8g", "us-east4-a")].on_demand_usd == pytest.approx(9.46006 + 78.37241)
    # MEGA has the same defect elsewhere, so substituting the MEGA rate would not help:
    assert by_key[("gcp", "a3-megagpu-8g", "europe-west1-b")].on_demand_usd is None
    assert by_key[("gcp", "a3-highgpu-8g", "europe-west1-b")].on_demand_usd == pytest.approx(10.41647 + 86.29584)


def test_gcp_spot_needs_both_parts_and_consistent_rows(by_key):
    # H200 in asia-south1-b: GPU spot 38.74 > its own on-demand 36.60 (and that on-demand is in the
    # discounted tier): no price is trusted, so no offer.
    assert ("gcp", "a3-ultragpu-8g", "asia-south1-b") not in by_key
    # A100-80GB in us-central1-a: spot 1.964 > on-demand 1.8462 per GPU: no offer either.
    assert ("gcp", "a2-ultragpu-1g", "us-central1-a") not in by_key
    edge = by_key[("gcp", "a3-edgegpu-8g", "asia-northeast3-a")]  # host and GPU spot both there
    assert edge.spot_usd == pytest.approx(3.20694 + 26.5784)


@pytest.mark.parametrize(
    "host_spot, gpu_spot, spot",
    [
        ("0.1", "0.2", 0.3),  # both parts: their sum
        ("", "0.2", None),  # no host spot: no spot offer
        ("0.1", "", None),  # no GPU spot: no spot offer
        ("0.1", "0.95", None),  # sum 1.05 >= on-demand 1.0
    ],
)
def test_gcp_spot_needs_host_and_gpu_spot(tmp_path, host_spot, gpu_spot, spot):
    # A tiny snapshot in the source layout: one G2 host and its L4 row in one zone.
    (tmp_path / gcp.SOURCE).write_text(
        "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
        f"g2-standard-4,4.0,16.0,,,,us-central1,us-central1-a,0.2,{host_spot}\n"
        f",,,L4,1,,us-central1,us-central1-a,0.8,{gpu_spot}\n"
    )
    (o,) = gcp.build(tmp_path).offers
    assert o.on_demand_usd == pytest.approx(1.0)
    assert o.spot_usd == (pytest.approx(spot) if spot else None)


def test_gcp_memory_is_the_driver_figure(by_key):
    assert by_key[("gcp", "g2-standard-4", "us-central1-a")].gpu_memory_gib == 22.49  # GpuInfo says 24576 MiB
    assert by_key[("gcp", "a3-megagpu-8g", "us-central1-a")].gpu_memory_gib == 79.65


# --- the hardware table ---------------------------------------------------------------------------


def test_gpu_table_precisions_match_the_architectures():
    gpus = hardware.load_gpus()
    assert set(gpus) >= {
        "T4",
        "L4",
        "A10G",
        "L40S",
        "A100-40GB",
        "A100-80GB",
        "H100",
        "H200",
        "B200",
        "V100",
        "P100",
        "P4",
    }
    for g in gpus.values():
        assert ("fp8" in g.tflops) == (g.arch in ("Ada Lovelace", "Hopper", "Blackwell")), g.name
        assert ("bf16" in g.tflops) == (g.arch not in ("Turing", "Volta", "Pascal")), g.name
        # Nominal "GB" is in practice GiB (an 80 GB A100 shows 81920 MiB); the driver never shows more.
        assert 0.9 * g.memory_gb < g.memory_gib <= g.memory_gb, g.name


@pytest.mark.parametrize(
    "spelling, gpu",
    [
        ("nvidia-tesla-t4", "T4"),
        ("nvidia-l4", "L4"),
        ("nvidia-tesla-a100", "A100-40GB"),
        ("nvidia-a100-80gb", "A100-80GB"),
        ("nvidia-h100-80gb", "H100"),
        ("nvidia-h100-mega-80gb", "H100"),
        ("H100-MEGA", "H100"),
        ("nvidia-h200-141gb", "H200"),
        ("nvidia-b200", "B200"),
        ("nvidia-tesla-v100", "V100"),
        ("nvidia-tesla-p100", "P100"),
        ("nvidia-tesla-p4", "P4"),
        ("A10G", "A10G"),
        ("A100-80GB", "A100-80GB"),
        ("L40S", "L40S"),
        ("a10", None),  # the A10 is a different board from the A10G
    ],
)
def test_provider_spellings_resolve(spelling, gpu):
    assert hardware.canonical_gpu(spelling) == gpu


def test_aliases_are_unambiguous():
    owner: dict[str, str] = {}
    for g in hardware.load_gpus().values():
        for spelling in (g.name, *g.aliases):
            key = hardware._norm(spelling)
            assert owner.setdefault(key, g.name) == g.name, f"{spelling} names {owner[key]} and {g.name}"


# --- the store ------------------------------------------------------------------------------------


def _one_row(**changes) -> str:
    row = dict(zip(CATALOG_FIELDS, (PACKAGED / "aws.csv").read_text().splitlines()[1].split(",")))
    row.update(changes)
    return ",".join(CATALOG_FIELDS) + "\n" + ",".join(row[f] for f in CATALOG_FIELDS) + "\n"


def test_store_converts_cells():
    text = _one_row(zone="", fabric="", spot_usd="", nvlink="true", opt_in="false", gpu_count="4")
    (o,) = store.parse_offers(text, "x.csv")
    assert (o.zone, o.fabric, o.spot_usd, o.nvlink, o.opt_in, o.gpu_count) == (None, None, None, True, False, 4)
    assert isinstance(o.on_demand_usd, float) and isinstance(o.vcpus, int)


@pytest.mark.parametrize(
    "changes, says",
    [
        ({"on_demand_usd": "0"}, "not a real price"),
        ({"on_demand_usd": "-1"}, "not a real price"),
        ({"on_demand_usd": "", "spot_usd": ""}, "no on-demand or spot price"),
        ({"nvlink": "yes"}, "true or false"),
        ({"gpu": "K80"}, "not a canonical name"),
        ({"gpu_count": "two"}, "invalid literal"),
        ({"as_of": "July 2026"}, "isoformat"),
        ({"vcpus": ""}, "vcpus is empty"),
        ({"gpu_memory_gib": "nan"}, "gpu_memory_gib is nan"),
    ],
)
def test_store_refuses_a_bad_row_naming_file_and_line(tmp_path, changes, says):
    good = _one_row()
    bad = tmp_path / "aws.csv"
    bad.write_text(good + _one_row(**changes).splitlines()[1] + "\n")
    with pytest.raises(errors.CatalogError) as e:
        store.load_offers(tmp_path)  # the good first row is not returned either
    assert str(bad) in str(e.value) and "line 3" in str(e.value) and says in str(e.value)


def test_store_refuses_a_wrong_header_and_duplicates(tmp_path):
    (tmp_path / "a.csv").write_text(_one_row().replace("gpu_memory_gib", "gpu_memory_gb", 1))
    with pytest.raises(errors.CatalogError) as e:
        store.load_offers(tmp_path / "a.csv")
    assert "line 1: header does not match CATALOG_FIELDS" in str(e.value)
    (tmp_path / "a.csv").write_text(_one_row())
    (tmp_path / "b.csv").write_text(_one_row())
    with pytest.raises(errors.CatalogError) as e:
        store.load_offers(tmp_path)
    assert "appears twice" in str(e.value)
    with pytest.raises(errors.CatalogError):
        store.load_offers(tmp_path / "missing")


def test_format_round_trips():
    offers = store.load_offers(PACKAGED / "gcp.csv")
    assert store.format_offers(offers) == (PACKAGED / "gcp.csv").read_text()


def test_a_cache_written_before_spot_as_of_still_reads():
    # A refresh cache from before 2026-11-25 has no spot_as_of column: its rows date both prices with as_of.
    current = (REPO / "gpusizer/data/catalog/aws.csv").read_text().splitlines()
    # Rows whose spot price today has a date of its own: read in the old format, that date is gone.
    dated = [line for line in current[1:] if line.rsplit(",", 1)[1] not in ("", line.rsplit(",", 2)[1])][:2]
    older = "\n".join(line.rsplit(",", 1)[0] for line in [current[0], *dated]) + "\n"
    offers = store.parse_offers(older, "old.csv")
    assert len(offers) == 2 and all(o.spot_as_of is None and o.price_as_of("spot") == o.as_of for o in offers)
    assert all(o.as_of != line.rsplit(",", 1)[1] for o, line in zip(offers, dated))  # not the current spot date
