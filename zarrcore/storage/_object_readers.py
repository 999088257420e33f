"""Byte ranges of one version of an object, as an ObjectStore's `reader` reads them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, cast

from ..errors import KeyChangedError
from .base import BodyProgress, ByteRange, ReadBytes, both_bounds

if TYPE_CHECKING:
    from obstore import ObjectMeta

__all__ = ["ObjectReader"]


class _Source(Protocol):
    """The ObjectStore's reads a reader runs (not imported: it imports this module)."""

    def _get(
        self, key: str, start: int | None, stop: int | None, pin: ObjectReader | None, copy: bool
    ) -> ReadBytes | None: ...

    def _each_range(
        self, key: str, ranges: Sequence[ByteRange], copy: bool, pin: ObjectReader | None
    ) -> list[ReadBytes] | None: ...

    def _plain_get(
        self,
        key: str,
        spans: Sequence[ByteRange],
        pin: ObjectReader | None,
        copy: bool,
        on_body: BodyProgress | None,
    ) -> Sequence[ReadBytes | None] | None: ...


class ObjectReader:
    """Byte ranges of one version of an object (ObjectStore.reader)."""

    def __init__(self, store: _Source, key: str) -> None:
        self._store, self._key = store, key
        self.e_tag: str | None = None
        self.size: int | None = None

    def saw(self, meta: ObjectMeta) -> None:
        """Note the version of an answer: the first one's is the reader's; a later one of
        another ETag or size (a server or proxy that ignored If-Match, or ranges asked at
        once of an object replaced meanwhile) is refused."""
        e_tag, size = meta["e_tag"], meta["size"]
        if self.e_tag not in (None, e_tag) and e_tag is not None or self.size not in (None, size):
            raise KeyChangedError(
                f"key {self._key!r} of {self._store!r} answered another "
                f"version than the one asked for; read it again"
            )
        self.e_tag, self.size = self.e_tag or e_tag, size

    @property
    def version(self) -> tuple[str, int | None] | None:
        """(ETag, size) of the version read, which a later reader asks for (If-Match); None
        for a weak ETag, which If-Match never matches. (An HTTP server's too, though its
        ETags may not tell apart two files of one size written within a second: it versions
        what the array keeps of a shard, its index, but no decoded chunk, `versioned_reads`
        being False.)"""
        if self.e_tag is None or self.e_tag.startswith("W/"):
            return None
        return self.e_tag, self.size

    def get_ranges(self, ranges: Sequence[ByteRange]) -> list[ReadBytes] | None:
        # (Views of obstore's buffers, not copies: readers' callers decode from any buffer.)
        ranges = list(ranges)
        first: list[ReadBytes] = []
        if self.e_tag is None and ranges:  # the first read learns the version
            part = self._store._get(self._key, *ranges[0], pin=self, copy=False)
            if part is None:
                return None
            first, ranges = [part], ranges[1:]
        rest = self._store._each_range(self._key, ranges, copy=False, pin=self)
        return None if rest is None else first + rest

    def get_streamed(
        self, ranges: Sequence[ByteRange], on_body: BodyProgress
    ) -> list[ReadBytes] | None:
        """As StreamingReader.get_streamed: by the plain client where it answers (ranges
        without a stop, or of a byte at least from 0 on), each answer's version checked
        (`saw`) once all arrived."""
        if not both_bounds([(lo, hi) for lo, hi in ranges if hi is not None]):
            return self.get_ranges(ranges)
        plain = self._store._plain_get(self._key, ranges, self, False, on_body)
        if plain is None:
            return self.get_ranges(ranges)
        return None if None in plain else cast("list[ReadBytes]", plain)
