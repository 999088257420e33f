# Type stub of a compiled module (zarrcore/_chunk_jobs.pyx): its functions take and return numpy
# arrays, bytes and ints; every name is typed Any here.
from typing import Any

def __getattr__(name: str) -> Any: ...
