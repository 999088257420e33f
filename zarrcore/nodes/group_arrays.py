"""The array-making methods of Group: `create_array` below the group, in its format by
default, with zarr-python's and h5py's other names for it (`create`, `create_dataset`), the
`require_*` calls that open an array or make it when missing, and the filled and `*_like`
arrays. Each makes its array through zarrcore.nodes.creation."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ._docstrings import shared_doc
from .array import Array
from .creation import create_array, like_kwargs

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..metadata.types import ShapeLike
    from ..storage import Store
    from .consolidated import ConsolidatedMetadata

__all__ = ["ArrayMakers"]

_F = TypeVar("_F", bound=Callable[..., Any])

# The numpydoc of the methods that make arrays, written once: each gives its summary and the
# parameters it takes besides `name` and **kwargs (`_makes`).
_MAKES_DOC = """{summary}

Parameters
----------
name : str
    A path relative to this group.
{parameters}**kwargs
    {kwargs}.

Returns
-------
Array
{raises}"""
_SHAPE = "shape : int or tuple of int\n    The array's shape."
_LIKE = (
    "data : Array or array_like\n"
    "    The model: its shape and dtype, and its chunks and format when an Array."
)
_CREATE_RAISES = """
Raises
------
NodeExistsError
    A node exists there and `overwrite` is not True.
ReadOnlyError
    This group is read-only.
"""


def _makes(
    summary: str,
    *parameters: str,
    kwargs: str = "As `zarrcore.create_array` takes them",
    raises: str = "",
) -> Callable[[_F], _F]:
    """The docstring of a method making the array `name`: `summary`, the `parameters` it
    takes besides (each its numpydoc lines), `kwargs` (what **kwargs are) and `raises` (a
    Raises section) where given."""
    return shared_doc(
        _MAKES_DOC,
        summary=summary,
        parameters="".join(p + "\n" for p in parameters),
        kwargs=kwargs,
        raises=raises,
    )


class ArrayMakers:
    """Group's calls that make (or require) arrays below it."""

    if TYPE_CHECKING:  # (what Group gives the methods)
        _store: Store
        _consolidated: ConsolidatedMetadata | None
        _made: set[str]

        @property
        def zarr_format(self) -> int: ...
        def _check_writable(self) -> None: ...
        def _child_path(self, name: str) -> str: ...
        def _existing(self, name: str, cls: type[Array]) -> Array | None: ...

    @_makes(
        "Create an array at `name` (below this group), in this group's format by default.",
        kwargs="As `zarrcore.create_array` takes them (`shape`, `dtype`, `chunks`, ...)",
        raises=_CREATE_RAISES,
    )
    def create_array(self, name: str, **kwargs: Any) -> Array:
        self._check_writable()
        self._consolidated = None  # the hierarchy changes: read members from the store
        kwargs.setdefault("zarr_format", self.zarr_format)
        path = self._child_path(name)
        array = create_array(self._store, name=path, **kwargs)
        self._made.add(path)
        return array

    @_makes(
        "The array `name` (a path relative to this group), created with `shape`, `dtype` "
        "and\n`kwargs` (as `create_array` takes them) when missing. An existing one must "
        "have `shape`\nand a dtype that casts safely to `dtype` (equals it when `exact`), "
        "else TypeError; a\ngroup there raises IncompatibleGroupError (a ContainsGroupError "
        "and a TypeError).",
        _SHAPE,
        "dtype : data-type, optional\n    The array's data type.",
        "exact : bool, default False\n    Whether an existing array's dtype must equal `dtype`.",
    )
    def require_array(
        self,
        name: str,
        *,
        shape: ShapeLike,
        dtype: npt.DTypeLike | None = None,
        exact: bool = False,
        **kwargs: Any,
    ) -> Array:
        node = self._existing(name, Array)
        if node is None:
            if dtype is not None:
                kwargs["dtype"] = dtype
            return self.create_array(name, shape=shape, **kwargs)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if shape != node.shape:
            raise TypeError(f"array {node.name!r} exists with shape {node.shape}, not {shape}")
        if dtype is not None:
            dtype = np.dtype(dtype)
            if (node.dtype != dtype) if exact else not np.can_cast(node.dtype, dtype):
                raise TypeError(
                    f"array {node.name!r} exists with dtype {node.dtype}, which "
                    f"{'is not' if exact else 'does not cast safely to'} {dtype}"
                )
        return node

    @_makes("zarr-python's `Group.create`: the same as `create_array`.")
    def create(self, name: str, **kwargs: Any) -> Array:
        return self.create_array(name, **kwargs)

    @_makes(
        "h5py's name for `create_array`, deprecated in zarr-python 3; `data` gives the "
        "shape\nand dtype and is written."
    )
    def create_dataset(self, name: str, **kwargs: Any) -> Array:
        warnings.warn(
            "Group.create_dataset is deprecated in zarr-python 3; use create_array",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.create_array(name, **kwargs)

    @_makes(
        "h5py's name for `require_array`, deprecated in zarr-python 3.",
        "shape : int or tuple of int\n    The shape it must have, or is created with.",
        kwargs="As `require_array` takes them",
    )
    def require_dataset(self, name: str, *, shape: ShapeLike, **kwargs: Any) -> Array:
        warnings.warn(
            "Group.require_dataset is deprecated in zarr-python 3; use require_array",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.require_array(name, shape=shape, **kwargs)

    def _like(self, name: str, data: Any, kwargs: dict[str, Any], **fill: Any) -> Array:
        """The array `name` like `data` (`like_kwargs`; this group's format unless `kwargs`
        names one), `fill` (its fill_value) overriding `kwargs`."""
        kwargs.setdefault("zarr_format", self.zarr_format)
        return self.create_array(
            name, shape=np.shape(data), **{**like_kwargs(data, kwargs), **fill}
        )

    @_makes("`zarrcore.zeros_like` of `data`, at `name` below this group.", _LIKE)
    def zeros_like(self, *, name: str, data: npt.ArrayLike, **kwargs: Any) -> Array:
        return self._like(name, data, kwargs, fill_value=0)

    @_makes("`zarrcore.ones_like` of `data`, at `name` below this group.", _LIKE)
    def ones_like(self, *, name: str, data: npt.ArrayLike, **kwargs: Any) -> Array:
        return self._like(name, data, kwargs, fill_value=1)

    @_makes("`zarrcore.empty_like` of `data`, at `name` below this group.", _LIKE)
    def empty_like(self, *, name: str, data: npt.ArrayLike, **kwargs: Any) -> Array:
        return self._like(name, data, kwargs)

    @_makes(
        "`zarrcore.full_like` of `data`, at `name` below this group; `fill_value` among "
        "the\nkeywords (default: `data`'s when it is an Array).",
        _LIKE,
        kwargs="As `zarrcore.create_array` takes them, and `fill_value`",
    )
    def full_like(self, *, name: str, data: npt.ArrayLike, **kwargs: Any) -> Array:
        fill_value = kwargs.pop("fill_value", getattr(data, "fill_value", None))
        return self._like(name, data, kwargs, fill_value=fill_value)

    @_makes(
        "The array `name` (a path relative to this group) of `shape` filled with\n"
        "`fill_value`; `kwargs` as `create_array` takes them. Nothing is stored until "
        "written.",
        _SHAPE,
        "fill_value : scalar\n    The value of every element not written.",
    )
    def full(self, *, name: str, shape: ShapeLike, fill_value: Any, **kwargs: Any) -> Array:
        return self.create_array(name, shape=shape, fill_value=fill_value, **kwargs)

    @_makes("`full` with 0.", _SHAPE)
    def zeros(self, *, name: str, shape: ShapeLike, **kwargs: Any) -> Array:
        return self.full(name=name, shape=shape, fill_value=0, **kwargs)

    @_makes("`full` with 1.", _SHAPE)
    def ones(self, *, name: str, shape: ShapeLike, **kwargs: Any) -> Array:
        return self.full(name=name, shape=shape, fill_value=1, **kwargs)

    @_makes("`full` with the data type's default fill value.", _SHAPE)
    def empty(self, *, name: str, shape: ShapeLike, **kwargs: Any) -> Array:
        return self.create_array(name, shape=shape, **kwargs)

    @_makes(
        "Create the array `name` holding `data`.",
        "data : array_like\n    The values; they give the shape and dtype.",
    )
    def array(self, name: str, *, data: npt.ArrayLike, **kwargs: Any) -> Array:
        data = np.asanyarray(data)
        created = self.create_array(name, shape=data.shape, **{"dtype": data.dtype, **kwargs})
        created[...] = data
        return created
