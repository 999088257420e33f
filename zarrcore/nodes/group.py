"""The Group: a node holding arrays and groups by name."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import (
    ArrayNotFoundError,
    GroupNotFoundError,
    IncompatibleArrayError,
    IncompatibleGroupError,
    InvalidKeyError,
    MemberNotFoundError,
    NodeExistsError,
    NodeNotFoundError,
    ZarrcoreError,
)
from ..metadata import GroupMetadataV3
from ..metadata.common import MetadataDocument, check_attributes
from ..metadata.v2 import GroupMetadataV2
from ..storage import MemoryStore, make_store
from .array import Array
from .array_specs import check_mode, create_node, format_for_new, store_mode
from .consolidated import ConsolidatedMetadata, open_group_metadata
from .group_arrays import ArrayMakers
from .node import (
    CONTAINS,
    METADATA_KEYS,
    BrokenNode,
    Node,
    ensure_parent_groups,
    join,
    node_exists,
    normalize_path,
    read_metadata,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..metadata.types import NodeMetadata, StoreLike
    from ..storage import Store

__all__ = ["Group", "create_group", "create_hierarchy", "group", "open_group", "open_node", "tree"]

_D = TypeVar("_D")
_N = TypeVar("_N", Array, "Group")

_A = {"array": "an array", "group": "a group"}
# What require_group and require_array raise for a node of the other kind, by its kind.
_INCOMPATIBLE: dict[str, type[NodeExistsError]] = {
    "array": IncompatibleArrayError,
    "group": IncompatibleGroupError,
}


def open_node(
    store: Store,
    path: str,
    zarr_format: int | None = None,
    read_only: bool = False,
    use_consolidated: bool | None = False,
    stored_before: bool = True,
) -> Array | Group:
    """The Array or Group at `path`; a group's consolidated metadata is used unless
    `use_consolidated` is False, and required when it is True. An array presumes that
    objects may have been stored before it was opened unless not `stored_before`."""
    if use_consolidated is False:
        metadata, consolidated = read_metadata(store, path, zarr_format), None
    else:
        metadata, consolidated = open_group_metadata(store, path, zarr_format, use_consolidated)
    if metadata.node_type == "array":
        return Array(store, path, metadata, read_only=read_only, stored_before=stored_before)
    return Group(store, path, metadata, read_only=read_only, consolidated=consolidated)


class Group(ArrayMakers, Node):
    """A Zarr group: `g["a/b"]`, `g.create_array(...)`, `g.members()`."""

    kind = "group"

    # -- faces (see Array's): `async_group` (async_nodes.py) ------------------------------
    if TYPE_CHECKING:
        async_group: Any  # async_nodes.AsyncGroup

    def __init__(
        self,
        store: Store,
        path: str,
        metadata: NodeMetadata,
        read_only: bool = False,
        consolidated: ConsolidatedMetadata | None = None,
    ) -> None:
        super().__init__(store, path, metadata, read_only)
        # Members' metadata, when opened through consolidated metadata: no store reads.
        self._consolidated = consolidated
        # The paths of the arrays this group object made: opened through it, they presume
        # nothing was stored before (ChunkEngine.prior_extent), as the handle made does.
        self._made: set[str] = set()

    @property
    def consolidated(self) -> bool:
        """Whether the group was opened through consolidated metadata (members read none)."""
        return self._consolidated is not None

    @property
    def info(self) -> str:
        """A printable summary: name, type, format, number of members."""
        return self._summary(f"Members : {len(self)}")

    def _summary(self, *rows: str) -> str:
        return "\n".join(
            [f"Name : {self.name}", "Type : Group", f"Zarr format : {self.zarr_format}", *rows]
        )

    def __repr__(self) -> str:
        return f"<zarrcore.Group {self._store!r}{self.name}>"

    def __fspath__(self) -> str:
        """The group's directory, for a group in a local directory, so that what takes a path
        takes the group (`xr.open_zarr(group)`, which opens it with zarr-python).

        Raises
        ------
        TypeError
            The group is in another kind of store; `zarrcore.storage.as_zarr_store(group)`
            gives zarr-python and `xr.open_zarr` a store over it.
        """
        path = self._store.local_path(self._path)
        if path is None:
            raise TypeError(
                f"{self!r} is not in a local directory, so it has no file system "
                f"path; pass zarrcore.storage.as_zarr_store(group) instead"
            )
        return path

    def _child_path(self, name: str) -> str:
        name = normalize_path(name)
        if not name:
            raise InvalidKeyError(f"group {self.name!r}: member name must not be empty")
        return join(self._path, name)

    # -- members --------------------------------------------------------------
    def _open_member(self, name: str) -> Array | Group:
        path = self._child_path(name)
        if self._consolidated is None:
            return open_node(
                self._store, path, read_only=self._read_only, stored_before=path not in self._made
            )
        rel = normalize_path(name)
        metadata = self._consolidated.metadata(rel)
        if metadata is None:
            raise NodeNotFoundError(
                f"no member {rel!r} in the consolidated metadata of {self.name!r}"
            )
        if metadata.node_type == "array":
            return Array(self._store, path, metadata, read_only=self._read_only, stored_before=True)
        return Group(
            self._store,
            path,
            metadata,
            read_only=self._read_only,
            consolidated=self._consolidated.subgroup(rel),
        )

    def __getitem__(self, name: str) -> Array | Group:
        """The member at `name`, a path relative to this group ("a/b" goes down).

        Raises
        ------
        MemberNotFoundError
            No member there (a KeyError).
        MetadataError
            The member's metadata cannot be read.
        """
        try:
            return self._open_member(name)
        except NodeNotFoundError:
            raise MemberNotFoundError(f"group {self.name!r} has no member {name!r}") from None

    def get(self, name: str, default: _D | None = None) -> Array | Group | _D | None:
        """The member at `name`, or `default` when there is none.

        Parameters
        ----------
        name : str
            A path relative to this group.
        default : object, optional
            What to return when there is no member there.

        Returns
        -------
        Array or Group or object
        """
        try:
            return self[name]
        except MemberNotFoundError:
            return default

    def get_array(self, path: str) -> Array:
        """The array at `path`, relative to this group, as zarr-python 3.4's: else
        ArrayNotFoundError (nothing there) or ContainsGroupError (a group).

        Parameters
        ----------
        path : str
            A path relative to this group.

        Returns
        -------
        Array
        """
        return self._member_of_kind(path, Array)

    def get_group(self, path: str) -> Group:
        """The group at `path` ("" is this one), as `get_array` for groups: else
        GroupNotFoundError or ContainsArrayError.

        Parameters
        ----------
        path : str
            A path relative to this group.

        Returns
        -------
        Group
        """
        return self._member_of_kind(path, Group)

    def _member_of_kind(self, path: str, cls: type[_N]) -> _N:
        try:
            # "" is this group, as zarr-python 3.4 takes it.
            node = self._open_member(path) if normalize_path(path) else self
        except NodeNotFoundError:
            missing = ArrayNotFoundError if cls is Array else GroupNotFoundError
            raise missing(f"group {self.name!r} has no member {path!r}") from None
        return self._of_kind(node, cls, path)

    @staticmethod
    def _of_kind(
        node: Array | Group,
        cls: type[_N],
        path: str,
        errors: Mapping[str, type[NodeExistsError]] = CONTAINS,
    ) -> _N:
        """`node` (at `path`) when it is a `cls`; the error in `errors` of its kind when
        not."""
        if isinstance(node, cls):
            return node
        raise errors[node.kind](f"{_A[node.kind]} exists at {path!r}, not {_A[cls.kind]}")

    def __contains__(self, name: str) -> bool:
        """Is there a member at the path `name`?"""
        try:
            if self._consolidated is not None:
                return self._consolidated.metadata(normalize_path(name)) is not None
            return node_exists(self._store, self._child_path(name))
        except ValueError:
            return False

    def __iter__(self) -> Iterator[str]:
        """The names of the direct members."""
        return iter(self.keys())

    def __len__(self) -> int:
        """The number of direct members."""
        return len(self.keys())

    def __delitem__(self, name: str) -> None:
        """Delete the member at `name` with every key below it.

        Raises
        ------
        MemberNotFoundError
            No member there.
        ReadOnlyError
            The group is read-only.
        """
        self._check_writable()
        path = self._child_path(name)
        if not node_exists(self._store, path):
            raise MemberNotFoundError(f"group {self.name!r} has no member {name!r}")
        self._store.delete_prefix(path)
        self._consolidated = None  # stale now

    def _children(self) -> Iterator[tuple[str, Array | Group | BrokenNode]]:
        if self._consolidated is not None:
            for name in self._consolidated.children():
                yield name, self._open_member(name)
            return
        for name in self._store.list_dir(self._path):
            if name in METADATA_KEYS:
                continue
            path = join(self._path, name)
            try:
                yield name, open_node(self._store, path, read_only=self._read_only)
            except NodeNotFoundError:
                continue
            except ZarrcoreError as e:  # one unreadable member does not hide the others
                yield name, BrokenNode(self._store, path, e)

    def members(
        self, max_depth: int | None = 0
    ) -> Iterator[tuple[str, Array | Group | BrokenNode]]:
        """Yield (relative path, node) pairs; max_depth=None walks the whole subtree. A member
        whose metadata cannot be read comes as a BrokenNode naming its error.

        Parameters
        ----------
        max_depth : int or None, optional
            0 (the default) lists the direct members, n also n levels of groups below them,
            None the whole subtree.

        Yields
        ------
        tuple of (str, Array or Group or BrokenNode)
            The member's path relative to this group, and the member.

        Raises
        ------
        ValueError
            A negative `max_depth`.
        """
        if max_depth is not None and max_depth < 0:
            raise ValueError("max_depth must be None or >= 0")
        for name, node in self._children():
            yield name, node
            if isinstance(node, Group) and (max_depth is None or max_depth > 0):
                deeper = None if max_depth is None else max_depth - 1
                for sub, subnode in node.members(max_depth=deeper):
                    yield f"{name}/{sub}", subnode

    def keys(self) -> list[str]:
        """The names of the direct members (unreadable ones too).

        Returns
        -------
        list of str
        """
        return [name for name, _ in self._children()]

    def arrays(self) -> list[tuple[str, Array]]:
        """(name, array) of each direct member array.

        Returns
        -------
        list of (str, Array)
        """
        return [(n, node) for n, node in self._children() if isinstance(node, Array)]

    def groups(self) -> list[tuple[str, Group]]:
        """(name, group) of each direct member group.

        Returns
        -------
        list of (str, Group)
        """
        return [(n, node) for n, node in self._children() if isinstance(node, Group)]

    def array_keys(self) -> list[str]:
        """The names of the direct member arrays.

        Returns
        -------
        list of str
        """
        return [n for n, _ in self.arrays()]

    def group_keys(self) -> list[str]:
        """The names of the direct member groups.

        Returns
        -------
        list of str
        """
        return [n for n, _ in self.groups()]

    def tree(self) -> str:
        """A text drawing of the hierarchy below this group.

        Returns
        -------
        str
            One line per node, with each array's shape and dtype, and each unreadable
            member's error.
        """
        lines = [self.name]

        def walk(group: Group, prefix: str) -> None:
            children = sorted(group._children())
            for i, (name, node) in enumerate(children):
                last = i == len(children) - 1
                if isinstance(node, Array):
                    label = f"{name} {node.shape} {node.dtype}"
                elif isinstance(node, BrokenNode):
                    label = f"{name} (unreadable: {node.error})"
                else:
                    label = name
                lines.append(f"{prefix}{'└── ' if last else '├── '}{label}")
                if isinstance(node, Group):
                    walk(node, prefix + ("    " if last else "│   "))

        walk(self, "")
        return "\n".join(lines)

    # -- creation -------------------------------------------------------------
    def create_group(
        self, name: str, *, attributes: Mapping[str, Any] | None = None, overwrite: bool = False
    ) -> Group:
        """Create a group at `name` (below this group), in this group's format.

        Parameters
        ----------
        name : str
            A path relative to this group; missing groups on the way are created.
        attributes : Mapping, optional
            The new group's attributes (JSON-compatible).
        overwrite : bool, optional
            Replace a node already there (with everything below it).

        Returns
        -------
        Group

        Raises
        ------
        NodeExistsError
            A node exists there and `overwrite` is False.
        ReadOnlyError
            This group is read-only.
        """
        self._check_writable()
        self._consolidated = None  # the hierarchy changes: read members from the store
        return _create_group(
            self._store, self._child_path(name), self.zarr_format, attributes, overwrite
        )

    def _existing(self, name: str, cls: type[_N]) -> _N | None:
        """The member `name`, None when there is none; IncompatibleArrayError or
        IncompatibleGroupError when it is not a `cls`."""
        path = self._child_path(name)
        try:
            node = open_node(self._store, path, read_only=self._read_only)
        except NodeNotFoundError:
            return None
        return self._of_kind(node, cls, path, _INCOMPATIBLE)

    def require_group(self, name: str, **kwargs: Any) -> Group:
        """The group at `name` (a path relative to this group), created with `kwargs` (as
        `create_group` takes them) when missing; an array there raises IncompatibleArrayError
        (a ContainsArrayError and a TypeError).

        Parameters
        ----------
        name : str
            A path relative to this group.
        **kwargs
            As `create_group` takes them.

        Returns
        -------
        Group
        """
        node = self._existing(name, Group)
        return node if node is not None else self.create_group(name, **kwargs)

    def require_groups(self, *names: str) -> tuple[Group, ...]:
        """require_group of each name, as a tuple.

        Parameters
        ----------
        *names : str
            Paths relative to this group.

        Returns
        -------
        tuple of Group
        """
        return tuple(self.require_group(name) for name in names)

    def __setitem__(self, name: str, value: npt.ArrayLike) -> None:
        """Store the array-like `value` as the array `name`, replacing what is there.

        Raises
        ------
        ReadOnlyError
            This group is read-only.
        """
        self.array(name, data=value, overwrite=True)

    @classmethod
    def open(cls, store: StoreLike, zarr_format: int | None = None) -> Group:
        """The group stored at the root of `store` (zarr-python's `Group.open`; the format is
        detected when not given).

        Parameters
        ----------
        store : str, os.PathLike, dict, Store
            A directory path, a URL, a dict or a Store (or another library's store).
        zarr_format : {2, 3}, optional
            Open only that format.

        Returns
        -------
        Group

        Raises
        ------
        NodeNotFoundError
            No group is there.
        """
        return open_group(store, mode="r+", zarr_format=zarr_format)

    @classmethod
    def from_store(
        cls,
        store: StoreLike,
        *,
        attributes: Mapping[str, Any] | None = None,
        zarr_format: int = 3,
        overwrite: bool = False,
    ) -> Group:
        """Create a group at the root of `store` (zarr-python's `Group.from_store`).

        Parameters
        ----------
        store : str, os.PathLike, dict, Store
            Where to create it.
        attributes : Mapping, optional
            The group's attributes.
        zarr_format : {2, 3}, optional
            The format to write.
        overwrite : bool, optional
            Replace a node already there.

        Returns
        -------
        Group

        Raises
        ------
        NodeExistsError
            A node is there and `overwrite` is False.
        """
        return create_group(
            store, attributes=attributes, zarr_format=zarr_format, overwrite=overwrite
        )

    def create_hierarchy(
        self, nodes: Mapping[str, Any], *, overwrite: bool = False
    ) -> Iterator[tuple[str, Array | Group]]:
        """`zarrcore.create_hierarchy` below this group: paths are relative to it, and so are
        the paths yielded.

        Parameters
        ----------
        nodes : Mapping
            Metadata by path: zarrcore's metadata objects, or zarr-python's.
        overwrite : bool, optional
            Replace nodes already at those paths.

        Yields
        ------
        tuple of (str, Array or Group)
        """
        self._check_writable()
        self._consolidated = None
        prefix = f"{self.path}/" if self.path else ""
        for path, node in create_hierarchy(
            store=self._store,
            nodes={self._child_path(p): m for p, m in nodes.items()},
            overwrite=overwrite,
        ):
            yield path[len(prefix) :], node

    def info_complete(self) -> str:
        """`info` with the numbers of members, arrays and groups at every depth below this
        group (it lists the whole hierarchy).

        Returns
        -------
        str
        """
        kinds = [node.kind for _, node in self.members(max_depth=None)]
        return self._summary(
            f"Members (all depths) : {len(kinds)}",
            f"Arrays : {kinds.count('array')}",
            f"Groups : {kinds.count('group')}",
        )

    def nmembers(self, max_depth: int | None = 0) -> int:
        """The number of members.

        Parameters
        ----------
        max_depth : int or None, optional
            As `members` takes it.

        Returns
        -------
        int
        """
        return sum(1 for _ in self.members(max_depth=max_depth))

    def array_values(self) -> Iterator[Array]:
        """The direct member arrays.

        Returns
        -------
        iterator of Array
        """
        return (node for _, node in self.arrays())

    def group_values(self) -> Iterator[Group]:
        """The direct member groups.

        Returns
        -------
        iterator of Group
        """
        return (node for _, node in self.groups())

    def move(self, source: str, dest: str) -> None:
        """Move the member at `source` to `dest` (paths relative to this group), with every
        node below it; NodeExistsError when `dest` is taken.

        Parameters
        ----------
        source, dest : str
            Paths relative to this group; groups missing above `dest` are created.

        Raises
        ------
        MemberNotFoundError
            Nothing at `source`.
        NodeExistsError
            Something at `dest` already.
        ValueError
            `dest` lies inside `source`.
        ReadOnlyError
            This group is read-only.
        """
        self._check_writable()
        src, dst = self._child_path(source), self._child_path(dest)
        if not node_exists(self._store, src):
            raise MemberNotFoundError(f"group {self.name!r} has no member {source!r}")
        if node_exists(self._store, dst) or self._store.list_dir(dst):
            raise NodeExistsError(f"something exists at {dst!r} already")
        if dst.startswith(src + "/"):
            raise ValueError(f"cannot move {src!r} into itself ({dst!r})")
        ensure_parent_groups(self._store, dst, self.zarr_format)
        self._store.rename_prefix(src, dst)
        self._consolidated = None


# -- creating and opening groups (zarr-python's top-level functions) ----------------------------


def _create_group(
    store: Store, path: str, zarr_format: int, attributes: Mapping[str, Any] | None, overwrite: bool
) -> Group:
    check_attributes(attributes or {})
    if zarr_format == 3:
        metadata = GroupMetadataV3(attributes=dict(attributes or {}))
    elif zarr_format == 2:
        metadata = GroupMetadataV2(attributes=dict(attributes or {}))
    else:
        raise ValueError(f"zarr_format must be 2 or 3, not {zarr_format!r}")
    create_node(store, path, metadata, overwrite)
    return Group(store, path, metadata)


def open_group(
    store: StoreLike = None,
    *,
    mode: str = "a",
    path: str | None = None,
    zarr_format: int | None = None,
    attributes: Mapping[str, Any] | None = None,
    use_consolidated: bool | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Open a group, creating it in modes 'a', 'w' and 'w-'.

    With consolidated metadata (used when present if `use_consolidated` is None, required
    when True, ignored when False) members are opened without reading their metadata.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        As `open` takes it.
    path : str, optional
        The group's path in the store.
    zarr_format : {2, 3}, optional
        The format to open or create; None finds it (creates `config.default_zarr_format`'s).
    attributes : Mapping, optional
        Attributes of a group created here.
    use_consolidated : bool or None, optional
        Use consolidated metadata when present (None), require it (True) or ignore it.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    Group

    Raises
    ------
    ValueError
        An unknown mode.
    NodeNotFoundError
        No group there (nothing, or an array) in modes r and r+; an array there in mode a.
    NodeExistsError
        Something at the path in mode w-.
    MetadataError
        `use_consolidated` is True and the group has no consolidated metadata.
    """
    check_mode(mode)
    path = normalize_path(path)
    store = make_store(
        store, read_only=(mode == "r"), storage_options=storage_options, mode=store_mode(mode, path)
    )
    if mode in ("w", "w-"):
        return _create_group(store, path, format_for_new(zarr_format), attributes, mode == "w")
    try:
        node = open_node(
            store, path, zarr_format, read_only=(mode == "r"), use_consolidated=use_consolidated
        )
    except NodeNotFoundError:
        if mode != "a":
            raise
        try:
            return _create_group(store, path, format_for_new(zarr_format), attributes, False)
        except NodeExistsError:  # another thread or process created it meanwhile: open that
            node = open_node(store, path, zarr_format, use_consolidated=use_consolidated)
    if not isinstance(node, Group):
        raise GroupNotFoundError(f"the node at path {path!r} is an array, not a group")
    return node


def group(
    store: StoreLike = None,
    *,
    overwrite: bool = False,
    path: str | None = None,
    zarr_format: int | None = None,
    attributes: Mapping[str, Any] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Create a group (or open the existing one when not overwriting).

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    overwrite : bool, optional
        Replace whatever is at `path` (open_group's mode w), else mode a.
    path : str, optional
        The group's path in the store.
    zarr_format : {2, 3}, optional
        The format of a new group (default `config.default_zarr_format`).
    attributes : Mapping, optional
        Attributes of a new group.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    Group

    Raises
    ------
    NodeNotFoundError
        An array is at `path` and `overwrite` is False.
    """
    mode = "w" if overwrite else "a"
    return open_group(
        store,
        mode=mode,
        path=path,
        zarr_format=zarr_format,
        attributes=attributes,
        storage_options=storage_options,
    )


def create_group(
    store: StoreLike = None,
    *,
    path: str | None = None,
    zarr_format: int | None = None,
    attributes: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Create a group.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    path : str, optional
        The group's path in the store; groups above it are created.
    zarr_format : {2, 3}, optional
        The format to write; None: `config.default_zarr_format`.
    attributes : Mapping, optional
        The group's attributes (strict JSON).
    overwrite : bool, optional
        Replace a node already at `path`.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    Group

    Raises
    ------
    NodeExistsError
        A node exists at `path` and `overwrite` is False.
    ValueError
        A format other than 2 or 3.
    """
    path = normalize_path(path)
    store = make_store(
        store, storage_options=storage_options, mode=store_mode("w" if overwrite else "a", path)
    )
    return _create_group(store, path, format_for_new(zarr_format), attributes, overwrite)


def tree(grp: Group, expand: bool | None = None, level: int | None = None) -> str:
    """grp.tree(): a text drawing of the hierarchy below the group.

    Parameters
    ----------
    grp : Group
    expand, level : optional
        zarr-python's options; accepted, not used (the whole hierarchy is drawn).

    Returns
    -------
    str
    """
    return grp.tree()


def create_hierarchy(
    *, store: StoreLike, nodes: Mapping[str, Any], overwrite: bool = False
) -> Iterator[tuple[str, Array | Group]]:
    """Create a node for each {path: metadata} of `nodes` (zarrcore's or zarr-python's metadata
    objects), with the groups above them; yields (path, Array or Group) as each is made.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    nodes : Mapping
        Metadata by path: zarrcore's metadata objects, or zarr-python's.
    overwrite : bool, optional
        Replace nodes already at those paths.

    Yields
    ------
    tuple of (str, Array or Group)

    Raises
    ------
    NodeExistsError
        A node exists at one of the paths and `overwrite` is False.
    TypeError
        A value of `nodes` that is no metadata object.
    """
    store = make_store(store)
    for path, metadata in _parents_first(nodes):
        metadata = _zarrcore_metadata(metadata, path)
        create_node(store, path, metadata, overwrite)
        is_group = isinstance(metadata, (GroupMetadataV3, GroupMetadataV2))
        yield path, (Group if is_group else Array)(store, path, metadata)


def _parents_first(specs: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """create_hierarchy's (path, metadata) pairs, paths normalized, each group before what is
    below it."""
    normalized = {normalize_path(p): m for p, m in specs.items()}
    return sorted(normalized.items(), key=lambda item: item[0].count("/"))


def _zarrcore_metadata(metadata: Any, path: str) -> Any:
    """zarrcore metadata from zarrcore's own or zarr-python's metadata object (read from the
    documents it would store)."""
    if isinstance(metadata, MetadataDocument):
        return metadata
    if not hasattr(metadata, "to_buffer_dict"):
        raise TypeError(f"nodes[{path!r}]: expected array or group metadata, got {metadata!r}")
    from zarr.core.buffer import default_buffer_prototype

    buffers = metadata.to_buffer_dict(default_buffer_prototype())
    documents = MemoryStore({key: buffer.to_bytes() for key, buffer in buffers.items()})
    return read_metadata(documents, "")
