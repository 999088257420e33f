"""Test stores that behave as object stores do: no native root, no locks, each request taking
a fixed delay, get_many and set_many running requests concurrently; optionally conditional
writes (get_versioned/set_if), in memory or in a directory that several processes share.
They count requests and bytes."""
import concurrent.futures
import contextlib
import hashlib
import os
import threading
import time

import zarrcore
from zarrcore.runtime import portable as _portable
from zarrcore.storage.base import bounded, validate_key


def _size(result):
    """Bytes read in a request's `result`: a value, ranges, (value, version), or none."""
    if result is None or isinstance(result, bool):
        return 0
    if isinstance(result, (bytes, bytearray)):
        return len(result)
    if isinstance(result, tuple):
        return len(result[0])
    return sum(map(len, result))


class DelayedStore(zarrcore.MemoryStore):
    """A MemoryStore read and written as a remote store: `delay` seconds per request, up to
    `concurrency` requests of a get_many/set_many in flight, no locks. `requests` counts every
    request as (kind, key, ranges); `nbytes` the bytes returned."""

    supports_locks = False

    def __init__(self, delay=0.0, concurrency=16, store_dict=None):
        super().__init__(store_dict)
        self.delay, self.concurrency = delay, concurrency
        self._count_lock = threading.Lock()
        self.reset()

    def reset(self):
        with self._count_lock:
            self.requests, self.nbytes, self.in_flight, self.most_in_flight = [], 0, 0, 0

    def _request(self, kind, key, ranges, fetch):
        with self._count_lock:
            self.requests.append((kind, key, ranges))
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            result = fetch()
        finally:
            with self._count_lock:
                self.in_flight -= 1
        with self._count_lock:
            self.nbytes += _size(result)
        return result

    def _fetch(self, key, ranges):
        def read():
            value = self._data.get(validate_key(key))
            if value is None:
                return None
            if ranges is None:
                return bytes(value)
            return [bytes(value[slice(start, stop)]) for start, stop in ranges]
        return self._request("get", key, None if ranges is None else list(ranges), read)

    def get(self, key, start=None, stop=None):
        ranges = None if start is None and stop is None else [(start, stop)]
        result = self._fetch(key, ranges)
        return result if ranges is None or result is None else result[0]

    def get_ranges(self, key, ranges):
        return self._fetch(key, ranges)

    # No version kept across requests.
    reader = zarrcore.Store.reader
    readers_keep_one_version = False

    def set(self, key, value):
        self._request("set", key, None, lambda: super(DelayedStore, self).set(key, value))

    def get_many(self, requests, concurrency=None):
        requests = list(requests)
        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            futures = {pool.submit(self._fetch, key, ranges): i
                       for i, (key, ranges) in enumerate(requests)}
            try:
                for future in concurrent.futures.as_completed(futures):
                    yield futures[future], future.result()
            finally:
                for future in futures:
                    future.cancel()

    def set_many(self, items, concurrency=None, part_bytes=None):
        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            for future in [pool.submit(self.set, key, value) for key, value in items]:
                future.result()


class _KeptReader:
    """A reader of the value a KeepingStore held when it was opened."""

    def __init__(self, store, key, value):
        self.store, self.key, self.value = store, key, value
        self.size = len(value)

    def get_ranges(self, ranges):
        return self.store._request("get", self.key, list(ranges), lambda: [
            bytes(self.value[slice(start, stop)]) for start, stop in ranges])


class KeepingStore(DelayedStore):
    """Readers that keep one version, as ObjectStore's (If-Match on the first ETag)."""

    readers_keep_one_version = True

    @contextlib.contextmanager
    def reader(self, key, version=None):
        value = self._data.get(key)
        yield None if value is None else _KeptReader(self, key, value)


class VersionedStore(DelayedStore):
    """A DelayedStore with conditional writes: each key's version counts its writes."""

    supports_conditional_writes = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._versions = {}
        self._cas = threading.Lock()
        self.conflicts = 0

    def get_versioned(self, key, limit=None, why=None):
        def read():
            with self._cas:
                value = self._data.get(validate_key(key))
                return None if value is None else (bytes(value), self._versions[key])
        found = self._request("get", key, None, read)
        if found is not None and limit is not None:
            bounded(self, key, [found[0]], limit, why)
        return (None, None) if found is None else found

    def set(self, key, value):
        def write():
            with self._cas:
                zarrcore.MemoryStore.set(self, key, value)
                self._versions[key] = self._versions.get(key, 0) + 1
        self._request("set", key, None, write)

    def set_if(self, key, value, version):
        def write():
            with self._cas:
                if self._versions.get(key) != version or (version is None and key in self._data):
                    self.conflicts += 1
                    return False
                zarrcore.MemoryStore.set(self, key, value)
                self._versions[key] = self._versions.get(key, 0) + 1
                return True
        return self._request("set", key, None, write)


class DirectoryVersionedStore(zarrcore.LocalStore):
    """A directory store that several processes share as they would an object store: no
    locks and no native root, but conditional writes whose version is the content's hash (an
    ETag), compared and replaced under an advisory lock on one file of the directory."""

    supports_locks = False
    supports_conditional_writes = True

    def __init__(self, root):
        super().__init__(root)
        self.native_root = None
        self._cas_path = os.path.join(str(root), ".cas-lock")

    def get_versioned(self, key, limit=None, why=None):
        data = self.get(key)
        if data is not None and limit is not None:
            bounded(self, key, [data], limit, why)
        return (None, None) if data is None else (data, hashlib.sha256(data).hexdigest())

    def set_if(self, key, value, version):
        with open(self._cas_path, "a") as lock:
            while not _portable.try_lock_exclusive(lock.fileno()):
                time.sleep(0.001)
            current = self.get(key)
            found = None if current is None else hashlib.sha256(current).hexdigest()
            if found != version:
                return False
            self.set(key, value)
            return True

    def lock(self, key, node="", *, replaced_last=False):
        return zarrcore.Store.lock(self, key, node, replaced_last=replaced_last)
