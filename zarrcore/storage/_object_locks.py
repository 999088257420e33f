"""The lease locks of ObjectStore.lock: a lock object beside the key, created by a create-only
put, renewed by its holder and taken over once stale (see ObjectStore.lock)."""

from __future__ import annotations

import json
import math
import os
import random
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LockLostError, LockTimeoutError, StoreError
from ..runtime.config import config
from ._object_versions import ObjectVersion, put_mode, version_of

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer
    from obstore import ObjectMeta, PutMode, PutResult

__all__ = ["LOCK_PREFIX", "LOCK_LEASE", "RELEASE_TRIES", "is_lock_object", "LeasedStore", "Lease"]

# Lock objects (see ObjectStore.lock) are named with this prefix beside their key and are
# never listed as keys.
LOCK_PREFIX = ".zarrcore-lock."
# A lock object not renewed for this many seconds was left by a dead holder and may be taken
# over. Its holder renews it every LOCK_LEASE / 4 seconds for as long as it holds the lock.
LOCK_LEASE = 120.0
# Deletes of a lock object tried on release before it is left for others to take over.
RELEASE_TRIES = 3


def is_lock_object(name: str) -> bool:
    return name.startswith(LOCK_PREFIX)


# Nonces of the leases of this process whose lock objects could not be deleted on release:
# their holder is done, so this process takes them over at once.
_abandoned: set[str] = set()


def _parse_stamp(data: bytes) -> dict[str, Any] | None:
    """The stamp (a dict with a finite, positive "time") of a lock object's bytes; None when
    they are none a zarrcore holder writes."""
    try:
        stamp: dict[str, Any] = json.loads(data)
        if math.isfinite(stamp["time"]) and stamp["time"] > 0:
            return stamp
    except (ValueError, KeyError, TypeError):
        pass
    return None


class LeasedStore(Protocol):
    """What a lease asks of its store (an ObjectStore): conditional puts, reads of an
    object with its metadata, deletes, and the store's clock."""

    def _put(
        self, key: str, value: ReadableBuffer, mode: PutMode = "overwrite"
    ) -> PutResult | None: ...
    def _get_with_meta(
        self, key: str, limit: int | None = None, why: str | None = None
    ) -> tuple[bytes, ObjectMeta] | tuple[None, None]: ...
    def _delete(self, key: str) -> None: ...
    def _store_clock(self, beside: str) -> float | None: ...


class Lease:
    """One holding of a lock object: taken on creation (waiting for it as long as a live
    holder renews it, up to config.lock_timeout), renewed from a daemon thread, and deleted
    by release(). Its stamp carries a nonce, so that a put of it that was applied but whose
    answer was lost (the retry then conflicting with it) is still recognised as its own."""

    def __init__(self, store: LeasedStore, lock_key: str) -> None:
        self._store, self._key = store, lock_key
        self._nonce = os.urandom(16).hex()
        try:
            self._version = self._acquire()
        except StoreError:
            _abandoned.add(self._nonce)  # its put may have landed: this process may take it
            raise
        self._lost = False
        self._done = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name="zarrcore-lease", daemon=True)
        self._renewer.start()

    def _claim(
        self, version: ObjectVersion | None
    ) -> tuple[
        ObjectVersion | None, dict[str, Any] | None, ObjectVersion | None, ObjectMeta | None
    ]:
        """Put this holder's stamp if the lock object's version is still `version` (None: if
        there is none): (its new version, None, None, None), or else (None, stamp, version,
        obstore's metadata) of the lock object there (stamp None: no holder's; metadata
        None: no object)."""
        stamp = json.dumps(
            {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "time": time.time(),
                "nonce": self._nonce,
            }
        ).encode()
        failure = None
        try:
            put = self._store._put(self._key, stamp, put_mode(version))
            if put is not None:
                return version_of(put), None, None, None
        except StoreError as e:
            failure = e  # perhaps applied all the same: the lock object tells
        data, meta = self._store._get_with_meta(self._key)
        held = None if data is None else _parse_stamp(data)  # (data is None when meta is)
        if meta is not None and held is not None and held.get("nonce") == self._nonce:
            return version_of(meta), None, None, None
        if failure is not None:
            raise failure
        return None, held, None if meta is None else version_of(meta), meta

    def _acquire(self) -> ObjectVersion:
        wait, version = 0.005, None
        started = time.monotonic()
        # (version of the lock object, when it was first seen)
        watched: tuple[ObjectVersion | None, float] | None = None
        while True:
            taken, stamp, held, meta = self._claim(version)
            if taken is not None:
                return taken
            if time.monotonic() - started >= config.lock_timeout:
                raise self._timed_out(stamp, meta, config.lock_timeout)
            version = None
            if meta is not None:
                if watched is None or watched[0] != held:
                    watched = (held, time.monotonic())
                if self._stale(stamp, meta, watched[1]):
                    version = held
                    continue  # take it over
            time.sleep(wait * (1 + random.random()))
            wait = min(wait * 2, 0.5)

    def _stale(self, stamp: dict[str, Any] | None, meta: ObjectMeta, since: float) -> bool:
        """Was the lock object (`stamp`, obstore's `meta`), unchanged since `since`
        (time.monotonic()), left by a holder that is gone? Judged by clocks that a holder's
        skew cannot move: how long this process saw it unchanged, and its age by the store's
        clock; a stamp no holder writes (garbage, a NaN time) counts as left."""
        if stamp is None or stamp.get("nonce") in _abandoned:
            return True
        if time.monotonic() - since > LOCK_LEASE:
            return True
        modified = meta["last_modified"].timestamp()
        if time.time() - modified <= LOCK_LEASE:  # this host's clock: no probe needed yet
            return False
        now = self._store._store_clock(self._key)
        return now is not None and now - modified > LOCK_LEASE + 1

    def _timed_out(
        self, stamp: dict[str, Any] | None, meta: ObjectMeta | None, timeout: float
    ) -> LockTimeoutError:
        if meta is None:
            holder = "other holders in turn"
        elif stamp is None:
            holder = "an object that is no lock stamp"
        else:
            holder = f"host {stamp.get('host')!r} pid {stamp.get('pid')}"
        since = (
            "" if meta is None else f", last written {meta['last_modified']:%Y-%m-%d %H:%M:%S} UTC"
        )
        return LockTimeoutError(
            f"gave up after {timeout:g} s (config.lock_timeout) waiting for the lock object "
            f"{self._key!r} of {self._store!r}: held by {holder}{since}"
        )

    def _renew(self) -> None:
        while not self._done.wait(LOCK_LEASE / 4):
            try:
                version = self._claim(self._version)[0]
            except StoreError:
                continue  # a failed request: try again before the lease runs out
            if version is None:
                self._lost = True  # taken over: this holder was presumed dead
                return
            self._version = version

    def release(self) -> None:
        """Delete the lock object. When that keeps failing, leave it (the work it protected is
        done: raising would report a finished update as failed): this process takes it over
        at once, others once it is stale."""
        self._done.set()
        self._renewer.join()
        if self._lost:
            raise LockLostError(
                f"the lock object {self._key!r} of {self._store!r} was taken over while held "
                f"(not renewed for {LOCK_LEASE:g} s): a concurrent update may have been lost"
            )
        store = self._store
        for attempt in range(RELEASE_TRIES):
            try:
                if attempt:
                    # The failed delete may have been applied and the lock taken since.
                    data, _ = store._get_with_meta(self._key)
                    stamp = None if data is None else _parse_stamp(data)
                    if stamp is None or stamp.get("nonce") != self._nonce:
                        return
                store._delete(self._key)
                return
            except StoreError:
                time.sleep(0.05 * 2**attempt)
        _abandoned.add(self._nonce)
