"""The array-making methods of Group: `create_array` below the group, in its format by
default, with zarr-python's and h5py's other names for it (`create`, `create_dataset`), the
`require_*` calls that open an array or make it when missing, and the filled and `*_like`
arrays. Each makes its array through zarrcore.nodes.creation."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .array import Array
from .creation import create_array, like_kwargs

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..metadata.types import ShapeLike
    from ..storage import Store
    from .consolidated import ConsolidatedMetadata

__all__ = ["ArrayMakers"]


class ArrayMakers:
    """Group's calls that make (or require) arrays below it."""

    if TYPE_CHECKING:  # (what Group gives the methods)
        _store: Store
        _consolidated: ConsolidatedMetadata | None

        @property
        def zarr_format(self) -> int: ...
        def _check_writable(self) -> None: ...
        def _child_path(self, name: str) -> str: ...
        def _existing(self, name: str, cls: type[Array]) -> Array | None: ...

    def create_array(self, name: str, **kwargs: Any) -> Array:
        """Create an array at `name` (below this group), in this group's format by default.

        Parameters
        ----------
        name : str
            A path relative to this group.
        **kwargs
            As `zarrcore.create_array` takes them (`shape`, `dtype`, `chunks`, ...).

        Returns
        -------
        Array

        Raises
        ------
        NodeExistsError
            A node exists there and `overwrite` is not True.
        ReadOnlyError
            This group is read-only.
        """
        self._check_writable()
        self._consolidated = None  # the hierarchy changes: read members from the store
        kwargs.setdefault("zarr_format", self.zarr_format)
        return create_array(self._store, name=self._child_path(name), **kwargs)

    def require_array(self, name: str, *, shape: ShapeLike, dtype: npt.DTypeLike | None = None,
                      exact: bool = False, **kwargs: Any) -> Array:
        """The array `name` (a path relative to this group), created with `shape`, `dtype` and
        `kwargs` (as `create_array` takes them) when missing. An existing one must have `shape`
        and a dtype that casts safely to `dtype` (equals it when `exact`), else TypeError; a
        group there raises IncompatibleGroupError (a ContainsGroupError and a TypeError).

        Parameters
        ----------
        name : str
            A path relative to this group.
        shape : int or tuple of int
            The array's shape.
        dtype : data-type, optional
            The array's data type.
        exact : bool, default False
            Whether an existing array's dtype must equal `dtype`.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
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
                raise TypeError(f"array {node.name!r} exists with dtype {node.dtype}, which "
                                f"{'is not' if exact else 'does not cast safely to'} {dtype}")
        return node

    def create(self, name: str, **kwargs: Any) -> Array:
        """zarr-python's `Group.create`: the same as `create_array`.

        Parameters
        ----------
        name : str
            A path relative to this group.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        return self.create_array(name, **kwargs)

    def create_dataset(self, name: str, **kwargs: Any) -> Array:
        """h5py's name for `create_array`, deprecated in zarr-python 3; `data` gives the shape
        and dtype and is written.

        Parameters
        ----------
        name : str
            A path relative to this group.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        warnings.warn("Group.create_dataset is deprecated in zarr-python 3; use create_array",
                      DeprecationWarning, stacklevel=2)
        return self.create_array(name, **kwargs)

    def require_dataset(self, name: str, *, shape: ShapeLike, **kwargs: Any) -> Array:
        """h5py's name for `require_array`, deprecated in zarr-python 3.

        Parameters
        ----------
        name : str
            A path relative to this group.
        shape : int or tuple of int
            The shape it must have, or is created with.
        **kwargs
            As `require_array` takes them.

        Returns
        -------
        Array
        """
        warnings.warn("Group.require_dataset is deprecated in zarr-python 3; use require_array",
                      DeprecationWarning, stacklevel=2)
        return self.require_array(name, shape=shape, **kwargs)

    def _like(self, name: str, data: Any, kwargs: dict[str, Any], **fill: Any) -> Array:
        """The array `name` like `data` (`like_kwargs`; this group's format unless `kwargs`
        names one), `fill` (its fill_value) overriding `kwargs`."""
        kwargs.setdefault("zarr_format", self.zarr_format)
        return self.create_array(name, shape=np.shape(data),
                                 **{**like_kwargs(data, kwargs), **fill})

    def zeros_like(self, *, name: str, data: npt.ArrayLike, **kwargs: Any) -> Array:
        """`zarrcore.zeros_like` of `data`, at `name` below this group.

        Parameters
        ----------
        name : str
            A path relative to this group.
        data : Array or array_like
            The model: its shape and dtype, and its chunks and format when an Array.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        return self._like(name, data, kwargs, fill_value=0)

    def ones_like(self, *, name: str, data: npt.ArrayLike, **kwargs: Any) -> Array:
        """`zarrcore.ones_like` of `data`, at `name` below this group.

        Parameters
        ----------
        name : str
            A path relative to this group.
        data : Array or array_like
            The model: its shape and dtype, and its chunks and format when an Array.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        return self._like(name, data, kwargs, fill_value=1)

    def empty_like(self, *, name: str, data: npt.ArrayLike, **kwargs: Any) -> Array:
        """`zarrcore.empty_like` of `data`, at `name` below this group.

        Parameters
        ----------
        name : str
            A path relative to this group.
        data : Array or array_like
            The model: its shape and dtype, and its chunks and format when an Array.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        return self._like(name, data, kwargs)

    def full_like(self, *, name: str, data: npt.ArrayLike, **kwargs: Any) -> Array:
        """`zarrcore.full_like` of `data`, at `name` below this group; `fill_value` among the
        keywords (default: `data`'s when it is an Array).

        Parameters
        ----------
        name : str
            A path relative to this group.
        data : Array or array_like
            The model: its shape and dtype, and its chunks and format when an Array.
        **kwargs
            As `zarrcore.create_array` takes them, and `fill_value`.

        Returns
        -------
        Array
        """
        fill_value = kwargs.pop("fill_value", getattr(data, "fill_value", None))
        return self._like(name, data, kwargs, fill_value=fill_value)

    def full(self, *, name: str, shape: ShapeLike, fill_value: Any, **kwargs: Any) -> Array:
        """The array `name` (a path relative to this group) of `shape` filled with
        `fill_value`; `kwargs` as `create_array` takes them. Nothing is stored until written.

        Parameters
        ----------
        name : str
            A path relative to this group.
        shape : int or tuple of int
            The array's shape.
        fill_value : scalar
            The value of every element not written.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        return self.create_array(name, shape=shape, fill_value=fill_value, **kwargs)

    def zeros(self, *, name: str, shape: ShapeLike, **kwargs: Any) -> Array:
        """`full` with 0.

        Parameters
        ----------
        name : str
            A path relative to this group.
        shape : int or tuple of int
            The array's shape.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        return self.full(name=name, shape=shape, fill_value=0, **kwargs)

    def ones(self, *, name: str, shape: ShapeLike, **kwargs: Any) -> Array:
        """`full` with 1.

        Parameters
        ----------
        name : str
            A path relative to this group.
        shape : int or tuple of int
            The array's shape.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        return self.full(name=name, shape=shape, fill_value=1, **kwargs)

    def empty(self, *, name: str, shape: ShapeLike, **kwargs: Any) -> Array:
        """`full` with the data type's default fill value.

        Parameters
        ----------
        name : str
            A path relative to this group.
        shape : int or tuple of int
            The array's shape.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        return self.create_array(name, shape=shape, **kwargs)

    def array(self, name: str, *, data: npt.ArrayLike, **kwargs: Any) -> Array:
        """Create the array `name` holding `data`.

        Parameters
        ----------
        name : str
            A path relative to this group.
        data : array_like
            The values; they give the shape and dtype.
        **kwargs
            As `zarrcore.create_array` takes them.

        Returns
        -------
        Array
        """
        data = np.asanyarray(data)
        created = self.create_array(name, shape=data.shape, **{"dtype": data.dtype, **kwargs})
        created[...] = data
        return created
