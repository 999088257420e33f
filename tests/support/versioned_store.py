"""An object store without a server, for tests of the decoded-chunk cache's versions."""
import hashlib

from dict_store import DictStore
from zarrcore.storage.base import UNCHANGED

_DATA: dict = {}  # VersionedStore's data, by name


class VersionedStore(DictStore):
    """An object store without a server: data of this process, found by name by every copy
    of the store (pickled too), whose versions are the hash of the bytes padded to `pad`
    characters, the same in every copy, as a server's ETags are; `asked` counts the chunks
    read through get_many_versioned (a request each), `fetched` those whose bytes it gave."""

    versioned_reads = shares_versions = True

    def __init__(self, name, pad=0):
        super().__init__(_DATA.setdefault(name, {}))
        self.name, self.pad, self.asked, self.fetched = name, pad, 0, 0

    def __reduce__(self):
        return VersionedStore, (self.name, self.pad)

    def _identity(self):
        return self.name

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
