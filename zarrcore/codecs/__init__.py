"""Codecs: importing this package registers every built-in codec."""

from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkSpec, Codec
from .bitround import BitroundCodec
from .blosc import BloscCodec
from .bytes import BytesCodec
from .cast_value import CastValueCodec
from .crc32c import Crc32cCodec
from .gzip import GzipCodec, ZlibCodec
from .lz4 import LZ4Codec
from .numcodecs_compressors import Base64Codec, BZ2Codec, LZMACodec
from .numcodecs_filters import V2Filter
from .numcodecs_v3 import NumcodecsBytesCodec, NumcodecsFilter, NumcodecsSerializer
from .objects import JSONCodec, MsgPackCodec, PickleCodec, VLenArrayCodec
from .packbits import PackBitsCodec
from .pcodec import PcodecCodec
from .registry import codec_from_json, codec_from_v2, register_codec, registered_names
from .reshape import ReshapeCodec
from .scale_offset import ScaleOffsetCodec
from .sharding import ShardingCodec
from .transpose import TransposeCodec
from .vlen import VLenBytesCodec, VLenUTF8Codec
from .zfp import ZfpCodec
from .zfpy import ZfpyCodec
from .zstd import ZstdCodec

__all__ = [
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BZ2Codec",
    "Base64Codec",
    "BitroundCodec",
    "BloscCodec",
    "BytesBytesCodec",
    "BytesCodec",
    "CastValueCodec",
    "ChunkSpec",
    "Codec",
    "Crc32cCodec",
    "GzipCodec",
    "JSONCodec",
    "LZ4Codec",
    "LZMACodec",
    "MsgPackCodec",
    "NumcodecsBytesCodec",
    "NumcodecsFilter",
    "NumcodecsSerializer",
    "PackBitsCodec",
    "PcodecCodec",
    "PickleCodec",
    "ReshapeCodec",
    "ScaleOffsetCodec",
    "ShardingCodec",
    "TransposeCodec",
    "V2Filter",
    "VLenArrayCodec",
    "VLenBytesCodec",
    "VLenUTF8Codec",
    "ZfpCodec",
    "ZfpyCodec",
    "ZlibCodec",
    "ZstdCodec",
    "codec_from_json",
    "codec_from_v2",
    "register_codec",
    "registered_names",
]
