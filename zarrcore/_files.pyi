# Type stub of a compiled module (zarrcore/_files.pyx): file access below a directory store's
# root; every name is typed Any here.
from typing import Any

def __getattr__(name: str) -> Any: ...
