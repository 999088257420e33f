# Type stub of a compiled module (zarrcore/_native/shard_io.pyx): sharded reads and writes of a
# directory or memory store in C threads. Keep in step with the .pyx.
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer

from .cache import ChunkCache
from .files import FileRoot
from .indexing import AxisPlan
from .memstore import NativeMemoryMap

PREFETCH_MAX: int

def sha256_hex(data: Buffer) -> str: ...

class ShardSpec:
    def __init__(
        self,
        *,
        root: FileRoot | None = None,
        key_head: str,
        head_len: int,
        sep: str,
        lead_sep: bool,
        lock_dir: str,
        array_shape: Sequence[int],
        shard_shape: Sequence[int],
        chunk_shape: Sequence[int],
        index_at_start: bool,
        index_crc32c: bool,
        fill: bytes = b"",
        fill_floatsize: int = 0,
        memory: NativeMemoryMap | None = None,
        **chain: Any,
    ) -> None: ...
    def batch(
        self,
        plans: Sequence[AxisPlan],
        data: npt.NDArray[Any],
        writing: bool = False,
        write_empty_chunks: bool = False,
        write_order: npt.ArrayLike | None = None,
        cache: ChunkCache | None = None,
    ) -> ShardBatch: ...
    def read_one(
        self, selection: Any, fortran: bool, dtype: np.dtype[Any], cache: ChunkCache | None = None
    ) -> Any: ...

class ShardBatch:
    def __init__(
        self,
        spec: ShardSpec,
        plans: Sequence[AxisPlan],
        data: npt.NDArray[Any],
        writing: bool,
        write_empty_chunks: bool,
        write_order: npt.ArrayLike | None,
    ) -> None: ...
    @property
    def ntasks(self) -> int: ...
    def work_read(self) -> None: ...
    @property
    def reads_ahead(self) -> bool: ...
    def work_read_ahead(self) -> None: ...
    def work_write(self) -> None: ...
    def stop(self) -> None: ...
    def deferred(self) -> list[int]: ...
    def raise_error(self) -> None: ...
