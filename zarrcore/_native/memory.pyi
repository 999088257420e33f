# Type stub of a compiled module (zarrcore/_native/memory.pyx): uninitialised arrays on pooled
# blocks. Keep in step with the .pyx.
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

POOL_MIN_BYTES: int
PIECE_MIN_BYTES: int
BLOCK_MIN_BYTES: int

def empty(shape: Sequence[int], dtype: npt.DTypeLike) -> npt.NDArray[np.generic]: ...
def set_limit(nbytes: int) -> None: ...
def kept_bytes() -> int: ...
