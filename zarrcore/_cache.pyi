# Type stub of a compiled module (zarrcore/_cache.pyx): the decoded-chunk cache of
# csrc/zc_chunk_cache.c. Keep in step with the .pyx.
from typing import Any

INDEX_SHARE: int
CACHE_BYTES_MAX: int

def check_budget(budget: object, setting: str, chunk_bytes: int | None = None,
                 chunk: str = "chunk") -> int: ...

class ChunkCache:
    capacity: int
    def __init__(self, capacity: int, chunk_bytes: int, ndim: int,
                 ninner: int | None = None) -> None: ...
    def info(self) -> dict[str, Any]: ...
