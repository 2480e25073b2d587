"""The exceptions of mbs (docs/python.md, "Errors"): what mbsc reports with its exit codes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic of a compile: ``file:line:column: level: message`` (line 0: no place)."""

    level: str  # "error", "warning", "note"
    kind: str  # the diagnostic's kind (docs/diagnostics.md)
    file: str
    line: int
    column: int
    message: str
    text: str  # as mbsc prints it: the location, the source line with a caret, the notes

    def __str__(self) -> str:
        return self.text.rstrip("\n")


class Error(Exception):
    """The base of mbs's exceptions."""


class ModelError(Error):
    """The model has errors (mbsc's exit code 1); ``diagnostics`` lists them with their places."""

    def __init__(self, message: str, diagnostics: Optional[List[Diagnostic]] = None):
        super().__init__(message.rstrip("\n"))
        self.diagnostics: List[Diagnostic] = list(diagnostics or [])


class UsageError(Error, ValueError):
    """A bad call (mbsc's exit code 2): an unknown name or option, a value out of range, a
    solver that cannot run the model. ``diagnostics`` holds the compiler's when it found it."""

    def __init__(self, message: str, diagnostics: Optional[List[Diagnostic]] = None):
        super().__init__(message.rstrip("\n"))
        self.diagnostics: List[Diagnostic] = list(diagnostics or [])


class SolverError(Error):
    """A run failed (mbsc's exit code 3) at ``time`` with step ``step``; ``equation`` and
    ``variable`` name the equation with the largest residual and the unknown with the largest
    update, when known. ``result`` holds the rows before the failure (None for a stepping run
    or a linearisation)."""

    def __init__(self, message: str, time: float = float("nan"), step: float = float("nan"),
                 equation: Optional[str] = None, variable: Optional[str] = None,
                 kind: str = "", result: Any = None):
        super().__init__(message.rstrip("\n"))
        self.time = time
        self.step = step
        self.equation = equation
        self.variable = variable
        self.kind = kind
        self.result = result


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run (mbsc's exit code 130); ``result`` holds the rows so far."""

    def __init__(self, message: str, result: Any = None):
        super().__init__(message)
        self.result = result
