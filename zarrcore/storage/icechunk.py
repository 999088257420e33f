"""Icechunk repositories (the `icechunk` extra): their sessions' stores are taken wherever a
store is (zarrcore.storage.zarr_python.ZarrPythonStore); the commit of what a writable session
wrote is the caller's, made here with zarrcore's errors."""

from typing import Any

from .zarr_python import is_icechunk, zarr_store_error

__all__ = ["commit"]


def commit(session: Any, message: str, **options: Any) -> str:
    """Commit what an Icechunk writable session wrote: `session.commit(message, **options)`
    (options: `metadata`, `rebase_with`, `rebase_tries`, `allow_empty`), with Icechunk's
    errors as zarrcore's.

    Parameters
    ----------
    session : icechunk.Session
        The writable session.
    message : str
        The commit's message.
    **options
        Session.commit's other arguments. A `rebase_with` solver that keeps this session's
        version of a chunk both wrote overwrites the other session's.

    Returns
    -------
    str
        The id of the new snapshot.

    Raises
    ------
    CommitConflictError
        Another session committed to the branch first (and rebasing, when asked, found
        changes to the same chunks); the message names the branch and what is in conflict.
        Nothing is committed: write again in a new session of the branch.
    StoreError
        Icechunk's other refusals (nothing to commit, a storage failure).
    """
    try:
        return str(session.commit(message, **options))
    except Exception as e:
        if not is_icechunk(e):
            raise
        raise zarr_store_error(e, f"committing {message!r}", session) from e
