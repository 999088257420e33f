"""xarray's `zarrcore` engine: datasets, groups and data trees read through zarrcore.

Variables are lazy: xarray's basic, outer and vectorized indexing go to zarrcore's basic,
orthogonal and vectorized selections, which read only the chunks (inner chunks, when
sharded) a selection touches. CF decoding is xarray's own (StoreBackendEntrypoint).
"""
import asyncio
import os
import warnings

import numpy as np
from xarray import Variable, coding
from xarray.backends.common import (
    AbstractDataStore, BackendArray, BackendEntrypoint, _normalize_path,
    datatree_from_dict_with_io_cleanup,
)
from xarray.backends.store import StoreBackendEntrypoint
from xarray.backends.zarr import FillValueCoder
from xarray.core import indexing
from xarray.core.utils import FrozenDict, close_on_error

from .. import api
from ..errors import DimensionNamesMissingError, MetadataError, NodeNotFoundError
from ..group import Group
from ..storage import Store
from .encoding import codec_encoding

# As engine="zarr" warns when reading a store without consolidated metadata with
# consolidated=None (its own words, which users filter warnings by).
NOT_CONSOLIDATED_WARNING = (
    "Failed to open Zarr store with consolidated metadata, but successfully read with "
    "non-consolidated metadata. This is typically much slower for opening a dataset. To "
    "silence this warning, consolidate the store's metadata (zarrcore.consolidate_metadata), "
    "or pass consolidated=False to not look for it, or consolidated=True to require it.")
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


def open_root_group(store, *, group=None, mode="r", consolidated=None, zarr_format=None,
                    storage_options=None):
    """The zarrcore Group at `group` of `store` (a path, URL, dict, Store or Group).

    Consolidated metadata is looked for at the store's root, as xarray does: used when present
    if `consolidated` is None, required when True, ignored when False. A group created here
    without `zarr_format` has default_zarr_format(); an existing one keeps its format.
    """
    options = {"group": group, "consolidated": consolidated,
               "storage_options": storage_options}
    if zarr_format is None and mode in ("w", "w-"):
        zarr_format = default_zarr_format()
    elif zarr_format is None and mode == "a":
        try:
            return open_root_group(store, mode="r+", **options)
        except NodeNotFoundError:
            return open_root_group(store, mode="a", zarr_format=default_zarr_format(),
                                   **options)
    path = (group or "").strip("/")
    if isinstance(store, Group):
        node = store[path] if path else store
        if not isinstance(node, Group):
            raise NodeNotFoundError(f"the node at {path!r} is an array, not a group")
        return node
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    kwargs = {"mode": mode, "zarr_format": zarr_format, "use_consolidated": consolidated}
    if storage_options is not None:
        kwargs["storage_options"] = storage_options
    if mode in ("w", "w-"):
        return api.open_group(store, path=path, **kwargs)
    try:
        root = api.open_group(store, **kwargs)
    except NodeNotFoundError:
        if not path:
            raise
        root = None
    if root is not None and mode == "r" and consolidated is None and not root.consolidated:
        warnings.warn(NOT_CONSOLIDATED_WARNING, RuntimeWarning, stacklevel=2)
    if not path:
        return root
    if root is None or not root.consolidated:
        return api.open_group(store, path=path, **kwargs)
    node = root[path]
    if not isinstance(node, Group):
        raise NodeNotFoundError(f"the node at {path!r} is an array, not a group")
    return node


def variable_dimensions(array):
    """The dimension names of a zarrcore Array: v3 `dimension_names`, else v2's attribute."""
    if array.zarr_format == 3:
        dims = array.metadata.dimension_names or ()
        where = f"{array.name}: dimension_names"
    else:
        dims = array.attrs.get(DIMENSION_KEY, None)
        where = f"{array.name}: attribute {DIMENSION_KEY}"
        if dims is None:
            raise DimensionNamesMissingError(
                f"{where} is missing; xarray needs it for the dimension names")
    if isinstance(dims, str) or len(dims) != array.ndim or not all(isinstance(d, str) for d in dims):
        raise MetadataError(f"{where} {dims!r} does not name each of the {array.ndim} dimensions")
    return tuple(dims)


def _variable_attributes(array):
    if array.zarr_format == 3:
        return dict(array.attrs)
    return {k: v for k, v in array.attrs.items()
            if k != DIMENSION_KEY and not k.lower().startswith("_nc")}


def _is_vlen_utf8(array):
    if array.zarr_format == 2:
        return any(f.get("id") == "vlen-utf8" for f in array.metadata.filters or ())
    return any(c.name == "vlen-utf8" for c in array.codecs)


class ZarrcoreBackendArray(BackendArray):
    """A zarrcore Array as xarray's lazily indexed backend array."""

    __slots__ = ("_array", "dtype", "shape")

    def __init__(self, array):
        self._array = array
        self.shape = array.shape
        dtype = array.dtype
        if dtype.kind == "O" and _is_vlen_utf8(array):
            dtype = coding.strings.create_vlen_dtype(str)  # as engine="zarr" (xarray GH 7328)
        self.dtype = dtype

    def get_array(self):
        return self._array

    def _basic(self, key):
        return self._array.get_basic_selection(key)

    def _outer(self, key):
        return self._array.get_orthogonal_selection(key)

    def _vectorized(self, key):
        return self._array.vindex[key]

    def __getitem__(self, key):
        if isinstance(key, indexing.BasicIndexer):
            method = self._basic
        elif isinstance(key, indexing.VectorizedIndexer):
            method = self._vectorized
        else:
            method = self._outer
        value = indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.VECTORIZED, method)
        if self.dtype.kind == "T" and isinstance(value, str):
            return np.asarray(value, dtype=self.dtype)
        return value

    async def async_getitem(self, key):
        """`self[key]` read in a worker thread (`Dataset.load_async`): zarrcore reads without
        the GIL, so the variables xarray loads at once are read concurrently."""
        return await asyncio.to_thread(self.__getitem__, key)


class ZarrcoreDataStore(AbstractDataStore):
    """One group of a hierarchy as an xarray data store."""

    def __init__(self, group, use_zarr_fill_value_as_mask=None):
        self.zarr_group = group
        if use_zarr_fill_value_as_mask is None:
            # As xarray: v2's fill_value is the mask value (netCDF's _FillValue); v3 stores
            # _FillValue as an attribute of its own.
            use_zarr_fill_value_as_mask = group.zarr_format == 2
        self._fill_value_as_mask = use_zarr_fill_value_as_mask

    @classmethod
    def open(cls, store, *, group=None, mode="r", consolidated=None, zarr_format=None,
             storage_options=None, use_zarr_fill_value_as_mask=None):
        root = open_root_group(store, group=group, mode=mode, consolidated=consolidated,
                               zarr_format=zarr_format, storage_options=storage_options)
        return cls(root, use_zarr_fill_value_as_mask)

    def arrays(self):
        """{name: Array} of the group's arrays, listed now (writes may have added some)."""
        return dict(self.zarr_group.arrays())

    def open_store_variable(self, name):
        return self._variable(self.zarr_group[name])

    def _variable(self, array):
        dims = variable_dimensions(array)
        attributes = _variable_attributes(array)
        backend_array = ZarrcoreBackendArray(array)
        data = indexing.LazilyIndexedArray(backend_array)
        chunks = tuple(array.chunks)
        shards = array.shards
        # Dask chunks lined up with what is stored whole: shards when sharded.
        encoding = {"chunks": chunks, "preferred_chunks": dict(zip(dims, shards or chunks))}
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
                attributes["_FillValue"] = FillValueCoder.decode(attributes["_FillValue"], array.dtype)
        return Variable(dims, data, attributes, encoding)

    def get_variables(self):
        return FrozenDict((name, self._variable(a)) for name, a in self.arrays().items())

    def get_attrs(self):
        return {k: v for k, v in self.zarr_group.attrs.items() if not k.lower().startswith("_nc")}

    def get_dimensions(self):
        sizes = {}
        for array in self.arrays().values():
            for dim, size in zip(variable_dimensions(array), array.shape):
                if sizes.setdefault(dim, size) != size:
                    raise MetadataError(
                        f"{array.name}: dimension {dim!r} has length {size}, another array "
                        f"gives it {sizes[dim]}")
        return FrozenDict(sizes)

    def close(self):
        pass


def _store_like(filename_or_obj):
    """A zarrcore Group or Store as given (a Group in a directory is also a path, but opening
    that path would lose the handle's consolidated metadata), other paths normalized."""
    if isinstance(filename_or_obj, (Group, Store)):
        return filename_or_obj
    return _normalize_path(filename_or_obj)


def _source(filename_or_obj):
    """encoding["source"] of a dataset opened from a Group: its directory when it has one
    (xarray would take the Group's `path`, relative to no directory, for a file name)."""
    try:
        return os.fspath(filename_or_obj)
    except TypeError:
        return repr(filename_or_obj)


def _decode(store, decoders):
    with close_on_error(store):
        return StoreBackendEntrypoint().open_dataset(store, **decoders)


def _group_paths(group, prefix="/"):
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
        "filename_or_obj", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "drop_variables", "use_cftime", "decode_timedelta", "group", "mode",
        "consolidated", "storage_options", "zarr_format", "use_zarr_fill_value_as_mask",
    )

    def guess_can_open(self, filename_or_obj):
        if isinstance(filename_or_obj, (Group, Store)):
            return True
        if isinstance(filename_or_obj, (str, os.PathLike)):
            _, ext = os.path.splitext(str(filename_or_obj).rstrip("/"))
            return ext == ".zarr"
        return False

    def open_dataset(self, filename_or_obj, *, mask_and_scale=True, decode_times=True,
                     concat_characters=True, decode_coords=True, drop_variables=None,
                     use_cftime=None, decode_timedelta=None, group=None, mode="r",
                     consolidated=None, storage_options=None, zarr_format=None,
                     use_zarr_fill_value_as_mask=None):
        store = ZarrcoreDataStore.open(
            _store_like(filename_or_obj), group=group, mode=mode, consolidated=consolidated,
            zarr_format=zarr_format, storage_options=storage_options,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
        ds = _decode(store, dict(
            mask_and_scale=mask_and_scale, decode_times=decode_times,
            concat_characters=concat_characters, decode_coords=decode_coords,
            drop_variables=drop_variables, use_cftime=use_cftime,
            decode_timedelta=decode_timedelta))
        if isinstance(filename_or_obj, Group):
            ds.encoding["source"] = _source(filename_or_obj)
        return ds

    def open_groups_as_dict(self, filename_or_obj, *, mask_and_scale=True, decode_times=True,
                            concat_characters=True, decode_coords=True, drop_variables=None,
                            use_cftime=None, decode_timedelta=None, group=None, mode="r",
                            consolidated=None, storage_options=None, zarr_format=None):
        root = open_root_group(_store_like(filename_or_obj), group=group, mode=mode,
                               consolidated=consolidated, zarr_format=zarr_format,
                               storage_options=storage_options)
        decoders = dict(
            mask_and_scale=mask_and_scale, decode_times=decode_times,
            concat_characters=concat_characters, decode_coords=decode_coords,
            drop_variables=drop_variables, use_cftime=use_cftime,
            decode_timedelta=decode_timedelta)
        groups = {}
        for path in _group_paths(root):
            node = root if path == "/" else root[path.lstrip("/")]
            groups[path] = _decode(ZarrcoreDataStore(node), decoders)
        return groups

    def open_datatree(self, filename_or_obj, **kwargs):
        return datatree_from_dict_with_io_cleanup(self.open_groups_as_dict(filename_or_obj, **kwargs))
