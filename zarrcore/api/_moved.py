"""Modules of earlier paths, kept importable without a file each: second names of modules
that moved, and modules whose names now live elsewhere, each read warning where it is."""

import importlib
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

# Second names, for good: {old module: the module it is now}.
ALIASES = {
    "zarrcore.asynchronous": "zarrcore.api.asynchronous",
    "zarrcore.config": "zarrcore.runtime.config",
    "zarrcore.icechunk": "zarrcore.storage.icechunk",
}
# Modules to be removed: {old module: the modules its names are now in, the first that has
# one}.
MOVED = {
    "zarrcore.array": (
        "zarrcore.nodes.array",
        "zarrcore.nodes.info",
        "zarrcore.nodes.creation",
        "zarrcore.nodes.array_dask",
    ),
    "zarrcore.array_chunks": ("zarrcore.nodes.array_chunks",),
    "zarrcore.views": ("zarrcore.nodes.views",),
    "zarrcore.indexing": ("zarrcore.metadata.indexing",),
    "zarrcore._types": ("zarrcore.metadata.types",),
}


def moved_to(old: str, *new: str) -> Callable[[str], Any]:
    """The module `__getattr__` of the module `old`, whose names are now those of the modules
    `new` (the first that has one): each name read from `old` warns, naming where it is."""

    def __getattr__(name: str) -> Any:
        modules = [importlib.import_module(module) for module in new]
        holder = next((module for module in modules if hasattr(module, name)), None)
        # (Not the special names tools look up on any module: __all__, __path__...)
        if holder is None or name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old}.{name} is now {holder.__name__}.{name}: {old} will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(holder, name)

    return __getattr__


def _forwarding(old: str, new: str) -> types.ModuleType:
    """A module `old` whose names are those of `new`, imported on first use (the icechunk
    module needs zarr-python, which `import zarrcore` does not import)."""

    def __getattr__(name: str) -> Any:
        # (Not the special names tools look up on any module, as they walk sys.modules: one
        # would import `new` meanwhile. `__all__` is the star import's.)
        if name.startswith("__") and name != "__all__":
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        return getattr(importlib.import_module(new), name)

    module = types.ModuleType(old, f"{new} under its earlier name.")
    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def keep_earlier_paths(package: types.ModuleType) -> None:
    """Register the modules of ALIASES and MOVED, and name them on `package` where it has no
    name of its own there (zarrcore.array stays the function)."""
    for old, new in ALIASES.items():
        sys.modules[old] = sys.modules.get(new) or _forwarding(old, new)
    for old, new_modules in MOVED.items():
        module = types.ModuleType(old, f"Moved: {', '.join(new_modules)}.")
        module.__getattr__ = moved_to(old, *new_modules)  # type: ignore[method-assign]
        sys.modules[old] = module
    for old in (*ALIASES, *MOVED):
        leaf = old.rpartition(".")[2]
        if not hasattr(package, leaf):
            setattr(package, leaf, sys.modules[old])
