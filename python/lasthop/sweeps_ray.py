"""The Ray backend of :mod:`lasthop.sweeps`: batches of runs as Ray tasks.

Each task runs its batch one run after another in a temporary directory and returns every run's files;
this process writes them into the sweep's run directories as each task finishes (``summary.json``
last), so finished runs survive a failure or Ctrl-C of the others and workers need no shared file
system. Ray is optional: ``pip install 'lasthop[ray]'``.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lasthop.errors import LasthopError
from lasthop.sweeps import Point, SweepResult, copy_run, read_run, record

__all__ = ["run_ray", "run_batch"]


def run_batch(items: list[tuple[str, Any]]) -> list[tuple[str, str, str, bool, float, dict[str, bytes]]]:
    """Runs ``(key, scenario)`` pairs; per run ``(key, status, message, input_error, seconds, files)``."""
    from lasthop.compare import _execute

    out = []
    with tempfile.TemporaryDirectory(prefix="lasthop-ray-") as tmp:
        for key, scenario in items:
            d = Path(tmp) / key
            t0 = time.monotonic()
            status, message, input_error = _execute(scenario, str(d))
            files = read_run(d) if status == "ok" else {}
            out.append((key, status, message, input_error, time.monotonic() - t0, files))
    return out


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A cluster address of the form [ray://]host:port must accept a connection within ``timeout_s``:
    Ray itself retries an unreachable one for minutes, silently."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", "local" and the like: Ray's to resolve
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise LasthopError(f"cannot reach the Ray cluster at {address}: {e.strerror or e}") from None


def run_ray(res: SweepResult, todo: list[Point], address: str | None, batch: int | None,
            notify: Callable[[Point, str, float], None]) -> None:
    """Runs ``todo`` on Ray (the cluster at ``address``, else a local instance) in batches."""
    if not todo:
        return
    try:
        import ray  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise LasthopError("the ray backend needs Ray: pip install 'lasthop[ray]' (or pip install ray)") from None
    started = not ray.is_initialized()
    if started and address:
        _check_reachable(address)
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 runtime_env=None, logging_level=logging.ERROR, configure_logging=True)
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call,unused-ignore]
        size = batch or max(1, math.ceil(len(todo) / (4 * max(1, cpus))))
        task = ray.remote(num_cpus=1, max_retries=1)(run_batch)
        by_key = {p.key: p for p in todo}
        batches = {}
        for i in range(0, len(todo), size):
            part = todo[i:i + size]
            batches[task.remote([(p.key, p.scenario) for p in part])] = [p.key for p in part]
        pending = list(batches)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    _collect(res, by_key, batches[ref], ref, ray, notify)
        except KeyboardInterrupt:
            res.interrupted = True
            for ref in pending:
                ray.cancel(ref, force=True)
    finally:
        if started:
            ray.shutdown()


def _collect(res: SweepResult, by_key: dict[str, Point], keys: list[str], ref: Any, ray: Any,
             notify: Callable[[Point, str, float], None]) -> None:
    try:
        results = ray.get(ref)
    except Exception as e:  # noqa: BLE001 - a lost worker fails its batch, not the sweep
        for key in keys:
            record(res, by_key[key], "failed", f"{type(e).__name__}: {e}", False)
            notify(by_key[key], "failed", 0.0)
        return
    for key, status, message, input_error, seconds, files in results:
        p = by_key[key]
        if status == "ok":
            try:
                copy_run(files, res.run_dir(key))
            except OSError as e:  # this point is lost, not the sweep (as with the local backend)
                status, message = "failed", f"cannot write the run directory {res.run_dir(key)}: {e.strerror or e}"
        record(res, p, status, message, input_error)
        notify(p, status, seconds)
