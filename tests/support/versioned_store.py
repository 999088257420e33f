"""An object store without a server, for tests of the decoded-chunk cache's versions."""
import hashlib

from zarrcore.storage.base import UNCHANGED, Store

_DATA: dict = {}  # VersionedStore's data, by name


class VersionedStore(Store):
    """An object store without a server: data of this process, found by name by every copy
    of the store (pickled too), whose versions are the hash of the bytes padded to `pad`
    characters, the same in every copy, as a server's ETags are; `asked` counts the chunks
    read through get_many_versioned (a request each), `fetched` those whose bytes it gave."""

    versioned_reads = shares_versions = True

    def __init__(self, name, pad=0):
        super().__init__()
        self.name, self.pad, self.asked, self.fetched = name, pad, 0, 0
        self.data = _DATA.setdefault(name, {})

    def __reduce__(self):
        return VersionedStore, (self.name, self.pad)

    def _identity(self):
        return self.name

    def get(self, key, start=None, stop=None):
        value = self.data.get(key)
        return None if value is None else value[start:stop]

    def set(self, key, value):
        self.data[key] = bytes(value)

    def delete(self, key):
        self.data.pop(key, None)

    def exists(self, key):
        return key in self.data

    def list_prefix(self, prefix):
        return [k for k in list(self.data) if not prefix or k.startswith(prefix + "/")]

    def list_dir(self, prefix):
        head = prefix + "/" if prefix else ""
        return sorted({k[len(head):].split("/")[0] for k in list(self.data)
                       if k.startswith(head)})

    def get_many_versioned(self, requests, known, concurrency=None):
        for i, (key, ranges) in enumerate(requests):
            self.asked += 1
            if key not in self.data:
                yield i, None, None
                continue
            version = hashlib.sha256(self.data[key]).hexdigest().ljust(self.pad, "#")
            if known[i] == version:
                yield i, UNCHANGED, version
                continue
            self.fetched += 1
            yield i, self.get(key) if ranges is None else self.get_ranges(key, ranges), version
