"""Where node metadata lives in a store, and reading it for either Zarr format."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import (
    ContainsArrayError,
    ContainsGroupError,
    LockUnavailableError,
    NodeExistsError,
    NodeNotFoundError,
    ReadOnlyError,
    WriteConflictError,
    ZarrcoreError,
)
from ..metadata import GroupMetadataV3, parse_metadata_v3
from ..metadata import v2 as metadata_v2
from ..metadata.common import parse_json
from ..runtime.config import config
from ..storage import validate_key
from ..storage.base import get_at_most
from ..storage.updates import retry_conflicts, update_mode

if TYPE_CHECKING:
    from ..metadata import GroupMetadataV2
    from ..metadata.types import NodeMetadata
    from ..storage import Store

__all__ = [
    "Attributes",
    "BrokenNode",
    "CONTAINS",
    "METADATA_KEYS",
    "Node",
    "V2_ARRAY_KEY",
    "V2_ATTRS_KEY",
    "V2_GROUP_KEY",
    "V3_KEY",
    "creation_lock",
    "dump_json",
    "ensure_parent_groups",
    "existing_node_error",
    "find_metadata",
    "join",
    "load_json",
    "metadata_lock_key",
    "metadata_update",
    "node_exists",
    "normalize_path",
    "parent_paths",
    "read_metadata",
    "write_metadata",
]

V3_KEY = "zarr.json"
V2_ARRAY_KEY = ".zarray"
V2_GROUP_KEY = ".zgroup"
V2_ATTRS_KEY = ".zattrs"
METADATA_KEYS = (V3_KEY, V2_ARRAY_KEY, V2_GROUP_KEY, V2_ATTRS_KEY)


def normalize_path(path: str | None) -> str:
    """'' for the root, else a validated 'a/b' path."""
    if path is None:
        return ""
    path = str(path).strip("/")
    return validate_key(path) if path else ""


def join(path: str, key: str) -> str:
    return f"{path}/{key}" if path else key


def parent_paths(path: str) -> list[str]:
    """Ancestors of `path`, root first, excluding `path` itself."""
    parts = path.split("/") if path else []
    return ["/".join(parts[:i]) for i in range(len(parts))]


def _read_document(store: Store, key: str) -> bytes | None:
    """The bytes of the metadata document at `key` (None: missing); one larger than
    config.max_stored_bytes is refused (ValueTooLargeError) without being read whole."""
    data = get_at_most(
        store,
        key,
        config.max_stored_bytes,
        "a metadata document may take (config.max_chunk_bytes with slack)",
    )
    return None if data is None else bytes(data)


def load_json(store: Store, key: str) -> Any:
    data = _read_document(store, key)
    if data is None:
        return None
    return parse_json(data, key)


def dump_json(doc: Any) -> bytes:
    return json.dumps(doc, indent=config.json_indent, sort_keys=False, allow_nan=False).encode()


def find_metadata(store: Store, path: str, zarr_format: int | None = None) -> NodeMetadata | None:
    """Parse the metadata of the node at `path` (of `zarr_format`, None: either); None if
    there is none."""
    if zarr_format not in (None, 2, 3):
        raise ValueError(f"zarr_format must be 2 or 3, not {zarr_format!r}")
    if zarr_format in (None, 3):
        key = join(path, V3_KEY)
        data = _read_document(store, key)
        if data is not None:
            return parse_metadata_v3(data, where=key)
    if zarr_format in (None, 2):
        attrs_key = join(path, V2_ATTRS_KEY)
        zarray_key = join(path, V2_ARRAY_KEY)
        zarray = load_json(store, zarray_key)
        if zarray is not None:
            return metadata_v2.ArrayMetadataV2.from_json(
                zarray, load_json(store, attrs_key), where=zarray_key
            )
        zgroup_key = join(path, V2_GROUP_KEY)
        zgroup = load_json(store, zgroup_key)
        if zgroup is not None:
            return metadata_v2.GroupMetadataV2.from_json(
                zgroup, load_json(store, attrs_key), where=zgroup_key
            )
    return None


def read_metadata(store: Store, path: str, zarr_format: int | None = None) -> NodeMetadata:
    """Parse the metadata of the node at `path`; NodeNotFoundError if there is none (naming
    the other format's node there, if any)."""
    found = find_metadata(store, path, zarr_format)
    if found is not None:
        return found
    if zarr_format is not None:
        other = find_metadata(store, path, 5 - zarr_format)
        if other is not None:
            raise NodeNotFoundError(
                f"no Zarr format {zarr_format} node at path {path!r} in {store!r}: a format "
                f"{other.zarr_format} {other.node_type} is there (open it with "
                f"zarr_format={other.zarr_format}, or None for either)"
            )
    detail = store.missing_detail(path)
    raise NodeNotFoundError(
        f"no array or group at path {path!r} in {store!r}" + (f": {detail}" if detail else "")
    )


def node_exists(store: Store, path: str) -> bool:
    return any(store.exists(join(path, k)) for k in (V3_KEY, V2_ARRAY_KEY, V2_GROUP_KEY))


# The error for a node of each kind standing where it should not, as zarr-python raises them.
CONTAINS: dict[str, type[NodeExistsError]] = {
    "array": ContainsArrayError,
    "group": ContainsGroupError,
}


def existing_node_error(store: Store, path: str) -> NodeExistsError:
    """The error for the node at `path` being where one was to be created: the CONTAINS
    error of its kind; NodeExistsError when its metadata cannot be read."""
    try:
        kind = read_metadata(store, path).node_type
    except ZarrcoreError:
        return NodeExistsError(f"a node already exists at path {path!r} in {store!r}")
    what = "an array" if kind == "array" else "a group"
    return CONTAINS[kind](f"{what} already exists at path {path!r} in {store!r}")


def write_metadata(store: Store, path: str, metadata: NodeMetadata) -> None:
    """Write a node's metadata document(s) for its format."""
    if metadata.zarr_format == 3:
        store.set(join(path, V3_KEY), metadata.to_bytes())
        return
    # .zattrs first: a group's update is over, and its lock handed on, once .zgroup is
    # replaced (Store.lock replaced_last).
    attrs_key = join(path, V2_ATTRS_KEY)
    if metadata.attributes:
        store.set(attrs_key, dump_json(metadata.attributes))
    elif store.exists(attrs_key):
        store.delete(attrs_key)
    key = V2_ARRAY_KEY if metadata.node_type == "array" else V2_GROUP_KEY
    store.set(join(path, key), metadata.to_bytes())


def metadata_lock_key(path: str, zarr_format: int, node_type: str) -> str:
    """The key whose lock serialises every update of a node's metadata (the v2 .zattrs too)."""
    if zarr_format == 3:
        return join(path, V3_KEY)
    return join(path, V2_ARRAY_KEY if node_type == "array" else V2_GROUP_KEY)


def creation_lock(store: Store, path: str) -> contextlib.AbstractContextManager[None]:
    """The lock held by whoever creates a node at `path`, from finding none there to writing
    its metadata, across the threads of this process (over any Store object of the same
    data): so threads creating one node, or groups on the way to theirs, at once neither
    replace each other's metadata nor both succeed. Its name ends with "/", as no key does."""
    return store.thread_lock(path + "/")


def ensure_parent_groups(store: Store, path: str, zarr_format: int) -> None:
    """Create a group at every ancestor of `path` that has no node yet."""
    for parent in parent_paths(path):
        with creation_lock(store, parent):
            if node_exists(store, parent):
                continue
            meta: GroupMetadataV3 | GroupMetadataV2
            if zarr_format == 3:
                meta = GroupMetadataV3(attributes={})
            else:
                meta = metadata_v2.GroupMetadataV2(attributes={})
            write_metadata(store, parent, meta)


_NodeT = TypeVar("_NodeT", bound="Node")
_Result = TypeVar("_Result")


class Node:
    """What arrays and groups share: where they live, their metadata and attributes."""

    kind = "node"

    def __init__(
        self, store: Store, path: str, metadata: NodeMetadata, read_only: bool = False
    ) -> None:
        self._store = store
        self._path = path
        self._read_only = read_only or store.read_only
        self._metadata: NodeMetadata = metadata

    @property
    def metadata(self) -> NodeMetadata:
        """The node's parsed metadata, as this handle last read or wrote it."""
        return self._metadata

    @property
    def store(self) -> Store:
        """The store the node lives in."""
        return self._store

    @property
    def path(self) -> str:
        """The node's path in its store ('' for the root)."""
        return self._path

    @property
    def name(self) -> str:
        """The path with a leading '/'."""
        return "/" + self._path

    @property
    def basename(self) -> str:
        """The last part of the path."""
        return self._path.rsplit("/", 1)[-1]

    @property
    def zarr_format(self) -> int:
        """2 or 3."""
        return self._metadata.zarr_format

    @property
    def read_only(self) -> bool:
        """True when writes through this handle raise ReadOnlyError."""
        return self._read_only

    @property
    def attrs(self) -> Attributes:
        """The node's attributes; changing them updates the stored metadata."""
        return Attributes(self)

    def update_attributes(self: _NodeT, new_attributes: Mapping[str, Any]) -> _NodeT:
        """Merge `new_attributes` into the stored attributes (one metadata update).

        Parameters
        ----------
        new_attributes : Mapping
            Attributes to set (JSON-compatible values).

        Returns
        -------
        Array or Group
            This node.

        Raises
        ------
        ReadOnlyError
            The node is read-only.
        """
        self.attrs.update(new_attributes)
        return self

    @contextlib.contextmanager
    def _metadata_update(self) -> Iterator[Any]:
        """Hold the lock of this node's metadata (across threads and processes) and yield its
        stored version, read anew under the lock so that no concurrent update is lost; store
        the new version with `_store_metadata` inside the block. Stores without locks raise
        LockUnavailableError unless config.unsafe_partial_writes."""
        with self._versioned_metadata_update(optimistic=False) as (current, _):
            yield current

    @contextlib.contextmanager
    def _versioned_metadata_update(self, optimistic: bool = True) -> Iterator[tuple[Any, Any]]:
        """`_metadata_update`, yielding (stored metadata, expected): pass `expected` on to
        `_store_metadata`. On a store without locks, an `optimistic` update (one that only
        stores metadata) reads the version of the metadata document, and `expected` is
        (that document's key, its version): `_store_metadata` then stores by a conditional
        write, which raises WriteConflictError when another writer came first (the caller
        may try again); elsewhere `expected` is None. Stores with neither locks nor
        conditional writes, and other updates there, raise LockUnavailableError unless
        config.unsafe_partial_writes."""
        self._check_writable()
        node_type = self._metadata.node_type
        key = metadata_lock_key(self._path, self.zarr_format, node_type)
        store = self._store
        mode = update_mode(store, locks_first=True, conditional=optimistic)
        expected = None
        with contextlib.ExitStack() as held:
            if mode == "lock":
                # A group's update ends by replacing the locked document (write_metadata), so
                # its lock can be that file's own: no lock file beside the group's members.
                try:
                    held.enter_context(
                        store.lock(key, self._path, replaced_last=node_type == "group")
                    )
                except FileNotFoundError:
                    raise NodeNotFoundError(
                        f"{self.kind} {self.name!r} is gone: no {key!r}"
                    ) from None
            elif mode == "conditional":
                # The document an update of attributes replaces: v2 keeps them apart.
                versioned = key if self.zarr_format == 3 else join(self._path, V2_ATTRS_KEY)
                expected = (versioned, store.get_versioned(versioned)[1])
            elif mode is None:
                raise LockUnavailableError(
                    f"{key!r}: {store!r} cannot lock it, so updating {self.kind} {self.name!r} "
                    f"could lose a concurrent update; accept that with "
                    f"zarrcore.config.set(unsafe_partial_writes=True)"
                )
            current = read_metadata(store, self._path, self.zarr_format)
            if current.node_type != self._metadata.node_type:
                raise NodeNotFoundError(
                    f"{self.kind} {self.name!r} is gone: a {current.node_type} is there now"
                )
            self._apply_metadata(current)
            yield current, expected

    def _store_metadata(self, metadata: NodeMetadata, expected: Any = None) -> None:
        """Write `metadata` (inside `_metadata_update`, or `_versioned_metadata_update` with
        its `expected`) and take it as this handle's."""
        if expected is None:
            write_metadata(self._store, self._path, metadata)
        else:
            key, version = expected
            doc = metadata.to_bytes() if key.endswith(V3_KEY) else dump_json(metadata.attributes)
            if not self._store.set_if(key, doc, version):
                raise WriteConflictError(f"{key!r}: another writer updated it first")
        self._apply_metadata(metadata)

    def _apply_metadata(self, metadata: NodeMetadata) -> None:
        self._metadata = metadata

    def _check_writable(self) -> None:
        if self._read_only:
            raise ReadOnlyError(f"{self.kind} {self.name!r} is read-only")


@contextlib.contextmanager
def metadata_update(
    node: Node, optimistic: bool = True
) -> Iterator[tuple[Any, Callable[[NodeMetadata], None]]]:
    """An update of `node`'s metadata from outside its class: `Node._versioned_metadata_update`
    (`Node._metadata_update` unless `optimistic`), yielding (stored metadata, store), where
    `store(new)` stores `new` as `Node._store_metadata` does with the update's `expected`."""
    with node._versioned_metadata_update(optimistic) as (current, expected):
        yield current, lambda metadata: node._store_metadata(metadata, expected)


class Attributes(dict[str, Any]):
    """A node's attributes. Every change is applied to the attributes stored at that moment,
    under the node's metadata lock, so changes by other handles, threads and processes are
    kept; the mapping then shows the stored attributes."""

    def __init__(self, node: Node) -> None:
        super().__init__(node.metadata.attributes)
        self._node = node

    def _change(self, edit: Callable[[dict[str, Any]], _Result]) -> _Result:
        """Apply `edit` (a function of a dict) to the stored attributes; its result. On a store
        with conditional writes but no locks, applied again to the newer attributes when
        another writer's update came first."""
        node = self._node

        def attempt() -> tuple[dict[str, Any], _Result]:
            with node._versioned_metadata_update() as (current, expected):
                attributes = dict(current.attributes)
                result = edit(attributes)
                node._store_metadata(current.evolve(attributes=attributes), expected)
            return attributes, result

        attributes, result = retry_conflicts(attempt)
        super().clear()
        super().update(attributes)
        return result

    def __setitem__(self, key: str, value: Any) -> None:
        """Set one attribute (stored at once)."""
        self._change(lambda d: d.__setitem__(key, value))

    def __delitem__(self, key: str) -> None:
        """Delete one attribute (stored at once); KeyError when there is none."""
        self._change(lambda d: d.__delitem__(key))

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Set attributes as `dict.update` does, in one metadata update.

        Parameters
        ----------
        *args, **kwargs
            As `dict.update` takes them.
        """
        self._change(lambda d: d.update(*args, **kwargs))

    def pop(self, *args: Any) -> Any:
        """Remove an attribute and return its value, as `dict.pop` does.

        Parameters
        ----------
        *args
            The name, and optionally a default returned when it is missing.

        Returns
        -------
        object
        """
        return self._change(lambda d: d.pop(*args))

    def popitem(self) -> tuple[str, Any]:
        """Remove the last attribute and return (name, value), as `dict.popitem` does.

        Returns
        -------
        tuple of (str, object)
        """
        return self._change(lambda d: d.popitem())

    def clear(self) -> None:
        """Remove every attribute."""
        self._change(lambda d: d.clear())

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The attribute `key`, set to `default` first when it is missing.

        Parameters
        ----------
        key : str
        default : object, optional

        Returns
        -------
        object
        """
        return self._change(lambda d: d.setdefault(key, default))

    def put(self, mapping: Mapping[str, Any]) -> None:
        """Replace all attributes.

        Parameters
        ----------
        mapping : Mapping
            The new attributes (JSON-compatible values).
        """
        mapping = dict(mapping)
        self._change(lambda d: (d.clear(), d.update(mapping)))  # type: ignore[func-returns-value]

    def asdict(self) -> dict[str, Any]:
        """The attributes as a plain dict.

        Returns
        -------
        dict
        """
        return dict(self)


class BrokenNode:
    """A member whose metadata cannot be read, as listed by Group.members(), keys() and
    tree(): listing goes on past it. `error` is the ZarrcoreError opening it raised."""

    kind = "unreadable"

    def __init__(self, store: Store, path: str, error: Exception) -> None:
        self.store, self.path, self.error = store, path, error

    @property
    def name(self) -> str:
        """The path with a leading '/'."""
        return "/" + self.path

    @property
    def basename(self) -> str:
        """The last part of the path."""
        return self.path.rpartition("/")[2]

    def __repr__(self) -> str:
        return f"<zarrcore.BrokenNode {self.name}: {self.error}>"
