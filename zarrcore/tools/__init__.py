"""Tools for whole arrays and hierarchies: convert, copy, verify and compare (also `zarrcore`
commands)."""

from .convert import ConvertReport, convert
from .copy import CopyReport, copy
from .verify import VerifyReport, compare, verify

__all__ = ["ConvertReport", "CopyReport", "VerifyReport", "compare", "convert", "copy", "verify"]
