"""Scenario variants: named edits of one base scenario, listed in the scenario file itself.

    [[variants]]
    name = "fifo"
    description = "optional text"
    set = { "aps[0].last_hop.ap_path" = { type = "fifo" }, "flows[1].rate_mbps" = 5 }

Each ``set`` key is a path into the scenario *document* as written (dotted keys, ``[i]`` list
indices); its value replaces the node there, and missing intermediate tables are created. Keys are
applied in the order written. Variants live in Python only: the core never sees ``variants``.

This module parses and applies them; :meth:`lasthop.Scenario.variants` and
``Scenario.load(path, variant=NAME)`` are the public entry points. Every problem is a
:class:`ScenarioError` item whose ``loc`` starts at the variant, e.g.
``("variants", 1, "set", "aps[0].foo")``, printed ``variants[1].set."aps[0].foo": ...``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lasthop.errors import ErrorDetails, ScenarioError, format_loc

__all__ = ["VariantSpec", "parse_variants", "parse_path", "apply_set", "apply_variant", "relocate", "unknown_variant",
           "VARIANTS_KEY", "NAME_RE"]

VARIANTS_KEY = "variants"

NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
"""Variant names name run directories (``lasthop compare`` writes ``DIR/<name>/``)."""

RESERVED_NAMES = frozenset({"report"})
"""``lasthop compare`` writes its report to ``DIR/report/``."""

_FIELDS = ("name", "description", "set", "unset")


@dataclass(frozen=True)
class VariantSpec:
    """One ``[[variants]]`` entry, checked for shape (not yet applied)."""

    index: int
    name: str
    description: str = ""
    set: list[tuple[str, tuple[str | int, ...], Any]] = field(default_factory=list)
    """``(key as written, parsed path, value)`` in the order written."""
    unset: list[tuple[str, tuple[str | int, ...]]] = field(default_factory=list)
    """``(path as written, parsed path)``: keys the variant deletes (so their defaults apply), before
    its ``set``."""

    def info(self) -> dict[str, Any]:
        """What a run records about its variant (``summary.json``'s ``variant``)."""
        doc: dict[str, Any] = {"name": self.name, "description": self.description,
                               "set": {key: copy.deepcopy(value) for key, _, value in self.set}}
        if self.unset:
            doc["unset"] = [key for key, _ in self.unset]
        return doc


def _issue(type: str, loc: Sequence[str | int], msg: str, input: Any = None) -> ErrorDetails:
    return ErrorDetails(type=type, loc=tuple(loc), msg=msg, input=input)


def _kind(v: Any) -> str:
    """The TOML word for a value's type."""
    if isinstance(v, Mapping):
        return "a table"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a float"
    if isinstance(v, str):
        return "a string"
    return "null" if v is None else type(v).__name__


def parse_variants(raw: Any) -> tuple[list[VariantSpec], list[ErrorDetails]]:
    """Checks the shape of a document's ``variants`` value (``None`` if absent).

    Returns the well-formed entries and one issue per problem (bad keys, missing or duplicate names,
    ``set`` paths that do not parse). Nothing is applied here.
    """
    if raw is None:
        return [], []
    if not isinstance(raw, list) or not all(isinstance(v, Mapping) for v in raw):
        return [], [_issue("invalid_type", (VARIANTS_KEY,),
                           f"must be an array of tables ([[variants]]), got {_kind(raw)}")]
    specs: list[VariantSpec] = []
    issues: list[ErrorDetails] = []
    seen: dict[str, int] = {}
    for i, v in enumerate(raw):
        spec, problems = _parse_one(i, v)
        issues += problems
        if spec is None:
            continue
        if spec.name in seen:
            issues.append(_issue("value_error", (VARIANTS_KEY, i, "name"),
                                 f"duplicate variant name '{spec.name}' (also variants[{seen[spec.name]}])",
                                 spec.name))
            continue
        seen[spec.name] = i
        specs.append(spec)
    return specs, issues


def _parse_one(i: int, v: Mapping[str, Any]) -> tuple[VariantSpec | None, list[ErrorDetails]]:
    loc: tuple[str | int, ...] = (VARIANTS_KEY, i)
    issues = [_issue("unknown_field", (*loc, k), f"unknown field `{k}`, expected one of "
                     + ", ".join(f"`{f}`" for f in _FIELDS), k) for k in v if k not in _FIELDS]
    name = v.get("name")
    if name is None:
        issues.append(_issue("missing", loc, "missing field `name`"))
    elif not isinstance(name, str):
        issues.append(_issue("invalid_type", (*loc, "name"), f"must be a string, got {_kind(name)}", name))
    elif not NAME_RE.fullmatch(name):
        issues.append(_issue("value_error", (*loc, "name"), f"'{name}' is not a valid variant name: use "
                             "letters, digits, '_', '-' and '.' (it names a run directory)", name))
    elif name in RESERVED_NAMES:
        issues.append(_issue("value_error", (*loc, "name"),
                             f"'{name}' is reserved (lasthop compare writes its report there)", name))
    description = v.get("description", "")
    if not isinstance(description, str):
        issues.append(_issue("invalid_type", (*loc, "description"),
                             f"must be a string, got {_kind(description)}", description))
    sets = v.get("set", {})
    edits: list[tuple[str, tuple[str | int, ...], Any]] = []
    if not isinstance(sets, Mapping):
        issues.append(_issue("invalid_type", (*loc, "set"),
                             f"must be a table of path = value, got {_kind(sets)}", sets))
    else:
        for key, value in sets.items():
            try:
                edits.append((key, parse_path(key), value))
            except ValueError as e:
                issues.append(_issue("path_syntax", (*loc, "set", key), str(e), key))
    unset = v.get("unset", [])
    removals: list[tuple[str, tuple[str | int, ...]]] = []
    if not isinstance(unset, list) or not all(isinstance(u, str) for u in unset):
        issues.append(_issue("invalid_type", (*loc, "unset"),
                             f"must be an array of paths (strings), got {_kind(unset)}", unset))
    else:
        for j, key in enumerate(unset):
            try:
                removals.append((key, parse_path(key)))
            except ValueError as e:
                issues.append(_issue("path_syntax", (*loc, "unset", j), str(e), key))
    if issues:
        return None, issues
    assert isinstance(name, str) and isinstance(description, str)
    return VariantSpec(index=i, name=name, description=description, set=edits, unset=removals), []


_BARE = re.compile(r"[A-Za-z0-9_-]+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_INDEX = re.compile(r"\[(\d+)\]")


def parse_path(text: str) -> tuple[str | int, ...]:
    """``aps[0].last_hop.ap_path`` → ``("aps", 0, "last_hop", "ap_path")``.

    A key is bare (letters, digits, ``_``, ``-``) or double-quoted; each may be followed by ``[i]``
    indices. Raises ``ValueError`` with a message saying where the path stops making sense.
    """
    out: list[str | int] = []
    pos = 0
    while True:
        m = _BARE.match(text, pos) or _QUOTED.match(text, pos)
        if m is None:
            what = f"'{text[pos]}' at column {pos + 1}" if pos < len(text) else "the end"
            raise ValueError(f"invalid path: expected a key, found {what} "
                             "(write keys like aps[0].last_hop.ap_path)")
        out.append(m.group(0) if m.re is _BARE else m.group(1).replace('\\"', '"').replace("\\\\", "\\"))
        pos = m.end()
        while (idx := _INDEX.match(text, pos)) is not None:
            out.append(int(idx.group(1)))
            pos = idx.end()
        if pos == len(text):
            break
        if text[pos] != ".":
            raise ValueError(f"invalid path: unexpected '{text[pos]}' at column {pos + 1} "
                             "(indices are written [0], keys are joined by '.')")
        pos += 1
    if out[0] == VARIANTS_KEY:
        raise ValueError("a variant cannot set `variants`")
    return tuple(out)


def apply_set(doc: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    """Replaces the node at ``path`` in ``doc`` by a copy of ``value``, creating missing tables.

    Raises ``ValueError`` naming the part of the path that does not exist or has the wrong type.
    """
    node: Any = doc
    for depth, step in enumerate(path):
        here = format_loc(path[:depth]) or "the scenario"
        last = depth == len(path) - 1
        if isinstance(step, int):
            if not isinstance(node, list):
                raise ValueError(f"{here} is {_kind(node)}, not an array: [{step}] cannot index it")
            if step >= len(node):
                n = len(node)
                raise ValueError(f"index {step} out of range: {here} has {n} item{'' if n == 1 else 's'}")
        elif not isinstance(node, dict):
            raise ValueError(f"{here} is {_kind(node)}, not a table: it has no key `{step}`")
        if last:
            node[step] = copy.deepcopy(value)
            return
        if isinstance(step, str) and step not in node:
            if isinstance(path[depth + 1], int):
                raise ValueError(f"{format_loc(path[:depth + 1])} does not exist, so "
                                 f"[{path[depth + 1]}] cannot index it")
            node[step] = {}
        node = node[step]


def apply_unset(doc: dict[str, Any], path: tuple[str | int, ...]) -> None:
    """Deletes the key at ``path`` (a table key, or an array item); raises ``ValueError`` naming what
    does not exist."""
    node: Any = doc
    for depth, step in enumerate(path):
        last = depth == len(path) - 1
        here = format_loc(path[:depth]) or "the scenario"
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                raise ValueError(f"{format_loc(path[:depth + 1])} does not exist, so it cannot be unset")
        elif not isinstance(node, dict) or step not in node:
            what = f"{here} has no key `{step}`" if isinstance(node, dict) else f"{here} is {_kind(node)}, not a table"
            raise ValueError(f"{what}, so {format_loc(path)} cannot be unset")
        if last:
            del node[step]
            return
        node = node[step]


def apply_variant(doc: Mapping[str, Any], spec: VariantSpec) -> tuple[dict[str, Any], list[ErrorDetails]]:
    """A copy of ``doc`` (without its ``variants``) with ``spec``'s edits applied (its ``unset`` first,
    then its ``set``), and one issue per entry that does not fit the document."""
    out = copy.deepcopy({k: v for k, v in doc.items() if k != VARIANTS_KEY})
    issues = []
    for j, (key, path) in enumerate(spec.unset):
        try:
            apply_unset(out, path)
        except ValueError as e:
            issues.append(_issue("path_error", (VARIANTS_KEY, spec.index, "unset", j), str(e), key))
    for key, path, value in spec.set:
        try:
            apply_set(out, path, value)
        except ValueError as e:
            issues.append(_issue("path_error", (VARIANTS_KEY, spec.index, "set", key), str(e), key))
    return out, issues


def relocate(issues: Sequence[ErrorDetails], spec: VariantSpec) -> list[ErrorDetails]:
    """Moves issues found in a variant's resulting scenario under ``variants[i]``.

    An issue inside a node the variant set points at that ``set`` entry
    (``variants[1].set."flows[1].rate_mbps"``); any other at ``variants[1].<its path>``.
    """
    out = []
    for e in issues:
        loc = tuple(e["loc"])
        best: tuple[str, tuple[str | int, ...]] | None = None
        for key, path, _ in spec.set:
            if loc[:len(path)] == path and (best is None or len(path) > len(best[1])):
                best = (key, path)
        prefix: tuple[str | int, ...] = (VARIANTS_KEY, spec.index)
        new = (*prefix, "set", best[0], *loc[len(best[1]):]) if best else (*prefix, *loc)
        msg = e["msg"]
        m = re.search(r"; remove (?:the adaptive )?(\w+)$", msg)
        if m and not best:
            # The key to remove is in the base document: a variant removes it with `unset`.
            target = loc if loc and loc[-1] == m.group(1) else (*loc, m.group(1))
            msg += f' (in this variant: unset = ["{format_loc(target)}"])'
        out.append(ErrorDetails(type=e["type"], loc=new, msg=msg, input=e["input"]))
    return out


def unknown_variant(name: str, known: Sequence[str], source: str | None) -> ScenarioError:
    """The error for ``--variant NAME`` when the file has no such variant; it lists the names."""
    if known:
        msg = f"no variant named '{name}'; the variants are: {', '.join(known)}"
    else:
        msg = f"no variant named '{name}': the scenario has no variants"
    return ScenarioError.single("unknown_variant", msg, input=name, source=source)
