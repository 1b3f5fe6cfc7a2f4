"""Scenarios: the typed description of one run, read from TOML/JSON or built as a dict.

A ``Scenario`` is always valid: ``load`` and ``from_dict`` send the document to the Rust core, which
checks it against the same types it runs (unknown keys, wrong types, impossible values, dangling node
names) and returns it *resolved* — every default filled in. Problems raise :class:`ScenarioError`
with one item per problem, each naming its field path.

The resolved document (``to_dict()``) is what a run embeds in ``summary.json``; loading it back with
``Scenario.from_dict`` reproduces the run.

A file may list ``[[variants]]``, named edits of its base scenario (see :mod:`lasthop.variants`).
``load(path)`` gives the base, ``load(path, variant=NAME)`` one variant, and ``Scenario.variants(path)``
every variant, each a validated ``Scenario`` whose ``variant`` property names it.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lasthop import _lasthop
from lasthop import variants as _variants
from lasthop.errors import ScenarioError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Scenario"]

_MAX_SEED = 2**64 - 1


class Scenario:
    """A validated scenario. Build one with :meth:`load` or :meth:`from_dict`."""

    __slots__ = ("_data", "_resolved", "_base_dir", "_source", "_variant")

    def __init__(self, data: Mapping[str, Any], *, base_dir: str | os.PathLike[str] = ".",
                 source: str | None = None, variant: Mapping[str, Any] | None = None) -> None:
        """``data`` is a scenario document; its ``variants`` (if any) are set aside, so a document with
        variants is its base scenario. ``variant`` is what a run records about the variant this
        scenario is (``{"name", "description", "set"}``); :meth:`variants` fills it in."""
        if not isinstance(data, Mapping):
            raise ScenarioError.single("invalid_type", f"a scenario must be a table/dict, got {type(data).__name__}")
        try:
            self._data: dict[str, Any] = _to_json_value({k: v for k, v in data.items() if k != _variants.VARIANTS_KEY}, ())
        except ScenarioError as e:
            if source is None:
                raise
            raise ScenarioError(e.errors(), source=source) from None  # name the file, as every other error does
        self._base_dir = os.fspath(base_dir)
        self._source = source
        self._variant: dict[str, Any] | None = None if variant is None else _to_json_value(variant, ("variant",))
        self._resolved: dict[str, Any] = {}
        self.validate()

    # -- constructors ---------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], variant: str | None = None) -> Scenario:
        """Reads a TOML (or, for ``*.json``, JSON) scenario file: its base scenario, or with ``variant``
        the variant of that name (an unknown name raises a ScenarioError listing the names).

        Relative paths inside the file (traces, later) resolve against the file's directory.
        """
        data, base_dir, shown = _read_document(path)
        if variant is not None:
            return cls.variants(data, base_dir=base_dir, names=[variant], source=shown)[0]
        return cls(data, base_dir=base_dir, source=shown)

    @classmethod
    def variants(cls, scenario: str | os.PathLike[str] | Mapping[str, Any], *,
                 base_dir: str | os.PathLike[str] = ".", names: Sequence[str] | None = None,
                 source: str | None = None) -> list[Scenario]:
        """The variants of a scenario file (a path) or document (a dict), in file order, each a
        validated Scenario whose :attr:`variant` is its name; ``[]`` when there are none.

        ``names`` selects variants (in that order; only those are applied and validated). Raises one
        ScenarioError with every problem, located under ``variants[i]``: a malformed entry, a
        duplicate name, a ``set`` path that does not parse or does not fit the document, a variant
        whose resulting scenario is invalid, an unknown name in ``names``; or the base's own problems.
        """
        if isinstance(scenario, Mapping):
            data, shown = dict(scenario), source
        else:
            data, base_dir, shown = _read_document(scenario)
        specs, issues = _variants.parse_variants(data.get(_variants.VARIANTS_KEY))
        if issues:
            raise ScenarioError(issues, source=shown)
        if names is not None:
            by_name = {s.name: s for s in specs}
            for n in names:
                if n not in by_name:
                    raise _variants.unknown_variant(n, [s.name for s in specs], shown)
            specs = [by_name[n] for n in dict.fromkeys(names)]
        cls(data, base_dir=base_dir, source=shown)  # the base's own problems are reported as they are
        out: list[Scenario] = []
        for spec in specs:
            doc, problems = _variants.apply_variant(data, spec)
            if problems:
                issues += problems
                continue
            try:
                out.append(cls(doc, base_dir=base_dir, source=shown, variant=spec.info()))
            except ScenarioError as e:
                issues += _variants.relocate(e.errors(), spec)
        if issues:
            raise ScenarioError(issues, source=shown)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], base_dir: str | os.PathLike[str] = ".") -> Scenario:
        """Builds a scenario from a dict shaped like the TOML file (``lasthop schema`` documents it);
        a ``variants`` list in it is set aside (see :meth:`variants`)."""
        return cls(d, base_dir=base_dir)

    # -- checks and views -----------------------------------------------------------------------------

    def validate(self) -> Scenario:
        """Checks the scenario with the core; raises :class:`ScenarioError` listing every problem."""
        resolved, issues = _lasthop.check(json.dumps(self._data), self._base_dir)
        if resolved is None:
            raise ScenarioError(issues, source=self._source)
        self._resolved = json.loads(resolved)
        return self

    def to_dict(self) -> dict[str, Any]:
        """The resolved scenario (defaults filled in), as a new dict."""
        return copy.deepcopy(self._resolved)

    def to_json(self) -> str:
        """The resolved scenario as canonical JSON (sorted keys)."""
        return json.dumps(self._resolved, sort_keys=True)

    def with_seed(self, seed: int) -> Scenario:
        """A copy with another master seed."""
        if not (isinstance(seed, int) and 0 <= seed <= _MAX_SEED):
            raise ScenarioError.single("value_error", f"must be an integer in 0..2**64-1, got {seed!r}",
                                       loc=("seed",), input=seed)
        return self.replace(seed=seed)

    def with_trace(self, trace: str | os.PathLike[str]) -> Scenario:
        """A copy whose capacity-trace last hops all read ``trace`` (pitree or Mahimahi, guessed from
        the name unless the scenario sets ``format``). A relative path is taken from the current
        directory. Raises :class:`ScenarioError` when the scenario has no capacity-trace last hop or
        the trace is unreadable or malformed (with its file and line)."""
        data = self.to_dict()
        hops = [ap["last_hop"] for ap in data.get("aps", []) if ap.get("last_hop", {}).get("type") == "capacity_trace"]
        if not hops:
            raise ScenarioError.single("value_error", "--trace needs a scenario with a `capacity_trace` last hop",
                                       loc=("aps",), input=os.fspath(trace))
        path = os.path.abspath(os.fspath(trace))
        for hop in hops:
            hop["trace"] = path
            if hop.get("format") is not None:
                hop["format"] = None
        return Scenario(data, base_dir=self._base_dir, source=self._source)

    def with_set(self, edits: Mapping[str, Any]) -> Scenario:
        """A copy with values set at paths written as in a variant's ``set``
        (``{"stations[0].channel.snr_db": 20}``), applied to the scenario as written (before defaults),
        as a variant's are. Raises :class:`ScenarioError`: a path that does not parse or fit, or an
        invalid result."""
        data = copy.deepcopy(self._data)
        for key, value in edits.items():
            try:
                _variants.apply_set(data, _variants.parse_path(key), value)
            except ValueError as e:
                raise ScenarioError.single("path_error", f"set {key}: {e}", input=key, source=self._source) from None
        try:
            return Scenario(data, base_dir=self._base_dir, source=self._source, variant=self._variant)
        except ScenarioError as e:
            # A problem of the result names the values set, not only the file (which may be sound); the
            # scenario itself keeps its file as its source (its name, a run's default directory).
            raise ScenarioError(e.errors(), source=f"{self._source or 'the scenario'} with {', '.join(edits)} set") from None

    def replace(self, **changes: Any) -> Scenario:
        """A copy with some top-level keys replaced, e.g. ``sc.replace(duration_s=5)``."""
        data = self.to_dict()
        data.update(changes)
        return Scenario(data, base_dir=self._base_dir, source=self._source, variant=self._variant)

    @property
    def variant(self) -> str | None:
        """The name of the variant this scenario is, or ``None`` for a base scenario."""
        return None if self._variant is None else str(self._variant["name"])

    def variant_info(self) -> dict[str, Any] | None:
        """``{"name", "description", "set"}`` of this variant (a copy), or ``None``; a run records it
        in ``summary.json`` as ``variant``."""
        return copy.deepcopy(self._variant)

    @property
    def name(self) -> str:
        """The scenario's ``name``, else its file's stem, else ``"scenario"``."""
        if self._resolved.get("name"):
            return str(self._resolved["name"])
        if self._source:
            return Path(self._source).stem
        return "scenario"

    @property
    def duration_s(self) -> float:
        return float(self._resolved["duration_s"])

    @property
    def seed(self) -> int:
        return int(self._resolved["seed"])

    @property
    def source(self) -> str | None:
        """The file this scenario was loaded from, as given."""
        return self._source

    @property
    def base_dir(self) -> str:
        return self._base_dir

    def describe(self) -> str:
        """A one-line description: ``2 servers, 1 AP, 2 stations, 1 link, 2 flows; 15 s``."""
        r = self._resolved

        def n(key: str, word: str) -> str:
            k = len(r.get(key) or [])
            return f"{k} {word}" + ("" if k == 1 or word.isupper() else "s")

        parts = [n("servers", "server"), n("aps", "AP"), n("stations", "station"), n("links", "link"),
                 n("flows", "flow")]
        return f"{', '.join(parts)}; {self.duration_s:g} s simulated, seed {self.seed}"

    def __repr__(self) -> str:
        if not self._resolved:
            return "Scenario(<not validated>)"
        src = f", source={self._source!r}" if self._source else ""
        var = f", variant={self.variant!r}" if self._variant else ""
        return f"Scenario(name={self.name!r}{var}, duration_s={self.duration_s:g}{src})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and self._resolved == other._resolved

    __hash__ = None  # type: ignore[assignment]


# -- parsing helpers ----------------------------------------------------------------------------------

def _read_document(path: str | os.PathLike[str]) -> tuple[dict[str, Any], Path, str]:
    """The parsed document of a scenario file, its (absolute) directory, and the path as given."""
    p = Path(path)
    shown = os.fspath(path)
    try:
        text = p.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is not content
    except FileNotFoundError:
        raise ScenarioError.single("file_unreadable", f"{shown}: no such file", source=shown) from None
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ScenarioError.single("file_unreadable", f"{shown}: cannot read: {reason}", source=shown) from None
    try:
        data = _parse_json(text, shown) if p.suffix == ".json" else _parse_toml(text, shown)
    except RecursionError:
        raise ScenarioError.single("nested_too_deeply", f"{shown}: nested too deeply to read (lists or tables "
                                   "inside one another hundreds of levels deep; a scenario needs a few)",
                                   source=shown) from None
    # An absolute base directory, so the scenario resolves the same after a chdir.
    return data, p.parent.resolve(), shown


_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")


def _parse_toml(text: str, shown: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as e:
        raw = str(e.args[0]) if e.args else str(e)
        m = _TOML_POS.search(raw)
        if m:
            where, detail = f"{m.group(1)}:{m.group(2)}", raw[: m.start()]
        else:
            lines = max(1, len(text.splitlines()))
            where, detail = f"{lines}", _TOML_END.sub("", raw) + " (at end of file)"
        raise ScenarioError.single("toml_syntax", f"{shown}:{where}: invalid TOML: {detail}",
                                   source=shown) from None


def _parse_json(text: str, shown: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScenarioError.single("json_syntax", f"{shown}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}",
                                   source=shown) from None
    if not isinstance(data, dict):
        raise ScenarioError.single("invalid_type", f"{shown}: a scenario must be a JSON object",
                                   source=shown)
    return data


def _to_json_value(v: Any, loc: tuple[str | int, ...]) -> Any:
    """Copies ``v`` into plain JSON types, so the core sees exactly what the user wrote.

    Dates become ISO strings (the core then rejects them with a typed message); numpy scalars and
    paths are converted; NaN/inf and other objects are rejected here with their path.
    """
    if isinstance(v, Mapping):
        out: dict[str, Any] = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise ScenarioError.single("invalid_type", f"keys must be strings, got {k!r}", loc=loc, input=k)
            out[k] = _to_json_value(x, (*loc, k))
        return out
    if isinstance(v, (list, tuple)):
        return [_to_json_value(x, (*loc, i)) for i, x in enumerate(v)]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ScenarioError.single("value_error", f"must be a finite number, got {v}", loc=loc, input=v)
        return v
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if hasattr(v, "isoformat"):  # TOML dates and times
        return v.isoformat()
    if hasattr(v, "item") and callable(v.item):  # numpy scalars
        return _to_json_value(v.item(), loc)
    raise ScenarioError.single("invalid_type", f"cannot be used in a scenario: {type(v).__name__}",
                               loc=loc, input=repr(v))
