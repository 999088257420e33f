# Type stub of a compiled module (zarrcore/kernels.pyx): numpy kernels of the compiled core
# (ufuncs, region copies, fill tests, crc32c, shard indexes). Keep in step with the .pyx.
import enum
from collections.abc import Sequence
from typing import Any, TypeVar, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer

_Array = TypeVar("_Array", bound=npt.NDArray[Any])
_Entries = npt.NDArray[np.uint64]

class Status(enum.IntEnum):
    OK = 0
    ERR_CORRUPT = -1
    ERR_SIZE = -2
    ERR_NOMEM = -3
    ERR_PARAM = -4
    ERR_CHECKSUM = -5
    ERR_UNSUPPORTED = -6
    ERR_OVERLAP = -7

byteswap: np.ufunc
fill_equal: np.ufunc

@overload
def copy_region(src: npt.ArrayLike, out: None = None) -> npt.NDArray[Any]: ...
@overload
def copy_region(src: npt.ArrayLike, out: _Array) -> _Array: ...
@overload
def transpose(src: npt.ArrayLike, axes: Sequence[int], out: None = None) -> npt.NDArray[Any]: ...
@overload
def transpose(src: npt.ArrayLike, axes: Sequence[int], out: _Array) -> _Array: ...
def is_fill(arr: npt.ArrayLike, fill_value: Any) -> bool: ...
@overload
def crc32c(data: npt.ArrayLike | Buffer, value: npt.ArrayLike = 0,
           out: None = None) -> npt.NDArray[np.uint32] | np.uint32: ...
@overload
def crc32c(data: npt.ArrayLike | Buffer, value: npt.ArrayLike, out: _Array) -> _Array: ...
def shard_index_validate(entries: npt.ArrayLike, shard_data_size: int) -> None: ...
def shard_index_unpack(buf: Buffer, n_chunks: int, shard_data_size: int,
                       out: _Entries | None = None) -> _Entries: ...
@overload
def shard_index_pack(entries: npt.ArrayLike, out: None = None) -> bytes: ...
@overload
def shard_index_pack(entries: npt.ArrayLike, out: _Array) -> _Array: ...
