"""zarr-python stores that zarrcore reaches through their API (ZarrPythonStore), at module
level so that they pickle. Importing this module needs zarr-python."""
from zarr.storage import LocalStore, MemoryStore, WrapperStore

__all__ = ["LocalStore", "MemoryStore", "OwnLocal", "OwnMemory", "Wrapped"]


class Wrapped(WrapperStore):
    """A WrapperStore subclass, as xarray's tests and users write them."""


class OwnMemory(MemoryStore):
    """A zarr-python memory store of another module."""


class OwnLocal(LocalStore):
    """A directory store of another module, which zarrcore cannot lock."""
