"""``lasthop doctor``: can this machine run ``lasthop emulate``? Each check says what to fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from typing import Any

import click


def _check(name: str, ok: bool, detail: str, fix: str = "", required: bool = True) -> dict[str, Any]:
    return {"check": name, "ok": ok, "detail": detail, "fix": "" if ok else fix, "required": required}


def checks() -> list[dict[str, Any]]:
    """Every check, in order: privileges, TUN, iproute2 and namespaces, the clock, timers, CPUs."""
    out = []
    root = os.geteuid() == 0
    out.append(_check("privileges", root, f"euid {os.geteuid()}",
                      "run as root (namespaces and TUN devices need CAP_NET_ADMIN and CAP_SYS_ADMIN)"))
    try:
        with open("/dev/net/tun", "rb+", buffering=0):
            tun = (True, "/dev/net/tun opens read-write")
    except OSError as e:
        tun = (False, f"/dev/net/tun: {e.strerror}")
    out.append(_check("tun", tun[0], tun[1], "load the tun module (modprobe tun) or give the container /dev/net/tun"))
    ip = shutil.which("ip")
    out.append(_check("iproute2", ip is not None, ip or "`ip` not on PATH", "install iproute2 (apt install iproute2)"))
    if ip and root:
        name = f"lh-doctor-{os.getpid()}"
        r = subprocess.run([ip, "netns", "add", name], capture_output=True, text=True)
        if r.returncode == 0:
            subprocess.run([ip, "netns", "del", name], capture_output=True)
        out.append(_check("netns", r.returncode == 0, "created and deleted a network namespace" if r.returncode == 0
                          else r.stderr.strip(), "allow network namespaces (a container needs CAP_SYS_ADMIN)"))
    res = time.clock_getres(time.CLOCK_MONOTONIC)
    out.append(_check("clock", res <= 1e-6, f"CLOCK_MONOTONIC resolution {res * 1e9:.0f} ns",
                      "a high-resolution clock source (the lag of every packet is measured against it)"))
    over = []
    for _ in range(100):
        t = time.perf_counter()
        time.sleep(0.0005)
        over.append((time.perf_counter() - t - 0.0005) * 1e6)
    over.sort()
    p99 = over[98]
    out.append(_check("timers", p99 < 500, f"a 500 µs sleep overshoots by {over[50]:.0f} µs (p50), {p99:.0f} µs (p99)",
                      "a quieter machine, or isolated CPUs: the emulator spins before each wakeup to absorb this",
                      required=False))
    floor = cpu_floor(0.9)
    out.append(_check("stalls", floor["lag_p99_us"] <= 50,
                      f"a busy loop lost its CPU {floor['gaps_over_50us']:.0f} times for > 50 µs in 0.9 s (max "
                      f"{floor['max_gap_us']:.0f} µs): a perfect emulator's lag here would be {floor['lag_p99_us']:.0f} µs "
                      f"at p99, {floor['lag_p999_us']:.0f} µs at p99.9",
                      "a machine whose CPUs are not shared (a virtual machine's host takes its CPUs away now and then)",
                      required=False))
    cpus = sorted(os.sched_getaffinity(0))
    out.append(_check("cpus", len(cpus) >= 2, f"{len(cpus)} CPUs available ({', '.join(map(str, cpus))})",
                      "at least 2 CPUs: one for the model thread, one for the applications", required=False))
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        rt = (True, "SCHED_FIFO allowed (the model thread runs at real-time priority)")
    except (OSError, AttributeError) as e:
        rt = (False, f"SCHED_FIFO refused: {e}")
    out.append(_check("realtime", rt[0], rt[1], "CAP_SYS_NICE or root, for real-time priority of the model thread",
                      required=False))
    try:
        os.close(os.open("/dev/cpu_dma_latency", os.O_WRONLY))
        qos = (True, "/dev/cpu_dma_latency writable (idle CPUs poll while emulating: fast wake-ups on arrivals)")
    except OSError as e:
        qos = (False, f"/dev/cpu_dma_latency: {e.strerror}")
    out.append(_check("cpu-qos", qos[0], qos[1], "root, for the PM QoS request that keeps CPUs out of deep idle states "
                      "(without it each real packet waits for a CPU to wake: ~0.1 ms more per round trip)",
                      required=False))
    return out


def cpu_floor(seconds: float) -> dict[str, float]:
    """How much of the CPU this machine takes away from a thread that never sleeps: spins for
    `seconds` (at SCHED_FIFO where allowed, as the model thread runs; under a second, before real-time
    throttling) reading the clock, and keeps every gap over 5 µs between two reads. A packet due at a
    uniformly random instant that falls in a gap waits for its end, whatever the emulator does: the
    percentiles of that wait are the floor under any emulator's lag here (``lag_p99_us`` etc.)."""
    try:
        old = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (OSError, AttributeError):
        old = None
    gaps = []
    try:
        t0 = prev = time.perf_counter_ns()
        while prev - t0 < seconds * 1e9:
            t = time.perf_counter_ns()
            if t - prev > 5_000:
                gaps.append((t - prev) / 1e3)
            prev = t
    finally:
        if old is not None:
            os.sched_setscheduler(0, old[0], old[1])
    total_us = (prev - t0) / 1e3
    return {"seconds": total_us / 1e6, "gaps_over_50us": float(sum(g > 50 for g in gaps)),
            "max_gap_us": max(gaps, default=0.0), "lost_fraction": sum(gaps) / total_us,
            "lag_p50_us": wait_percentile(gaps, total_us, 0.5), "lag_p99_us": wait_percentile(gaps, total_us, 0.99),
            "lag_p999_us": wait_percentile(gaps, total_us, 0.999)}


def wait_percentile(gaps_us: list[float], total_us: float, q: float) -> float:
    """The `q` quantile of the wait of an instant drawn uniformly from `total_us` µs during which the
    CPU was away for `gaps_us`: an instant in a gap waits for its end, so P(wait > L) = Σ max(0, g − L) / T;
    the smallest L with P(wait > L) ≤ 1 − q (bisection to well under 1 ns)."""
    if sum(gaps_us) / total_us <= 1 - q:
        return 0.0
    lo, hi = 0.0, max(gaps_us)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(max(0.0, g - mid) for g in gaps_us) / total_us > 1 - q else (lo, mid)
    return hi


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as one JSON document.")
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> None:
    """Check that this machine can run `lasthop emulate`: privileges, /dev/net/tun, iproute2 and network
    namespaces, the clock and timers, CPUs and real-time scheduling; say what to fix."""
    from lasthop.cli import EXIT_ERROR

    rows = checks()
    if as_json:
        click.echo(json.dumps({"checks": rows}))
    else:
        for r in rows:
            mark = "ok  " if r["ok"] else ("FAIL" if r["required"] else "warn")
            click.echo(f"{mark} {r['check']:<10} {r['detail']}" + (f"\n     fix: {r['fix']}" if r["fix"] else ""))
    if not all(r["ok"] for r in rows if r["required"]):
        ctx.exit(EXIT_ERROR)
