"""zarrcore's top-level functions in the modules of zarr-python's zarr.api: `synchronous`
(whose names are also here and at zarrcore's top level) and `asynchronous` (the asyncio API
of zarrcore.asynchronous)."""

from . import asynchronous as asynchronous
from . import synchronous as synchronous
from .synchronous import *  # noqa: F403

__all__ = ["asynchronous", "synchronous", *synchronous.__all__]
