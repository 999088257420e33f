"""Zarr v2/v3 metadata documents and data types."""

from zarrcore.metadata.dtypes import (
    DataType,
    dtype_from_numpy,
    dtype_from_v2_json,
    dtype_from_v3_json,
    register_data_type,
    registered_data_types,
)
from zarrcore.metadata.v2 import ArrayMetadataV2, GroupMetadataV2, parse_metadata_v2
from zarrcore.metadata.v3 import (
    ArrayMetadataV3,
    ChunkKeyEncoding,
    GroupMetadataV3,
    parse_metadata_v3,
)

__all__ = [
    "DataType",
    "dtype_from_numpy",
    "dtype_from_v2_json",
    "dtype_from_v3_json",
    "register_data_type",
    "registered_data_types",
    "ArrayMetadataV2",
    "GroupMetadataV2",
    "parse_metadata_v2",
    "ArrayMetadataV3",
    "ChunkKeyEncoding",
    "GroupMetadataV3",
    "parse_metadata_v3",
]
