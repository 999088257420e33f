"""What obstore's errors tell of the server's answer: S3's error document's fields and the
error's first line, by which ObjectStore names what went wrong."""

from __future__ import annotations

import errno
import re
import urllib.parse

from ._obstore_runtime import obstore_module

__all__ = [
    "ERROR_FIELD",
    "REFUSED_CREDENTIALS",
    "TIMED_OUT",
    "first_line",
    "server_answer",
    "what_failed",
]


def first_line(error: BaseException) -> str:
    """The first line of `error`'s message (its type's name when it has none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# The fields of an S3 error document (<Error><Code>...</Code><Message>...</Message>...), which
# obstore's messages carry whole.
ERROR_FIELD = re.compile(r"<(Code|Message|BucketName)>([^<]*)</\1>")
# S3's codes for credentials it does not accept: an unknown key, a wrong secret, a bad token.
REFUSED_CREDENTIALS = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "InvalidToken",
        "ExpiredToken",
        "TokenRefreshRequired",
        "InvalidSecurity",
    }
)


def server_answer(error: BaseException) -> tuple[dict[str, str], str]:
    """What the server answered, as far as `error` tells: the fields of its error document
    (Code, Message, BucketName), and the error's first line (with the HTTP status) where that
    raw document is replaced by its code and message."""
    fields = dict(ERROR_FIELD.findall(str(error)))
    line = first_line(error).split("<?xml")[0].split("<Error>")[0].rstrip(": ")
    said = [fields[name] for name in ("Code", "Message") if name in fields]
    return fields, f"{line} ({': '.join(said)})" if said else line


# How obstore's errors (reqwest's underneath) say a request timed out.
TIMED_OUT = re.compile(r"TimedOut|kind: Timeout|timed out", re.IGNORECASE)


def what_failed(error: BaseException, url: str | None) -> tuple[int, str, str]:
    """(errno, what failed, the server's answer) of obstore's `error` from a store of `url`."""
    exceptions = obstore_module().exceptions
    fields, text = server_answer(error)
    if fields.get("Code") in REFUSED_CREDENTIALS:
        code, what = (
            errno.EACCES,
            (
                "access denied: the server does not accept these credentials; check the key "
                "and secret (storage_options, or the environment's AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY) and the endpoint they belong to"
            ),
        )
    elif isinstance(
        error, (PermissionError, exceptions.PermissionDeniedError, exceptions.UnauthenticatedError)
    ):
        code, what = (
            errno.EACCES,
            "access denied: check the key and secret, and that they may use this bucket and key",
        )
    elif "NoSuchBucket" in str(error):
        bucket = fields.get("BucketName") or urllib.parse.urlsplit(url or "").netloc
        code, what = (
            errno.ENOENT,
            f"the bucket {bucket!r} does not exist" if bucket else "the bucket does not exist",
        )
    elif isinstance(error, TimeoutError) or TIMED_OUT.search(str(error)):
        code, what = errno.ETIMEDOUT, "timed out"
    else:
        code, what = errno.EIO, "failed"
    return code, what, text
