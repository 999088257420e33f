"""Datasets written with zarrcore in the layout of xarray's own `Dataset.to_zarr`.

Variables are CF-encoded by xarray's zarr encoders (conventions.encode_dataset_coordinates,
then encode_cf_variable with zarr's string and fill value rules); dimension names go to v3
`dimension_names` or v2 `_ARRAY_DIMENSIONS`; v2 keeps the mask value as the array's
fill_value, v3 as a `_FillValue` attribute. Dask-backed variables are written by their tasks
(zarrcore.dask.store), numpy ones at once.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Union

import numpy as np
from xarray import DataArray, Dataset, Variable, coding, conventions
from xarray.backends.api import DATAARRAY_NAME, DATAARRAY_VARIABLE
from xarray.backends.chunks import grid_rechunk, validate_grid_chunks_alignment
from xarray.backends.common import NONE_VAR_NAME

# (The two private checks give xarray's own errors for appends; xarray has no public form.)
from xarray.backends.zarr import (
    FillValueCoder,
    _validate_and_transpose_existing_dims,
    _validate_datatypes_for_zarr_append,
    encode_zarr_attr_value,
    encode_zarr_variable,
    extract_zarr_variable_encoding,
)

from .. import api
from ..errors import AttributeTypeError, MetadataError
from ..metadata.common import check_attributes
from ..metadata.dtypes.strings import StringType
from ..nodes.array import Array, storage_block
from ..nodes.group import Group
from ..nodes.node import metadata_update
from .backend import (
    DIMENSION_KEY,
    GroupSource,
    ZarrcoreDataStore,
    open_root_group,
    variable_dimensions,
)
from .encoding import codec_json, codecs_json, v3_encoding

if TYPE_CHECKING:
    from dask.delayed import Delayed

__all__ = ["Region", "V2_DEFAULT_COMPRESSOR", "Write", "ZarrcoreWritableDataStore", "to_zarr"]

_MODES = ("w", "w-", "a", "a-", "r+")
# What xarray writes for format 2 through zarr-python 3 when no compressor is given.
V2_DEFAULT_COMPRESSOR = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
#: A region to write: {dimension: slice or "auto"}, or "auto" for every dimension.
Region = Union[Mapping[Hashable, Union[slice, Literal["auto"]]], Literal["auto"], None]
#: (data, array, region) of one write still to do: numpy or dask data.
Write = tuple[Any, Array, tuple[slice, ...]]


def _default_mode(mode: str | None, append_dim: Hashable | None, region: Region) -> str:
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, not {mode!r}")
    if append_dim is not None and mode not in ("a", "a-"):
        raise ValueError("cannot set append_dim unless mode='a', mode='a-' or mode=None")
    if region is not None and mode not in ("a", "a-", "r+"):
        raise ValueError("cannot set region unless mode='a', mode='a-', mode='r+' or mode=None")
    return mode


def _auto_chunks(shape: tuple[int, ...], dtype: np.dtype[Any]) -> tuple[int, ...]:
    """The chunks zarr-python (and so xarray) picks for chunks="auto"."""
    return api.guess_chunks(shape, np.dtype(dtype).itemsize)


class _DatasetWriter:
    """Writes one dataset into one zarrcore Group, as xarray's ZarrStore.store does."""

    def __init__(
        self,
        group: Group,
        mode: str,
        append_dim: Hashable | None,
        region: Region,
        write_empty_chunks: bool | None = None,
        safe_chunks: bool = True,
        align_chunks: bool = False,
    ) -> None:
        self.group = group
        self.mode = mode
        self.append_dim = append_dim
        self.region = region
        # {dimension: slice} of the region, every "auto" resolved (validate_region).
        self.region_slices: dict[Hashable, slice] = {}
        self.write_empty_chunks = write_empty_chunks
        # As xarray: aligning the dask chunks makes them safe.
        self.safe_chunks = safe_chunks and not align_chunks
        self.align_chunks = align_chunks
        self.zarr_format: Literal[2, 3] = 2 if group.zarr_format == 2 else 3
        # v2 keeps the mask value as the array's fill_value (netCDF's _FillValue).
        self.fill_value_as_mask = self.zarr_format == 2
        self.existing: dict[Hashable, Array] = {} if mode == "w" else dict(group.arrays())
        self.writes: list[Write] = []

    # -- region ---------------------------------------------------------------
    def validate_region(self, ds: Dataset) -> Dataset:
        """`ds` to write at self.region (its indexes dropped); region_slices with every
        "auto" found from the stored coordinates."""
        region: Any = self.region
        if region is None:
            return ds
        if region == "auto":
            region = dict.fromkeys(ds.dims, "auto")
        # The errors' types and words are xarray's, which its users catch and match.
        if not isinstance(region, dict):
            raise TypeError(f"``region`` must be a dict, got {type(region)}")
        region = dict(region)
        for dim, where in region.items():
            if dim not in ds.dims:
                raise ValueError(
                    f"all keys in ``region`` are not in Dataset dimensions, got "
                    f"{list(region)} and {list(ds.dims)}"
                )
            if isinstance(where, str) and where == "auto":
                region[dim] = self._find_region(ds, dim)
            elif not isinstance(where, slice):
                raise TypeError(
                    f"all values in ``region`` must be slice objects or 'auto', got region={region}"
                )
            elif where.step not in (1, None):
                raise ValueError(
                    f"step on all slices in ``region`` must be 1 or None, got region={region}"
                )
        unrelated = [k for k, v in ds.variables.items() if not set(region) & set(v.dims)]
        if region and unrelated:
            raise ValueError(
                f"all variables in the dataset to write must have at least one "
                f"dimension in common with the region's dimensions "
                f"{list(region)}; drop the others with "
                f"ds.drop_vars({unrelated!r})"
            )
        if self.append_dim is not None and self.append_dim in region:
            raise ValueError(
                f"cannot list the same dimension in both ``append_dim`` and "
                f"``region``, got {self.append_dim!r} in both"
            )
        self.region_slices = region
        without_indexes: Dataset = ds.drop_vars(ds.indexes)
        return without_indexes

    def _find_region(self, ds: Dataset, dim: Hashable) -> slice:
        if dim not in ds.variables:
            return slice(0, ds.sizes[dim])
        import pandas as pd

        stored = conventions.decode_cf_variable(dim, self._stored_variable(dim).compute())
        positions = pd.Index(stored.data).get_indexer(ds[dim].data)
        if (positions == -1).any():
            raise KeyError(
                f"not every value of coordinate {dim!r} is in the stored one: a "
                f"region write cannot change coordinates"
            )
        if (np.diff(positions) != 1).any():
            raise ValueError(
                f"the values of coordinate {dim!r} are not one contiguous run of the stored ones"
            )
        return slice(int(positions[0]), int(positions[-1]) + 1)

    def _stored_variable(self, name: Hashable) -> Variable:
        return ZarrcoreDataStore(self.group, self.fill_value_as_mask).open_store_variable(str(name))

    # -- variables ------------------------------------------------------------
    def _encode(self, variables: Mapping[Hashable, Variable]) -> dict[Hashable, Variable]:
        return {
            name: encode_zarr_variable(v, name=name, zarr_format=self.zarr_format)
            for name, v in variables.items()
        }

    def store(
        self,
        variables: Mapping[Hashable, Variable],
        attributes: Mapping[Any, Any],
        check_encoding: set[Hashable],
    ) -> None:
        if self.mode == "r+":
            new = [k for k in variables if k not in self.existing]
            if new:
                raise ValueError(
                    f"dataset contains non-pre-existing variables {new!r}, which "
                    f"mode='r+' does not write; mode='a' adds new variables"
                )
        if self.append_dim is not None and self.append_dim not in self.existing:
            dims = {d for a in self.existing.values() for d in variable_dimensions(a)}
            if self.append_dim not in dims:
                raise ValueError(
                    f"append_dim={self.append_dim!r} does not match any existing "
                    f"dataset dimensions {sorted(dims)}"
                )
        existing_names = {k for k in variables if k in self.existing}
        encoded = self._encode({k: v for k, v in variables.items() if k not in existing_names})
        if existing_names:
            # Written exactly as the stored ones are encoded.
            stored, _, _ = conventions.decode_cf_variables(
                {k: self._stored_variable(k) for k in existing_names}, {}
            )
            same_encoding: dict[Hashable, Variable] = {}
            for k in existing_names:
                _validate_datatypes_for_zarr_append(  # type: ignore[no-untyped-call]
                    k, stored[k], variables[k]
                )  # (xarray leaves it unannotated)
                same_encoding[k] = variables[k].copy(deep=False)
                same_encoding[k].encoding = stored[k].encoding
            for k, v in self._encode(same_encoding).items():
                encoded[k] = _validate_and_transpose_existing_dims(  # type: ignore[no-untyped-call]
                    k, v, stored[k], self.region_slices, self.append_dim
                )  # (as above)
        if self.mode not in ("r", "r+"):
            self.group.attrs.put(_json_attributes(attributes, "Dataset.attrs"))
        for name, variable in encoded.items():
            if (
                self.mode == "a-"
                and self.append_dim is not None
                and name in existing_names
                and self.append_dim not in variable.dims
            ):
                continue  # appending leaves variables without the append dimension alone
            self._set_variable(name, variable, name in check_encoding)

    def _fill_value(self, variable: Variable, attrs: dict[Any, Any]) -> Any:
        if self.fill_value_as_mask:
            return attrs.pop("_FillValue", None)
        fill_value = variable.encoding.pop("fill_value", None)
        if fill_value is None and variable.dtype.kind == "f":
            fill_value = np.nan  # xarray's default for floats (zarr's is zero)
        if "_FillValue" in attrs:
            mask_value = attrs.pop("_FillValue")
            if mask_value is not None:
                attrs["_FillValue"] = FillValueCoder.encode(mask_value, variable.dtype)
        return fill_value

    def _set_variable(self, name: Hashable, variable: Variable, check_encoding: bool) -> None:
        attrs = dict(variable.attrs)
        fill_value = self._fill_value(variable, attrs)
        if variable.encoding.get("_FillValue", None) is not None:
            raise ValueError(f"variable {name!r}: Zarr takes no _FillValue in encoding")
        variable.encoding.pop("_FillValue", None)
        encoding = extract_zarr_variable_encoding(
            variable, raise_on_invalid=check_encoding, name=name, zarr_format=self.zarr_format
        )
        write_empty = self._write_empty_chunks(encoding.pop("write_empty_chunks", None))
        dims = variable.dims
        region = {d: self.region_slices.get(d, slice(None)) for d in dims}
        if name in self.existing:
            array = self.existing[name]
            if write_empty is not None:
                array = array.with_config({"write_empty_chunks": write_empty})
            if self.append_dim is not None and self.append_dim in dims:
                axis = dims.index(self.append_dim)
                region[self.append_dim] = slice(array.shape[axis], None)
                shape = list(array.shape)
                shape[axis] += variable.shape[axis]
                array.resize(tuple(shape))
            variable = self._line_up(name, variable, storage_block(array), array.shape, region)
        else:
            # Checked before the array exists, so a refusal leaves nothing behind.
            block = encoding.get("shards") or encoding.get("chunks")
            if isinstance(block, tuple):
                variable = self._line_up(name, variable, block, variable.shape, region)
            array = self._create(name, variable, encoding, attrs, fill_value, write_empty)
        self.writes.append((variable.data, array, tuple(region[d] for d in dims)))

    def _write_empty_chunks(self, from_encoding: bool | None) -> bool | None:
        """The variable's write_empty_chunks: the argument's, else its encoding's."""
        if self.write_empty_chunks is None:
            return from_encoding
        if from_encoding is not None and from_encoding != self.write_empty_chunks:
            raise ValueError(
                f"write_empty_chunks={self.write_empty_chunks} differs from the "
                f"encoding's write_empty_chunks={from_encoding}"
            )
        return self.write_empty_chunks

    def _line_up(
        self,
        name: Hashable,
        variable: Variable,
        block: Sequence[int],
        shape: Sequence[int],
        region: Mapping[Hashable, slice],
    ) -> Variable:
        """`variable` with its dask chunks lined up with the storage blocks (shards, else
        chunks) `block` when aligning; refused, as xarray does, when safe_chunks is on and two
        dask chunks would write parts of one block."""
        where = tuple(region[d] for d in variable.dims)
        if self.align_chunks:
            aligned: Variable = grid_rechunk(variable, tuple(block), where)
            return aligned
        if self.safe_chunks:
            validate_grid_chunks_alignment(
                variable.chunks,
                tuple(block),
                tuple(shape),
                where,
                allow_partial_chunks=self.mode != "r+",
                name=str(name),
            )
        return variable

    def _create(
        self,
        name: Hashable,
        variable: Variable,
        encoding: dict[str, Any],
        attrs: dict[Any, Any],
        fill_value: Any,
        write_empty: bool | None,
    ) -> Array:
        attributes = _json_attributes(attrs, f"the attrs of variable {name!r}")
        dtype: np.dtype[Any] = variable.dtype
        # (xarray leaves check_vlen_dtype unannotated.)
        vlen = coding.strings.check_vlen_dtype(dtype)  # type: ignore[no-untyped-call]
        # Text is written as the `string` data type: zarrcore's StringType, whose arrays are
        # numpy's StringDType (object arrays of str before numpy 2, where object alone would
        # not say which type it holds).
        data_type: Any = dtype
        if vlen is str or dtype.kind == "T":
            data_type = StringType()
            dtype = data_type.numpy_dtype
        options: dict[str, Any] = {"zarr_format": self.zarr_format}
        if self.zarr_format == 3:
            if variable.dims:  # zarr-python writes none for a 0-d array
                options["dimension_names"] = variable.dims
            if "serializer" in encoding:
                options["serializer"] = codec_json(encoding["serializer"], 3)
        else:
            attributes[DIMENSION_KEY] = list(variable.dims)
        chunks = encoding.get("chunks", "auto")
        if isinstance(chunks, str) and chunks == "auto":
            chunks = _auto_chunks(variable.shape, dtype)
        compressors = encoding.get("compressors", "auto")
        if self.zarr_format == 2 and isinstance(compressors, str) and compressors == "auto":
            compressors = V2_DEFAULT_COMPRESSOR
        filters = encoding.get("filters", None)
        if self.zarr_format == 3:
            filters, compressors, serializer = v3_encoding(
                name, filters, compressors, chunks, dtype
            )
            if serializer is not None and "serializer" not in options:
                options["serializer"] = serializer
        if write_empty is not None:
            options["config"] = {"write_empty_chunks": write_empty}
        array = api.create_array(
            self.group.store,
            name=_join(self.group.path, name),
            shape=variable.shape,
            dtype=data_type,
            chunks=chunks,
            shards=encoding.get("shards"),
            compressors=codecs_json(compressors, self.zarr_format),
            filters=codecs_json(filters, self.zarr_format) or None,
            fill_value=fill_value,
            attributes=attributes,
            overwrite=self.mode == "w",
            chunk_key_encoding=encoding.get("chunk_key_encoding"),
            **options,
        )
        if self.zarr_format == 2 and fill_value is None and array.fill_value is not None:
            # v2 stores "no mask value" as null, as zarr-python writes it for xarray.
            with metadata_update(array, optimistic=False) as (current, store_metadata):
                store_metadata(current.evolve(fill_value=None))
        return array


def _json_attributes(attrs: Mapping[Any, Any], where: str) -> dict[str, Any]:
    """`attrs` as xarray stores them (arrays as lists...); those JSON cannot hold refused with
    the TypeError xarray's to_zarr raises, before they are written."""
    # (xarray leaves encode_zarr_attr_value unannotated.)
    encoded = {
        k: encode_zarr_attr_value(v)  # type: ignore[no-untyped-call]
        for k, v in attrs.items()
    }
    try:
        check_attributes(encoded, where)
    except MetadataError as e:
        # xarray's words, which it says of variables' attributes too.
        raise AttributeTypeError(f"Invalid attribute in Dataset.attrs. {e}") from e
    return encoded


def _join(path: str, name: Hashable) -> str:
    return f"{path}/{name}" if path else str(name)


def _as_dataset(obj: Dataset | DataArray) -> Dataset:
    """The dataset xarray's `DataArray.to_zarr` writes for a DataArray (named with xarray's
    reserved variable name when it has none, or one of its coordinates' or dimensions'); a
    Dataset as it is."""
    if not isinstance(obj, DataArray):
        return obj
    if obj.name is None:
        return obj.to_dataset(name=DATAARRAY_VARIABLE)
    if obj.name in obj.coords or obj.name in obj.dims:
        dataset = obj.to_dataset(name=DATAARRAY_VARIABLE)
        dataset.attrs[DATAARRAY_NAME] = obj.name
        return dataset
    return obj.to_dataset()


def _check_names(dataset: Dataset) -> None:
    """Refuse, as xarray does, variable names that are neither None nor a non-empty string
    (a store holds only strings: 0 and "0" would be one variable)."""
    for name in dataset.variables:
        if isinstance(name, str) and not name:
            raise ValueError(
                f"Invalid name {name!r} for DataArray or Dataset key: string must "
                f"be length 1 or greater for serialization to zarr files"
            )
        if not isinstance(name, str) and name is not None:
            raise TypeError(
                f"Invalid name {name!r} for DataArray or Dataset key: must be "
                f"either a string or None for serialization to zarr files"
            )


def _stored_names(variables: Mapping[Hashable, Variable]) -> dict[Hashable, Variable]:
    """`variables` with a variable named None stored under xarray's name for it (reading
    gives None back)."""
    return {NONE_VAR_NAME if k is None else k: v for k, v in variables.items()}


def to_zarr(
    dataset: Dataset | DataArray,
    store: GroupSource = None,
    mode: str | None = None,
    group: str | None = None,
    encoding: Mapping[Any, Any] | None = None,
    *,
    compute: bool = True,
    consolidated: bool | None = None,
    append_dim: Hashable | None = None,
    region: Region = None,
    safe_chunks: bool = True,
    align_chunks: bool = False,
    storage_options: dict[str, Any] | None = None,
    zarr_format: int | None = None,
    write_empty_chunks: bool | None = None,
    chunkmanager_store_kwargs: dict[str, Any] | None = None,
) -> Group | Delayed | None:
    """Write a Dataset (or a DataArray) as xarray's `Dataset.to_zarr` does, with its arguments.

    The metadata is what xarray writes through zarr-python; dask-backed variables are written
    in parallel by their tasks.

    Parameters
    ----------
    dataset : xarray.Dataset or xarray.DataArray
        What to write (a DataArray as `DataArray.to_zarr` writes it).
    store : str, os.PathLike, URL, dict, Store or Group, optional
        Where to write; None: a new memory store.
    mode : {"w", "w-", "a", "a-", "r+"}, optional
        As xarray's: default "a" with `append_dim`, "r+" with `region`, else "w-".
    group : str, optional
        The group to write in, below `store`.
    encoding : dict, optional
        {variable: encoding} of new variables (`chunks`, `shards`, `compressors`,
        `filters`, `serializer`, `fill_value`, `dtype`, ...).
    compute : bool, default True
        Write the data now; False: return the writes of dask-backed data as a Delayed.
    consolidated : bool, optional
        Consolidate the metadata after writing (None and True do; "r+" never does).
    append_dim : hashable, optional
        The dimension along which to append to existing variables.
    region : dict or "auto", optional
        {dimension: slice or "auto"} of the existing arrays to write; "auto" for every
        dimension ("auto" finds the slice from the stored coordinate).
    safe_chunks : bool, default True
        Refuse dask chunks that would write parts of one shard (or chunk) from two tasks.
        With False, such writes need a store with locks or conditional writes (a local
        directory has locks).
    align_chunks : bool, default False
        Rechunk the dask arrays onto the shards (or chunks) instead.
    storage_options : dict, optional
        Options of the store a URL names.
    zarr_format : {2, 3}, optional
        Of a new store; default: zarr-python's `default_zarr_format` setting, else 3.
    write_empty_chunks : bool, optional
        Store chunks equal to the fill value; default: the variable's encoding, else
        `config`.
    chunkmanager_store_kwargs : dict, optional
        Options of dask's compute (e.g. `scheduler`).

    Returns
    -------
    Group or dask.delayed.Delayed
        The zarrcore Group written, or a Delayed of the writes when `compute` is False.
    """
    from ..dask import check_tasks_reach

    dataset = _as_dataset(dataset)
    _check_names(dataset)
    mode = _default_mode(mode, append_dim, region)
    encoding = dict(encoding or {})
    for v in dataset.variables.values():
        if v.size == 0:
            v.load()
    root = open_root_group(
        store,
        group=group,
        mode="a" if mode == "a-" else mode,
        consolidated=False,
        zarr_format=zarr_format,
        storage_options=storage_options,
    )
    # Refused before any array is made, as dask_store would refuse the writes below.
    check_tasks_reach(
        [root], [v.data for v in dataset.variables.values() if hasattr(v.data, "dask")]
    )
    writer = _DatasetWriter(
        root, mode, append_dim, region, write_empty_chunks, safe_chunks, align_chunks
    )
    dataset = writer.validate_region(dataset)
    if encoding and mode in ("a", "a-", "r+"):
        clash = [k for k in encoding if k in writer.existing]
        if clash:
            raise ValueError(
                f"variables {clash} exist already, but encoding was provided "
                f"(encoding applies only to new variables)"
            )
    variables, attributes = conventions.encode_dataset_coordinates(dataset)
    for name, enc in encoding.items():
        variables[name].encoding = enc
    variables = _stored_names(variables)
    writer.store(variables, attributes, set(encoding))
    # (As xarray: a store that keeps no consolidated metadata is written without.)
    if mode != "r+" and consolidated is not False and root.store.supports_consolidated_metadata:
        api.consolidate_metadata(root.store)
    delayed = _write_data(writer.writes, compute, chunkmanager_store_kwargs or {})
    return root if compute else delayed


def _write_data(
    writes: Iterable[Write], compute: bool, compute_kwargs: dict[str, Any]
) -> Delayed | None:
    """Do the (data, array, region) `writes`: numpy data now, dask data by its tasks (with
    `compute` False, a Delayed of them; one even when every write is done, as xarray's)."""
    from ..dask import store as dask_store

    lazy = [(d, a, r) for d, a, r in writes if hasattr(d, "dask")]
    for data, array, where in writes:
        if not hasattr(data, "dask"):
            array[where] = np.asarray(data)
    sources, arrays, regions = zip(*lazy) if lazy else ((), (), ())
    return dask_store(sources, arrays, regions, compute=compute, **compute_kwargs)


class ZarrcoreWritableDataStore(ZarrcoreDataStore):
    """A group as xarray's writable data store (the part of its ZarrStore that xarray's own
    functions use): `Dataset.dump_to_store(store)` writes into it as to_zarr(mode="a") does,
    without consolidating, and `xr.decode_cf(store)` reads it back.

    Parameters
    ----------
    group : Group
        The group written to (opened for writing).
    use_zarr_fill_value_as_mask : bool, optional
        As `ZarrcoreDataStore`'s.
    """

    @property
    def ds(self) -> Group:
        """The zarrcore Group (ZarrStore.ds is the zarr-python one)."""
        return self.zarr_group

    def store(
        self,
        variables: Mapping[Hashable, Variable],
        attributes: Mapping[Any, Any],
        check_encoding_set: Iterable[Hashable] = frozenset(),
        writer: Any = None,
        unlimited_dims: Any = None,
    ) -> None:
        """Write variables and attributes, as `to_zarr(mode="a")` does without consolidating.

        Parameters
        ----------
        variables : mapping of hashable to xarray.Variable
            The variables, not yet CF-encoded; dask data is computed now.
        attributes : mapping
            The group's attributes.
        check_encoding_set : iterable of hashable, optional
            The variables whose encoding must be valid (xarray's `encoding` argument).
        writer : optional
            xarray's deferred writes: not needed, ignored.
        unlimited_dims : optional
            netCDF's unlimited dimensions: ignored, as by xarray's zarr backend.
        """
        dataset_writer = _DatasetWriter(self.zarr_group, "a", None, None)
        dataset_writer.store(_stored_names(variables), attributes, set(check_encoding_set))
        _write_data(dataset_writer.writes, True, {})
