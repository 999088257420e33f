# Type stub of a compiled module (zarrcore/_native/status.pyx): the exceptions of failed csrc/ calls
# and the compiled core's dimension limit. Keep in step with the .pyx.
from typing import Any

MAX_NDIM: int
CALL_ERRNO: int

def status_error(
    status: int,
    where: str = "",
    meanings: dict[Any, tuple[Any, ...]] | None = None,
    sys_errno: int = 0,
) -> Exception: ...
