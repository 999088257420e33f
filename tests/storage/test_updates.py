"""The one update that loses no writer: how it is made on each kind of store."""

import pytest

import zarrcore
from zarrcore.errors import WriteConflictError
from zarrcore.storage import updates


class _Kind:
    def __init__(self, locks, conditional):
        self.supports_locks, self.supports_conditional_writes = locks, conditional


@pytest.mark.parametrize("locks, conditional, locks_first, optimistic, mode", [
    (True, True, False, True, "conditional"),  # chunks: conditional writes first
    (True, True, True, True, "lock"),  # metadata: the lock its other updates hold
    (False, True, True, True, "conditional"),
    (False, True, True, False, None),  # not optimistic: no conditional write covers it
    (True, False, False, True, "lock"),
    (False, False, False, True, None),
])
def test_update_mode_follows_what_the_store_has(locks, conditional, locks_first, optimistic,
                                                mode):
    store = _Kind(locks, conditional)
    assert updates.update_mode(store, locks_first, optimistic) == mode
    with zarrcore.config.set(unsafe_partial_writes=True):
        assert updates.update_mode(store, locks_first, optimistic) == (mode or "unsafe")


def test_retry_conflicts_tries_again_then_raises_the_last(monkeypatch):
    monkeypatch.setattr(updates, "CONFLICT_RETRIES", 3)
    monkeypatch.setattr(updates, "conflict_pause", lambda attempt: None)
    tries = []

    def attempt():
        tries.append(len(tries))
        if len(tries) < 3:
            raise WriteConflictError(f"conflict {len(tries)}")
        return "done"

    assert updates.retry_conflicts(attempt) == "done" and tries == [0, 1, 2]

    def always():
        tries.append(None)
        raise WriteConflictError(f"conflict {len(tries)}")

    tries.clear()
    with pytest.raises(WriteConflictError, match="conflict 3"):
        updates.retry_conflicts(always)
    assert len(tries) == 3
