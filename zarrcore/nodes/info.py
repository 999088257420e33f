"""ArrayInfo: the printable summary of an array (`Array.info`, `Array.info_complete`)."""

from __future__ import annotations

from typing import Any

from .array import Array

__all__ = ["ArrayInfo", "format_bytes", "info_complete"]


def format_bytes(n: float) -> str:  # type: ignore[return]  # the last unit returns
    """`n` bytes as 512 B, 1.5 KiB, 32.0 MiB..."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024


class ArrayInfo:
    """A printable summary of an array; `complete` adds what needs a listing of the store."""

    def __init__(self, array: Array, complete: bool = True) -> None:
        self._array = array
        self._complete = complete

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready values; codecs as the node's metadata names them (numcodecs
        configurations for format 2).

        Returns
        -------
        dict
            name, type, zarr_format, data_type, shape, chunk_shape, shard_shape, order,
            fill_value, the codecs, nbytes and nchunks; when complete, nbytes_stored,
            storage_ratio and nchunks_initialized too.
        """
        a = self._array
        meta: Any = a.metadata
        if a.zarr_format == 2:
            codecs = {"filters": meta.filters, "compressor": meta.compressor}
        else:
            codecs = {"codecs": [c.to_json() for c in a.codecs]}
        out = {
            "name": a.name,
            "type": "Array",
            "zarr_format": a.zarr_format,
            "data_type": str(a.dtype),
            "shape": list(a.shape),
            "chunk_shape": list(a.chunks),
            "shard_shape": None if a.shards is None else list(a.shards),
            "order": a.order,
            "fill_value": meta.data_type.fill_value_to_json(meta.fill_value, a.zarr_format),
            **codecs,
            "nbytes": a.nbytes,
            "nchunks": a.nchunks,
        }
        if self._complete:
            stored = a.nbytes_stored()
            out.update(
                nbytes_stored=stored,
                storage_ratio=a.nbytes / stored if stored else None,
                nchunks_initialized=a.nchunks_initialized,
            )
        return out

    def __repr__(self) -> str:
        d = self.to_dict()
        codecs = (
            [("Filters", d["filters"]), ("Compressor", d["compressor"])]
            if "filters" in d
            else [("Codecs", d["codecs"])]
        )
        rows = [
            ("Type", "Array"),
            ("Zarr format", d["zarr_format"]),
            ("Data type", self._array.dtype),
            ("Shape", self._array.shape),
            ("Chunk shape", self._array.chunks),
            ("Shard shape", self._array.shards),
            ("Order", d["order"]),
            ("Fill value", self._array.fill_value),
            *codecs,
            ("No. bytes", f"{d['nbytes']} ({format_bytes(d['nbytes'])})"),
        ]
        if self._complete:
            stored = d["nbytes_stored"]
            rows += [
                ("No. bytes stored", f"{stored} ({format_bytes(stored)})"),
                ("Storage ratio", f"{d['storage_ratio']:.1f}" if stored else "-"),
                ("Chunks initialized", f"{d['nchunks_initialized']}/{d['nchunks']}"),
            ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}} : {v}" for k, v in rows)

    __str__ = __repr__


# -- Array's face here (see Array's "faces") ---------------------------------------------------
def _info(self: Array) -> ArrayInfo:
    """A printable summary of the array from its metadata alone (see ArrayInfo); as in
    zarr-python, `info_complete()` adds what needs a listing of the store."""
    return ArrayInfo(self, complete=False)


def info_complete(self: Array) -> ArrayInfo:
    """The summary with what needs a listing of the store: stored bytes, storage ratio and
    chunks initialized.

    Returns
    -------
    ArrayInfo
    """
    return ArrayInfo(self, complete=True)


Array.info = property(_info)
Array.info_complete = info_complete
