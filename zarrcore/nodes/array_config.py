"""An array's own settings (its `config`): the forms zarr-python gives them in, checked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._native.cache import SharedCacheRef, check_budget
from ..errors import SettingTypeError
from ..runtime.config import ARRAY_OPTIONS, checked_array_options
from ..runtime.config import config as global_config

__all__ = ["array_config", "config_items"]


def config_items(config: Any) -> dict[str, Any]:
    """The settings given in zarr-python's ArrayConfig form: a dict, or an object with such
    attributes."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return dict(config)
    return {name: getattr(config, name) for name in _ARRAY_SETTINGS if hasattr(config, name)}


_ARRAY_SETTINGS = (
    "write_empty_chunks",
    "read_missing_chunks",
    "order",
    "cache_bytes",
    "shared_cache",
    "recheck_cached_data",
    *ARRAY_OPTIONS,
)


def array_config(config: Any) -> dict[str, Any]:
    """An array's own settings, checked, from `config_items`' forms; an order not given is
    zarrcore.config's now (zarr-python's "array.order" when the array is opened)."""
    config = config_items(config)
    unknown = set(config) - set(_ARRAY_SETTINGS)
    if unknown:
        raise TypeError(f"unknown array config {sorted(unknown)}")
    write_empty, read_missing = (
        config.get("write_empty_chunks"),
        config.get("read_missing_chunks"),
    )
    order = config.get("order")
    if order not in (None, "C", "F"):
        raise ValueError(f"array config: order must be 'C' or 'F', not {order!r}")
    if order is None:
        order = global_config.array_order
    cache_bytes = config.get("cache_bytes")
    if cache_bytes is not None:
        cache_bytes = check_budget(cache_bytes, "array config: cache_bytes")
    # (A SharedCacheRef: a pickled array's, Array.__reduce__.)
    shared = config.get("shared_cache")
    shared = None if shared is False else shared
    if shared is not None and shared is not True and not isinstance(shared, SharedCacheRef):
        raise SettingTypeError(f"array config: shared_cache must be True or False, not {shared!r}")
    recheck = _recheck_setting(config.get("recheck_cached_data"))
    # read_missing_chunks, cache_bytes and ARRAY_OPTIONS only when given: None follows
    # zarrcore.config.
    own = checked_array_options({k: v for k, v in config.items() if k in ARRAY_OPTIONS})
    return {
        "write_empty_chunks": None if write_empty is None else bool(write_empty),
        **({} if read_missing is None else {"read_missing_chunks": bool(read_missing)}),
        "order": order,
        **({} if cache_bytes is None else {"cache_bytes": cache_bytes}),
        **({} if shared is None else {"shared_cache": shared}),
        **({} if recheck is True else {"recheck_cached_data": recheck}),
        **own,
    }


def _recheck_setting(value: Any) -> Any:
    """`recheck_cached_data` checked: True (None), False, "open" or a finite time."""
    if (
        value is None
        or value is True
        or value is False
        or (isinstance(value, str) and value == "open")
    ):
        return True if value is None else value
    if (
        isinstance(value, (int, float)) and not isinstance(value, bool) and (-1e18 < value < 1e18)
    ):  # (finite, and as a float too)
        return value
    raise SettingTypeError(
        f"array config: recheck_cached_data must be True, False, 'open' "
        f"or a time in seconds since the epoch, not {value!r}"
    )
