"""JSON helpers shared by the v2 and v3 metadata documents."""

import json

from zarrcore.errors import MetadataError

__all__ = ["check_zarr_format", "dump_json", "field_error", "int_tuple", "is_int", "load_json_document"]


def field_error(where, name, msg):
    return MetadataError(f"{where}: field {name!r}: {msg}")


def load_json_document(doc, where):
    """Parse a metadata document given as bytes, str or an already-decoded dict."""
    if isinstance(doc, (bytes, bytearray, memoryview)):
        try:
            doc = bytes(doc).decode("utf-8")
        except UnicodeDecodeError as e:
            raise MetadataError(f"{where}: not UTF-8: {e}") from None
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError as e:
            raise MetadataError(f"{where}: invalid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise MetadataError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    return doc


def dump_json(obj):
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def int_tuple(value, where, name, minimum):
    if isinstance(value, (list, tuple)) and all(is_int(v) and v >= minimum for v in value):
        return tuple(int(v) for v in value)
    kind = "positive" if minimum > 0 else "non-negative"
    raise field_error(where, name, f"expected a list of {kind} integers, got {value!r}")


def check_zarr_format(doc, where, version):
    if "zarr_format" not in doc:
        raise field_error(where, "zarr_format", "missing")
    if doc["zarr_format"] != version or isinstance(doc["zarr_format"], bool):
        raise field_error(where, "zarr_format", f"expected {version}, got {doc['zarr_format']!r}")
