"""Tools for whole arrays and hierarchies: convert, copy, verify (also `zarrcore` commands)."""
from .convert import ConvertReport, convert
from .copy import CopyReport, copy
from .verify import VerifyReport, verify

__all__ = ["ConvertReport", "CopyReport", "VerifyReport", "convert", "copy", "verify"]
