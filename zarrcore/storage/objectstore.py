"""Object storage (S3, GCS, Azure, HTTP) through obstore: the extra `zarrcore[remote]`.

Requests are obstore's synchronous calls: one in the calling thread, or many at once on the
process's I/O threads (storage/_aio.py), up to the caller's concurrency (an array's
io_concurrency, `in_flight`) at once per call and `config.io_process_concurrency` in the whole
process. (Its asynchronous calls cost an asyncio loop 0.3-0.5 ms of CPU a request, against
0.25 ms for a synchronous call in a thread.) Each request is bounded by `config.io_timeout` seconds
and tried again `config.io_retries` times (storage_options `timeout` and `retries` override
them). The stores `from_url` opens on one endpoint, bucket and credentials (and client
settings) share one client, so one pool of connections, whatever their paths.
Objects are written by single PUTs, or, larger than the parts the engine asks for
(`set_many`'s part_bytes), by multipart uploads whose parts are sent at once (S3, GCS and
Azure), or, given as Pieces past one part, by multipart uploads whose parts are sent as they
fill (_object_uploads.py); a reader sees each object old or new either way: a multipart
upload shows nothing until it completes, and one whose piece, part or completion failed is
aborted (only a killed process leaves one behind, which a bucket's lifecycle rule for
incomplete uploads removes).

Where the backend has conditional writes, every PUT is one: If-Match the ETag this store last
wrote or read of the key, or create-only (If-None-Match) when it knows none, so a PUT that
reaches the server late (after its client timed out) is refused once a newer write changed
the object. A whole write that finds the object changed learns its ETag (HEAD) and puts again:
last writer wins. Keys that may hold objects the store has not seen (`may_hold`: an array's
chunks stored before it was opened) have their ETags learnt before their PUTs (listings sent
at once, each of a folder's run of them, or a HEAD each). What this cannot fence: a late
create-only PUT of a key deleted meantime (deletes are not conditional), a late PUT after a
rewrite of the very bytes it was conditioned on (S3's ETag is the MD5 of the body, so such a
rewrite keeps it), and a late completion of a multipart upload (obstore's take no
condition)."""

from __future__ import annotations

import collections
import contextlib
import functools
import re
import time
import urllib.parse
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from ..errors import (
    KeyChangedError,
    LockUnavailableError,
    ReadOnlyError,
    StoreError,
    StoreURLError,
    WriteConflictError,
    ZarrcoreError,
)
from ..runtime import _aio
from ..runtime.concurrency import each, fan_out, run_bounded
from ..runtime.link import Link, link_to
from ._object_bodies import get_body, get_parts
from ._object_clients import (
    SERVER_BACKENDS,
    client_root,
    note_opened,
    opened_before,
    opening,
    shared_client,
    split_client,
)
from ._object_errors import first_line, what_failed
from ._object_locks import LOCK_PREFIX, Lease, is_lock_object
from ._object_options import url_settings
from ._object_readers import ObjectReader
from ._object_uploads import PiecesUpload, pieces_upload, put_parts
from ._object_versions import ObjectVersion, PriorVersions, put_mode, version_of
from ._obstore_runtime import obstore_module as _obstore
from ._obstore_runtime import obstore_request as _request
from ._plain_http import PlainHTTP, plain_client, plain_path
from .base import (
    S3_LEAST_PART_BYTES,
    UNCHANGED,
    BodyProgress,
    ByteRange,
    Fetched,
    Pieces,
    RangeReader,
    ReadBytes,
    Request,
    Store,
    Unchanged,
    at_most,
    both_bounds,
    bounded,
    check_length,
    in_flight,
    validate_key,
    validate_prefix,
)
from .options import StorageOptions, credentials_error

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer
    from obstore import GetOptions, ObjectMeta, OffsetRange, PutMode, PutResult, SuffixRange
    from obstore.store import ClientConfig, RetryConfig
    from obstore.store import ObjectStore as ObstoreStore

__all__ = ["KNOWN_VERSIONS", "ObjectStore", "WRITE_TRIES"]


# Backends whose PUT takes If-Match / If-None-Match (S3 since 2024, GCS generations, Azure).
_CONDITIONAL_BACKENDS = ("S3Store", "GCSStore", "AzureStore", "MemoryStore")
# Whole-object PUTs that keep finding the object replaced by another writer give up after
# this many tries.
WRITE_TRIES = 8
# ETags a store keeps (ObjectStore._versions); the oldest are forgotten past it, which costs
# a later write of such a key a refused PUT and a HEAD.
KNOWN_VERSIONS = 1 << 16


# How they say the server answered 416 (a range past the end) or a whole object to a range:
# by the status, never a "416" that a URL's port or a duration holds.
_NOT_SATISFIABLE = re.compile(r"status code: 416 |status: 416,")
_NOT_PARTIAL = re.compile(r"\bNotPartial\b")
# Requests obstore's get_ranges keeps in flight at once (object_store's
# OBJECT_STORE_COALESCE_PARALLEL; measured with obstore 0.12): the slots of the process's
# bound such a call holds.
_RANGES_IN_FLIGHT = 10


def _visible(path: str) -> bool:
    return not is_lock_object(path.rpartition("/")[2])


def _link_of(url: str | None) -> Link:
    """The Link to the server of `url` (its scheme and host; a store made of an obstore
    store without one: a Link of its own)."""
    if url is None:
        return Link()
    parts = urllib.parse.urlsplit(url)
    return link_to(f"{parts.scheme}://{parts.netloc}")


def _is_missing(error: BaseException) -> bool:
    obs = _obstore()
    return isinstance(error, (FileNotFoundError, obs.exceptions.NotFoundError))


class ObjectStore(Store):
    """Keys as objects of an obstore store (`obstore.store.S3Store`, `GCSStore`, `AzureStore`,
    `HTTPStore`, ...). Make one from a URL with `ObjectStore.from_url`."""

    readers_keep_one_version = True  # (If-Match on the ETag the first read saw)
    versioned_reads = True  # (strong ETags, but an HTTP server's; a HEAD tells a known one)
    link: Link

    def __init__(
        self,
        store: ObstoreStore,
        read_only: bool = False,
        *,
        url: str | None = None,
        conditional_writes: bool | None = None,
        single_writer: bool = False,
        prefix: str = "",
    ) -> None:
        kind = type(store).__name__
        http = kind == "HTTPStore"
        super().__init__(read_only or http)
        self._store = store
        # The keys are objects below this path of `store` (from_url's shared clients).
        self._prefix = prefix.strip("/")
        # The key of the shared client `store` is (from_url sets it): a copy of this store
        # unpickled in another process shares that process's client of the same key.
        self._client_key: Hashable | None = None
        self.url = url
        self.link = _link_of(url)
        # An HTTP server is a read-only key space that cannot be listed; and its ETags are
        # often made of a file's size and modification second, which other bytes can share
        # (a rewrite within that second): they version nothing.
        self.supports_listing = not http
        self.supports_writes = self.streams_writes = not http
        self.versioned_reads = not http
        self.shares_versions = kind in SERVER_BACKENDS
        # (S3's least part is GCS's too; Azure's blocks have none.)
        self.least_part_bytes = S3_LEAST_PART_BYTES if kind in SERVER_BACKENDS else None
        self.writes_pieces = self.least_part_bytes is not None
        self.supports_conditional_writes = (
            kind in _CONDITIONAL_BACKENDS
            if conditional_writes is None
            else bool(conditional_writes)
        )
        self.conditions_writes = self.supports_conditional_writes
        # Locks are lock objects made by create-only puts (see lock); without conditional
        # writes, `single_writer` (the caller's word that only this process writes the
        # store) makes them locks across this process's threads.
        self.single_writer = bool(single_writer)
        # Seconds per request and retries its client was made with (None: config's).
        self.io_timeout: float | None = None
        self.io_retries: int | None = None
        self.supports_locks = self.supports_writes and (
            self.supports_conditional_writes or self.single_writer
        )
        self._versions: collections.OrderedDict[str, ObjectVersion] = collections.OrderedDict()
        # Keys that may hold objects this store has not seen, learnt before their PUTs
        # (may_hold); and whether the last key put that nobody announced and this store had
        # not seen was stored.
        self._prior = PriorVersions(self, KNOWN_VERSIONS)
        self._unseen_stored = False
        # this host's clock minus the store's (seconds), once known
        self._clock_offset: float | None = None
        # Set when the server turned a byte range down (an HTTP server without them): ranges
        # are then cut from streamed whole GETs.
        self._no_ranges = False
        # The plain client that sends this store's GETs first (from_url's of an http(s)
        # store), and the path below its origin that the keys are under.
        self._plain: PlainHTTP | None = None
        self._plain_base = ""

    # The ETags this store wrote or read last, by key: what its next PUT of the key is
    # conditional on (see the module's docstring). A key whose PUT is in flight, failed or
    # timed out has none. Not pickled: a copy elsewhere would only cost refused PUTs.
    def _saw(self, key: str, meta: ObjectMeta | PutResult) -> None:
        version = version_of(meta)
        if version is None or not self.supports_conditional_writes:
            return
        self._versions[key] = version
        if len(self._versions) > KNOWN_VERSIONS:
            self._versions.popitem(last=False)

    def __getstate__(self) -> dict[str, Any]:
        # (The link is this process's: a copy elsewhere shares that process's.)
        return {
            **self.__dict__,
            "_versions": collections.OrderedDict(),
            "_prior": None,
            "_clock_offset": None,
            "link": None,
            "_plain": self._plain is not None,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.link = _link_of(self.url)
        self._prior = PriorVersions(self, KNOWN_VERSIONS)
        self._plain, self.streams_reads = None, False
        if state["_plain"]:
            self._take_plain_client()
        if self._client_key is not None:
            unpickled = self._store
            self._store = shared_client(self._client_key, lambda: unpickled)

    def _path(self, key: str) -> str:
        """The path of the object of `key` in the obstore store."""
        return f"{self._prefix}/{key}" if self._prefix else key

    def _key_of(self, path: str) -> str:
        return path[len(self._prefix) + 1 :] if self._prefix else path

    @classmethod
    def from_url(
        cls, url: str, read_only: bool = False, storage_options: StorageOptions | None = None
    ) -> ObjectStore:
        """The store at `url` (s3://, gs://, az://, abfs://, http(s)://...). storage_options are
        obstore's configuration keys (s3fs' `key`, `secret`, `endpoint_url`, `anon`, ... are
        taken too; S3 over https defaults to `unsigned_payload`: see _object_options), plus
        `timeout` (seconds), `retries`, `client_options`, `retry_config` and
        `conditional_writes` (False for an S3-compatible server without If-Match) and
        `single_writer` (True: only this process writes the store, so locks need only exclude
        its threads). Other options, and options naming local credential files unless
        `allow_credential_files` is True, are refused (see zarrcore.storage.options)."""
        obs = _obstore()
        try:
            backend = obs.parse_scheme(url)
        except (obs.exceptions.BaseError, ValueError) as e:
            raise StoreURLError(f"cannot open {url!r}: {first_line(e)}") from e
        settings = url_settings(url, backend, storage_options)
        options, own, client, retry = settings[:4]
        store, client_key, prefix = cls._client_of(url, options, client, retry)
        made = cls(
            store,
            read_only,
            url=url,
            conditional_writes=own.get("conditional_writes"),
            single_writer=own.get("single_writer", False),
            prefix=prefix,
        )
        made._client_key = client_key
        made.io_timeout, made.io_retries = settings.timeout, settings.retries
        if backend == "http" and not options and not own.get("client_options"):
            made._take_plain_client()
        return made

    def _take_plain_client(self) -> None:
        """Send GETs by the process's plain client of this store's URL, where it may."""
        assert self.url is not None and self.io_timeout is not None
        plain = plain_client(self.url, self.io_timeout)
        if plain is not None:
            self._plain, self._plain_base = plain
            self.streams_reads = True

    @staticmethod
    def _client_of(
        url: str, options: dict[str, Any], client: ClientConfig, retry: RetryConfig
    ) -> tuple[ObstoreStore, Hashable | None, str]:
        """(obstore's store for `url`, the key of the client it shares or None, the path of
        `url` below that client's root); a URL opened before takes its client at once."""
        opened = opening(url, (options, client, retry))
        known = opened_before(opened)
        if known is not None:
            return known
        obs = _obstore()
        try:
            parsed = obs.store.from_url(url, client_options=client, retry_config=retry, **options)
            split = split_client(parsed, client, retry)
            if split is None:
                return parsed, None, ""
            store = shared_client(split[0], lambda: client_root(parsed, client, retry))
        except (obs.exceptions.BaseError, ValueError, TypeError) as e:
            raise StoreURLError(f"cannot open {url!r}: {first_line(e)}") from e
        note_opened(opened, split)
        return store, split[0], split[1]

    def _identity(self) -> Hashable:
        return self.url or id(self._store)

    def __repr__(self) -> str:
        return f"ObjectStore({self.url or self._store!r})"

    # -- errors -------------------------------------------------------------
    def _error(self, key: str, error: BaseException) -> StoreError:
        """`error` met on `key` as a StoreError naming the key and this store."""
        no_credentials = credentials_error(
            error, f"key {key!r} of {self!r}", (self.url or "").partition("://")[0]
        )
        if no_credentials is not None:
            return no_credentials
        code, what, text = what_failed(error, self.url)
        return StoreError(code, f"key {key!r} of {self!r}: {what}: {text}")

    def _missing(self, key: str, error: BaseException) -> Literal[True]:
        """True when `error` says `key` is missing; a missing bucket is an error instead."""
        if _is_missing(error) and "NoSuchBucket" not in str(error):
            return True
        raise self._error(key, error) from error

    # -- reads --------------------------------------------------------------
    def _etag(self, key: str) -> str | None:
        """The object's ETag now (HEAD); None when it is missing or has none."""
        try:
            meta: ObjectMeta = _request(_obstore().head, self._store, self._path(key))
        except Exception as e:
            if self._missing(key, e):
                return None
        return meta["e_tag"]

    def _size(self, key: str) -> int:
        meta: ObjectMeta = _request(_obstore().head, self._store, self._path(key))
        return meta["size"]

    @overload
    def _get(
        self,
        key: str,
        start: int | None = None,
        stop: int | None = None,
        pin: ObjectReader | None = None,
        copy: Literal[True] = True,
    ) -> bytes | None: ...

    @overload
    def _get(
        self, key: str, start: int | None, stop: int | None, pin: ObjectReader | None, copy: bool
    ) -> ReadBytes | None: ...

    @overload
    def _get(
        self,
        key: str,
        start: int | None = None,
        stop: int | None = None,
        pin: ObjectReader | None = None,
        *,
        copy: bool,
    ) -> ReadBytes | None: ...

    def _get(
        self,
        key: str,
        start: int | None = None,
        stop: int | None = None,
        pin: ObjectReader | None = None,
        copy: bool = True,
    ) -> ReadBytes | None:
        """The bytes of key[start:stop], None when it is missing. With `pin` (an
        ObjectReader), only from the version of the object `pin` saw first. `copy` False:
        a read-only view of obstore's buffer instead of a copy as bytes."""
        obs = _obstore()
        options: GetOptions = {} if pin is None or pin.e_tag is None else {"if_match": pin.e_tag}
        spec: tuple[int, int] | OffsetRange | SuffixRange | None
        try:
            if start is None and stop is None or self._no_ranges:
                spec = None
            else:
                start = start or 0
                if stop is None:
                    spec = {"suffix": -start} if start < 0 else {"offset": start}
                elif start >= 0 and stop >= 0:
                    if stop <= start:
                        self._size(key)  # a missing key still reads as None
                        return b""
                    spec = (start, stop)
                else:  # bounds relative to the end need the size
                    size = pin.size if pin is not None and pin.size is not None else self._size(key)
                    lo, hi, _ = slice(start, stop).indices(size)
                    return self._get(key, lo, max(lo, hi), pin)
                options["range"] = spec
            cut = spec is None and (start, stop) != (None, None)
            if not cut:
                plain = self._plain_get(key, [(start, stop)], pin, copy)
                if plain is not None:
                    return plain[0]
            try:
                began = time.monotonic()
                result, data = _request(
                    get_body,
                    self._store,
                    self._path(key),
                    options,
                    (start, stop) if cut else None,
                    self._deadline(),
                    self.link,
                )
                self.link.observe(time.monotonic() - began, len(data))
            except obs.exceptions.PreconditionError as e:
                raise KeyChangedError(
                    f"key {key!r} of {self!r} was replaced while it was being read; read it again"
                ) from e
            except obs.exceptions.NotSupportedError:
                if spec is None:
                    raise
                self._no_ranges = True
                return self._get(key, start, stop, pin, copy)
            except obs.exceptions.BaseError as e:
                if spec is not None and _NOT_PARTIAL.search(str(e)) and not self._size(key):
                    return b""  # a suffix of an empty object, which servers answer whole
                if spec is None or not _NOT_SATISFIABLE.search(str(e)):
                    raise
                return b""  # the range starts past the end: Python's slice is empty
            meta = result.meta  # (a new dict at each access)
            if cut:
                check_length(self, key, len(data), start, stop, meta["size"])
            else:
                lo, hi = result.range
                check_length(self, key, len(data), lo, hi, meta["size"])
            if pin is not None:
                pin.saw(meta)
            elif not self.read_only:  # (a range's answer tells the whole object's version)
                self._saw(key, meta)
            return bytes(data) if copy else data
        except StoreError:
            raise
        except Exception as e:
            if self._missing(key, e):
                return None

    def _plain_get(
        self,
        key: str,
        spans: Sequence[ByteRange],
        pin: ObjectReader | None,
        copy: bool,
        on_body: BodyProgress | None = None,
    ) -> Sequence[ReadBytes | None] | None:
        """The bytes of `key` that each span names (see PlainHTTP.get), read by the plain
        client at once ([None] when it is missing); with `on_body`, on one connection in
        turn, each body handed to it as it arrives. None when it has no answer (ask
        obstore)."""
        plain = self._plain
        if plain is None or not plain_path(key):
            return None
        began = time.monotonic()
        tag = None if pin is None else pin.e_tag
        target = f"{self._plain_base}/{key}"
        answers = _request(plain.get, target, spans, tag, self.link, on_body, slots=len(spans))
        if not isinstance(answers, list):
            return None if answers is None else [None]  # (MISSING)
        took = time.monotonic() - began
        for answer, span in zip(answers, spans):
            self.link.observe(took, len(answer.body))
            check_length(self, key, len(answer.body), *span, answer.size)
            if pin is not None:
                pin.saw(cast("ObjectMeta", {"e_tag": answer.e_tag, "size": answer.size}))
        return [bytes(a.body) if copy else a.body for a in answers]

    def _each_range(
        self,
        key: str,
        ranges: Sequence[ByteRange],
        copy: bool = True,
        pin: ObjectReader | None = None,
    ) -> list[ReadBytes] | None:
        """Each range of `key` as a GET of its own, at once (None when it is missing): by
        the plain client in the calling thread, of `pin`'s version, where it answers."""
        plain = None
        if pin is not None and both_bounds(ranges):
            plain = self._plain_get(key, ranges, pin, copy)
        if plain is not None:
            return None if None in plain else cast("list[ReadBytes]", plain)
        parts: list[ReadBytes | None] = [None] * len(ranges)
        for i, part in each(
            fan_out(
                lambda r: self._get(key, r[0], r[1], pin, copy),
                ranges,
                len(ranges),
                executor=_aio.io_threads(),
                deadline=self._deadline(),
                doing="reading",
            )
        ):
            parts[i] = part
        found = [p for p in parts if p is not None]
        return None if len(found) < len(parts) else found

    def _get_ranges(
        self, key: str, ranges: Sequence[ByteRange], copy: bool = True
    ) -> list[ReadBytes] | None:
        simple = both_bounds(ranges)
        # (One range is one GET, whose answer tells the object's version too: see _saw. The
        # plain client sends each range as planned, at once: answers of one version only.)
        if not simple or self._no_ranges or len(ranges) == 1 or self._plain is not None:
            pin = ObjectReader(self, key) if self._plain is not None and len(ranges) > 1 else None
            return self._each_range(key, ranges, copy, pin)
        try:
            parts = _request(
                get_parts,
                self._store,
                self._path(key),
                [r[0] for r in ranges],
                [r[1] for r in ranges],
                self._deadline(),
                self.link,
                slots=min(len(ranges), _RANGES_IN_FLIGHT),
            )
        except Exception as e:
            if _is_missing(e) and "NoSuchBucket" not in str(e):
                return None
            # A range that starts past the end fails the batch (obstore 0.12 panics): read
            # each range as a slice of its own, which also names the key in a real error.
            return self._each_range(key, ranges)
        spans = cast("list[tuple[int, int]]", ranges)  # (simple: both bounds given)
        if any(len(p) != stop - start for p, (start, stop) in zip(parts, spans)):
            # Short parts are right only where the object ends: its size tells.
            try:
                size = self._size(key)
            except Exception as e:
                if self._missing(key, e):
                    return None
            for part, (start, stop) in zip(parts, ranges):
                check_length(self, key, len(part), start, stop, size)
        return [bytes(p) if copy else memoryview(p) for p in parts]

    def _fetch(self, key: str, ranges: Sequence[ByteRange] | None) -> Fetched:
        validate_key(key)
        # (The engine decodes from any buffer: no copy of each object as bytes.)
        return (
            self._get(key, copy=False)
            if ranges is None
            else self._get_ranges(key, ranges, copy=False)
        )

    def _deadline(self) -> float:
        """Seconds a fan-out of requests waits for any answer before it gives up: longer than
        the client's own timeouts and retries, which fail first."""
        return _aio.answer_deadline(self.io_timeout, self.io_retries)

    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        return self._get(validate_key(key), start, stop)

    def get_ranges(self, key: str, ranges: Sequence[ByteRange]) -> Sequence[ReadBytes] | None:
        # (The engine decodes from any buffer: no copy of each object as bytes.)
        return self._get_ranges(validate_key(key), list(ranges), copy=False)

    @contextlib.contextmanager
    def reader(self, key: str, version: Any = None) -> Iterator[RangeReader | None]:
        """As Store.reader, of one version of the object: the first read notes its ETag and
        every later read asks for that ETag (If-Match), so a reader never mixes two versions;
        if the object is replaced meanwhile, KeyChangedError. With `version` (an earlier
        reader's), every read asks for that one."""
        reader = ObjectReader(self, validate_key(key))
        if version is not None:
            reader.e_tag, reader.size = version
        yield reader

    def get_many(
        self, requests: Sequence[Request], concurrency: int | None = None
    ) -> Iterator[tuple[int, Fetched]]:
        return each(
            fan_out(
                lambda r: self._fetch(*r),
                requests,
                in_flight(concurrency),
                executor=_aio.io_threads(),
                deadline=self._deadline(),
                doing="reading",
            )
        )

    def _fetch_unless(
        self, key: str, ranges: Sequence[ByteRange] | None, known: str | None
    ) -> tuple[Fetched | Unchanged, str | None]:
        """`_fetch` of one version of the object, with its strong ETag (None: a weak one or
        none, which tells no bytes apart); UNCHANGED when a HEAD finds its ETag still
        `known`: one request without a body. (Not a GET If-None-Match: the client shows no
        header of its 304, and a proxy may answer one for another ETag.)"""
        validate_key(key)
        if known is not None and self._etag(key) == known:
            return UNCHANGED, known
        pin = ObjectReader(self, key)
        result: Fetched
        if ranges is None:
            result = self._get(key, None, None, pin, False)
        else:
            parts: list[ReadBytes] = []
            for start, stop in ranges:
                part = self._get(key, start, stop, pin, False)
                if part is None:
                    return None, None
                parts.append(part)
            result = parts
        if result is None:
            return None, None
        tag = pin.e_tag
        return result, tag if tag and not tag.startswith("W/") else None

    def get_many_versioned(
        self, requests: Sequence[Request], known: Sequence[Any], concurrency: int | None = None
    ) -> Iterator[tuple[int, Fetched | Unchanged, Any]]:
        """As Store.get_many_versioned: each object's strong ETag is its version, and a
        known one is checked by a HEAD (one request, no body, when unchanged)."""
        items: list[tuple[Request, Any]] = list(zip(requests, known))

        def fetch(item: tuple[Request, Any]) -> tuple[Fetched | Unchanged, str | None]:
            return self._fetch_unless(item[0][0], item[0][1], item[1])

        results: Iterator[tuple[int, tuple[Fetched | Unchanged, str | None]]] = each(
            fan_out(
                fetch,
                items,
                in_flight(concurrency),
                executor=_aio.io_threads(),
                deadline=self._deadline(),
                doing="reading",
            )
        )
        for i, (result, version) in results:
            yield i, result, version

    def _get_with_meta(
        self, key: str, limit: int | None = None, why: str | None = None
    ) -> tuple[bytes, ObjectMeta] | tuple[None, None]:
        """(bytes, obstore's metadata) of the object at `key`; (None, None) when missing.
        With `limit`, one ranged GET of a byte more, and `too_large` when the object is
        larger (as Store.get_versioned)."""
        obs = _obstore()
        options = {} if limit is None else {"range": at_most(limit)[0]}
        path = self._path(key)
        try:
            try:
                result, body = _request(
                    get_body, self._store, path, options, None, self._deadline(), self.link
                )
            except obs.exceptions.BaseError as e:
                if not options or not _NOT_SATISFIABLE.search(str(e)):
                    raise
                # (empty: no range fits)
                result, body = _request(
                    get_body, self._store, path, {}, None, self._deadline(), self.link
                )
        except Exception as e:
            if self._missing(key, e):
                return None, None
        data, meta = bytes(body), result.meta
        lo, hi = result.range
        check_length(self, key, len(data), lo, hi, meta["size"])
        if limit is not None:
            bounded(self, key, [data], limit, why)
        self._saw(key, meta)
        return data, meta

    def get_versioned(
        self, key: str, limit: int | None = None, why: str | None = None
    ) -> tuple[bytes | None, ObjectVersion | None]:
        data, meta = self._get_with_meta(validate_key(key), limit, why)
        return data, None if meta is None else (meta["e_tag"], meta["version"])

    def exists(self, key: str) -> bool:
        key = validate_key(key)
        try:
            self._size(key)
            return True
        except Exception as e:
            if self._missing(key, e):
                return False

    def getsize(self, key: str) -> int | None:
        key = validate_key(key)
        try:
            return self._size(key)
        except Exception as e:
            if self._missing(key, e):
                return None

    # -- writes -------------------------------------------------------------
    def check_writable(self, key: str) -> None:
        if not self.supports_writes:
            raise ReadOnlyError(f"cannot write {key!r}: {self!r} is read-only")
        super().check_writable(key)

    def _put(
        self, key: str, value: ReadableBuffer, mode: PutMode = "overwrite"
    ) -> PutResult | None:
        obs = _obstore()
        if not isinstance(value, bytes):
            value = memoryview(value).cast("B")
        try:
            put: PutResult = _request(
                obs.put, self._store, self._path(key), value, mode=mode, use_multipart=False
            )
            return put
        except Exception as e:
            if mode != "overwrite" and (
                isinstance(e, (obs.exceptions.AlreadyExistsError, obs.exceptions.PreconditionError))
                or (mode != "create" and self._missing(key, e))
            ):
                return None  # another writer came first (or deleted it)
            raise self._error(key, e) from e

    def _write(
        self, key: str, value: ReadableBuffer, part_bytes: int | None = None
    ) -> PutResult | None:
        """Put `value` at `key`, conditional on the version this store knows of it (see the
        module's docstring); on a conflict, learn the current version and put again. A value
        larger than `part_bytes` goes in parts of at most that many bytes (`put_parts`)."""
        size = memoryview(value).nbytes
        if part_bytes is not None and size > part_bytes:
            self._versions.pop(key, None)  # (as below: unknown until the upload is answered)
            try:
                put = put_parts(self._store, self._path(key), value, -(-size // part_bytes))
            except Exception as e:
                raise self._error(key, e) from e
            self._saw(key, put)
            return put
        if not self.supports_conditional_writes:
            return self._put(key, value)
        # A key that may hold an object is learnt first, where a create-only PUT would be
        # refused with its whole body sent and then need a HEAD (64 objects of 128 KiB
        # rewritten over 40 ms: 0.39 s with one listing, 0.41 s with a HEAD each, 0.63 s).
        presumed = False  # (put create-only on the presumption that the key is new)
        if key in self._prior:
            if not self._prior.settles(key, self._deadline()) and key not in self._versions:
                self._learn(key)
        elif key not in self._versions:
            # One nobody announced (by a caller that cannot tell, as zarr-python's pipeline):
            # learnt first too while the last such key was found stored.
            if self._unseen_stored:
                self._unseen_stored = self._learn(key)
            else:
                presumed = True
        for _ in range(WRITE_TRIES):
            # Forgotten until this PUT is answered: one that fails or times out may still
            # land, so the next write of the key learns the version anew.
            put = self._put(key, value, put_mode(self._versions.pop(key, None)))
            if presumed:
                self._unseen_stored, presumed = put is None, False
            if put is not None:
                self._saw(key, put)
                return put
            self._learn(key)
        raise WriteConflictError(
            f"key {key!r} of {self!r}: other writers replaced it "
            f"{WRITE_TRIES} times while it was being written"
        )

    def _learn(self, key: str) -> bool:
        """Learn the version `key` is at now (HEAD): is it stored? (A missing one has none.)"""
        try:
            self._saw(key, _request(_obstore().head, self._store, self._path(key)))
        except Exception as e:
            return not self._missing(key, e)  # (raised unless the key is missing)
        return True

    def may_hold(self, keys: Iterable[str]) -> None:
        self._prior.announce(sorted(key for key in keys if key not in self._versions))

    def set(self, key: str, value: ReadableBuffer) -> None:
        self.check_writable(key)
        self._write(validate_key(key), value)

    def set_many(
        self,
        items: Iterable[tuple[str, ReadableBuffer | Pieces]],
        concurrency: int | None = None,
        part_bytes: int | None = None,
    ) -> None:
        """As Store.set_many, each PUT (or multipart upload) started as soon as `items`
        (which may be a generator) yields it; a value given as Pieces is taken here, its
        parts uploading as they fill (`writes_pieces`)."""
        parts = None if self.least_part_bytes is None else part_bytes
        uploads: list[PiecesUpload] = []

        def writes() -> Iterator[tuple[str, Callable[[], object]]]:
            for key, value in items:
                self.check_writable(key)
                key = validate_key(key)
                if not isinstance(value, Pieces):
                    yield key, functools.partial(self._write, key, value, parts)
                    continue
                try:
                    write = pieces_upload(
                        self._store, self._path(key), value, functools.partial(self._whole, key)
                    )
                except ZarrcoreError:
                    raise  # (a piece's own failure)
                except Exception as e:
                    raise self._error(key, e) from e
                if isinstance(write, PiecesUpload):
                    uploads.append(write)
                    write = functools.partial(self._completed, key, write)
                yield key, write

        try:
            run_bounded(
                lambda item: item[1](),
                writes(),
                in_flight(concurrency),
                executor=_aio.io_threads(),
                deadline=self._deadline(),
                doing="writing",
            )
        finally:
            for upload in uploads:
                upload.abort()  # (those that never completed: a failure stopped the rest)

    def _whole(self, key: str, value: ReadableBuffer | None) -> None:
        """Write `value` at `key` whole (`_write`); None deletes the key."""
        if value is None:
            self._delete(key)
        else:
            self._write(key, value)

    def _completed(self, key: str, upload: PiecesUpload) -> None:
        """Complete the multipart upload of `key`, whose version is unknown then (the
        completion answers no ETag)."""
        try:
            upload()
        except Exception as e:
            raise self._error(key, e) from e
        finally:
            self._versions.pop(key, None)

    def set_if(self, key: str, value: ReadableBuffer, version: ObjectVersion | None) -> bool:
        self.check_writable(key)
        if not self.supports_conditional_writes:
            return super().set_if(key, value, version)
        key = validate_key(key)
        self._versions.pop(key, None)
        done = self._put(key, value, put_mode(version))
        if done is not None:
            self._saw(key, done)
        return done is not None

    def delete(self, key: str) -> None:
        self.check_writable(key)
        self._delete(validate_key(key))

    def _delete(self, key: str) -> None:
        self._versions.pop(key, None)
        try:
            _request(_obstore().delete, self._store, self._path(key))
        except Exception as e:
            self._missing(key, e)  # deleting a missing key is no error

    def delete_prefix(self, prefix: str) -> None:
        self.check_writable(prefix or "/")
        keys = list(self.list_prefix(prefix))
        for key in keys:
            self._versions.pop(key, None)
        obs = _obstore()
        for i in range(0, len(keys), 1000):  # S3's DeleteObjects takes 1000 keys
            try:
                _request(obs.delete, self._store, [self._path(key) for key in keys[i : i + 1000]])
            except Exception as e:
                if not _is_missing(e):
                    raise self._error(keys[i], e) from e

    # -- listing ------------------------------------------------------------
    def own_file(self, name: str) -> bool:
        return is_lock_object(name)

    def list_prefix(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        self.check_listing(prefix)
        obs = _obstore()
        under = self._path(prefix) if prefix else self._prefix

        def every() -> list[ObjectMeta]:
            return [meta for batch in obs.list(self._store, prefix=under or None) for meta in batch]

        try:
            return [
                self._key_of(meta["path"]) for meta in _request(every) if _visible(meta["path"])
            ]
        except Exception as e:
            raise self._error(prefix, e) from e

    def list_dir(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        self.check_listing(prefix)
        obs = _obstore()
        under = self._path(prefix) if prefix else self._prefix
        try:
            listing = _request(obs.list_with_delimiter, self._store, under or None)
        except Exception as e:
            raise self._error(prefix, e) from e
        names = {p.rstrip("/").rpartition("/")[2] for p in listing["common_prefixes"]}
        names.update(
            meta["path"].rpartition("/")[2] for meta in listing["objects"] if _visible(meta["path"])
        )
        return sorted(names)

    # -- locks --------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, key: str, node: str = "", *, replaced_last: bool = False) -> Iterator[None]:
        """Exclusive across threads, processes and hosts: the holder is whoever created the
        lock object `.zarrcore-lock.NAME` beside `key` with a create-only put, and deleting it
        releases the lock. The holder renews the object every LOCK_LEASE / 4 seconds (a
        conditional put on its ETag); one not renewed for LOCK_LEASE seconds (its holder
        died) is taken over the same way. A holder that finds its lock object taken over
        raises LockLostError when it leaves the block. Waiting longer than
        config.lock_timeout raises LockTimeoutError. Without conditional writes this raises
        LockUnavailableError, unless the store was made `single_writer`."""
        key = validate_key(key)
        if self.single_writer and not self.supports_conditional_writes:
            with self.thread_lock(key):
                yield
            return
        if not self.supports_locks:
            raise LockUnavailableError(
                f"{self!r} has no conditional writes, so it cannot lock {key!r} across "
                f"processes: updating it could lose a concurrent update"
            )
        head, _, name = key.rpartition("/")
        lock_key = f"{head}/{LOCK_PREFIX}{name}" if head else LOCK_PREFIX + name
        with self.thread_lock(key):  # threads of this process queue here, not on the server
            lease = Lease(self, lock_key)
            try:
                yield
            finally:
                lease.release()

    def _store_clock(self, beside: str) -> float | None:
        """The store's clock now (seconds since the epoch), from this host's and an offset
        learned once from the Last-Modified of a probe object put beside the lock object
        `beside` (None when another's probe deleted it first). Last-Modified counts whole
        seconds: the offset errs towards the store's clock seeming up to a second early."""
        if self._clock_offset is None:
            probe = beside[: beside.rindex(LOCK_PREFIX) + len(LOCK_PREFIX)]  # never a lock's
            self._put(probe, b"")
            put = time.time()
            _, meta = self._get_with_meta(probe)
            self._delete(probe)
            if meta is None:
                return None
            self._clock_offset = put - meta["last_modified"].timestamp()
        return time.time() - self._clock_offset
