"""Moved: zarrcore.nodes.views."""
from ._moved import moved_to

__getattr__ = moved_to(__name__, "zarrcore.nodes.views")
