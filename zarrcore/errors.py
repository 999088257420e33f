"""Exception hierarchy. Every problem with stored data or metadata is a ZarrcoreError."""

__all__ = [
    "ArrayNotFoundError",
    "AttributeTypeError",
    "ChecksumError",
    "ChunkDecodeError",
    "ChunkEncodeError",
    "ChunkNotFoundError",
    "CommitConflictError",
    "ContainsArrayError",
    "ContainsGroupError",
    "CredentialsError",
    "DataTypeDependencyError",
    "DataTypeMismatchError",
    "DeleteUnsupportedError",
    "DimensionNamesMissingError",
    "ForeignStoreError",
    "GroupNotFoundError",
    "IncompatibleArrayError",
    "IncompatibleGroupError",
    "InexactConversionError",
    "InvalidKeyError",
    "KeyChangedError",
    "LockLostError",
    "LockTimeoutError",
    "LockUnavailableError",
    "MemberNotFoundError",
    "MetadataError",
    "NodeExistsError",
    "NodeNotFoundError",
    "ObjectDataTypeError",
    "OutsideStoreError",
    "PipelineFallbackError",
    "ProcessLocalStoreError",
    "ReadOnlyError",
    "ReferenceFormatError",
    "ReferenceOutsideError",
    "ReferenceTargetError",
    "SelectionError",
    "SettingTypeError",
    "SettingValueError",
    "ShapeMismatchError",
    "ShardIndexError",
    "StoreError",
    "StoreURLError",
    "UnknownCodecError",
    "UnknownCodecObjectError",
    "UnknownDataTypeError",
    "UnsafeCodecError",
    "UnsupportedStoreError",
    "ValueTooLargeError",
    "ViewOutsideArrayError",
    "WriteConflictError",
    "ZarrcoreError",
]


class ZarrcoreError(Exception):
    """Base class of every error about stored data, metadata or keys."""


class SelectionError(ZarrcoreError, IndexError):
    """An index or selection that does not fit the array (an IndexError, as in numpy)."""


class ViewOutsideArrayError(SelectionError):
    """A lazy view reaches beyond its array's shape (the array shrank since it was made)."""


class ShapeMismatchError(ZarrcoreError, ValueError):
    """A value to write, or an `out` array, whose shape does not fit the selection."""


class DataTypeMismatchError(ZarrcoreError, TypeError):
    """A chunk's value whose data type does not cast safely to the array's (numpy's
    `can_cast(..., "safe")`): chunk writes and encodings never round or wrap values."""


class MetadataError(ZarrcoreError, ValueError):
    """Metadata is malformed, invalid or unsupported."""


class AttributeTypeError(MetadataError, TypeError):
    """Attributes of a type JSON cannot hold. A TypeError where the API promises one
    (zarrcore.xarray.to_zarr, as xarray's to_zarr)."""


class DimensionNamesMissingError(MetadataError, KeyError):
    """An array without the dimension names xarray needs (v2's `_ARRAY_DIMENSIONS`). A KeyError
    as xarray's zarr engine raises it."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ReferenceFormatError(MetadataError):
    """Virtual references (kerchunk JSON or parquet) that cannot be read: a malformed entry,
    an unknown version, a template zarrcore does not evaluate; the message names the key."""


class UnknownCodecError(MetadataError):
    """A codec name or id that zarrcore does not know."""


class UnknownCodecObjectError(UnknownCodecError, TypeError):
    """An object given as a codec that is neither a codec zarrcore knows nor another
    library's codec object it can convert (a TypeError too, as zarr-python raises for it); the
    message says what to pass."""


class UnknownDataTypeError(MetadataError):
    """A data type that zarrcore does not know."""


class DataTypeDependencyError(UnknownDataTypeError):
    """A data type whose numpy side needs a package that is not installed (ml_dtypes for
    bfloat16, float8_*, int4 & co.: pip install "zarrcore[ml]")."""


class ObjectDataTypeError(ZarrcoreError, TypeError, ValueError):
    """numpy's object dtype without the object codec that says what its items are. A
    ValueError as zarr-python raises it, and a TypeError as for other unusable dtypes."""


class SettingTypeError(ZarrcoreError, TypeError, ValueError):
    """A setting of the wrong type (a float where a number of bytes belongs): a TypeError, and
    a ValueError as the setting's values out of range are."""


class SettingValueError(ZarrcoreError, ValueError):
    """A setting of the right type that cannot take its value here (a shared cache on a system
    without memory shared between processes)."""


class UnsafeCodecError(ZarrcoreError, ValueError):
    """A codec whose decoding would run code taken from the store (a ValueError, as
    zarr-python's PickleCodecDisabledError)."""


class ChunkDecodeError(ZarrcoreError, ValueError):
    """A stored chunk could not be decoded (truncated, oversized or garbage)."""


class ChunkNotFoundError(ZarrcoreError, ValueError):
    """A read touched chunks that are not stored while `read_missing_chunks` is False (the
    array's config or zarrcore.config's); the message names their keys. A ValueError, as
    zarr-python's."""


class ChunkEncodeError(ZarrcoreError, ValueError):
    """A chunk's values cannot be encoded by its codecs (a value out of a codec's range)."""


class ChecksumError(ChunkDecodeError):
    """A stored checksum does not match the data."""


class ShardIndexError(ChunkDecodeError):
    """A shard index is malformed or points outside its shard."""


class InvalidKeyError(ZarrcoreError, ValueError):
    """A store key that is empty, absolute or escapes the store root."""


class NodeNotFoundError(ZarrcoreError, FileNotFoundError):
    """No array or group exists at a path."""


class ArrayNotFoundError(NodeNotFoundError, ValueError):
    """No array at a path where one was asked for (`open_array`, `Group.get_array`): nothing,
    or a group, is there. A ValueError too, as zarr-python's ArrayNotFoundError and its error
    for a group opened as an array."""


class GroupNotFoundError(NodeNotFoundError, ValueError):
    """No group at a path where one was asked for (`open_group`, `Group.get_group`): nothing,
    or an array, is there. A ValueError too, as zarr-python's GroupNotFoundError and its
    ContainsArrayError for an array opened as a group."""


class NodeExistsError(ZarrcoreError, FileExistsError):
    """A node already exists where one was to be created."""


class ContainsArrayError(NodeExistsError, ValueError):
    """An array is where a node was to be created, or where a group was asked for
    (`Group.get_group`); a ValueError too, as zarr-python's."""


class ContainsGroupError(NodeExistsError, ValueError):
    """A group is where a node was to be created, or where an array was asked for
    (`Group.get_array`); a ValueError too, as zarr-python's."""


class IncompatibleArrayError(ContainsArrayError, TypeError):
    """An array is where `Group.require_group` wants a group; a TypeError too, as zarr-python
    3.4's error for it."""


class IncompatibleGroupError(ContainsGroupError, TypeError):
    """A group is where `Group.require_array` wants an array; a TypeError too, as zarr-python
    3.4's error for it."""


class StoreError(ZarrcoreError, OSError):
    """The store could not read, list or write a key: a directory or a symlink loop where a
    key should be, a full disk, no permission... (`errno` is the system's)."""


class ForeignStoreError(StoreError):
    """Another library's store that zarrcore calls through its own API (a zarr-python store,
    see storage.zarr_python) failed: the message names the key, and `__cause__` is the
    exception that store raised."""


class DeleteUnsupportedError(StoreError, NotImplementedError):
    """The store cannot delete a key it holds (`supports_deletes` is False: a zip's members
    stay); a NotImplementedError too, as zarr-python's ZipStore raises."""


class CredentialsError(StoreError, PermissionError):
    """A remote store's client found no credentials (it asked the cloud's instance metadata
    service last, which answered no); the message says how to pass them."""


class KeyChangedError(StoreError):
    """A value read in several requests was replaced between them (an object store's ETag
    changed); reading it again reads the new value whole.

    Parameters
    ----------
    message : str
        What was replaced, naming the key.
    """

    def __init__(self, message: str) -> None:
        super().__init__(11, message)  # EAGAIN

    def __reduce__(self) -> tuple[type, tuple[str | None]]:
        # (OSError's pickles (errno, strerror), which this __init__ does not take: raised in
        # a pool's worker, it must reach the caller.)
        return type(self), (self.strerror,)


class ValueTooLargeError(StoreError, ChunkDecodeError):
    """A stored value larger than any valid one can be (a chunk larger than its codecs encode
    to) or than the limits allow (`config.max_chunk_bytes`): refused before it is read or
    inflated whole. The message names the key and the limit; `errno` is EFBIG."""


class ReferenceTargetError(StoreError):
    """The file a virtual reference points at is missing, or shorter than the reference says;
    the message names the key and the target."""


class ReadOnlyError(ZarrcoreError, PermissionError):
    """A write was attempted through a read-only store or array."""


class MemberNotFoundError(ZarrcoreError, KeyError):
    """A group has no member of that name."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class LockUnavailableError(ZarrcoreError, OSError):
    """Keys cannot be locked across processes: the store has no such locks, or its file system
    refuses them. Read-modify-writes fail with it rather than risk losing concurrent updates."""


class LockTimeoutError(LockUnavailableError):
    """A lock stayed held by another holder (named in the message with the lock) for longer
    than config.lock_timeout."""


class LockLostError(ZarrcoreError, OSError):
    """A lock was taken from its holder while held (its lease ran out), so an update made under
    it may have raced another writer's."""


class OutsideStoreError(ZarrcoreError, PermissionError):
    """A key of a confined store whose path resolves outside the store's root (a symlink)."""


class ReferenceOutsideError(OutsideStoreError):
    """A virtual reference points at a file outside what the caller lets references read
    (ReferenceStore's bounds); the message names the key and the target."""


class ProcessLocalStoreError(ZarrcoreError, ValueError):
    """A store whose data lives in this process only (a memory store) given to tasks that
    run in other processes or on copies of it, where their writes would be lost."""


class StoreURLError(ZarrcoreError, ValueError):
    """A store URL or store argument zarrcore cannot open: an unknown scheme, a scheme whose
    optional dependency is not installed (the message says what to install), or options
    that do not fit it. Nothing is created for it."""


class UnsupportedStoreError(StoreURLError, TypeError):
    """An object given as a store that is no store zarrcore knows (a TypeError too, as
    zarr-python raises for it)."""


class WriteConflictError(ZarrcoreError):
    """A read-modify-write by conditional writes kept losing to other writers: it gave up
    after its retries rather than overwrite their updates."""


class CommitConflictError(WriteConflictError):
    """Icechunk refused to commit, rebase or merge a session's changes: another session
    committed to its branch first (with changes to the same chunks, when rebasing). The
    message names the branch, and the nodes and chunks in conflict where Icechunk names
    them; Icechunk's error is its `__cause__`. Write again in a new session of the branch."""


class PipelineFallbackError(ZarrcoreError):
    """zarrcore's codec pipeline for zarr-python met a request it hands to zarr-python's own
    pipeline (zarr_pipeline.FALLBACKS), and config.pipeline_fallback is False."""


class InexactConversionError(ZarrcoreError, ValueError):
    """`convert` met a value (or fill value) that the new data type does not hold exactly, or
    data types between which it cannot prove a conversion exact; the message names the array,
    both data types and, for a value, the first that does not convert, with its index."""
