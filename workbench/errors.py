"""Error types: every bad input raises a WorkbenchError with a one-line message."""

from __future__ import annotations


class WorkbenchError(ValueError):
    """Bad input: the message names the thing and the rule it broke (one line)."""


class SpecError(WorkbenchError):
    """An invalid layer or network specification."""


class FileFormatError(WorkbenchError):
    """A malformed or unreadable network/platform file."""


class UnknownNameError(WorkbenchError):
    """An unknown zoo network, platform preset, schedule or layer name."""
