"""How ObjectStore.from_url reads its storage_options: s3fs' spellings taken as obstore's
keys, zarrcore's own options apart, and the client's and retries' settings they give."""

from __future__ import annotations

import datetime
import os
from typing import TYPE_CHECKING, Any, NamedTuple

from ..runtime.config import config
from .options import checked_backend_options

if TYPE_CHECKING:
    from obstore.store import ClientConfig, RetryConfig

    from .options import StorageOptions

__all__ = ["UrlSettings", "url_settings"]

# s3fs spellings of storage_options (what zarr-python passes to fsspec) -> obstore's keys.
_S3FS_NAMES = {
    "key": "access_key_id",
    "secret": "secret_access_key",
    "token": "session_token",
    "endpoint_url": "endpoint",
    "region_name": "region",
}
# Options of ours, not of obstore.
_OWN_OPTIONS = (
    "timeout",
    "retries",
    "conditional_writes",
    "single_writer",
    "client_options",
    "retry_config",
)
# Where obstore takes an S3 endpoint: its option names and, without one, the environment.
_ENDPOINT_OPTIONS = (
    "endpoint",
    "aws_endpoint",
    "aws_endpoint_url",
    "endpoint_url",
    "aws_endpoint_url_s3",
)
_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")


class UrlSettings(NamedTuple):
    """What a URL's storage_options set: obstore's options, zarrcore's own (`_OWN_OPTIONS`),
    the client's and the retries' settings, the timeout and retries."""

    options: dict[str, Any]
    own: dict[str, Any]
    client: ClientConfig
    retry: RetryConfig
    timeout: float
    retries: int


def url_settings(url: str, backend: str, storage_options: StorageOptions | None) -> UrlSettings:
    """The settings of the store of `url` (of obstore's `backend`) that `storage_options`
    give; options of no backend, or naming local credential files, are refused
    (checked_backend_options)."""
    options = dict(storage_options or {})
    own = {name: options.pop(name) for name in _OWN_OPTIONS if name in options}
    for name, ours in (("client_kwargs", None), *_S3FS_NAMES.items()):
        if name not in options:
            continue
        value = options.pop(name)
        if ours is None:  # s3fs' client_kwargs: endpoint_url, region_name
            options.update({_S3FS_NAMES.get(k, k): v for k, v in value.items()})
        else:
            options[ours] = value
    if options.pop("anon", False):
        options["skip_signature"] = True
    s3fs = ("client_kwargs", "anon", *_S3FS_NAMES) if backend == "s3" else ()
    options = checked_backend_options(url, backend, options, extra=(*_OWN_OPTIONS, *s3fs))
    if _unsigned_payload(url, options):
        options["unsigned_payload"] = True
    timeout = float(own.get("timeout", config.io_timeout))
    retries = int(own.get("retries", config.io_retries))
    client: ClientConfig = {
        "timeout": datetime.timedelta(seconds=timeout),
        "connect_timeout": datetime.timedelta(seconds=timeout),
    }
    if url.startswith("http://") or str(options.get("endpoint", "")).startswith("http://"):
        client["allow_http"] = True
    client_options: ClientConfig | None = own.get("client_options")
    client.update(client_options or {})
    retry: RetryConfig = {
        "max_retries": retries,
        "retry_timeout": datetime.timedelta(seconds=timeout * (retries + 1)),
        "backoff": {
            "init_backoff": datetime.timedelta(milliseconds=50),
            "max_backoff": datetime.timedelta(seconds=2),
            "base": 2,
        },
    }
    retry_config: RetryConfig | None = own.get("retry_config")
    retry.update(retry_config or {})
    return UrlSettings(options, own, client, retry, timeout, retries)


def _unsigned_payload(url: str, options: StorageOptions) -> bool:
    """True when an S3 store's requests may sign UNSIGNED-PAYLOAD rather than the SHA-256 of
    each body (which costs the client a pass over every byte it uploads): only for s3:// URLs
    whose endpoint is https (AWS's own when none is set), where TLS already protects the body
    in transit, as botocore decides by default. Over plain http the hash stays signed, and
    an `unsigned_payload` of the caller's (option or AWS_UNSIGNED_PAYLOAD) is left as it is."""
    options = {name.lower(): value for name, value in options.items()}
    if (
        not url.startswith(("s3://", "s3a://"))
        or "AWS_UNSIGNED_PAYLOAD" in os.environ
        or {"unsigned_payload", "aws_unsigned_payload"} & set(options)
    ):
        return False
    endpoints = [options[name] for name in _ENDPOINT_OPTIONS if name in options] + [
        os.environ[name] for name in _ENDPOINT_VARIABLES if name in os.environ
    ]
    return all(str(e).lower().startswith("https://") for e in endpoints)
