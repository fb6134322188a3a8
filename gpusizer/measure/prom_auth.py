"""How `gpusizer observe` authenticates to Prometheus: basic, bearer token, AWS SigV4, Google ADC (docs/observe.md).

Each way is an object with ``headers(method, url, headers) -> dict``: the headers that
authenticate one request to `url` (signing needs the whole request). Every secret is
registered with gpusizer.base.redact when it is read, so no message, report or
traceback shows it, and none is ever put into a URL.

- :class:`Basic`: ``Authorization: Basic base64(user:password)`` (RFC 7617); from the
  URL's userinfo (percent-decoded) or ``--user`` with ``--password-file``.
- :class:`Bearer`: ``Authorization: Bearer TOKEN`` (RFC 6750) from ``--bearer-token-file``,
  the file's first line, as Prometheus' own ``bearer_token_file`` reads it.
- :class:`SigV4`: Amazon Managed Service for Prometheus. botocore's SigV4Auth signs the
  request for service ``aps`` (AMP User Guide, "Signing requests with SigV4", read
  2026-11-26) with the default credential chain (environment, shared files, SSO, instance
  role); the region from ``--aws-region``, else the workspace URL
  (``aps-workspaces.REGION.amazonaws.com``), else AWS_REGION / the profile.
- :class:`Google`: Google Cloud Managed Service for Prometheus' query API
  (``https://monitoring.googleapis.com/v1/projects/PROJECT/location/global/prometheus``)
  with an OAuth 2.0 access token from Application Default Credentials
  (``google.auth.default``, scope monitoring.read), refreshed when it expires.

botocore and google-auth are imported only when their way is chosen (the [aws] and [gcp]
extras); missing, the command says which extra to install.
"""

from __future__ import annotations

import base64
import re

from gpusizer.base import errors, inputs, redact

MAX_SECRET_BYTES = 64 << 10
AMP_SERVICE = "aps"
GOOGLE_SCOPE = "https://www.googleapis.com/auth/monitoring.read"
_AMP_HOST = re.compile(r"^aps-workspaces\.([a-z0-9-]+)\.amazonaws\.com$")


def read_secret(path: str, field: str) -> str:
    """The first line of a secret file (trailing newline and spaces removed), registered for redaction.

    Raises:
        SpecError: naming `field` and the file (never its content) when it is unreadable or empty.
    """
    text = inputs.read_text(path, "secret file", field, max_bytes=MAX_SECRET_BYTES)
    lines = text.splitlines()
    value = lines[0].strip() if lines else ""
    if not value:
        raise errors.SpecError(
            f"{field}: {inputs.quote(path)} is empty. To fix: put the secret on its first line", field
        )
    redact.register(value)
    return value


class Basic:
    """HTTP basic authentication (RFC 7617)."""

    def __init__(self, user: str, password: str):
        if ":" in user:
            raise errors.SpecError(
                "--user: a basic-auth user name cannot contain ':' (RFC 7617). To fix: check the user name", "--user"
            )
        redact.register(password)
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        redact.register(token)
        self._header = f"Basic {token}"

    def headers(self, method: str, url: str, headers: dict) -> dict:
        return {"Authorization": self._header}


class Bearer:
    """An OAuth 2.0 bearer token (RFC 6750), e.g. a Kubernetes service account token or a proxy's API key."""

    def __init__(self, token: str):
        if any(ord(c) < 33 or ord(c) > 126 for c in token):
            raise errors.SpecError(
                "--bearer-token-file: the token holds spaces or non-ASCII characters. To fix: put "
                "only the token on the file's first line",
                "--bearer-token-file",
            )
        redact.register(token)
        self._token = token

    def headers(self, method: str, url: str, headers: dict) -> dict:
        return {"Authorization": f"Bearer {self._token}"}


def _missing(extra: str, package: str, exc: ImportError) -> errors.MissingExtraError:
    return errors.MissingExtraError(
        f"this way of authenticating needs the [{extra}] extra ({exc.name or package} is "
        f"not installed). To fix: pip install 'gpusizer[{extra}]'"
    )


class SigV4:
    """AWS Signature Version 4 for Amazon Managed Service for Prometheus, signed by botocore."""

    def __init__(self, region: str | None, host: str, session=None):
        try:
            import botocore.session
        except ImportError as exc:
            raise _missing("aws", "botocore", exc) from None
        import botocore.exceptions

        try:
            session = session or botocore.session.get_session()
            found = _AMP_HOST.match(host or "")
            self.region = region or (found.group(1) if found else None) or session.get_config_variable("region")
            credentials = None if not self.region else session.get_credentials()
        except botocore.exceptions.BotoCoreError as exc:  # a missing profile, an expired SSO token ...
            raise errors.SpecError(
                redact.redact(
                    f"--auth sigv4: the AWS credential chain failed: {exc}. To fix: "
                    "check AWS_PROFILE and the credentials as for the AWS CLI"
                ),
                "--auth",
            ) from None
        if not self.region:
            raise errors.SpecError(
                "--auth sigv4: no AWS region. To fix: pass --aws-region (e.g. us-east-1) or set AWS_REGION",
                "--aws-region",
            )
        if credentials is None:
            raise errors.SpecError(
                "--auth sigv4: no AWS credentials found (environment, shared credentials file, SSO "
                "or instance role). To fix: configure credentials as for the AWS CLI",
                "--auth",
            )
        self._credentials = credentials
        frozen = credentials.get_frozen_credentials()
        for secret in (frozen.access_key, frozen.secret_key, frozen.token):
            redact.register(secret)

    def headers(self, method: str, url: str, headers: dict) -> dict:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method=method, url=url, headers={k: v for k, v in headers.items() if k != "User-Agent"})
        SigV4Auth(self._credentials.get_frozen_credentials(), AMP_SERVICE, self.region).add_auth(request)
        for value in request.headers.values():
            if isinstance(value, str) and value.startswith("AWS4-HMAC-SHA256"):
                redact.register(value.rsplit("Signature=", 1)[-1])
        return {k: v for k, v in request.headers.items() if k.lower() not in ("host", "accept")}


class Google:
    """An access token from Google Application Default Credentials, for Managed Service for Prometheus."""

    def __init__(self, credentials=None):
        try:
            import google.auth
            import google.auth.transport.requests
        except ImportError as exc:
            raise _missing("gcp", "google-auth", exc) from None
        if credentials is None:
            try:
                credentials, _ = google.auth.default(scopes=[GOOGLE_SCOPE])
            except google.auth.exceptions.DefaultCredentialsError as exc:
                raise errors.SpecError(
                    redact.redact(
                        f"--auth google: no Application Default Credentials ({exc}). To "
                        "fix: gcloud auth application-default login, or set "
                        "GOOGLE_APPLICATION_CREDENTIALS"
                    ),
                    "--auth",
                ) from None
        self._credentials = credentials
        self._transport = google.auth.transport.requests.Request()

    def headers(self, method: str, url: str, headers: dict) -> dict:
        import google.auth.exceptions

        if not self._credentials.valid:
            try:
                self._credentials.refresh(self._transport)
            except google.auth.exceptions.GoogleAuthError as exc:
                raise errors.SpecError(
                    redact.redact(
                        f"--auth google: could not get an access token: {exc}. To fix: "
                        "check the Application Default Credentials"
                    ),
                    "--auth",
                ) from None
        redact.register(self._credentials.token)
        return {"Authorization": f"Bearer {self._credentials.token}"}


def from_args(
    user: str | None,
    password_file: str | None,
    bearer_token_file: str | None,
    auth: str | None,
    aws_region: str | None,
    host: str,
):
    """The way of authenticating the command line asks for, or None; SpecError when it asks for two or half of one."""
    chosen = [
        name
        for name, given in (
            ("--user/--password-file", user or password_file),
            ("--bearer-token-file", bearer_token_file),
            ("--auth", auth),
        )
        if given
    ]
    if len(chosen) > 1:
        raise errors.SpecError(f"{' and '.join(chosen)} are two ways of authenticating. To fix: keep one", chosen[0])
    if (user is None) != (password_file is None):
        raise errors.SpecError(
            "--user and --password-file go together. To fix: give both (the password in the file, "
            "never on the command line)",
            "--user",
        )
    if aws_region and auth != "sigv4":
        raise errors.SpecError(
            "--aws-region is for --auth sigv4. To fix: add --auth sigv4 or drop --aws-region", "--aws-region"
        )
    if user is not None:
        return Basic(user, read_secret(password_file, "--password-file"))
    if bearer_token_file is not None:
        return Bearer(read_secret(bearer_token_file, "--bearer-token-file"))
    if auth == "sigv4":
        return SigV4(aws_region, host)
    if auth == "google":
        return Google()
    return None
