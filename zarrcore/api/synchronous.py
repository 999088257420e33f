"""Top-level functions, named and behaving as in zarr-python 3 (zarr.api.synchronous): those
of the arrays and the groups (the ones the nodes do not call themselves are defined here:
opening any node, saving and loading), and the copies between stores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import NodeNotFoundError
from ..nodes.array import Array
from ..nodes.array_specs import check_mode, guess_chunks, store_mode
from ..nodes.consolidation import consolidate_metadata, open_consolidated
from ..nodes.creation import (
    array,
    create,
    create_array,
    empty,
    empty_like,
    from_array,
    full,
    full_like,
    like_kwargs,
    ones,
    ones_like,
    open_array,
    zeros,
    zeros_like,
)
from ..nodes.group import Group, create_group, create_hierarchy, group, open_group, open_node, tree
from ..nodes.node import join, normalize_path
from ..storage import make_store
from ..tools.copy import copy

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..metadata.types import StoreLike

__all__ = [
    "Array",
    "Group",
    "GroupArrays",
    "array",
    "consolidate_metadata",
    "copy_all",
    "copy_store",
    "create",
    "create_array",
    "create_group",
    "create_hierarchy",
    "empty",
    "empty_like",
    "from_array",
    "full",
    "full_like",
    "group",
    "guess_chunks",
    "load",
    "ones",
    "ones_like",
    "open",
    "open_array",
    "open_consolidated",
    "open_group",
    "open_like",
    "print_debug_info",
    "save",
    "save_array",
    "save_group",
    "tree",
    "zeros",
    "zeros_like",
]


def print_debug_info() -> None:
    """Print the versions of Python, zarrcore and the packages it uses or interoperates with,
    for bug reports (as zarr-python's)."""
    import importlib.metadata
    import platform

    print(f"platform: {platform.platform()}")
    print(f"python: {platform.python_version()}")
    for package in (
        "zarrcore",
        "numpy",
        "blosc",
        "numcodecs",
        "msgpack",
        "pcodec",
        "zfpy",
        "obstore",
        "fsspec",
        "xarray",
        "dask",
        "zarr",
    ):
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        print(f"{package}: {version}")


# -- zarr-python's convenience functions ------------------------------------------------------


def copy_store(
    source: StoreLike | Array | Group,
    dest: StoreLike,
    source_path: str = "",
    dest_path: str = "",
    if_exists: str = "raise",
) -> tuple[int, int, int]:
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
    report = copy(
        source,
        dest,
        source_path=source_path,
        dest_path=dest_path,
        overwrite=if_exists == "replace",
        progress=False,
    )
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
        counts = copy_store(
            source.store, dest.store, join(source.path, name), join(dest.path, name), if_exists
        )
        totals = [t + c for t, c in zip(totals, counts)]
    return tuple(totals)


def save_array(
    store: StoreLike,
    arr: npt.ArrayLike,
    *,
    zarr_format: int | None = None,
    path: str | None = None,
    **kwargs: Any,
) -> None:
    """Store the array-like `arr` as an array at `path`, replacing what is there.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    arr : array_like
        The values.
    zarr_format : {2, 3}, optional
        The format to write (default `config.default_zarr_format`).
    path : str, optional
        The array's path in the store.
    **kwargs
        As `create_array` takes them.
    """
    data = np.asanyarray(arr)
    array(data, store, name=path, overwrite=True, zarr_format=zarr_format, **kwargs)


def open_like(a: Array | npt.ArrayLike, path: StoreLike, **kwargs: Any) -> Array:
    """Open (or create) the array at `path` with the shape, dtype and chunks of `a`, and its
    fill value when `a` is an Array.

    Parameters
    ----------
    a : Array or array_like
        The model.
    path : str, os.PathLike, dict or Store
        Where the array is (the store argument of `open_array`).
    **kwargs
        As `open_array` takes them; they override what `a` gives (mode "a" by default).

    Returns
    -------
    Array
    """
    like = like_kwargs(a, dict(kwargs))
    if isinstance(a, Array):
        like.setdefault("fill_value", a.fill_value)
    like.setdefault("mode", "a")
    return open_array(path, shape=np.shape(a), **like)


def open(
    store: StoreLike = None,
    *,
    mode: str = "a",
    path: str | None = None,
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Array | Group:
    """Open the array or group at `path`; with mode 'w'/'w-'/'a' and a `shape`, create an array.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        r: read only, must exist; r+: must exist; a: open, or create a group (an array when
        `shape` is given); w: create, replacing what is there; w-: create, must not exist.
    path : str, optional
        The node's path in the store.
    zarr_format : {2, 3}, optional
        The format to open or create; None finds it (creates `config.default_zarr_format`'s).
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).
    **kwargs
        For creating: as `create_array` (with `shape`) or `open_group` takes them.

    Returns
    -------
    Array or Group

    Raises
    ------
    ValueError
        An unknown mode.
    NodeNotFoundError
        Nothing at `path` in modes r and r+.
    NodeExistsError
        Something at `path` in mode w-.
    """
    check_mode(mode)
    npath = normalize_path(path)
    store_ = make_store(
        store,
        read_only=(mode == "r"),
        storage_options=storage_options,
        mode=store_mode(mode, npath),
    )
    if "shape" in kwargs:
        return open_array(store_, mode=mode, path=npath, zarr_format=zarr_format, **kwargs)
    if mode in ("w", "w-"):
        return open_group(store_, mode=mode, path=npath, zarr_format=zarr_format, **kwargs)
    try:
        return open_node(store_, npath, zarr_format, read_only=(mode == "r"), use_consolidated=None)
    except NodeNotFoundError:
        if mode == "a":
            return open_group(store_, mode=mode, path=npath, zarr_format=zarr_format, **kwargs)
        raise


def save_group(
    store: StoreLike,
    *args: npt.ArrayLike,
    zarr_format: int | None = None,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    **arrays: npt.ArrayLike,
) -> None:
    """Store each positional array as `arr_0`, `arr_1`... and each keyword array under its
    name, in a group at `path`.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    *args : array_like
        Arrays stored as `arr_0`, `arr_1`...
    zarr_format : {2, 3}, optional
        The format to write (default `config.default_zarr_format`).
    path : str, optional
        The group's path in the store; what is there is replaced.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).
    **arrays : array_like
        Arrays stored under their keyword.

    Raises
    ------
    ValueError
        No array given.
    """
    if not args and not arrays:
        raise ValueError("save_group needs at least one array")
    named = {f"arr_{i}": a for i, a in enumerate(args)} | arrays
    grp = open_group(
        store, mode="w", path=path, zarr_format=zarr_format, storage_options=storage_options
    )
    for name, value in named.items():
        grp[name] = np.asanyarray(value)


def save(
    store: StoreLike,
    *args: npt.ArrayLike,
    zarr_format: int | None = None,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    **arrays: npt.ArrayLike,
) -> None:
    """save_array for one positional array, else save_group.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    *args : array_like
        One array, or arrays for a group.
    zarr_format : {2, 3}, optional
        The format to write (default `config.default_zarr_format`).
    path : str, optional
        The node's path in the store.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).
    **arrays : array_like
        Arrays for a group, by name.
    """
    if len(args) == 1 and not arrays:
        save_array(
            store, args[0], zarr_format=zarr_format, path=path, storage_options=storage_options
        )
    else:
        save_group(
            store,
            *args,
            zarr_format=zarr_format,
            path=path,
            storage_options=storage_options,
            **arrays,
        )


class GroupArrays:
    """What load returns for a group: its arrays by name, each read when asked for."""

    def __init__(self, group: Group) -> None:
        self._group = group
        self._names = group.array_keys()

    def __getitem__(self, name: str) -> Any:
        """The array `name` read whole; KeyError when the group has no such array."""
        if name not in self._names:
            raise KeyError(name)
        return self._group[name][...]  # type: ignore[index]  # names of arrays only

    def __iter__(self) -> Iterator[str]:
        """The array names."""
        return iter(self._names)

    def __len__(self) -> int:
        """The number of arrays."""
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        """Is `name` one of the arrays?"""
        return name in self._names

    def keys(self) -> list[str]:
        """The array names.

        Returns
        -------
        list of str
        """
        return list(self._names)

    def items(self) -> Iterator[tuple[str, Any]]:
        """(name, values) of each array, each read when reached.

        Returns
        -------
        iterator of (str, numpy.ndarray)
        """
        return ((name, self[name]) for name in self._names)

    def values(self) -> Iterator[Any]:
        """The values of each array, each read when reached.

        Returns
        -------
        iterator of numpy.ndarray
        """
        return (self[name] for name in self._names)

    def __repr__(self) -> str:
        return f"<zarrcore.GroupArrays {self._names}>"


def load(
    store: StoreLike,
    path: str | None = None,
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> np.ndarray | GroupArrays:
    """The array at `path` as a numpy array; for a group, a GroupArrays mapping that reads
    each of its arrays when asked for it.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    path : str, optional
        The node's path in the store.
    zarr_format : {2, 3}, optional
        The node's format; None finds it.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    numpy.ndarray or GroupArrays

    Raises
    ------
    NodeNotFoundError
        Nothing at `path`.
    """
    node = open(
        store, mode="r", path=path, zarr_format=zarr_format, storage_options=storage_options
    )
    return node[...] if isinstance(node, Array) else GroupArrays(node)
