"""The error types the package raises on bad input.

Every error a user can trigger with bad input is a :class:`MirageError`; the CLI prints its
message (which names the file, line or key and the fix) and exits non-zero, never a traceback.
"""

from __future__ import annotations


class MirageError(Exception):
    """Base class of every user-facing error."""


class TraceFormatError(MirageError):
    """A trace file cannot be read as a whole (binary, empty, unknown layout, bad header)."""

    def __init__(self, path, problem: str, fix: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.fix = fix
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}. Fix: {fix}")


class ConfigError(MirageError):
    """The workflow configuration does not match config/schema.yaml."""


class FetchError(MirageError):
    """A trace could not be downloaded or failed its checksum."""
