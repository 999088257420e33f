"""The one update of a stored object that loses no concurrent writer's: how it is made on a
store (`update_mode`) and how a conditional one is tried again (`retry_conflicts`). Chunks
(engine/partial_writes.py) and node metadata (nodes/node.py) are updated through here."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeVar

from ..errors import WriteConflictError
from ..runtime.config import config

if TYPE_CHECKING:
    from .base import Store

__all__ = [
    "CONFLICT_PAUSE",
    "CONFLICT_PAUSE_MAX",
    "CONFLICT_RETRIES",
    "UpdateMode",
    "conflict_pause",
    "retry_conflicts",
    "update_mode",
]

_T = TypeVar("_T")

# Conditional writes (Store.set_if) that lose to another writer are tried again this many
# times, after a random pause of up to CONFLICT_PAUSE * 2**attempt (at most CONFLICT_PAUSE_MAX).
CONFLICT_RETRIES = 64


CONFLICT_PAUSE = 0.002


CONFLICT_PAUSE_MAX = 0.25

#: How an update is made: by conditional writes, under the key's lock, or (with
#: config.unsafe_partial_writes) with neither.
UpdateMode = Literal["conditional", "lock", "unsafe"]


def conflict_pause(attempt: int) -> None:
    """Sleep before trying a conditional write again after `attempt` conflicts (random, so
    that the writers that collided spread out; growing, so that many of them do)."""
    time.sleep(random.uniform(0, min(CONFLICT_PAUSE_MAX, CONFLICT_PAUSE * 2**attempt)))


def update_mode(store: Store, locks_first: bool, conditional: bool = True) -> UpdateMode | None:
    """How an update of one of `store`'s objects loses no concurrent writer's: by conditional
    writes (Store.get_versioned, Store.set_if) where the store has them and `conditional`,
    else under Store.lock where it has locks; `locks_first`: the lock where it has both (the
    other writers of the object lock it). "unsafe" where it has neither and
    config.unsafe_partial_writes; None where it is refused (the caller raises
    LockUnavailableError, naming what)."""
    can_condition = conditional and store.supports_conditional_writes
    if store.supports_locks and (locks_first or not can_condition):
        return "lock"
    if can_condition:
        return "conditional"
    return "unsafe" if config.unsafe_partial_writes else None


def retry_conflicts(
    attempt: Callable[[], _T], conflict: type[Exception] = WriteConflictError, tried: int = 0
) -> _T:
    """`attempt()`'s result: it is called again, after `conflict_pause`, while it raises
    `conflict` (another writer came first), CONFLICT_RETRIES times in all, of which the
    caller made `tried` (each followed by its pause) already; the last conflict is raised."""
    for n in range(tried, CONFLICT_RETRIES - 1):
        try:
            return attempt()
        except conflict:
            conflict_pause(n)
    return attempt()
