"""The compact form of the packaged snapshot (offers.json): equal to parsing the CSVs, and never used stale."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from gpusizer.base import errors
from gpusizer.catalog import compact, store
from gpusizer.catalog.builder import __main__ as build_main
from gpusizer.catalog.offer import CATALOG_FIELDS
from tests.conftest import REPO

PACKAGED = REPO / "gpusizer" / "data" / "catalog"


def _typed(offers) -> list[tuple]:
    """Every field with its type: == alone takes 1 for 1.0 and True."""
    return [tuple((type(v).__name__, v) for v in dataclasses.astuple(o)) for o in offers]


def _parsed(directory) -> list:
    offers = []
    for name, data in compact.csv_sources(directory):
        offers += store.parse_offers(data.decode("utf-8"), name)
    return offers


@pytest.fixture
def copy(tmp_path):
    """A copy of the packaged catalog directory (CSVs and offers.json)."""
    out = tmp_path / "data" / "catalog"
    shutil.copytree(PACKAGED, out)
    return out


@pytest.fixture
def packaged_at(monkeypatch):
    """Point store's packaged snapshot at a directory `root`/data/catalog; the real one again afterwards."""

    def point(root):
        monkeypatch.setattr(store.importlib.resources, "files", lambda package: root)
        store._packaged.cache_clear()

    yield point
    store._packaged.cache_clear()


def test_packaged_compact_form_equals_parsing_the_csvs():
    from_compact = compact.read(PACKAGED / compact.NAME, compact.csv_sources(PACKAGED))
    assert from_compact is not None, "offers.json is stale: run `python -m gpusizer.catalog.builder`"
    assert _typed(from_compact) == _typed(_parsed(PACKAGED))
    assert _typed(store.load_offers()) == _typed(from_compact)


def test_offers_from_the_compact_form_are_frozen_and_hash_like_parsed_ones():
    offer = compact.read(PACKAGED / compact.NAME, compact.csv_sources(PACKAGED))[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        offer.on_demand_usd = 0.01
    assert hash(offer) == hash(_parsed(PACKAGED)[0])


def test_rewriting_the_compact_form_after_a_csv_edit_makes_it_current_again(copy, capsys):
    csv = copy / "aws.csv"
    lines = csv.read_text().splitlines(keepends=True)
    row = lines[1].split(",")
    row[CATALOG_FIELDS.index("ram_gib")] = "123.5"
    csv.write_text("".join([lines[0], ",".join(row)] + lines[2:]))
    assert compact.read(copy / compact.NAME, compact.csv_sources(copy)) is None
    assert build_main.main(["--compact-only", "--out", str(copy)]) == 0
    offers = compact.read(copy / compact.NAME, compact.csv_sources(copy))
    assert offers is not None and offers[0].ram_gib == 123.5
    assert _typed(offers) == _typed(_parsed(copy))


def _edit_csv(copy):
    """One byte: the last row's as_of day (its last column) moves by one, still a valid date."""
    path = copy / "gcp.csv"
    text = path.read_text()
    path.write_text(text[:-2] + ("1" if text[-2] == "0" else "0") + "\n")


def _edit_payload(copy):
    path = copy / compact.NAME
    head, body = path.read_text().split("\n", 1)
    path.write_text(head + "\n" + body.replace('"aws"', '"gcp"', 1))


def _edit_header(key, value):
    def edit(copy):
        path = copy / compact.NAME
        head, body = path.read_text().split("\n", 1)
        header = json.loads(head)
        header[key] = value
        path.write_text(json.dumps(header) + "\n" + body)

    return edit


def _unknown_gpu(copy):
    """Consistent digests, but a GPU that gpus.yaml no longer names (renamed since the file was written)."""
    sources = compact.csv_sources(copy)
    offers = [dataclasses.replace(o, gpu="H100-RENAMED") if o.gpu == "H100" else o for o in _parsed(copy)]
    (copy / compact.NAME).write_text(compact.dumps(sources, offers))


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(_edit_csv, id="a CSV edited after the compact form was written"),
        pytest.param(lambda c: shutil.copy(c / "aws.csv", c / "extra.csv"), id="a CSV added"),
        pytest.param(lambda c: (c / "gcp.csv").unlink(), id="a CSV removed"),
        pytest.param(_edit_payload, id="the columns edited without their digest"),
        pytest.param(_edit_header("fields", list(CATALOG_FIELDS[:-1])), id="other columns than CATALOG_FIELDS"),
        pytest.param(_edit_header("format", "gpusizer-offer-columns/0"), id="an older format"),
        pytest.param(lambda c: (c / compact.NAME).write_text((c / compact.NAME).read_text()[:5000]), id="truncated"),
        pytest.param(lambda c: (c / compact.NAME).write_bytes(b"\xff\xfe not json"), id="not UTF-8 JSON"),
        pytest.param(lambda c: (c / compact.NAME).unlink(), id="missing"),
        pytest.param(_unknown_gpu, id="a GPU not in gpus.yaml"),
    ],
)
def test_a_compact_form_that_does_not_match_its_csvs_is_ignored(copy, tamper):
    tamper(copy)
    assert compact.read(copy / compact.NAME, compact.csv_sources(copy)) is None


def test_a_stale_compact_form_is_never_used_the_csvs_are_parsed_instead(copy, packaged_at):
    csv = copy / "aws.csv"
    lines = csv.read_text().splitlines(keepends=True)
    row = lines[1].split(",")
    price = CATALOG_FIELDS.index("on_demand_usd")
    row[price] = "0.123456"
    csv.write_text("".join([lines[0], ",".join(row)] + lines[2:]))
    packaged_at(copy.parent.parent)
    first = store.load_offers()[0]
    assert first.on_demand_usd == 0.123456 and first.instance_type == row[CATALOG_FIELDS.index("instance_type")]


def test_a_corrupt_packaged_csv_fails_with_a_catalog_error_naming_file_and_line(copy, packaged_at):
    csv = copy / "gcp.csv"
    lines = csv.read_text().splitlines(keepends=True)
    row = lines[3].split(",")
    row[CATALOG_FIELDS.index("gpu_count")] = "many"
    csv.write_text("".join(lines[:3] + [",".join(row)] + lines[4:]))
    packaged_at(copy.parent.parent)
    with pytest.raises(errors.CatalogError, match=r"gpusizer/data/catalog/gcp\.csv line 4: .*many"):
        store.load_offers()


@pytest.mark.parametrize("bug", ["a row short", "an index past the values"])
def test_inconsistent_columns_are_ignored_even_with_a_matching_digest(copy, bug):
    """A writer bug, not an edit: the digests match, but one column is a row short, or a row's index
    points past its column's distinct values."""
    head, body = (copy / compact.NAME).read_text().split("\n", 1)
    columns = json.loads(body)
    if bug == "a row short":
        columns[3][1].pop()
    else:
        columns[3][1][-1] = len(columns[3][0])
    header = json.loads(head)
    text = json.dumps(columns, separators=(",", ":"))
    header["sha256"] = compact._digest(text.encode())
    assert compact.loads(json.dumps(header) + "\n" + text + "\n", compact.csv_sources(copy)) is None
