"""What the registry's numeric codecs (scale_offset, cast_value) ask of a data type: is it an
integer or a float type, its range, its special values, and scalars in its JSON form."""

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import MetadataError
from ..metadata.dtypes import DataType, dtype_from_numpy, dtype_from_v3_json
from ..metadata.dtypes.numeric import FloatType, IntegerType, MLFloatType

__all__ = [
    "FLOAT_NAMES",
    "INTEGER_NAMES",
    "data_type",
    "dtype_from_config",
    "float_traits",
    "int_bits",
    "int_range",
    "number_kind",
    "scalar_from_json",
    "scalars_from_json",
    "type_name",
]

#: The registry's integer and float types these codecs take, as the errors list them.
INTEGER_NAMES = (
    "int2",
    "int4",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint2",
    "uint4",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
)
FLOAT_NAMES = (
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3fn",
    "float8_e4m3b11fnuz",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "bfloat16",
    "float16",
    "float32",
    "float64",
)


def data_type(dtype: np.dtype[Any]) -> DataType | None:
    """zarrcore's DataType of `dtype`, None for none."""
    try:
        return dtype_from_numpy(dtype)
    except (TypeError, ValueError):
        return None


@lru_cache(maxsize=64)
def number_kind(dtype: np.dtype[Any]) -> str | None:
    """ "int" or "float" for the types of INTEGER_NAMES and FLOAT_NAMES, else None."""
    kind = data_type(dtype)
    if kind is None:
        return None
    name = kind.to_json_v3()
    if isinstance(kind, IntegerType) and name in INTEGER_NAMES:
        return "int"
    if isinstance(kind, (FloatType, MLFloatType)) and name in FLOAT_NAMES:
        return "float"
    return None


def type_name(dtype: np.dtype[Any]) -> str:
    """The v3 name of `dtype` (numpy's name when zarr has none)."""
    kind = data_type(dtype)
    name = kind.to_json_v3() if kind is not None else None
    return name if isinstance(name, str) else str(dtype)


def _info(dtype: np.dtype[Any], integer: bool) -> Any:
    if dtype.type.__module__ == "ml_dtypes":
        import ml_dtypes

        ml: Any = ml_dtypes  # no type hints
        return ml.iinfo(dtype) if integer else ml.finfo(dtype)
    return np.iinfo(dtype) if integer else np.finfo(dtype)


@lru_cache(maxsize=64)
def int_range(dtype: np.dtype[Any]) -> tuple[int, int]:
    info = _info(dtype, True)
    return int(info.min), int(info.max)


def int_bits(dtype: np.dtype[Any]) -> int:
    return int(_info(dtype, True).bits)


@lru_cache(maxsize=64)
def float_traits(dtype: np.dtype[Any]) -> tuple[float, int, bool, bool]:
    """(largest finite value, bits per value, has infinity, has NaN) of a float type."""
    info = _info(dtype, False)
    specials = np.array([np.inf, np.nan]).astype(dtype).astype(np.float64)
    return (
        float(info.max),
        int(info.bits),
        bool(np.isinf(specials[0])),
        bool(np.isnan(specials[1])),
    )


def scalar_from_json(value: object, dtype: np.dtype[Any], what: str) -> Any:
    """`value` in the fill value JSON form of `dtype` as a scalar of it; MetadataError naming
    `what` when it is not one."""
    return _json_type(dtype, what).fill_value_from_json(value, 3, where=what)


def scalars_from_json(
    values: list[Any], dtype: np.dtype[Any], what: str, where: Callable[[int], str]
) -> npt.NDArray[Any]:
    """`scalar_from_json` of many values, as an array of `dtype` (`where(i)` names value i in
    errors)."""
    return _json_type(dtype, what).scalars_from_json(values, where)


def _json_type(dtype: np.dtype[Any], what: str) -> DataType:
    kind = data_type(dtype)
    if kind is None:
        raise MetadataError(f"{what}: data type {dtype} has no JSON scalar form")
    return kind


def dtype_from_config(value: object, what: str) -> np.dtype[Any]:
    """The numpy dtype of v3 data type metadata `value`."""
    return dtype_from_v3_json(value, what).numpy_dtype
