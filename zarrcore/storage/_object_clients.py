"""The obstore clients of this process's ObjectStores: those `ObjectStore.from_url` opens on
one endpoint, bucket and credentials (and client settings) share one client, so one pool of
connections, whatever their paths. A child forked after obstore ran forgets its parent's and
has its helper (_obstore_runtime) make those the parent used last."""

from __future__ import annotations

import collections
import os
import threading
import urllib.parse
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from ..runtime.portable import at_fork_in_child, before_fork
from . import _obstore_runtime

if TYPE_CHECKING:
    from obstore.store import ClientConfig, RetryConfig
    from obstore.store import ObjectStore as ObstoreStore

__all__ = [
    "SERVER_BACKENDS",
    "WARMED_CLIENTS",
    "KNOWN_CLIENTS",
    "split_client",
    "client_root",
    "shared_client",
    "opening",
    "opened_before",
    "note_opened",
]

# The backends of a server, not of local files or memory: their clients are shared
# (split_client), their ETags are the server's, the same in every process
# (shares_versions), where a memory store's are counters of its process, and they write
# objects in parts (least_part_bytes).
SERVER_BACKENDS = ("S3Store", "GCSStore", "AzureStore")
# The clients (of those kept for sharing) that a child forked after obstore ran has its
# helper make at once (_obstore_runtime.after_fork_in_child): the most recently opened.
WARMED_CLIENTS = 4
# Clients kept for sharing (see shared_client); the least recently opened are forgotten past
# it, which only stops later stores from sharing theirs.
KNOWN_CLIENTS = 64

# The clients of this process's ObjectStores from from_url, by _client_key: one per endpoint,
# bucket, credentials and client settings, in the order last opened.
_clients: collections.OrderedDict[Hashable, ObstoreStore] = collections.OrderedDict()
_clients_guard = threading.Lock()

# split_client's answers for the URLs opened before, by URL, settings and the environment
# obstore reads credentials from (opened_before): opening one again takes its shared client
# without building obstore's store of the URL, a client each (10-70 ms of CPU: its TLS roots
# are loaded). As many as clients are kept.
_opened: collections.OrderedDict[Hashable, tuple[Hashable, str]] = collections.OrderedDict()
_CREDENTIAL_ENVIRONMENT = ("AWS_", "GOOGLE_", "AZURE_")


def _forget_clients_in_child() -> None:
    # The parent's clients are not this process's (its helper makes those the parent used
    # last: _obstore_runtime), nor are locks its other threads may have held.
    global _clients_guard
    recent = _recent_clients()
    _clients.clear()
    _clients_guard = threading.Lock()
    _obstore_runtime.after_fork_in_child(recent)


def _recent_clients() -> list[ObstoreStore]:
    """The clients a child's helper is warmed with, which the template builds ahead."""
    return list(_clients.values())[-WARMED_CLIENTS:]


def _prepare_helpers_before_fork() -> None:
    _obstore_runtime.prepare_helpers(_recent_clients())


at_fork_in_child(_forget_clients_in_child)
before_fork(_prepare_helpers_before_fork)


def _frozen(value: Any) -> Hashable:
    """`value` (options: dicts, lists, scalars) as a hashable value that compares alike."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    scalar: Hashable = value
    return scalar


def split_client(
    made: ObstoreStore, client: ClientConfig, retry: RetryConfig
) -> tuple[Hashable, str] | None:
    """(the key of the client `made` (obstore's store of a URL) may share, its path below
    that client's root), or None when it shares none: an HTTP URL with a query, a fragment,
    user information or escapes in its path (the key space is then only that URL's), a
    store of no remote backend."""
    store: Any = made  # (obstore's stores differ in what they tell: url, or config, prefix)
    kind = type(store).__name__
    if kind == "HTTPStore":
        parts = urllib.parse.urlsplit(store.url)
        if parts.query or parts.fragment or "@" in parts.netloc or "%" in parts.path:
            return None
        where: Hashable = f"{parts.scheme}://{parts.netloc}"
        path = parts.path
    elif kind in SERVER_BACKENDS:
        where, path = _frozen(store.config), store.prefix or ""
    else:  # (a local or memory store: no client to share)
        return None
    return (kind, where, _frozen(client), _frozen(retry)), path.strip("/")


def client_root(made: ObstoreStore, client: ClientConfig, retry: RetryConfig) -> ObstoreStore:
    """obstore's store of `made`'s endpoint, bucket and credentials at their root (`made`
    itself when it is there)."""
    store: Any = made
    if type(store).__name__ == "HTTPStore":
        parts = urllib.parse.urlsplit(store.url)
        if not parts.path.strip("/"):
            return made
        root: ObstoreStore = type(store).from_url(
            f"{parts.scheme}://{parts.netloc}", client_options=client, retry_config=retry
        )
        return root
    if not store.prefix:
        return made
    # (S3Store, GCSStore, AzureStore: each takes its own config)
    root = type(store)(config=store.config, client_options=client, retry_config=retry)
    return root


def opening(url: str, settings: Any) -> Hashable:
    """What opening `url` with `settings` (its options, client and retry settings) depends
    on: those, and the environment's credential variables."""
    environment = tuple(
        sorted((k, v) for k, v in os.environ.items() if k.startswith(_CREDENTIAL_ENVIRONMENT))
    )
    return url, _frozen(settings), environment


def opened_before(opened: Hashable) -> tuple[ObstoreStore, Hashable, str] | None:
    """(the shared client, its key, the path below its root) of an `opening` seen before
    whose client is still kept, else None."""
    with _clients_guard:
        split = _opened.get(opened)
        if split is None:
            return None
        client = _clients.get(split[0])
        if client is None:
            return None
        _opened.move_to_end(opened)
        _clients.move_to_end(split[0])
        return client, split[0], split[1]


def note_opened(opened: Hashable, split: tuple[Hashable, str]) -> None:
    """Keep split_client's answer for `opened` (see opened_before)."""
    with _clients_guard:
        _opened[opened] = split
        _opened.move_to_end(opened)
        if len(_opened) > KNOWN_CLIENTS:
            _opened.popitem(last=False)


def shared_client(key: Hashable, make: Callable[[], ObstoreStore]) -> ObstoreStore:
    """The client this process keeps for `key`, made by `make()` the first time."""
    with _clients_guard:
        known = _clients.get(key)
        if known is not None:
            _clients.move_to_end(key)
            return known
        client = _clients[key] = make()
        if len(_clients) > KNOWN_CLIENTS:
            _clients.popitem(last=False)
    _obstore_runtime.client_made(client)
    return client
