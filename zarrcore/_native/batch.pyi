# Type stub of a compiled module (zarrcore/_native/batch.pyx): chunk reads and writes of a directory
# or memory store in C threads. Keep in step with the .pyx.
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .cache import ChunkCache
from .files import FileRoot
from .memstore import NativeMemoryMap

class ChunkBatch:
    def __init__(
        self,
        *,
        settings: dict[str, Any],
        root: FileRoot | None = None,
        key_head: str,
        sep: str,
        lead_sep: bool,
        array_shape: Sequence[int],
        chunk_shape: Sequence[int],
        plans: Any,
        data: npt.NDArray[Any] | None,
        write_empty_chunks: bool = False,
        lock_dir: str = "",
        points: Any = None,
        cache: ChunkCache | None = None,
        memory: NativeMemoryMap | None = None,
        dtype: np.dtype[Any] | None = None,
    ) -> None: ...
    @property
    def ntasks(self) -> int: ...
    def split_writes(self, nthreads: int) -> int: ...
    def split_reads(self, nthreads: int) -> int: ...
    def work_read(self) -> None: ...
    @property
    def reads_ahead(self) -> bool: ...
    def work_read_ahead(self) -> None: ...
    def work_write(self) -> None: ...
    def stop(self) -> None: ...
    def deferred(self) -> list[int]: ...
    def task_key(self, t: int) -> str: ...
    def raise_error(self, head_len: int) -> None: ...
    def read_one(self, selection: Any, fortran: bool, nthreads: int, head_len: int) -> Any: ...
