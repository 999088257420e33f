"""A MemoryStore that counts the reads of each chunk key, for tests of how often a read
plan fetches a chunk."""
from collections import Counter

from zarrcore.storage import MemoryStore


class CountingStore(MemoryStore):
    """A memory store that counts the reads of each chunk key (every read ends in `get`)."""

    def __init__(self):
        super().__init__()
        self.reads = Counter()

    def _record(self, key):
        if not key.rsplit("/", 1)[-1].startswith((".z", "zarr.json")):
            self.reads[key] += 1

    def get(self, key, start=None, stop=None):
        self._record(key)
        return super().get(key, start, stop)
