"""xarray's `zarrcore` engine: datasets, groups and data trees read through zarrcore.

Variables are lazy: xarray's basic, outer and vectorized indexing go to zarrcore's basic,
orthogonal and vectorized selections, which read only the chunks (inner chunks, when
sharded) a selection touches. CF decoding is xarray's own (StoreBackendEntrypoint).
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, Union

import numpy as np
import numpy.typing as npt
from xarray import Dataset, DataTree, Variable, coding
from xarray.backends.common import (
    AbstractDataStore,
    BackendArray,
    BackendEntrypoint,
    datatree_from_dict_with_io_cleanup,
)
from xarray.backends.store import StoreBackendEntrypoint
from xarray.backends.zarr import FillValueCoder
from xarray.core import indexing
from xarray.core.utils import FrozenDict, close_on_error

from .. import api
from ..errors import DimensionNamesMissingError, MetadataError, NodeNotFoundError
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from ..metadata.types import StoreLike
from ..nodes.array import Array
from ..nodes.group import Group
from ..storage import Store
from ..storage.urls import keeps_consolidated_metadata
from .encoding import codec_encoding

if TYPE_CHECKING:
    from xarray.backends.common import T_PathFileOrDataStore

__all__ = [
    "DIMENSION_KEY",
    "GroupSource",
    "NOT_CONSOLIDATED_WARNING",
    "ZarrcoreBackendArray",
    "ZarrcoreBackendEntrypoint",
    "ZarrcoreDataStore",
    "default_zarr_format",
    "open_root_group",
    "variable_dimensions",
]

#: What the engine opens: a path, URL, dict, zarrcore Store or Group (or xarray's forms).
GroupSource = Union[StoreLike, Group]
_DataStore = TypeVar("_DataStore", bound="ZarrcoreDataStore")

# As engine="zarr" warns when reading a store without consolidated metadata with
# consolidated=None (its own words, which users filter warnings by).
NOT_CONSOLIDATED_WARNING = (
    "Failed to open Zarr store with consolidated metadata, but successfully read with "
    "non-consolidated metadata. This is typically much slower for opening a dataset. To "
    "silence this warning, consolidate the store's metadata (zarrcore.consolidate_metadata), "
    "or pass consolidated=False to not look for it, or consolidated=True to require it."
)
# The attribute holding a format 2 array's dimension names (xarray's convention).
DIMENSION_KEY = "_ARRAY_DIMENSIONS"


def default_zarr_format() -> int:
    """The format of new stores: zarr-python's `default_zarr_format` setting, which xarray's
    users set (`zarr.config.set(default_zarr_format=2)`) for engine="zarr" too; 3 without
    zarr-python."""
    try:
        import zarr
    except ImportError:
        return 3
    return int(zarr.config.get("default_zarr_format"))


def open_root_group(
    store: GroupSource,
    *,
    group: str | None = None,
    mode: str = "r",
    consolidated: bool | None = None,
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """The zarrcore Group at `group` of `store` (a path, URL, dict, Store or Group).

    Consolidated metadata is looked for at the store's root, as xarray does: used when present
    if `consolidated` is None, required when True, ignored when False. A group created here
    without `zarr_format` has default_zarr_format(); an existing one keeps its format. A
    store that keeps no consolidated metadata (an Icechunk session's) is read without, as
    xarray reads it.
    """
    if not keeps_consolidated_metadata(store):
        consolidated = False
    if zarr_format is None and mode in ("w", "w-"):
        zarr_format = default_zarr_format()
    elif zarr_format is None and mode == "a":
        try:
            return open_root_group(
                store,
                group=group,
                mode="r+",
                consolidated=consolidated,
                storage_options=storage_options,
            )
        except NodeNotFoundError:
            return open_root_group(
                store,
                group=group,
                mode="a",
                consolidated=consolidated,
                zarr_format=default_zarr_format(),
                storage_options=storage_options,
            )
    path = (group or "").strip("/")
    if isinstance(store, Group):
        node = store[path] if path else store
        if not isinstance(node, Group):
            raise NodeNotFoundError(f"the node at {path!r} is an array, not a group")
        return node
    if isinstance(store, os.PathLike):
        store = os.fspath(store)

    def open_group(at: str) -> Group:
        return api.open_group(
            store,
            path=at,
            mode=mode,
            zarr_format=zarr_format,
            use_consolidated=consolidated,
            storage_options=storage_options,
        )

    if mode in ("w", "w-"):
        return open_group(path)
    try:
        root: Group | None = open_group("")
    except NodeNotFoundError:
        if not path:
            raise
        root = None
    if root is not None and mode == "r" and consolidated is None and not root.consolidated:
        warnings.warn(NOT_CONSOLIDATED_WARNING, RuntimeWarning, stacklevel=2)
    if root is not None and not path:
        return root
    if root is None or not root.consolidated:
        return open_group(path)
    node = root[path]
    if not isinstance(node, Group):
        raise NodeNotFoundError(f"the node at {path!r} is an array, not a group")
    return node


def variable_dimensions(array: Array) -> tuple[str, ...]:
    """The dimension names of a zarrcore Array: v3 `dimension_names`, else v2's attribute."""
    metadata = array.metadata
    if isinstance(metadata, ArrayMetadataV3):
        dims: Any = metadata.dimension_names or ()
        where = f"{array.name}: dimension_names"
    else:
        dims = array.attrs.get(DIMENSION_KEY, None)
        where = f"{array.name}: attribute {DIMENSION_KEY}"
        if dims is None:
            raise DimensionNamesMissingError(
                f"{where} is missing; xarray needs it for the dimension names"
            )
    if (
        isinstance(dims, str)
        or len(dims) != array.ndim
        or not all(isinstance(d, str) for d in dims)
    ):
        raise MetadataError(f"{where} {dims!r} does not name each of the {array.ndim} dimensions")
    return tuple(dims)


def _variable_attributes(array: Array) -> dict[str, Any]:
    if array.zarr_format == 3:
        return dict(array.attrs)
    return {
        k: v
        for k, v in array.attrs.items()
        if k != DIMENSION_KEY and not k.lower().startswith("_nc")
    }


def _is_vlen_utf8(array: Array) -> bool:
    metadata = array.metadata
    if isinstance(metadata, ArrayMetadataV2):
        return any(f.get("id") == "vlen-utf8" for f in metadata.filters or ())
    return any(c.name == "vlen-utf8" for c in array.codecs)


class ZarrcoreBackendArray(BackendArray):
    """A zarrcore Array as xarray's lazily indexed backend array.

    Parameters
    ----------
    array : Array
        The array; indexing reads only the chunks a selection touches.
    """

    __slots__ = ("_array", "dtype", "shape")

    def __init__(self, array: Array) -> None:
        self._array = array
        self.shape = array.shape
        dtype: np.dtype[Any] = array.dtype
        if dtype.kind == "O" and _is_vlen_utf8(array):
            # As engine="zarr" (xarray GH 7328). (xarray leaves the function unannotated.)
            dtype = coding.strings.create_vlen_dtype(str)  # type: ignore[no-untyped-call]
        self.dtype = dtype

    def get_array(self) -> Array:
        return self._array

    def _basic(self, key: tuple[Any, ...]) -> Any:
        return self._array.get_basic_selection(key)

    def _outer(self, key: tuple[Any, ...]) -> Any:
        return self._array.get_orthogonal_selection(key)

    def _vectorized(self, key: tuple[Any, ...]) -> Any:
        return self._array.vindex[key]

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        if isinstance(key, indexing.BasicIndexer):
            method = self._basic
        elif isinstance(key, indexing.VectorizedIndexer):
            method = self._vectorized
        else:
            method = self._outer
        value = indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.VECTORIZED, method
        )
        if self.dtype.kind == "T" and isinstance(value, str):
            return np.asarray(value, dtype=self.dtype)
        return value

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> npt.ArrayLike:
        """`self[key]` read in a worker thread (`Dataset.load_async`).

        zarrcore reads without the GIL, so the variables xarray loads at once are read
        concurrently.

        Parameters
        ----------
        key : xarray.core.indexing.ExplicitIndexer
            xarray's basic, outer or vectorized indexer.

        Returns
        -------
        numpy.ndarray
            The selection.
        """
        return await asyncio.to_thread(self.__getitem__, key)


class ZarrcoreDataStore(AbstractDataStore):
    """One group of a hierarchy as an xarray data store.

    Parameters
    ----------
    group : Group
        The group; its arrays are the variables.
    use_zarr_fill_value_as_mask : bool, optional
        Take each array's fill value as its `_FillValue` (the mask value); default: for
        format 2 only, as xarray.
    """

    def __init__(self, group: Group, use_zarr_fill_value_as_mask: bool | None = None) -> None:
        self.zarr_group = group
        if use_zarr_fill_value_as_mask is None:
            # As xarray: v2's fill_value is the mask value (netCDF's _FillValue); v3 stores
            # _FillValue as an attribute of its own.
            use_zarr_fill_value_as_mask = group.zarr_format == 2
        self._fill_value_as_mask = use_zarr_fill_value_as_mask

    @classmethod
    def open(
        cls: type[_DataStore],
        store: GroupSource,
        *,
        group: str | None = None,
        mode: str = "r",
        consolidated: bool | None = None,
        zarr_format: int | None = None,
        storage_options: dict[str, Any] | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
    ) -> _DataStore:
        root = open_root_group(
            store,
            group=group,
            mode=mode,
            consolidated=consolidated,
            zarr_format=zarr_format,
            storage_options=storage_options,
        )
        if root.zarr_format == 2:
            # As engine="zarr", whose open_dataset passes None on (pydata/xarray#10269): a
            # format 2 fill value is the mask value whatever use_zarr_fill_value_as_mask says.
            use_zarr_fill_value_as_mask = True
        return cls(root, use_zarr_fill_value_as_mask)

    def arrays(self) -> dict[str, Array]:
        """The group's arrays, listed now (writes may have added some).

        Returns
        -------
        dict of str to Array
            {name: Array}.
        """
        return dict(self.zarr_group.arrays())

    def open_store_variable(self, name: str) -> Variable:
        array = self.zarr_group[name]
        if not isinstance(array, Array):
            raise NodeNotFoundError(f"{array.name!r} is a group, not an array")
        return self._variable(array)

    def _variable(self, array: Array) -> Variable:
        dims = variable_dimensions(array)
        attributes = _variable_attributes(array)
        backend_array = ZarrcoreBackendArray(array)
        data = indexing.LazilyIndexedArray(backend_array)
        chunks = tuple(array.chunks)
        shards = array.shards
        # Dask chunks lined up with what is stored whole: shards when sharded.
        encoding: dict[str, Any] = {
            "chunks": chunks,
            "preferred_chunks": dict(zip(dims, shards or chunks)),
        }
        if backend_array.dtype.kind == "T":
            encoding["dtype"] = backend_array.dtype
        encoding.update(codec_encoding(array))
        encoding["shards"] = shards
        if array.zarr_format == 2:
            encoding.pop("serializer", None)
        if self._fill_value_as_mask:
            if array.fill_value is not None:
                attributes["_FillValue"] = array.fill_value
        else:
            if array.zarr_format == 3:
                encoding["fill_value"] = array.fill_value
            if "_FillValue" in attributes:
                attributes["_FillValue"] = FillValueCoder.decode(
                    attributes["_FillValue"], array.dtype
                )
        return Variable(dims, data, attributes, encoding)

    def get_variables(self) -> Mapping[str, Variable]:
        return FrozenDict((name, self._variable(a)) for name, a in self.arrays().items())

    def get_attrs(self) -> dict[str, Any]:
        return {k: v for k, v in self.zarr_group.attrs.items() if not k.lower().startswith("_nc")}

    def get_dimensions(self) -> Mapping[str, int]:
        sizes: dict[str, int] = {}
        for array in self.arrays().values():
            for dim, size in zip(variable_dimensions(array), array.shape):
                if sizes.setdefault(dim, size) != size:
                    raise MetadataError(
                        f"{array.name}: dimension {dim!r} has length {size}, another array "
                        f"gives it {sizes[dim]}"
                    )
        return FrozenDict(sizes)

    def close(self) -> None:
        pass


def _store_like(filename_or_obj: Any) -> Any:
    """A zarrcore Group or Store as given (a Group in a directory is also a path, but opening
    that path would lose the handle's consolidated metadata); a local path made absolute, as
    xarray's engines make it (so `encoding["source"]` is absolute)."""
    if isinstance(filename_or_obj, (Group, Store)):
        return filename_or_obj
    if isinstance(filename_or_obj, os.PathLike):
        filename_or_obj = os.fspath(filename_or_obj)
    if (
        isinstance(filename_or_obj, str)
        and "://" not in filename_or_obj
        and "::" not in filename_or_obj
    ):
        return os.path.abspath(os.path.expanduser(filename_or_obj))
    return filename_or_obj


def _source(filename_or_obj: Group) -> str:
    """encoding["source"] of a dataset opened from a Group: its directory when it has one
    (xarray would take the Group's `path`, relative to no directory, for a file name)."""
    try:
        return os.fspath(filename_or_obj)
    except TypeError:
        return repr(filename_or_obj)


def _decode(store: ZarrcoreDataStore, decoders: dict[str, Any]) -> Dataset:
    with close_on_error(store):
        return StoreBackendEntrypoint().open_dataset(store, **decoders)


def _group_paths(group: Group, prefix: str = "/") -> Iterator[str]:
    """`prefix` and the path of every group below `group`, as xarray's data trees name them."""
    yield prefix
    for name, child in group.groups():
        yield from _group_paths(child, prefix.rstrip("/") + "/" + name)


class ZarrcoreBackendEntrypoint(BackendEntrypoint):
    """Open Zarr (formats 2 and 3) with zarrcore: `xr.open_dataset(path, engine="zarrcore")`."""

    description = "Open Zarr stores (formats 2 and 3) with zarrcore's compiled, GIL-free core"
    url = "https://github.com/zarrcore/zarrcore"
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj",
        "mask_and_scale",
        "decode_times",
        "concat_characters",
        "decode_coords",
        "drop_variables",
        "use_cftime",
        "decode_timedelta",
        "group",
        "mode",
        "consolidated",
        "storage_options",
        "zarr_format",
        "use_zarr_fill_value_as_mask",
    )

    def guess_can_open(self, filename_or_obj: T_PathFileOrDataStore | GroupSource) -> bool:
        """Whether xarray may pick this engine by itself for `filename_or_obj`.

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, Store, Group or other
            What `xr.open_dataset` was given.

        Returns
        -------
        bool
            True for a zarrcore Store or Group and for a path ending in ".zarr".
        """
        if isinstance(filename_or_obj, (Group, Store)):
            return True
        if isinstance(filename_or_obj, (str, os.PathLike)):
            _, ext = os.path.splitext(str(filename_or_obj).rstrip("/"))
            return ext == ".zarr"
        return False

    def open_dataset(
        self,
        filename_or_obj: T_PathFileOrDataStore | GroupSource,
        *,
        mask_and_scale: Any = True,
        decode_times: Any = True,
        concat_characters: Any = True,
        decode_coords: Any = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: Any = None,
        decode_timedelta: Any = None,
        group: str | None = None,
        mode: str = "r",
        consolidated: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        zarr_format: int | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
    ) -> Dataset:
        """One group as a Dataset: `xr.open_dataset(filename_or_obj, engine="zarrcore")`.

        Variables stay lazy: indexing them reads only the chunks (inner chunks, when sharded)
        a selection touches.

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, URL, dict, Store or Group
            Where the group is.
        mask_and_scale, decode_times, concat_characters, decode_coords : optional
            xarray's CF decoding options, as for `xr.open_dataset`.
        use_cftime, decode_timedelta : optional
            The same.
        drop_variables : str or iterable of str, optional
            Variables not to read.
        group : str, optional
            The group to open, below `filename_or_obj`.
        mode : str, default "r"
            As `zarrcore.open_group`'s.
        consolidated : bool, optional
            Consolidated metadata at the store's root: None: used when present (reading
            without it warns); True: required; False: ignored.
        storage_options : dict, optional
            Options of the store a URL names.
        zarr_format : {2, 3}, optional
            The format to expect; default: whichever is there.
        use_zarr_fill_value_as_mask : bool, optional
            Take each array's fill value as its `_FillValue` (the mask value); default: for
            format 2 only, as xarray. Format 2 fill values are the mask value whatever it
            says, as with engine="zarr" (which ignores it: pydata/xarray#10269).

        Returns
        -------
        xarray.Dataset
            The group's arrays as variables, CF-decoded by xarray.
        """
        store = ZarrcoreDataStore.open(
            _store_like(filename_or_obj),
            group=group,
            mode=mode,
            consolidated=consolidated,
            zarr_format=zarr_format,
            storage_options=storage_options,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask,
        )
        ds = _decode(
            store,
            dict(
                mask_and_scale=mask_and_scale,
                decode_times=decode_times,
                concat_characters=concat_characters,
                decode_coords=decode_coords,
                drop_variables=drop_variables,
                use_cftime=use_cftime,
                decode_timedelta=decode_timedelta,
            ),
        )
        if isinstance(filename_or_obj, Group):
            ds.encoding["source"] = _source(filename_or_obj)
        return ds

    def open_groups_as_dict(
        self,
        filename_or_obj: T_PathFileOrDataStore | GroupSource,
        *,
        group: str | None = None,
        mode: str = "r",
        consolidated: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        zarr_format: int | None = None,
        **decoders: Any,
    ) -> dict[str, Dataset]:
        """The group at `group` and every group below it, each as a Dataset.

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, URL, dict, Store or Group
            Where the hierarchy is.
        group : str, optional
            The group to start from.
        mode, consolidated, storage_options, zarr_format : optional
            As `open_dataset`'s.
        **decoders
            `open_dataset`'s CF decoding options (`mask_and_scale`, `decode_times`, ...).

        Returns
        -------
        dict of str to xarray.Dataset
            {path: Dataset}, paths as xarray's data trees name them ("/", "/a", "/a/b").
        """
        root = open_root_group(
            _store_like(filename_or_obj),
            group=group,
            mode=mode,
            consolidated=consolidated,
            zarr_format=zarr_format,
            storage_options=storage_options,
        )
        groups = {}
        for path in _group_paths(root):
            node = root if path == "/" else root[path.lstrip("/")]
            assert isinstance(node, Group)  # (_group_paths lists groups only)
            groups[path] = _decode(ZarrcoreDataStore(node), decoders)
        return groups

    def open_datatree(
        self, filename_or_obj: T_PathFileOrDataStore | GroupSource, **kwargs: Any
    ) -> DataTree:
        """The group at `group` and every group below it as a DataTree
        (`xr.open_datatree(filename_or_obj, engine="zarrcore")`).

        Parameters
        ----------
        filename_or_obj : str, os.PathLike, URL, dict, Store or Group
            Where the hierarchy is.
        **kwargs
            `open_groups_as_dict`'s options.

        Returns
        -------
        xarray.DataTree
            A node for each group.
        """
        return datatree_from_dict_with_io_cleanup(
            self.open_groups_as_dict(filename_or_obj, **kwargs)
        )
