"""The lasthop exception hierarchy.

``LasthopError`` is the base of every error lasthop raises on purpose. ``ScenarioError`` carries one
structured item per problem found in a scenario, shaped like pydantic-core's ``ErrorDetails``::

    {"type": "value_error", "loc": ("flows", 2, "rate_mbps"),
     "msg": "must be a positive number, got 0", "input": 0}

and prints one line per problem (``flows[2].rate_mbps: must be a positive number, got 0``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

__all__ = ["LasthopError", "ScenarioError", "TraceFormatError", "RunDirError", "ErrorDetails", "format_loc"]


class ErrorDetails(TypedDict):
    """One problem found in a scenario."""

    type: str
    """Machine-readable kind: ``unknown_field``, ``invalid_type``, ``missing``, ``unknown_type``,
    ``value_error``, ``toml_syntax``, ``file_unreadable`` ..."""
    loc: tuple[str | int, ...]
    """Path to the offending field; ``()`` for the document as a whole."""
    msg: str
    input: Any


class LasthopError(Exception):
    """Base class of the errors lasthop raises on purpose."""


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def format_loc(loc: Sequence[str | int]) -> str:
    """``("flows", 2, "rate_mbps")`` → ``flows[2].rate_mbps``; ``()`` → ``""``.

    A key that is not a bare TOML key is quoted, so a variant's ``set`` path stays one item:
    ``("variants", 1, "set", "aps[0].foo")`` → ``variants[1].set."aps[0].foo"``.
    """
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        else:
            key = item if _BARE_KEY.fullmatch(item) else json.dumps(item, ensure_ascii=False)
            out += f".{key}" if out else key
    return out


class ScenarioError(LasthopError, ValueError):
    """A scenario file or dict is invalid. ``errors()`` lists every problem found, each with its path."""

    def __init__(self, errors: Iterable[Mapping[str, Any]], source: str | None = None) -> None:
        self._errors: list[ErrorDetails] = [
            ErrorDetails(
                type=str(e.get("type", "value_error")),
                loc=tuple(e.get("loc") or ()),
                msg=str(e.get("msg", "")),
                input=e.get("input"),
            )
            for e in errors
        ]
        self.source = source
        """The file the scenario came from, if any."""
        super().__init__(str(self))

    @classmethod
    def single(cls, type: str, msg: str, loc: Sequence[str | int] = (), input: Any = None,
               source: str | None = None) -> ScenarioError:
        return cls([{"type": type, "loc": tuple(loc), "msg": msg, "input": input}], source=source)

    def errors(self) -> list[ErrorDetails]:
        """Every problem, as ``{type, loc, msg, input}`` dicts (copies)."""
        return [ErrorDetails(type=e["type"], loc=e["loc"], msg=e["msg"], input=e["input"]) for e in self._errors]

    def lines(self) -> list[str]:
        """One line per problem: ``flows[2].rate_mbps: must be a positive number, got 0``."""
        return [f"{format_loc(e['loc'])}: {e['msg']}" if e["loc"] else e["msg"] for e in self._errors]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"ScenarioError({self._errors!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable (sweeps report errors from worker processes).
        return (type(self), (self._errors, self.source))


class TraceFormatError(LasthopError, ValueError):
    """A trace file (mahimahi, pitree) is malformed; the message names ``file:line``."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(f"{path}:{line}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.line, self.reason))


class RunDirError(LasthopError):
    """A path given as a run directory is missing, is not one, or holds a file that cannot be read; the
    message names the path (or the file in it) as the user gave it."""
