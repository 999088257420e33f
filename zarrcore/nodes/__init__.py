"""The nodes floor: arrays and groups, their creation, opening and consolidated metadata.
`zarrcore.nodes` names BrokenNode and Attributes, as the documentation does; the modules
below import one another, never this package."""
from .node import Attributes, BrokenNode

__all__ = ["Attributes", "BrokenNode"]
