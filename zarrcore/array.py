"""Moved: zarrcore.nodes.array, zarrcore.nodes.info, zarrcore.nodes.creation and
zarrcore.nodes.array_dask."""
from ._moved import moved_to

__getattr__ = moved_to(__name__, "zarrcore.nodes.array", "zarrcore.nodes.info",
                       "zarrcore.nodes.creation", "zarrcore.nodes.array_dask")
