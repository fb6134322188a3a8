"""`gpusizer observe` authenticating to Prometheus the ways managed and proxied servers require, each against a
local server that enforces it (tests/measure/fake_prometheus.py), and no credential in any output.

- basic: the server compares the Authorization header with RFC 7617's encoding of the expected pair;
- bearer: the exact token;
- AWS SigV4 (Amazon Managed Service for Prometheus): the server recomputes the signature with botocore's own
  SigV4Auth from the headers the request says it signed and the known secret key, and checks the credential
  scope (service aps, region) and the clock;
- Google (Managed Service for Prometheus): real google-auth end to end. GOOGLE_APPLICATION_CREDENTIALS names a
  service-account key file (an RSA key made here) whose token_uri is the local server; google.auth.default()
  loads it, signs a JWT assertion and refreshes over HTTP; the token endpoint verifies the JWT with the public
  key (google.auth.jwt) and issues an access token, which the query endpoint requires. What is not exercised:
  Google's real token service, and ADC sources other than a key file (gcloud user credentials, the metadata
  server, workload identity federation), which google.auth.default() resolves the same way for gpusizer.
"""

from __future__ import annotations

import base64
import datetime
import hmac
import json
import re
import urllib.parse

import pytest
import yaml

from gpusizer import cli
from tests.measure import dcgm_openmetrics as om
from tests.measure import fake_prometheus as fake

END = "2026-11-23T12:00:00Z"
PASSWORD = "p@ss/w:rd S3cret!"  # '@', '/', ':' and a space: every character a URL parser trips on
USER = "gpusizer"
TOKEN = "eyJhbGciOiJSUzI1NiJ9.bearer-secret-4711"
AWS_KEY_ID, AWS_SECRET, AWS_TOKEN = (
    "ASIAY34FZKBOKMUTVV7A",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    "IQoJb3JpZ2luX2VjEXAMPLEsessiontoken",
)
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
GOOGLE_ACCESS_TOKEN = "ya29.local-access-token-8e1f"


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "chat-oversized.yaml"
    path.write_text(yaml.safe_dump(om.SPECS["chat-oversized"]))
    return path


def enforcing(check):
    """A DCGM-answering handler that first requires `check(request)`, else answers 401 as Prometheus proxies do."""
    answer = fake.dcgm_answer()

    def handle(request):
        if not check(request):
            fake.send_json(
                request, {"status": "error", "errorType": "unauthorized", "error": "authentication failed"}, 401
            )
            return
        answer(request)

    return handle


def run(capsys, *args, secrets=()):
    code = cli.main(["observe", "--end", END, "--format", "json", *map(str, args)])
    out, err = capsys.readouterr()
    for secret in secrets:
        for form in (
            secret,
            urllib.parse.quote(secret, safe=""),
            base64.b64encode(f"{USER}:{secret}".encode()).decode(),
        ):
            assert form not in out and form not in err, f"{form!r} printed"
    assert "Traceback" not in err
    return code, out, err


def basic_ok(request) -> bool:
    expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    return hmac.compare_digest(request.headers.get("Authorization", ""), expected)


def test_basic_auth_from_url_userinfo(capsys, spec):
    with fake.serve(enforcing(basic_ok)) as url:
        userinfo = f"{USER}:{urllib.parse.quote(PASSWORD, safe='')}@"
        code, out, err = run(capsys, "--prometheus", url.replace("://", f"://{userinfo}"), spec, secrets=[PASSWORD])
        assert code == 0, err
        assert json.loads(out)["prometheus"] == url  # shown without the userinfo
        bad = url.replace("://", f"://{USER}:wrong-password@")
        code, out, err = run(capsys, "--prometheus", bad, spec, secrets=["wrong-password"])
        assert code == 2 and "HTTP 401" in err and "credentials" in err


def test_basic_auth_from_user_and_password_file(capsys, spec, tmp_path):
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    with fake.serve(enforcing(basic_ok)) as url:
        code, out, err = run(
            capsys, "--prometheus", url, "--user", USER, "--password-file", secret, spec, secrets=[PASSWORD]
        )
        assert code == 0, err
        code, out, err = run(capsys, "--prometheus", url, spec)  # none given: refused by the server
        assert code == 2 and "HTTP 401" in err


def test_bearer_token_file(capsys, spec, tmp_path):
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    with fake.serve(enforcing(lambda r: r.headers.get("Authorization") == f"Bearer {TOKEN}")) as url:
        code, out, err = run(capsys, "--prometheus", url, "--bearer-token-file", secret, spec, secrets=[TOKEN])
        assert code == 0, err
        secret.write_text("another-token-0000\n")
        code, out, err = run(
            capsys,
            "--prometheus",
            url,
            "--bearer-token-file",
            secret,
            "--format",
            "table",
            spec,
            secrets=["another-token-0000"],
        )
        assert code == 2 and "HTTP 401" in err


@pytest.mark.parametrize(
    "args, words",
    [
        (["--user", "u"], "--password-file"),
        (["--password-file", "x"], "--password-file"),
        (["--user", "u", "--password-file", "MISSING"], "MISSING"),
        (["--bearer-token-file", "t", "--auth", "google"], "two ways"),
        (["--aws-region", "us-east-1"], "--auth sigv4"),
    ],
)
def test_auth_option_mistakes_exit_2(capsys, spec, args, words):
    code, out, err = run(capsys, "--prometheus", "http://127.0.0.1:9", *args, spec)
    assert code == 2 and words in err and "To fix" in err, err


_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
    r"SignedHeaders=([a-z0-9;\-]+), Signature=([0-9a-f]{64})$"
)


def sigv4_ok(request, region="us-west-2") -> bool:
    """The server side of SigV4: recompute the signature with botocore's signer and compare."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    m = _AUTH.match(request.headers.get("Authorization", ""))
    if not m or m.group(1) != AWS_KEY_ID or m.group(3) != region or m.group(4) != "aps":
        return False
    if request.headers.get("X-Amz-Security-Token") != AWS_TOKEN:
        return False
    stamp = request.headers.get("X-Amz-Date", "")
    when = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    if abs((datetime.datetime.now(datetime.UTC) - when).total_seconds()) > 300:
        return False
    signed = m.group(5).split(";")
    headers = {name: request.headers[name] for name in signed}
    copy = AWSRequest(method=request.command, url=f"http://{request.headers['Host']}{request.path}", headers=headers)
    copy.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(AWS_KEY_ID, AWS_SECRET, AWS_TOKEN), "aps", region)
    expected = signer.signature(signer.string_to_sign(copy, signer.canonical_request(copy)), copy)
    return hmac.compare_digest(expected, m.group(6)) and "host" in signed and "x-amz-date" in signed


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_TOKEN)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_sigv4_signed_by_botocore_is_verified_server_side(capsys, spec, aws_env):
    with fake.serve(enforcing(sigv4_ok)) as url:
        code, out, err = run(
            capsys,
            "--prometheus",
            url + "/workspaces/ws-1234",
            "--auth",
            "sigv4",
            "--aws-region",
            "us-west-2",
            spec,
            secrets=[AWS_SECRET, AWS_TOKEN, AWS_KEY_ID],
        )
        assert code == 0, err
        # Signed for another region, the same server refuses it: the check is real.
        code, out, err = run(
            capsys,
            "--prometheus",
            url + "/workspaces/ws-1234",
            "--auth",
            "sigv4",
            "--aws-region",
            "eu-west-1",
            spec,
            secrets=[AWS_SECRET, AWS_TOKEN, AWS_KEY_ID],
        )
        assert code == 2 and "HTTP 401" in err


def test_sigv4_region_comes_from_the_workspace_url(spec, aws_env):
    from gpusizer.measure import prom_auth

    signer = prom_auth.SigV4(None, "aps-workspaces.eu-central-1.amazonaws.com")
    headers = signer.headers(
        "GET",
        "https://aps-workspaces.eu-central-1.amazonaws.com/workspaces/ws-1/api/v1/query?query=up",
        {"Accept": "application/json"},
    )
    assert "/eu-central-1/aps/aws4_request" in headers["Authorization"]


def test_sigv4_without_credentials_exits_2(capsys, spec, aws_env, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    code, out, err = run(
        capsys, "--prometheus", "http://127.0.0.1:9", "--auth", "sigv4", "--aws-region", "us-east-1", spec
    )
    assert code == 2 and "no AWS credentials" in err and "To fix" in err


@pytest.fixture
def google_adc(monkeypatch, tmp_path):
    """A service-account key file (fresh RSA key) whose token_uri is set by the test; yields (path, public PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    path = tmp_path / "adc.json"

    def write(token_uri: str):
        path.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": "demo",
                    "private_key_id": "k1",
                    "private_key": private,
                    "client_email": "observer@demo.iam.gserviceaccount.com",
                    "client_id": "1",
                    "token_uri": token_uri,
                }
            )
        )

    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # never the metadata server
    return write, public, private


def test_google_adc_token_from_a_service_account_key(capsys, spec, google_adc):
    import google.auth.jwt

    write, public, private = google_adc
    issued, where = [], {}
    answer = enforcing(lambda r: r.headers.get("Authorization") == f"Bearer {GOOGLE_ACCESS_TOKEN}")

    def handle(request):
        if request.path == "/token":
            form = dict(urllib.parse.parse_qsl(request.rfile.read(int(request.headers["Content-Length"])).decode()))
            # google-auth addresses the assertion to Google's token service whatever token_uri it posts to.
            claims = google.auth.jwt.decode(form["assertion"], certs=public, audience=GOOGLE_TOKEN_AUDIENCE)
            assert claims["scope"] == "https://www.googleapis.com/auth/monitoring.read"
            issued.append(claims["iss"])
            fake.send_json(request, {"access_token": GOOGLE_ACCESS_TOKEN, "expires_in": 3600, "token_type": "Bearer"})
            return
        answer(request)

    with fake.serve(handle) as url:
        where["token_uri"] = f"{url}/token"
        write(where["token_uri"])
        key_body = private.splitlines()[1]
        code, out, err = run(
            capsys,
            "--prometheus",
            url + "/v1/projects/demo/location/global/prometheus",
            "--auth",
            "google",
            spec,
            secrets=[GOOGLE_ACCESS_TOKEN, key_body],
        )
    assert code == 0, err
    assert issued == ["observer@demo.iam.gserviceaccount.com"]  # one token, reused for every query


def test_google_without_adc_exits_2(capsys, spec, monkeypatch, tmp_path):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    code, out, err = run(capsys, "--prometheus", "http://127.0.0.1:9", "--auth", "google", spec)
    assert code == 2 and "--auth google" in err and "To fix" in err, err


def test_sigv4_with_a_missing_profile_exits_2(capsys, spec, aws_env, monkeypatch):
    """botocore's own errors (a profile that is not there, an expired SSO token) are a fix for the user."""
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    code, out, err = run(capsys, "--prometheus", "http://127.0.0.1:9", "--auth", "sigv4", spec, secrets=[AWS_SECRET])
    assert code == 2 and "no-such-profile" in err and "To fix" in err, err


def test_google_token_refresh_failure_is_one_line_with_its_own_fix(capsys, spec, monkeypatch, tmp_path):
    adc = tmp_path / "adc.json"
    adc.write_text(
        json.dumps(
            {
                "type": "external_account",
                "audience": "x",
                "subject_token_type": "y",
                "token_url": "http://127.0.0.1:9/token",
                "credential_source": {"file": "/nonexistent"},
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    code, out, err = run(capsys, "--prometheus", "http://127.0.0.1:9", "--auth", "google", spec)
    assert code == 2 and err.startswith("gpusizer: error: --auth google: could not get an access token"), err
    assert "cannot reach" not in err and len(err.strip().splitlines()) == 1
