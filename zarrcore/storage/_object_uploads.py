"""An object store's uploads in parts (S3, GCS and Azure multipart uploads through obstore):
a value held whole, in equal parts sent at once; a value given as Pieces, in parts sent as
they fill while the later pieces are made. Neither is conditional (obstore's multipart
uploads take no condition), and obstore aborts an upload whose part or completion failed,
so a reader sees the object old or new."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..runtime import _aio
from ._obstore_runtime import obstore_module as _obstore
from ._obstore_runtime import obstore_request

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer
    from obstore import PutResult
    from obstore.store import ObjectStore as ObstoreStore

    from .base import Pieces

__all__ = ["PIECE_PARTS_IN_FLIGHT", "PiecesUpload", "pieces_upload", "put_parts"]

#: Parts of a value given as Pieces that upload at once (and slots of the process's bound on
#: requests that its upload holds): the pieces wait while as many are in flight.
PIECE_PARTS_IN_FLIGHT = 8


def put_parts(client: ObstoreStore, path: str, value: ReadableBuffer, parts: int) -> PutResult:
    """Put `value` at `path` of `client` by a multipart upload of `parts` equal parts sent
    at once, holding as many of the process's request slots."""
    view = memoryview(value).cast("B")
    put: PutResult = obstore_request(
        _obstore().put,
        client,
        path,
        view,
        use_multipart=True,
        chunk_size=-(-view.nbytes // parts),
        max_concurrency=parts,
        slots=parts,
    )
    return put


def pieces_upload(
    client: ObstoreStore, path: str, value: Pieces, whole: Callable[[bytes | None], object]
) -> Callable[[], object]:
    """Take the pieces of `value` here, and give the call that ends their write at `path`:
    when they come to one part at most, `whole` of them joined (of None when there is
    none); else a PiecesUpload, whose parts were sent as they filled, in the background,
    while the later pieces were made. A failure of a piece or of a part aborts the upload.
    (In a process forked after obstore ran, whose calls go to a helper process, with no
    writer: `whole` of them all.)"""
    pieces = iter(value)
    held: list[ReadableBuffer] = []
    size = 0
    for piece in pieces:
        held.append(piece)
        size += memoryview(piece).nbytes
        if size > value.part_bytes:
            break
    else:
        return functools.partial(whole, b"".join(held) if held else None)
    if not hasattr(_obstore(), "open_writer"):
        held += pieces
        return functools.partial(whole, b"".join(held))
    upload = PiecesUpload(client, path, value.part_bytes)
    try:
        for piece in itertools.chain(held, pieces):
            upload.write(piece)
    except BaseException:
        upload.abort()
        raise
    return upload


class PiecesUpload:
    """A multipart upload of Pieces under way (obstore's writer), holding
    PIECE_PARTS_IN_FLIGHT slots of the process's bound on requests until it ends: called, it
    completes; `abort` drops it unless it completed."""

    def __init__(self, client: ObstoreStore, path: str, part_bytes: int) -> None:
        self._slots = _aio.request_slots.hold(PIECE_PARTS_IN_FLIGHT)
        self._slots.__enter__()
        try:
            self._writer = _obstore().open_writer(
                client, path, buffer_size=part_bytes, max_concurrency=PIECE_PARTS_IN_FLIGHT
            )
        except BaseException:
            self._slots.__exit__(None, None, None)
            raise
        self._open = True

    def write(self, piece: ReadableBuffer) -> None:
        """Hand `piece` on; it waits while PIECE_PARTS_IN_FLIGHT parts are in flight."""
        self._writer.write(piece)

    def __call__(self) -> None:
        self._open = False
        try:
            self._writer.close()
        finally:
            self._slots.__exit__(None, None, None)

    def abort(self) -> None:
        if not self._open:
            return
        self._open = False
        try:
            self._writer.__exit__(RuntimeError, None, None)  # (an exception's exit aborts)
        except Exception:
            pass  # (a failed part ended it; else a lifecycle rule ends it, as a killed writer's)
        finally:
            self._slots.__exit__(None, None, None)
