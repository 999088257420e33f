"""Which storage_options reach a remote store's client.

Only the configuration keys obstore documents for the URL's backend pass (its S3Config,
GCSConfig and AzureConfig; an HTTP store has none), so an option cannot quietly change what
the client does. Options that make the client read a local file and send what it holds as a
credential (a web identity token file, a service account file...) are refused unless the
caller passes `allow_credential_files=True` with them: storage_options that reach zarrcore
from elsewhere (a catalog, a request) cannot turn a file of this machine into a token sent to
a host they name. fsspec's filesystems take options of their own, which pass, but for those
same credential files.
"""

import errno
import re
from collections.abc import Iterable
from typing import Any, NoReturn

from ..errors import CredentialsError, StoreURLError

__all__ = [
    "ALLOW_CREDENTIAL_FILES",
    "StorageOptions",
    "checked_backend_options",
    "checked_fsspec_options",
    "credentials_error",
]

#: storage_options: option names to values of whatever type the client takes for each.
StorageOptions = dict[str, Any]

# The caller's consent to options that name local credential files.
ALLOW_CREDENTIAL_FILES = "allow_credential_files"

# obstore's configuration keys, per backend (obstore.parse_scheme's names).
_BACKEND_KEYS = {
    "s3": frozenset(
        [
            "access_key_id",
            "aws_endpoint_url_s3",
            "bucket",
            "checksum_algorithm",
            "conditional_put",
            "container_credentials_relative_uri",
            "container_credentials_full_uri",
            "container_authorization_token_file",
            "copy_if_not_exists",
            "default_region",
            "disable_tagging",
            "disable_bulk_delete",
            "endpoint",
            "imdsv1_fallback",
            "metadata_endpoint",
            "region",
            "request_payer",
            "role_arn",
            "role_session_name",
            "s3_express",
            "secret_access_key",
            "server_side_encryption",
            "session_token",
            "skip_signature",
            "sse_bucket_key_enabled",
            "sse_customer_key_base64",
            "sse_kms_key_id",
            "sts_endpoint",
            "unsigned_payload",
            "virtual_hosted_style_request",
            "web_identity_token_file",
        ]
    ),
    "gcs": frozenset(
        [
            "service_account",
            "service_account_key",
            "base_url",
            "bearer_token",
            "bucket",
            "application_credentials",
            "skip_signature",
        ]
    ),
    "azure": frozenset(
        [
            "account_name",
            "account_key",
            "client_id",
            "client_secret",
            "credential_type",
            "tenant_id",
            "authority_host",
            "sas_key",
            "token",
            "use_emulator",
            "use_fabric_endpoint",
            "encryption_key",
            "endpoint",
            "msi_endpoint",
            "object_id",
            "msi_resource_id",
            "federated_token_file",
            "use_azure_cli",
            "skip_signature",
            "container_name",
            "disable_tagging",
            "fabric_token_service_url",
            "fabric_workload_host",
            "fabric_session_token",
            "fabric_cluster_identifier",
        ]
    ),
    "http": frozenset(),
}
# Prefixes obstore takes before its keys too ("aws_region" for "region"); case is ignored.
_PREFIXES = {
    "s3": ("aws_",),
    "gcs": ("google_",),
    "azure": ("azure_storage_", "azure_"),
    "http": (),
}
# Keys naming a local file whose content the client sends as a credential.
_CREDENTIAL_FILES = frozenset(
    [
        "web_identity_token_file",
        "container_authorization_token_file",
        "service_account",
        "application_credentials",
        "federated_token_file",
    ]
)


def _canonical(name: str, prefixes: Iterable[str]) -> str:
    """`name` as obstore's documented key: lower case, a backend prefix dropped."""
    name = str(name).lower()
    for prefix in prefixes:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _refuse_credential_file(url: str, name: str) -> NoReturn:
    raise StoreURLError(
        f"storage_options of {url!r}: {name!r} makes the client read a local file and send it "
        f"as a credential; pass {ALLOW_CREDENTIAL_FILES}=True with it to allow that"
    )


def checked_backend_options(
    url: str, backend: str, options: StorageOptions, extra: Iterable[str] = ()
) -> StorageOptions:
    """The obstore configuration `options` (a dict, consumed: the consent key is taken out)
    for `url` of `backend` ("s3", "gcs", "azure", "http"): StoreURLError naming an option its
    backend does not document (listing what is accepted, with the names in `extra` that the
    caller takes itself), or a credential file without the caller's consent."""
    allowed = options.pop(ALLOW_CREDENTIAL_FILES, False) is True
    keys, prefixes = _BACKEND_KEYS[backend], _PREFIXES[backend]
    for name in options:
        canonical = _canonical(name, prefixes)
        key = canonical if canonical in keys else str(name).lower()
        if key not in keys:
            accepted = ", ".join(sorted(keys | set(extra) | {ALLOW_CREDENTIAL_FILES}))
            raise StoreURLError(
                f"storage_options of {url!r}: unknown option {name!r} for its "
                f"{backend} store; accepted: {accepted}"
            )
        if key in _CREDENTIAL_FILES and not allowed:
            _refuse_credential_file(url, name)
    return options


def checked_fsspec_options(url: str, options: StorageOptions) -> StorageOptions:
    """fsspec's `options` for `url` (a dict, consumed as checked_backend_options does), refusing
    the credential-file options of every backend, at any depth (chained URLs nest options
    per protocol), without the caller's consent."""
    if options.pop(ALLOW_CREDENTIAL_FILES, False) is True:
        return options
    prefixes = tuple(p for backend in _PREFIXES.values() for p in backend)

    def check(level: StorageOptions) -> None:
        for name, value in level.items():
            if _canonical(name, prefixes) in _CREDENTIAL_FILES:
                _refuse_credential_file(url, name)
            if isinstance(value, dict):
                check(value)

    check(options)
    return options


# A client given no credentials looks in the environment, then asks the instance metadata
# service of the cloud it may run on (169.254.169.254, Google's metadata host): that failing,
# or botocore's word for it, means none were found.
_NO_CREDENTIALS = re.compile(
    r"169\.254\.169\.254|fd00:ec2::254|metadata\.google\.internal|/latest/api/token"
    r"|/latest/meta-data/iam|Unable to locate credentials|NoCredentialsError"
)
# Per backend: credentials as storage_options, and as environment variables.
_CREDENTIAL_HINTS = {
    "s3": (
        '{"key": ..., "secret": ...}',
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
    ),
    "gcs": (
        '{"service_account_key": ...}',
        "GOOGLE_SERVICE_ACCOUNT_KEY or GOOGLE_APPLICATION_CREDENTIALS",
    ),
    "azure": (
        '{"account_name": ..., "account_key": ...}',
        "AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY",
    ),
}
_BACKEND_OF_SCHEME = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "adl": "azure",
    "azure": "azure",
}


def credentials_error(error: BaseException, where: str, scheme: str) -> CredentialsError | None:
    """A CredentialsError naming `where` (the key and store) when the client's `error` says it
    found no credentials for its store of URL scheme `scheme`, saying how to pass them; None
    for other errors."""
    text = f"{type(error).__name__}: {error}"
    if not _NO_CREDENTIALS.search(text):
        return None
    given, variables = _CREDENTIAL_HINTS[_BACKEND_OF_SCHEME.get(scheme.lower(), "s3")]
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return CredentialsError(
        errno.EACCES,
        f"{where}: no credentials found; pass them as storage_options={given} (or "
        f'{{"anon": true}} for public data, unsigned), or set {variables} in the environment '
        f"(the client's last try: {first})",
    )
