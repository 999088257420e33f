"""Docstrings that several methods of the nodes share, each written once: `shared_doc` fills a
numpydoc template and gives the text to the decorated function, as if written in its body."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["shared_doc"]


def shared_doc(template: str, **fields: str) -> Callable[[_F], _F]:
    """Give the decorated function the docstring `template` with `fields` filled in
    (str.format; a field may span lines, whose indentation the template's own lines share)."""
    text = template.format(**fields)

    def give(function: _F) -> _F:
        function.__doc__ = text
        return function

    return give
