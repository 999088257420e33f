"""zarrcore: Zarr v2 and v3 arrays with a compiled, GIL-free core."""

import importlib.util as _importlib_util
import sys

# A source tree whose extensions are not built would otherwise fail deep inside the imports
# below, as a "circular import".
if _importlib_util.find_spec(f"{__name__}._native.memory") is None:
    raise ImportError(
        f"zarrcore's compiled extensions are not built in {__path__[0]}: install it "
        f"(pip install .) or build them in place (python setup.py build_ext --inplace)"
    )

from . import errors  # noqa: E402
from .api import (
    array,
    asynchronous,
    consolidate_metadata,
    copy_all,
    copy_store,
    create,
    create_array,
    create_group,
    create_hierarchy,
    empty,
    empty_like,
    from_array,
    full,
    full_like,
    group,
    load,
    ones,
    ones_like,
    open,
    open_array,
    open_consolidated,
    open_group,
    open_like,
    print_debug_info,
    save,
    save_array,
    save_group,
    tree,
    zeros,
    zeros_like,
)
from .api._moved import keep_earlier_paths
from .nodes.array import Array
from .nodes.async_nodes import AsyncArray, AsyncGroup
from .nodes.group import Group
from .runtime.config import config
from .storage import (
    FsspecStore,
    LocalStore,
    MemoryStore,
    ObjectStore,
    ReferenceStore,
    Store,
    ZipStore,
)
from .tools import convert, copy, verify

keep_earlier_paths(sys.modules[__name__])

# The one place the version is set: pyproject.toml reads it for the distribution, the CLI
# shows it (`zarrcore --version`).
__version__ = "0.1.0"

__all__ = [
    "Array",
    "AsyncArray",
    "AsyncGroup",
    "Group",
    "Store",
    "LocalStore",
    "MemoryStore",
    "ZipStore",
    "ObjectStore",
    "FsspecStore",
    "ReferenceStore",
    "array",
    "asynchronous",
    "config",
    "consolidate_metadata",
    "convert",
    "copy",
    "copy_all",
    "copy_store",
    "create",
    "create_array",
    "create_group",
    "create_hierarchy",
    "empty",
    "empty_like",
    "errors",
    "from_array",
    "full",
    "full_like",
    "get_include",
    "group",
    "load",
    "ones",
    "ones_like",
    "open",
    "open_array",
    "open_consolidated",
    "open_group",
    "open_like",
    "print_debug_info",
    "save",
    "save_array",
    "save_group",
    "tree",
    "verify",
    "zeros",
    "zeros_like",
]


def get_include() -> str:
    """Directory holding zarrcore's .pxd files and C headers (zarrcore/kernels.pxd,
    zarrcore/array_api.pxd, zarrcore/array_api.h), for building against it.

    Returns
    -------
    str
        The directory to add to the include path (it holds the ``zarrcore`` package).
    """
    import os

    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
