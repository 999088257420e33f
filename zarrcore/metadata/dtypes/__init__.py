"""Zarr data types: their v2/v3 JSON names, numpy dtypes and fill-value encodings.

Every data type is a :class:`DataType` subclass registered with
:func:`register_data_type`; resolution from JSON or numpy offers the input to
each registered class in turn (latest registration first) and takes the first
that accepts it.

Byte order: types read from v3 JSON have a native-order ``numpy_dtype`` (v3
puts endianness in the ``bytes`` codec).  Types read from v2 JSON keep the
stored byte order, so ``numpy_dtype`` may be big-endian; chunks decode to that
dtype.
"""

from ...errors import ObjectDataTypeError
from .base import DataType, register_data_type, registered_data_types
from .bytes import RawBitsType, RawBytesType
from .numeric import (
    BoolType,
    ComplexType,
    FloatType,
    IntegerType,
    MLComplexType,
    MLFloatType,
    MLIntegerType,
)
from .resolve import dtype_from_numpy, dtype_from_v2_json, dtype_from_v3_json, v2_type_for_fill
from .strings import (
    FixedLengthUTF32Type,
    NullTerminatedBytesType,
    PythonObjectType,
    StringType,
    VariableLengthBytesType,
)
from .structured import StructuredType
from .time import DateTime64Type, TimeDelta64Type

__all__ = [
    "DataType",
    "register_data_type",
    "registered_data_types",
    "dtype_from_v3_json",
    "dtype_from_v2_json",
    "v2_type_for_fill",
    "dtype_from_numpy",
    "ObjectDataTypeError",
]

for _cls in (
    MLComplexType,
    MLIntegerType,
    MLFloatType,
    StructuredType,
    TimeDelta64Type,
    DateTime64Type,
    NullTerminatedBytesType,
    FixedLengthUTF32Type,
    VariableLengthBytesType,
    StringType,
    PythonObjectType,
    RawBytesType,
    RawBitsType,
    ComplexType,
    FloatType,
    IntegerType,
    BoolType,
):
    register_data_type(_cls)
del _cls
