# Type stub of a compiled module (zarrcore/_memstore.pyx): NativeMemoryMap, the C-backed
# mapping of a MemoryStore's keys to bytes; every name is typed Any here.
from typing import Any

def __getattr__(name: str) -> Any: ...
