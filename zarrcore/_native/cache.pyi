# Type stub of a compiled module (zarrcore/_native/cache.pyx): the decoded-chunk cache of
# csrc/cache/zc_chunk_cache.c. Keep in step with the .pyx.
from collections.abc import Sequence
from typing import Any, NamedTuple

from typing_extensions import Buffer

INDEX_SHARE: int
CACHE_BYTES_MAX: int

def version_settled(ctime_ns: int) -> bool: ...
def check_budget(
    budget: object, setting: str, chunk_bytes: int | None = None, chunk: str = "chunk"
) -> int: ...
def _content_hash_under(k0: int, k1: int, data: Buffer, portable: bool = False) -> int: ...

class SharedCacheRef(NamedTuple):
    pid: int
    fd: int
    nonce: int

class ChunkCache:
    capacity: int
    key_len: int
    shared_ref: SharedCacheRef | None
    def __init__(
        self,
        capacity: int,
        chunk_bytes: int,
        ndim: int,
        ninner: int | None = None,
        shared: bool | SharedCacheRef | None = None,
        setting: str = "shared_cache",
    ) -> None: ...
    def info(self) -> dict[str, Any]: ...
    def content_hash(self, data: Buffer) -> int: ...
    def stop_mid_write(self, pid: int) -> None: ...
    def shared_tag(self, key: Sequence[int]) -> bytes | None: ...
    def put_shared(
        self, key: Sequence[int], version: Buffer, data: Buffer, tag: Buffer
    ) -> bool: ...
    def get_shared(self, key: Sequence[int], version: Buffer, n: int) -> bytearray | None: ...
