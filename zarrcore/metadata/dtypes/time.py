"""Dates and durations: datetime64 and timedelta64."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from zarrcore.errors import MetadataError

from .base import JSON, DataType, json_int, name_and_config, native_order

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["DateTime64Type", "TimeDelta64Type"]


_TIME_UNITS = frozenset(
    {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"}
)


class _TimeBase(DataType):
    kind: str | None = None
    v3_name: str | None = None

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        if name != cls.v3_name or config is None:
            return None
        unit, scale = config.get("unit"), config.get("scale_factor")
        if (
            set(config) != {"unit", "scale_factor"}
            or not isinstance(unit, str)
            or unit not in _TIME_UNITS
            or isinstance(scale, bool)
            or not isinstance(scale, int)
            or not 1 <= scale < 2**31
            or (unit == "generic" and scale != 1)
        ):
            raise MetadataError(
                f"{where}: field 'data_type': {name!r} needs configuration "
                f'{{"unit": <numpy unit>, "scale_factor": <positive int>}}, got {config!r}'
            )
        suffix = "" if unit == "generic" else f"[{scale}{unit}]"
        return cls(np.dtype(f"{cls.kind}8{suffix}"))

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if dtype.kind == cls.kind else None

    def to_json_v3(self) -> JSON:
        unit, scale = np.datetime_data(self.numpy_dtype)
        return {"name": self.v3_name, "configuration": {"unit": unit, "scale_factor": scale}}

    @property
    def _native(self) -> np.dtype[Any]:
        return native_order(self.numpy_dtype)

    @property
    def memory_dtype(self) -> np.dtype[Any]:
        # numpy allocates arrays of a generic-unit type in native order whatever order is
        # asked for (np.empty(1, ">M8").dtype is "<M8"), so those are native in memory and
        # the bytes codec swaps them to the stored order.
        if np.datetime_data(self.numpy_dtype)[0] == "generic":
            return self._native
        return self.numpy_dtype

    def cast_array(self, value: Any) -> npt.NDArray[Any]:
        if (
            isinstance(value, np.ndarray)
            and value.dtype.kind in "mM"
            and not value.dtype.isnative
            and np.datetime_data(value.dtype)[0] == "generic"
        ):
            # numpy's astype from a generic-unit type copies the bytes unswapped (types with
            # a unit it swaps itself); swap the counts, then convert from native order.
            native = value.dtype.newbyteorder("=")
            value = value.view(value.dtype.byteorder + "i8").astype("=i8").view(native)
        return super().cast_array(value)

    def default_fill_value(self) -> Any:
        # NaT (the int64 minimum), as zarr-python chooses.
        return np.array(-(2**63), dtype="i8").view(self._native)[()]

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        # Stored as the int64 count of units; NaT is the int64 minimum, or the string "NaT"
        # (the extension spec allows it; zarr-python writes the integer).
        value = -(2**63) if value == "NaT" else json_int(value)
        if not -(2**63) <= value < 2**63:
            raise ValueError("out of int64 range")
        return np.array(value, dtype="i8").view(self._native)[()]

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return int(np.asarray(value, dtype=self._native).view("i8"))


class DateTime64Type(_TimeBase):
    """``{"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}``."""

    kind = "M"
    v3_name = "numpy.datetime64"


class TimeDelta64Type(_TimeBase):
    """``{"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 1}}``."""

    kind = "m"
    v3_name = "numpy.timedelta64"


# -- structured -------------------------------------------------------------
