"""Top-level functions, named and behaving as in zarr-python 3: those of the arrays and the
groups, and the copies between stores."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .nodes.node import join
from .nodes.array import (
    Array, array, create, create_array, empty, empty_like, from_array, full, full_like, ones,
    ones_like, open_array, open_like, save_array, zeros, zeros_like,
)
from .nodes.creation import guess_chunks
from .nodes.group import (
    Group, GroupArrays, consolidate_metadata, create_group, create_hierarchy, group, load, open,
    open_consolidated, open_group, save, save_group, tree,
)
from .tools.copy import copy

if TYPE_CHECKING:
    from ._types import StoreLike

__all__ = [
    "Array", "Group", "GroupArrays", "array", "consolidate_metadata", "copy_all", "copy_store",
    "create", "create_array", "create_group", "create_hierarchy", "empty", "empty_like",
    "from_array", "full", "full_like", "group", "guess_chunks", "load", "ones", "ones_like",
    "open", "open_array", "open_consolidated", "open_group", "open_like", "print_debug_info",
    "save", "save_array", "save_group", "tree", "zeros", "zeros_like",
]

def print_debug_info() -> None:
    """Print the versions of Python, zarrcore and the packages it uses or interoperates with,
    for bug reports (as zarr-python's)."""
    import importlib.metadata
    import platform

    print(f"platform: {platform.platform()}")
    print(f"python: {platform.python_version()}")
    for package in ("zarrcore", "numpy", "blosc", "numcodecs", "msgpack", "pcodec", "zfpy",
                    "obstore", "fsspec", "xarray", "dask", "zarr"):
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        print(f"{package}: {version}")

# -- zarr-python's convenience functions ------------------------------------------------------

def copy_store(source: StoreLike | Array | Group, dest: StoreLike, source_path: str = "",
               dest_path: str = "", if_exists: str = "raise") -> tuple[int, int, int]:
    """Copy the stored keys below `source_path` to `dest_path`, byte for byte (zarr 2's
    copy_store); `if_exists="replace"` replaces a node at the destination. Returns
    (keys copied, keys skipped, bytes copied).

    Parameters
    ----------
    source : str, os.PathLike, dict, Store, Array or Group
    dest : str, os.PathLike, dict or Store
    source_path, dest_path : str, optional
        Paths below `source` and `dest`.
    if_exists : {"raise", "replace"}, optional
        What to do about a node at the destination.

    Returns
    -------
    tuple of int
        Keys copied, keys skipped (always 0) and bytes copied.

    Raises
    ------
    ValueError
        Another `if_exists`, or source and destination are the same place.
    NodeExistsError
        A node at the destination with `if_exists="raise"`.
    """
    if if_exists not in ("raise", "replace"):
        raise ValueError(f"if_exists must be 'raise' or 'replace', not {if_exists!r}")
    report = copy(source, dest, source_path=source_path, dest_path=dest_path,
                  overwrite=if_exists == "replace", progress=False)
    return report.keys, 0, report.nbytes

def copy_all(source: Group, dest: Group, if_exists: str = "raise") -> tuple[int, ...]:
    """Copy every member of the group `source` into the group `dest`, byte for byte. Returns
    (keys copied, keys skipped, bytes copied).

    Parameters
    ----------
    source, dest : Group
    if_exists : {"raise", "replace"}, optional
        As `copy_store` takes it, for each member.

    Returns
    -------
    tuple of int
        Keys copied, keys skipped (always 0) and bytes copied.

    Raises
    ------
    TypeError
        `source` or `dest` is not a Group.
    NodeExistsError
        A member exists in `dest` with `if_exists="raise"`.
    """
    if not isinstance(source, Group) or not isinstance(dest, Group):
        raise TypeError("copy_all copies from a Group into a Group")
    totals = [0, 0, 0]
    for name in source.keys():
        counts = copy_store(source.store, dest.store, join(source.path, name),
                            join(dest.path, name), if_exists)
        totals = [t + c for t, c in zip(totals, counts)]
    return tuple(totals)
