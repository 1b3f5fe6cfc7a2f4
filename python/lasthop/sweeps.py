"""Sweeps: a scenario over a grid of parameter values and seeds, one run directory per point, resumable,
gathered into one tidy table.

A sweep is a scenario file (optionally one of its variants per point), a grid (``{path: [values]}``,
paths written as in a variant's ``set``: ``stations[0].channel.snr_db``; the key ``variant`` picks the
scenario's variant) and seeds. Its points are the Cartesian product of the grid's values, times the
seeds. Each point runs into ``OUT/runs/<key>``, where ``key`` hashes the point's resolved scenario and
seed: a point already complete there (its ``summary.json`` and flows table read back) is not run again,
so a sweep stopped by Ctrl-C or a crash resumes where it stopped, and re-running a finished sweep only
gathers; a point whose files were damaged since is run again.

Outputs in ``OUT``: ``sweep.json`` (the spec and every point: key, parameters, seed), ``results.parquet``
(one row per point × flow: the parameters as columns, then ``seed``, ``point`` and the flows table's
columns), ``summary.csv`` (per parameter combination and flow: mean and 95 % CI over seeds of each key
metric, as in :mod:`lasthop.verdict`) and ``report.html``.

Backends: ``local`` (this process, or ``jobs`` worker processes) and ``ray`` (a Ray cluster at
``address``, or a local Ray instance; runs go in batches of ``batch`` per task, and each finished run's
files come back to this process, which writes them, so workers need no shared file system — but trace
files named by the scenario must exist at the same path on every worker).

A spec file (TOML)::

    scenario = "../examples/home_rtc.toml"    # relative to the spec file
    seeds = 3                                   # 3 seeds from the scenario's; or a list: [1, 7, 9]
    [grid]
    variant = ["linux", "law"]
    "stations[0].channel.snr_db" = [20, 30]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lasthop import variants as _variants
from lasthop.errors import LasthopError, ScenarioError
from lasthop.scenario import Scenario, _read_document

__all__ = ["SweepSpec", "Point", "SweepResult", "load_spec", "plan", "sweep", "point_command", "VARIANT_KEY"]

VARIANT_KEY = "variant"
"""The grid key that picks a variant of the scenario file."""
MANIFEST, RESULTS, SUMMARY, REPORT = "sweep.json", "results.parquet", "summary.csv", "report.html"


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep: ``scenario`` (a file) over ``grid`` × ``seeds``."""

    scenario: Path
    grid: dict[str, list[Any]] = field(default_factory=dict)
    seeds: list[int] | int = 1
    """A list of seeds, or how many from the scenario's own seed on."""
    source: str | None = None
    """The spec file, for error messages."""

    def to_json(self) -> dict[str, Any]:
        return {"scenario": os.fspath(self.scenario), "grid": self.grid, "seeds": self.seeds}


@dataclass(frozen=True)
class Point:
    """One run of a sweep."""

    params: dict[str, Any]
    seed: int
    scenario: Scenario
    key: str
    """Hash of the resolved scenario and the seed: the run directory's name."""

    def label(self) -> str:
        return ", ".join(f"{k}={_short(v)}" for k, v in self.params.items()) or "base"


@dataclass
class SweepResult:
    """A sweep's points, which of them ran now, failed or were already complete, and its outputs."""

    out: Path
    points: list[Point]
    ran: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """key → message."""
    input_error: bool = False
    """Every failure was the scenario's (bad input), not lasthop's."""
    interrupted: bool = False

    def run_dir(self, key: str) -> Path:
        return self.out / "runs" / key

    @property
    def table(self) -> Any:
        """``results.parquet`` as a pandas DataFrame."""
        import pandas as pd

        return pd.read_parquet(self.out / RESULTS)


# -- the spec ----------------------------------------------------------------------------------------

def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Reads a sweep spec (TOML, or JSON for ``*.json``); raises ScenarioError naming the file and key."""
    data, base_dir, shown = _read_document(path)
    problems = []

    def bad(loc: tuple[str | int, ...], msg: str, value: Any = None) -> None:
        problems.append(_variants._issue("sweep_spec", loc, msg, value))

    for k in data:
        if k not in ("scenario", "grid", "seeds"):
            bad((k,), "unknown key (a sweep spec has scenario, grid and seeds)", k)
    scenario = data.get("scenario")
    if scenario is None:
        bad(("scenario",), "required: the path of the scenario file to sweep (relative to this file)", scenario)
    elif not isinstance(scenario, str) or not scenario:
        bad(("scenario",), f"must be the path of the scenario file to sweep (a string, relative to this file), "
                           f"got {scenario!r}", scenario)
    grid = data.get("grid", {})
    if not isinstance(grid, dict):
        bad(("grid",), "must be a table of lists: path = [values]", grid)
        grid = {}
    seeds = data.get("seeds", 1)
    if problems:
        raise ScenarioError(problems, source=shown)
    spec = SweepSpec(Path(os.path.normpath(Path(base_dir) / str(scenario))), dict(grid), seeds, source=shown)
    _check_shape(spec)
    return spec


def _number(v: Any) -> Any:
    """A grid value as its duplicates compare: 20 and 20.0 are one value (they resolve alike)."""
    return float(v) if isinstance(v, int) and not isinstance(v, bool) else v


def _check_shape(spec: SweepSpec) -> None:
    problems = []
    for k, values in spec.grid.items():
        if not isinstance(values, list) or not values:
            problems.append(_variants._issue("sweep_spec", ("grid", k), "must be a non-empty list of values", values))
            continue
        if len({json.dumps(_number(v), sort_keys=True, default=str) for v in values}) != len(values):
            problems.append(_variants._issue("sweep_spec", ("grid", k), "lists a value twice", values))
        if k == "seed":
            problems.append(_variants._issue("sweep_spec", ("grid", k), "the seeds are not a grid key: give them as "
                                             "`seeds` (a count or a list), which every point runs with", values))
        elif k != VARIANT_KEY:
            try:
                _variants.parse_path(k)
            except ValueError as e:
                problems.append(_variants._issue("sweep_spec", ("grid", k), str(e), k))
        elif not all(isinstance(v, str) for v in values):
            problems.append(_variants._issue("sweep_spec", ("grid", k), "variant names are strings", values))
    s = spec.seeds
    if isinstance(s, bool) or not (isinstance(s, int) and 1 <= s <= 10_000 or isinstance(s, list) and s
                                   and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**64 for x in s)
                                   and len(set(s)) == len(s)):
        problems.append(_variants._issue("sweep_spec", ("seeds",),
                                         "a count (1..10000) or a non-empty list of distinct seeds (0..2^64-1)", s))
    if problems:
        raise ScenarioError(problems, source=spec.source)


# -- the points --------------------------------------------------------------------------------------

def plan(spec: SweepSpec) -> list[Point]:
    """Every point of the sweep, in grid order (the first key varies slowest), seeds innermost. Each
    point's scenario is built and validated here, so a bad value fails before anything runs; the error
    names the grid entry (``grid."flows[0].rate_mbps"[2]``)."""
    _check_shape(spec)
    data, base_dir, shown = _read_document(spec.scenario)
    keys = list(spec.grid)
    paths = {k: tuple(_variants.parse_path(k)) for k in keys if k != VARIANT_KEY}
    problems: list[Any] = []
    points: list[Point] = []
    for combo in itertools.product(*(list(enumerate(spec.grid[k])) for k in keys)):
        params = {k: v for k, (_, v) in zip(keys, combo)}
        try:
            sc = _point_scenario(data, base_dir, shown, params)
        except ScenarioError as e:
            for d in e.errors():
                # The grid entry that set the faulty key, if one did (then once, not per combination).
                loc = tuple(d.get("loc") or ())
                culprit = [(k, i) for k, (i, _) in zip(keys, combo)
                           if k in paths and loc and (loc[:len(paths[k])] == paths[k] or paths[k][:len(loc)] == loc)
                           or k == VARIANT_KEY and (not loc or loc[0] == "variants")]
                where = ", ".join(f'grid."{k}"[{i}]' for k, i in (culprit or [(k, i) for k, (i, _) in zip(keys, combo)]))
                problem = dict(d, msg=f"at {where}: {d['msg']}")
                if problem not in problems:
                    problems.append(problem)
            continue
        first = int(sc.to_dict().get("seed", 1))
        seeds = spec.seeds if isinstance(spec.seeds, list) else list(range(first, first + spec.seeds))
        for s in seeds:
            sc_s = sc.with_seed(s)
            points.append(Point(params, s, sc_s, point_key(sc_s, s)))
    if problems:
        raise ScenarioError(problems, source=shown)
    return points


def _point_scenario(data: Mapping[str, Any], base_dir: Path, shown: str, params: Mapping[str, Any]) -> Scenario:
    """The scenario of one grid combination: the variant it names (if any), then its values set."""
    if VARIANT_KEY in params:
        sc = Scenario.variants(data, base_dir=base_dir, names=[str(params[VARIANT_KEY])], source=shown)[0]
    else:
        sc = Scenario(data, base_dir=base_dir, source=shown)
    return sc.with_set({k: v for k, v in params.items() if k != VARIANT_KEY})


def point_key(sc: Scenario, seed: int) -> str:
    """16 hex digits of SHA-256 over the resolved scenario and the seed."""
    text = json.dumps({"scenario": sc.to_dict(), "seed": seed}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def point_command(spec: SweepSpec, point: Point, out: Path) -> str:
    """The shell command that reproduces one point with ``lasthop run``."""
    import shlex

    parts = ["lasthop", "run", os.fspath(spec.scenario)]
    for k, v in point.params.items():
        if k == VARIANT_KEY:
            parts += ["--variant", str(v)]
        else:
            parts += ["--set", f"{k}={_toml_value(v)}"]
    parts += ["--seed", str(point.seed), "--out", os.fspath(out / "runs" / point.key)]
    return " ".join(shlex.quote(p) for p in parts)


# -- running -----------------------------------------------------------------------------------------

def sweep(spec: SweepSpec | str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
          grid: Mapping[str, Sequence[Any]] | None = None, seeds: int | Sequence[int] | None = None, jobs: int = 1,
          backend: str = "local", address: str | None = None, batch: int | None = None,
          on_done: Callable[[Point, str, float], None] | None = None,
          on_plan: Callable[[int, int], None] | None = None) -> SweepResult:
    """``sweep("sweeps/snr.toml")`` (a spec file), or ``sweep("examples/home_rtc.toml", grid={...},
    seeds=3)`` (a scenario file and its grid). Runs the points of ``spec`` that are not complete in ``out`` yet, then gathers every complete one
    into ``results.parquet``, ``summary.csv`` and ``report.html``. ``on_done(point, status, seconds)``
    is called as each run ends (status ``ok`` or ``failed``), ``on_plan(to_run, complete)`` once before
    the first run starts. Ctrl-C stops the runs (finished ones stay
    complete) and raises KeyboardInterrupt after gathering what finished. Points that failed are in
    the result's ``failed`` and a ``UserWarning`` names them. With ``jobs`` > 1 the worker processes
    import the calling script: call ``sweep`` under ``if __name__ == "__main__":`` in a script."""
    if backend not in ("local", "ray"):
        raise LasthopError(f"unknown backend {backend!r} (local or ray)")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise LasthopError(f"jobs=: must be a whole number ≥ 1, got {jobs!r}")
    if grid is not None and not isinstance(grid, Mapping):
        raise LasthopError(f"grid=: must be a mapping of path → list of values, e.g. "
                           f"{{'stations[0].channel.snr_db': [10, 20]}}, got {type(grid).__name__}")
    if backend == "local" and (address is not None or batch is not None):
        raise LasthopError("address= and batch= are the ray backend's (backend='ray')")
    if backend == "ray" and jobs != 1:
        raise LasthopError("jobs= sizes the local pool; on Ray every CPU of the cluster takes runs (batch= per task)")
    if isinstance(spec, SweepSpec) and (grid is not None or seeds is not None):
        raise LasthopError("grid= and seeds= are for a scenario path; a SweepSpec has its own")
    if grid is not None and not isinstance(spec, SweepSpec):
        for k, v in grid.items():
            if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence):
                raise LasthopError(f"grid[{k!r}]: must be a non-empty list of values, got {v!r}")
        spec = SweepSpec(Path(spec), {k: list(v) for k, v in grid.items()},
                         1 if seeds is None else seeds if isinstance(seeds, int) else list(seeds), source=os.fspath(spec))
    elif not isinstance(spec, SweepSpec):
        if seeds is not None:
            raise LasthopError("seeds=: a sweep spec file sets its own seeds (give seeds with a scenario and grid=)")
        spec = load_spec(spec)
    root = Path(out) if out is not None else Path("runs") / f"sweep-{Path(spec.source or spec.scenario).stem}"
    points = plan(spec)
    _check_writable(root)
    _write_json(root / MANIFEST, {"spec": spec.to_json(),
                                  "points": [{"key": p.key, "params": p.params, "seed": p.seed} for p in points]})
    res = SweepResult(root, points)
    todo: list[Point] = []
    for p in _unique(points):
        if _complete(res.run_dir(p.key)):
            res.reused.append(p.key)
        else:
            todo.append(p)
    notify = on_done or (lambda *_: None)
    if on_plan is not None:
        on_plan(len(todo), len(res.reused))
    if backend == "local":
        _run_local(res, todo, jobs, notify)
    else:
        from lasthop.sweeps_ray import run_ray

        run_ray(res, todo, address, batch, notify)
    gather(res)
    if res.interrupted:
        raise KeyboardInterrupt
    if res.failed and on_done is None:  # the CLI lists failures itself
        import warnings

        first = next(iter(res.failed.values()))
        hint = (" (worker processes import the calling script: with jobs > 1, call sweep() under "
                "`if __name__ == \"__main__\":`)") if "BrokenProcessPool" in first or "terminated abruptly" in first else ""
        warnings.warn(f"{len(res.failed)} of {len(res.points)} sweep points failed; the first: {first}{hint}", stacklevel=2)
    return res


def _complete(d: Path) -> bool:
    """Whether run directory ``d`` holds a finished run whose summary and flows table read back (a
    damaged one is run again, not gathered)."""
    if not (d / "summary.json").is_file():
        return False
    from lasthop.errors import RunDirError
    from lasthop.result import _read_summary, read_table

    try:
        _read_summary(d, os.fspath(d))
        read_table(d, "flows.parquet", schema_only=True)
    except RunDirError:
        return False
    return True


def _unique(points: Iterable[Point]) -> list[Point]:
    seen: dict[str, Point] = {}
    for p in points:
        seen.setdefault(p.key, p)
    return list(seen.values())


def _run_local(res: SweepResult, todo: list[Point], jobs: int, notify: Callable[[Point, str, float], None]) -> None:
    from lasthop.compare import Job, Outcome, run_jobs

    by_key = {p.key: p for p in todo}

    def done(o: Outcome) -> None:
        record(res, by_key[o.job.name], o.status, o.message, o.input_error)
        notify(by_key[o.job.name], o.status, o.seconds)

    _, res.interrupted = run_jobs([Job(p.key, p.scenario, res.run_dir(p.key)) for p in todo], jobs, done)


def record(res: SweepResult, p: Point, status: str, message: str, input_error: bool) -> None:
    """Notes how one run ended."""
    if status == "ok":
        res.ran.append(p.key)
    elif status == "failed":
        res.input_error = (not res.failed or res.input_error) and input_error
        res.failed[p.key] = message


def _check_writable(root: Path) -> None:
    try:
        (root / "runs").mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".write-test-"):
            pass
    except OSError as e:
        raise LasthopError(f"cannot write the sweep directory {root}: {e.strerror or e}") from None


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# -- gathering ---------------------------------------------------------------------------------------

def gather(res: SweepResult) -> None:
    """Writes ``results.parquet`` (every complete point × flow), ``summary.csv`` and ``report.html``."""
    import pandas as pd

    from lasthop.errors import RunDirError
    from lasthop.result import FLOWS_FILE, read_table

    # Only what finished: the points found complete before the sweep and those run well now (a damaged
    # point whose rerun failed or was interrupted keeps its old files; it is not gathered, and its
    # failure is reported).
    done = {*res.reused, *res.ran}
    frames = []
    for p in res.points:
        if p.key not in done:
            continue
        d = res.run_dir(p.key)
        try:
            flows = read_table(d, FLOWS_FILE).to_pandas()
        except RunDirError as e:
            raise RunDirError(f"{e} (remove {d} to run the point again)") from None
        head = pd.DataFrame({**{k: [_cell(v)] * len(flows) for k, v in p.params.items()},
                             "seed": [p.seed] * len(flows), "point": [p.key] * len(flows)})
        frames.append(pd.concat([head, flows.reset_index(drop=True)], axis=1))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=[*((res.points[0].params if res.points else {}).keys()), "seed", "point", "flow"])
    tmp = res.out / f".{RESULTS}.tmp"
    table.to_parquet(tmp, index=False)
    os.replace(tmp, res.out / RESULTS)
    summary = summarize(table, list(res.points[0].params) if res.points else [])
    summary.to_csv(res.out / SUMMARY, index=False)
    from lasthop.report.sweep import write_sweep_report

    write_sweep_report(res, table, summary)


def summarize(table: Any, params: Sequence[str]) -> Any:
    """Per parameter combination and flow: ``n``, ``mean`` and ``ci95`` of each key metric over seeds."""
    import pandas as pd

    from lasthop.verdict import METRICS, summarize as by_variant

    if table.empty:
        return pd.DataFrame(columns=[*params, "flow", "metric", "n", "mean", "ci95"])
    combos = table[list(params)].astype(str).agg(" | ".join, axis=1) if params else pd.Series("base", index=table.index)
    rows = [dict(r, variant=c) for r, c in zip(table.to_dict("records"), combos)]
    out = pd.DataFrame(by_variant(rows))
    if out.empty:
        return pd.DataFrame(columns=[*params, "flow", "metric", "n", "mean", "ci95"])
    firsts = dict(zip(combos, table[list(params)].to_dict("records"))) if params else {}
    labels = out.pop("variant").tolist()
    for k in params:
        out[k] = [firsts[c][k] for c in labels]
    out["_combo"] = labels
    order = {"metric": {m: i for i, m in enumerate(METRICS)}, "_combo": {c: i for i, c in enumerate(dict.fromkeys(combos))},
             "flow": {f: i for i, f in enumerate(dict.fromkeys(table["flow"]))}}
    out = out.sort_values(by=["_combo", "flow", "metric"], key=lambda s: s.map(order[str(s.name)]), kind="stable")
    return out[[*params, "flow", "metric", "n", "mean", "ci95"]].reset_index(drop=True)


def _cell(v: Any) -> Any:
    """A parameter value as a table cell (tables and lists as JSON text)."""
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v


def _short(v: Any) -> str:
    s = json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _toml_value(v: Any) -> str:
    """``v`` written as a TOML value (what ``lasthop run --set`` reads)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"not a TOML value: {v!r}")


def copy_run(files: Mapping[str, bytes], d: Path) -> None:
    """Writes a run directory from its files (``summary.json`` last, each atomically)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "summary.json").unlink(missing_ok=True)
    for name in sorted(files, key=lambda n: n == "summary.json"):
        tmp = d / f".{name}.tmp"
        tmp.write_bytes(files[name])
        os.replace(tmp, d / name)


def read_run(d: Path) -> dict[str, bytes]:
    """A run directory's files."""
    return {f.name: f.read_bytes() for f in d.iterdir() if f.is_file() and not f.name.startswith(".")}

