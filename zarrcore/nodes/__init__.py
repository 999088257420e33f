"""The nodes floor: arrays and groups, their creation, opening and consolidated metadata.
`zarrcore.nodes` names BrokenNode and Attributes, as the documentation does; the modules
below import one another, never this package. It imports the faces above Array, each of which
gives Array (and Group) its attributes (see Array's "faces")."""

from . import array_dask, async_nodes, info, streaming, views  # noqa: F401
from .node import Attributes, BrokenNode

__all__ = ["Attributes", "BrokenNode"]
