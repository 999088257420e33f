"""What obstore's errors tell of the server's answer: S3's error document's fields and the
error's first line, by which ObjectStore names what went wrong."""

from __future__ import annotations

import re

__all__ = ["ERROR_FIELD", "REFUSED_CREDENTIALS", "first_line", "server_answer"]


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
