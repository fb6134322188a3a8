"""Redaction by parsing (gpusizer.base.redact, issue 24): URLs whatever their password holds, kubeconfig
credentials, AWS ids of every published prefix, run-time secrets; and every command's output, --debug
tracebacks, argparse errors and `catalog list` included."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from gpusizer import cli
from gpusizer.base import redact
from gpusizer.catalog import store
from tests import conftest
from tests.conftest import make_offer

PASSWORDS = ["S3cretPw", "p@ss", "pa/ss", "p@ss/w@rd", "a:b:c", "x%2Fy", "semi;colon", "tr@iling@"]


@pytest.mark.parametrize("password", PASSWORDS)
@pytest.mark.parametrize(
    "template",
    [
        "http://admin:{}@host",
        "http://admin:{}@host:9090",
        "https://admin:{}@host/p/q",
        "'http://admin:{}@10.0.0.5'",
        '"http://admin:{}@h.example.com:1/x?y=1"',
        "see (http://admin:{}@host)",
        "x,http://admin:{}@h",
    ],
)
def test_url_userinfo_is_masked_whatever_the_password_holds(template, password):
    text = f"cannot reach {template.format(password)}: timed out"
    out = redact.redact(text)
    assert password not in out and "admin" not in out and redact.MASK in out, out
    host = template.split("@")[-1].strip("'\")")[:4]
    assert host in out.split(redact.MASK, 1)[1]  # the host is still shown


@pytest.mark.parametrize(
    "url",
    [
        "http://prom:9090/api/v1/query",
        "https://example.com/a@b.c",
        "mailto:x@y.z",
        "http://[::1]:9090/x",
        "http://host:9090/?email=a@b.c",
    ],
)
def test_urls_without_userinfo_stay_as_written(url):
    assert redact.redact(url) == url


@pytest.mark.parametrize(
    "key", ["AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "APKA", "AROA", "ASCA", "A3T7"]
)
def test_aws_ids_of_every_published_prefix(key):
    secret = key + "Y34FZKBOKMUTVV7A"[: 20 - len(key)] + "QZ"[: max(0, len(key) - 4)]
    secret = secret[:20].ljust(20, "Q")
    for text in (secret, f"key={secret}", f'{{"AccessKeyId": "{secret}"}}', f"id {secret}."):
        assert secret not in redact.redact(text), text


def test_aws_secret_key_and_session_token_under_their_names():
    doc = {
        "Credentials": {
            "AccessKeyId": "ASIAY34FZKBOKMUTVV7A",
            "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
            "SessionToken": "IQoJb3JpZ2luX2VjEJr//////////wEaCXVz",
        }
    }
    out = redact.redact(json.dumps(doc))
    assert json.loads(out) and not any(v in out for v in doc["Credentials"].values())


KUBECONFIG = """\
apiVersion: v1
kind: Config
users:
- name: admin
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM4akNDQWRxZ0F3SUJBZ0lJZGVtbw==
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVB
- name: sa
  user:
    token: eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJl
"""


def test_kubeconfig_credentials():
    out = redact.redact(KUBECONFIG)
    for secret in ("LS0tLS1CRUdJTiBDRVJU", "LS0tLS1CRUdJTiBSU0Eg", "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9"):
        assert secret not in out
    assert "client-key-data: ***" in out and "name: admin" in out
    as_json = json.dumps({"users": [{"user": {"client-key-data": "LS0tLS1CRUdJTiBSU0Eg", "token": "abc.def.ghi"}}]})
    out = redact.redact(as_json)
    assert "LS0tLS1CRUdJTiBSU0Eg" not in out and "abc.def.ghi" not in out and json.loads(out)


def test_registered_secrets_are_masked_in_any_form():
    redact.register("Tr1cky pass/word")
    out = redact.redact("x Tr1cky pass/word y " + urllib.parse.quote("Tr1cky pass/word", safe=""))
    assert "Tr1cky" not in out and out.count(redact.MASK) == 2


@pytest.mark.slow  # eight fresh processes
def test_observe_error_line_and_debug_traceback_show_no_password():
    """The adversarial case: a URL with no port, the password in the error line and again under --debug."""
    for url in (
        "http://admin:S3cretPw@nonexistent.invalid",
        "http://admin:p@ss/w@rd@nonexistent.invalid",
        "http://admin:S3cretPw@[::1",
        "http://admin:S3cretPw@host:99999",
    ):
        for debug in ((), ("--debug",)):
            r = conftest.cli("observe", "--prometheus", url, *debug, conftest.REPO / "stacks/examples/chat-8b.yaml")
            assert r.returncode == 2, r.stderr
            for part in ("S3cretPw", "p@ss", "w@rd"):
                assert part not in r.stderr + r.stdout, (url, r.stderr)


def test_debug_traceback_of_an_internal_error_is_redacted(capsys, monkeypatch):
    import gpusizer

    def broken(*args, **kwargs):
        raise RuntimeError("fetch https://ops:hunter2-pw@prices.example.com failed with AKIAIOSFODNN7EXAMPLE")

    monkeypatch.setattr(gpusizer, "plan", broken)
    for debug in ([], ["--debug"]):
        code = cli.main([*debug, "plan", str(conftest.REPO / "stacks/examples/chat-8b.yaml")])
        err = capsys.readouterr().err
        assert code == 1 and "hunter2-pw" not in err and "AKIAIOSFODNN7EXAMPLE" not in err, err
        assert ("Traceback" in err) == bool(debug) and "prices.example.com" in err


def test_argparse_errors_are_redacted(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["plan", "x.yaml", "--format", "http://u:hunter2-pw@h"])
    assert e.value.code == 2 and "hunter2-pw" not in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_catalog_list_redacts_a_credential_bearing_source(tmp_path, fmt):
    source = "https://buyer:Pr1ceFeedPw@feed.example.com/gpu.csv?X-Amz-Signature=abcdef0123456789"
    csv = tmp_path / "catalog.csv"
    csv.write_text(store.format_offers([make_offer("g6.xlarge", "L4", 1, 22.35, 0.805, source=source)]))
    r = conftest.cli("catalog", "list", "--catalog", csv, "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert "Pr1ceFeedPw" not in r.stdout and "abcdef0123456789" not in r.stdout
    if fmt == "json":  # the table has no source column
        assert "feed.example.com" in json.loads(r.stdout)[0]["source"]


def test_a_url_whose_slashes_a_path_collapsed_is_still_masked():
    """`--catalog http://u:pw@h/x.csv` comes back from pathlib as http:/u:pw@h/x.csv in the error line."""
    r = conftest.cli("catalog", "list", "--catalog", "http://u:Hunter2xx@h/x.csv")
    assert r.returncode == 2 and "Hunter2xx" not in r.stderr and "h/x.csv" in r.stderr, r.stderr
    assert redact.redact("C:/Users/x and mailto:a@b.c") == "C:/Users/x and mailto:a@b.c"
