"""Stores: where keys and their bytes live."""
import os

from .base import Store, validate_key
from .local import LocalStore
from .memory import MemoryStore

__all__ = ["Store", "LocalStore", "MemoryStore", "validate_key", "make_store"]


def make_store(store, read_only=False):
    """Turn a path, dict or Store into a Store."""
    if isinstance(store, Store):
        return store
    if isinstance(store, dict):
        return MemoryStore(store, read_only=read_only)
    if store is None:
        return MemoryStore(read_only=read_only)
    if isinstance(store, (str, os.PathLike)):
        path = os.fspath(store)
        if path.startswith("file://"):
            path = path[len("file://"):]
        return LocalStore(path, read_only=read_only)
    raise TypeError(f"unsupported store type {type(store).__name__}")
