"""Modules whose names moved elsewhere, kept importable for code written before the move."""
import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved_to(old: str, *new: str) -> Callable[[str], Any]:
    """The module `__getattr__` of the module `old`, whose names are now those of the modules
    `new` (the first that has one): each name read from `old` warns, naming where it is."""
    def __getattr__(name: str) -> Any:
        modules = [importlib.import_module(module) for module in new]
        holder = next((module for module in modules if hasattr(module, name)), None)
        # (Not the special names tools look up on any module: __all__, __path__...)
        if holder is None or name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old}.{name} is now {holder.__name__}.{name}: {old} will be removed",
                      DeprecationWarning, stacklevel=2)
        return getattr(holder, name)

    return __getattr__
