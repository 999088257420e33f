"""zarrcore.asynchronous under the name zarr-python gives its asyncio API."""
from ..asynchronous import *  # noqa: F403
