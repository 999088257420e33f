"""Tools for whole arrays and hierarchies: convert, copy, verify (also `zarrcore` commands)."""
from .verify import VerifyReport, verify

__all__ = ["VerifyReport", "verify"]
