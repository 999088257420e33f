"""Type aliases of the public API's annotations."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal, Union

from ..codecs.base import Codec
from ..storage import Store
from .v2 import ArrayMetadataV2, GroupMetadataV2
from .v3 import ArrayMetadataV3, GroupMetadataV3

__all__ = [
    "ChunksLike",
    "CodecLike",
    "CodecsLike",
    "Fields",
    "NodeMetadata",
    "Selection",
    "ShapeLike",
    "StoreLike",
]

#: Where a node lives: a directory path, a `dict` (kept in memory), a Store, or None for a new
#: in-memory store.
StoreLike = Union[str, "os.PathLike[str]", "dict[str, bytes]", Store, None]
#: A shape: one int for 1-d, else one int per dimension.
ShapeLike = Union[int, Sequence[int]]
#: Chunk (or shard) sides: as ShapeLike, -1 for a whole axis, "auto" or None to guess.
ChunksLike = Union[int, Sequence[int], Literal["auto"], None]
#: A codec: a codec object, its v3 JSON (`{"name": ..., "configuration": {...}}`) or its name.
CodecLike = Union[Codec, "dict[str, Any]", str]
#: What numpy's `a[selection]` takes: ints, slices, Ellipsis, None, arrays, tuples of them.
Selection = Any
#: Fields of a structured dtype a selection reads or writes: one name, some, or all (None).
Fields = Union[str, Sequence[str], None]
#: A node's parsed metadata document(s), as `Array.metadata` and `Group.metadata` give them.
NodeMetadata = Union[ArrayMetadataV3, ArrayMetadataV2, GroupMetadataV3, GroupMetadataV2]
#: Codecs of one stage: one, a sequence, "auto" for the default, or None for none.
CodecsLike = Union[CodecLike, Sequence[CodecLike], Literal["auto"], None]
