"""Moved: zarrcore.nodes.array_chunks."""
from ._moved import moved_to

__getattr__ = moved_to(__name__, "zarrcore.nodes.array_chunks")
