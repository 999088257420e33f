# Type stub of a compiled module (zarrcore/_native/indexing.pyx): chunk plans of selections. Keep in
# step with the .pyx.
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

_Projection = TypeVar("_Projection")
_Int64s = npt.NDArray[np.int64]

class AxisPlan:
    kept: bool
    order: _Int64s | None
    rows: _Int64s | None
    listed: tuple[_Int64s, _Int64s] | None
    full: npt.NDArray[np.bool_] | None
    def __init__(self, kept: bool) -> None: ...
    @staticmethod
    def from_rows(
        rows: _Int64s, listed: tuple[_Int64s, _Int64s], full: npt.NDArray[np.bool_]
    ) -> AxisPlan: ...
    @property
    def npieces(self) -> int: ...
    @property
    def chunks(self) -> list[int]: ...
    @property
    def count(self) -> list[int]: ...
    @property
    def complete(self) -> list[bool]: ...
    @property
    def chunk_sel(self) -> list[int | slice | _Int64s]: ...
    @property
    def out_sel(self) -> list[slice | _Int64s | None]: ...
    def subset(self, pieces: _Int64s) -> AxisPlan: ...

def int_plan(i: int, chunk_len: int, dim_len: int) -> AxisPlan: ...
def slice_plan(start: int, stop: int, step: int, chunk_len: int, dim_len: int) -> AxisPlan: ...
def bounded_int_plan(
    i: int, lengths: _Int64s, starts: _Int64s, firsts: _Int64s, dim_len: int
) -> AxisPlan: ...
def bounded_slice_plan(
    start: int,
    stop: int,
    step: int,
    lengths: _Int64s,
    starts: _Int64s,
    firsts: _Int64s,
    dim_len: int,
) -> AxisPlan: ...
def slices_plans(
    items: tuple[slice, ...], shape: Sequence[int], chunk_shape: Sequence[int]
) -> tuple[list[AxisPlan], tuple[int, ...]]: ...

class PointGroups:
    order: _Int64s | None
    offsets: _Int64s
    coords: _Int64s
    local: _Int64s
    flags: npt.NDArray[np.uint8]
    step: _Int64s
    ngroups: int

def group_points(
    arrays: list[_Int64s],
    shape: Sequence[int],
    chunk_shape: Sequence[int],
    progressions: bool = False,
    axes: Sequence[int] | None = None,
) -> PointGroups: ...
def array_plan(idx: _Int64s, chunk_len: int, dim_len: int, axis: int) -> AxisPlan: ...
def in_result_order(plan: AxisPlan) -> AxisPlan: ...
def orthogonal_projections(
    plans: list[AxisPlan],
    Projection: Callable[[tuple[int, ...], tuple[Any, ...], tuple[Any, ...], bool], _Projection],
) -> Iterator[_Projection]: ...
def point_projections(
    g: PointGroups,
    Projection: Callable[[tuple[int, ...], tuple[Any, ...], tuple[Any, ...], bool], _Projection],
) -> Iterator[_Projection]: ...
