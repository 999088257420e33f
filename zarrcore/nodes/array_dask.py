"""numpy's calls on zarrcore Arrays that other arrays join (`apply_foreign`, which
`Array.__array_ufunc__` and `Array.__array_function__`, given Array here, call): the Arrays are
read, or with dask arrays among the operands become dask arrays (`as_dask`, `arrays_as_dask`),
so the result stays lazy."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

import numpy as np

from .array import Array, storage_block
from .node import Node

__all__ = ["apply_foreign", "arrays_as_dask", "as_dask", "foreign_types", "is_array"]


def is_array(value: Any) -> TypeGuard[Array]:
    """Whether `value` is a zarrcore Array (the one kind of node that is "array")."""
    return isinstance(value, Node) and value.kind == "array"


def _read_arrays(value: Any) -> Any:
    """`value` with every Array in it (also in lists, tuples and dicts) read into numpy."""
    if is_array(value):
        return value[...]
    if isinstance(value, (list, tuple)):
        return type(value)(_read_arrays(v) for v in value)
    if isinstance(value, dict):
        return {k: _read_arrays(v) for k, v in value.items()}
    return value


def foreign_types(values: Sequence[Any]) -> list[type]:
    """The types of `values` other than Array and numpy's that override ufuncs themselves."""
    return [
        type(v)
        for v in values
        if not (is_array(v) or isinstance(v, (np.ndarray, np.generic)))
        and hasattr(type(v), "__array_ufunc__")
    ]


def apply_foreign(func: Callable[..., Any], args: Any, kwargs: Any, foreign: Sequence[type]) -> Any:
    """`func` of `args` with the Arrays read; with dask arrays among them, the Arrays become
    dask arrays too (the result stays lazy); NotImplemented for other foreign types, which
    then take their own turn."""
    if not foreign:
        return func(*_read_arrays(args), **_read_arrays(kwargs))
    if all(hasattr(t, "__dask_graph__") for t in foreign):
        return func(*arrays_as_dask(args), **arrays_as_dask(kwargs))
    return NotImplemented


def as_dask(
    array: Array, chunks: Any = None, name: str | None = None, inline_array: bool = False
) -> Any:
    """A dask array reading `array` (zarrcore.dask.from_zarr's); needs dask."""
    import dask.array as da
    from dask.base import tokenize

    if chunks is None:
        chunks = storage_block(array)
    if name is None:
        name = "from-zarrcore-" + tokenize(array, chunks)
    # dask's from_array carries no annotations (an unused ignore until strict is on).
    return da.from_array(  # type: ignore[no-untyped-call, unused-ignore]
        array,
        chunks=chunks,
        name=name,
        lock=False,
        fancy=False,
        asarray=False,
        inline_array=inline_array,
        meta=np.empty((0,) * array.ndim, dtype=array.dtype),
    )


def arrays_as_dask(value: Any) -> Any:
    """`value` with every zarrcore Array in it as a dask array of it.

    Parameters
    ----------
    value : object
        An Array, or lists, tuples and dicts holding some; anything else is left as it is.

    Returns
    -------
    object
        `value`, each Array in it a dask array with `zarrcore.dask.from_zarr`'s default
        chunks.
    """
    if is_array(value):
        return as_dask(value)
    if isinstance(value, (list, tuple)):
        return type(value)(arrays_as_dask(v) for v in value)
    if isinstance(value, dict):
        return {k: arrays_as_dask(v) for k, v in value.items()}
    return value


# -- Array's face here (see Array's "faces"): numpy's protocols ---------------------------------
# A zarrcore Array is a duck array (NEP 13 and 18): numpy's functions, ufuncs and the
# arithmetic operators read it whole and give numpy arrays, so libraries that keep duck
# arrays as they are (xarray) hold the Array unread and index it for what they need.
# `==` and `!=` stay the identity of the handle, as for every node.
def _array_ufunc(self: Array, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    if any(isinstance(o, Array) for o in kwargs.get("out", ())):
        return NotImplemented  # an Array is no buffer to compute into
    return apply_foreign(
        getattr(ufunc, method), inputs, kwargs, foreign_types(inputs + tuple(kwargs.get("out", ())))
    )


def _array_function(
    self: Array, func: Callable[..., Any], types: Any, args: Any, kwargs: Any
) -> Any:
    foreign = [t for t in types if not issubclass(t, (Array, np.ndarray))]
    if not foreign:
        metadata_only = _METADATA_FUNCTIONS.get(func)
        if metadata_only is not None:
            return metadata_only(*args, **kwargs)
    return apply_foreign(func, args, kwargs, foreign)


def _shape_of(a: Any) -> tuple[int, ...]:
    return a.shape if isinstance(a, Array) else np.shape(a)


# numpy functions that need an Array's metadata, never its data.
_METADATA_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.shape: _shape_of,
    np.ndim: lambda a: len(_shape_of(a)),
    np.size: lambda a, axis=None: math.prod(_shape_of(a)) if axis is None else _shape_of(a)[axis],
    np.result_type: lambda *args: np.result_type(
        *(a.dtype if isinstance(a, Array) else a for a in args)
    ),
}

Array.__array_ufunc__ = _array_ufunc
Array.__array_function__ = _array_function
