"""``lasthop compare``: every variant run into its own directory, one report, one table; parallel runs
equal sequential ones and direct ``lasthop run --variant`` runs; failures and Ctrl-C keep finished runs."""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES, ctrl_c_able, lasthop_cli, write_scenario

VARIANTS = ["fifo", "linux", "linux_rr"]
FLOWS = ["video", "bulk", "ping"]


def wifi_variants(duration_s: float = 1.5) -> dict[str, Any]:
    """A small BSS (two stations) with three flows and three AP paths."""
    return {
        "name": "cq",
        "duration_s": duration_s,
        "warmup_s": 0.2,
        "seed": 1,
        "servers": [{"name": "server"}],
        "aps": [{"name": "ap", "last_hop": {"type": "wifi", "standard": "ht", "band": "5ghz", "profile": "linux",
                                            "rate_control": {"type": "fixed", "mcs": 4}}}],
        "stations": [{"name": "laptop", "channel": {"type": "fixed_snr", "snr_db": 30}},
                     {"name": "phone", "channel": {"type": "fixed_snr", "snr_db": 30}}],
        "links": [{"a": "server", "b": "ap", "rate_mbps": 1000, "delay_ms": 5}],
        "flows": [
            {"name": "video", "type": "udp_cbr", "from": "server", "to": "laptop", "rate_mbps": 5},
            {"name": "bulk", "type": "saturated", "from": "server", "to": "phone", "backlog": 100},
            {"name": "ping", "type": "ping", "from": "server", "to": "laptop", "interval_ms": 20},
        ],
        "variants": [
            {"name": "fifo", "description": "driver FIFO", "set": {"aps[0].last_hop.ap_path": {"type": "fifo"}}},
            {"name": "linux", "set": {"aps[0].last_hop.ap_path": {"type": "linux"}}},
            {"name": "linux_rr", "set": {"aps[0].last_hop.ap_path": {"type": "linux", "airtime_fairness": False}}},
        ],
    }


@pytest.fixture
def cq(tmp_path: Path) -> Path:
    return write_scenario(tmp_path / "cq.toml", wifi_variants())


def is_png(data: bytes) -> bool:
    return data[:8] == b"\x89PNG\r\n\x1a\n" and b"IEND" in data[-12:]


def check_report(html_path: Path, runs: list[str], flows: list[str]) -> None:
    """The page has the expected images (embedded, and as valid PNG files beside it) and one
    comparison row per run and flow."""
    import base64

    html = html_path.read_text(encoding="utf-8")
    assert "<script" not in html and "http://" not in html and "https://" not in html  # offline
    imgs = re.findall(r'<img src="data:image/png;base64,([^"]+)" alt="[^"]*" data-file="([^"]+)">', html)
    names = [name for _, name in imgs]
    assert names == ["latency_ccdf.png", "radio.png", *[f"timeseries_{r}.png" for r in runs], "breakdown.png"]
    for b64, name in imgs:
        data = (html_path.parent / name).read_bytes()
        assert is_png(data), name
        assert base64.b64decode(b64) == data, name
    rows = re.findall(r'<tr data-run="([^"]+)" data-flow="([^"]+)">', html)
    assert rows == [(r, f) for r in runs for f in flows]


def test_compare_runs_every_variant_and_writes_one_report(cq: Path) -> None:
    r = lasthop_cli("compare", "cq.toml", cwd=cq.parent)
    assert r.returncode == 0, r.stderr
    root = cq.parent / "runs" / "cq"
    for v in VARIANTS:
        assert sorted(p.name for p in (root / v).iterdir()) == ["flows.parquet", "frames.parquet", "packets.parquet", "rtt.parquet", "summary.json",
                                                               "tx.parquet"]
        assert json.loads((root / v / "summary.json").read_text())["variant"]["name"] == v
    assert r.stdout.splitlines()[-1] == "report: runs/cq/report/report.html"
    check_report(root / "report" / "report.html", VARIANTS, FLOWS)
    # The table: one line per variant and flow, the variant named on its first line.
    for v in VARIANTS:
        assert any(line.split()[:2] == [v, "video"] for line in r.stdout.splitlines()), r.stdout
    assert sum(1 for line in r.stdout.splitlines() if line.split()[:1] in (["ping"], ["linux", "ping"])) >= 2
    for header in ("Mb/s", "loss%", "p99", "RTT p99"):
        assert header in r.stdout
    assert "fifo: done in" in r.stderr and "Traceback" not in r.stderr


def test_parallel_runs_equal_sequential_and_direct_runs(cq: Path) -> None:
    par = lasthop_cli("compare", "cq.toml", "--jobs", "3", "--seed", "5", "--out", "par", "--json", cwd=cq.parent,
                      timeout=120)
    assert par.returncode == 0, par.stderr
    doc = json.loads(par.stdout)  # stdout is exactly one JSON document
    assert set(doc) == {"rows", "report"} and doc["report"] == "par/report/report.html"
    assert [(row["variant"], row["flow"]) for row in doc["rows"]] == [(v, f) for v in VARIANTS for f in FLOWS]
    assert all(isinstance(row["throughput_mbps"], float) and row["run_dir"] == f"par/{row['variant']}"
               for row in doc["rows"])
    seq = lasthop_cli("compare", "cq.toml", "--seed", "5", "--out", "seq", cwd=cq.parent)
    assert seq.returncode == 0, seq.stderr
    for v in VARIANTS:
        direct = lasthop_cli("run", "cq.toml", "--variant", v, "--seed", "5", "--out", f"direct/{v}", cwd=cq.parent)
        assert direct.returncode == 0, direct.stderr
        for name in ("summary.json", "flows.parquet", "packets.parquet"):
            want = (cq.parent / "direct" / v / name).read_bytes()
            assert (cq.parent / "par" / v / name).read_bytes() == want, (v, name)
            assert (cq.parent / "seq" / v / name).read_bytes() == want, (v, name)
        assert json.loads((cq.parent / "direct" / v / "summary.json").read_text())["seed"] == 5


def test_variant_subset_in_the_order_given(cq: Path) -> None:
    r = lasthop_cli("compare", "cq.toml", "--variant", "linux_rr", "--variant", "fifo", "--json", cwd=cq.parent)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [row["variant"] for row in rows] == ["linux_rr"] * 3 + ["fifo"] * 3
    assert sorted(p.name for p in (cq.parent / "runs" / "cq").iterdir()) == ["fifo", "linux_rr", "report"]


def test_unknown_variant_exits_2_listing_the_names(cq: Path) -> None:
    r = lasthop_cli("compare", "cq.toml", "--variant", "fifo", "--variant", "codel", cwd=cq.parent)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: cq.toml: no variant named 'codel'; the variants are: fifo, linux, linux_rr"
    assert r.stdout == "" and not (cq.parent / "runs").exists()


def test_a_bad_variant_stops_everything_before_any_run(tmp_path: Path) -> None:
    d = wifi_variants()
    d["variants"][2]["set"]["flows[1].backlog"] = "many"
    write_scenario(tmp_path / "cq.toml", d)
    r = lasthop_cli("compare", "cq.toml", cwd=tmp_path)
    assert r.returncode == 2
    assert 'error: cq.toml: variants[2].set."flows[1].backlog": invalid type' in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "runs").exists()


def test_scenario_without_variants_runs_its_base(tmp_path: Path) -> None:
    d = wifi_variants()
    del d["variants"]
    write_scenario(tmp_path / "plain.toml", d)
    r = lasthop_cli("compare", "plain.toml", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {row["variant"] for row in doc["rows"]} == {"base"}
    check_report(tmp_path / "runs" / "plain" / "report" / "report.html", ["base"], FLOWS)


def test_a_failed_run_keeps_the_others(cq: Path) -> None:
    (cq.parent / "out").mkdir()
    (cq.parent / "out" / "linux").write_text("in the way")  # the run directory cannot be created
    r = lasthop_cli("compare", "cq.toml", "--out", "out", "--jobs", "2", cwd=cq.parent, timeout=120)
    assert r.returncode == 1
    assert "error: variant linux: cannot write the run directory out/linux" in r.stderr
    assert "1 of 3 runs failed" in r.stderr and "Traceback" not in r.stderr
    for v in ("fifo", "linux_rr"):
        assert (cq.parent / "out" / v / "summary.json").is_file()
    check_report(cq.parent / "out" / "report" / "report.html", ["fifo", "linux_rr"], FLOWS)
    assert "report: out/report/report.html" in r.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_stops_cleanly_and_keeps_finished_runs(tmp_path: Path, jobs: str) -> None:
    d = wifi_variants(duration_s=1e6)
    d["warmup_s"] = 1e6 - 1
    d["output"] = {"packets": False}
    d["variants"] = [{"name": "quick", "set": {"duration_s": 1.0, "warmup_s": 0.0}}, {"name": "endless"}]
    write_scenario(tmp_path / "e.toml", d)
    stale = tmp_path / "runs" / "e" / "endless" / "summary.json"  # from an earlier compare
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    # The signal goes to the parent only: with --jobs 2 it must stop its workers itself.
    proc = subprocess.Popen([sys.executable, "-m", "lasthop", "compare", "e.toml", "--jobs", jobs],
                            preexec_fn=ctrl_c_able, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "quick: done" in line:
                break
        assert any("quick: done" in line for line in seen), seen
        time.sleep(0.5)
        assert proc.poll() is None, "the endless run should still be going"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert stopped_in < 10
    assert "finished runs (complete): runs/e/quick; not finished: endless" in err
    assert "interrupted" in err and "Traceback" not in err
    assert (tmp_path / "runs" / "e" / "quick" / "summary.json").is_file()
    assert not stale.exists()  # an unfinished run never looks complete
    assert not (tmp_path / "runs" / "e" / "report").exists()
    assert not [p for p in tmp_path.rglob("*") if ".tmp-" in p.name]


def test_terminal_table_shows_app_metrics_when_present(capsys: pytest.CaptureFixture[str]) -> None:
    from lasthop.commands.compare import _print_table

    rows = [{"variant": "a", "flow": "call", "throughput_mbps": 2.0, "loss_rate": 0.01, "latency_p50_ms": 20.0,
             "latency_p99_ms": 40.0, "latency_p999_ms": None, "frame_latency_p99_ms": 55.5, "freezes": 3,
             "rtt_p99_ms": None, "brand_new_metric": 1.0},
            {"variant": "a", "flow": "bulk", "throughput_mbps": 20.0, "loss_rate": 0.0, "latency_p50_ms": 30.0,
             "latency_p99_ms": 90.0, "latency_p999_ms": 99.0}]
    _print_table(rows, Path("x.toml"))
    out = capsys.readouterr().out
    assert "frame p99" in out and "freezes" in out and "RTT p99" not in out  # all-null column left out
    call = next(line for line in out.splitlines() if "call" in line).split()
    assert call[:2] == ["a", "call"] and "55.5" in call and "3" in call
    bulk = next(line for line in out.splitlines() if "bulk" in line).split()
    assert "–" in bulk  # no frames on the bulk flow


def test_compare_over_seeds_reports_mean_ci_and_a_verdict(cq: Path) -> None:
    """Issue 18: every variant over several seeds, mean ± 95 % CI per metric and a verdict per metric.
    The driver FIFO holds the ping behind the bulk flow's backlog, so every FQ-CoDel variant beats it
    on the ping's RTT, significantly."""
    r = lasthop_cli("compare", "cq.toml", "--seeds", "3", "--jobs", "2", "--json", cwd=cq.parent, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    root = cq.parent / "runs" / "cq"
    for v in VARIANTS:
        assert sorted(p.name for p in (root / v).iterdir()) == ["seed1", "seed2", "seed3"]
    assert {(row["variant"], row["seed"]) for row in doc["rows"]} == {(v, s) for v in VARIANTS for s in (1, 2, 3)}
    cell = {(s["variant"], s["flow"], s["metric"]): s for s in doc["summary"]}
    rtt = [row["rtt_p99_ms"] for row in doc["rows"] if row["variant"] == "fifo" and row["flow"] == "ping"]
    fifo = cell[("fifo", "ping", "rtt_p99_ms")]
    assert fifo["n"] == 3 and abs(fifo["mean"] - sum(rtt) / 3) < 1e-9 and fifo["ci95"] > 0
    v = next(v for v in doc["verdicts"] if v["flow"] == "ping" and v["metric"] == "rtt_p99_ms")
    assert v["best"] != "fifo" and "fifo" in v["better_than"], v
    assert json.loads((root / "verdict.json").read_text())["verdicts"] == doc["verdicts"]
    # The report shows each variant's first seed, under the verdict over all of them.
    check_report(root / "report" / "report.html", VARIANTS, FLOWS)
    from lasthop.verdict import sentence

    page = (root / "report" / "report.html").read_text()
    assert "Verdict over 3 seeds" in page and page.index("Verdict over 3 seeds") < page.index("<h2>Runs</h2>")
    assert html.escape(sentence(v)) in page
    # `lasthop report` on the comparison directory finds the first seeds and the verdict again.
    r = lasthop_cli("report", root, "--out", cq.parent / "again", cwd=cq.parent, timeout=120)
    assert r.returncode == 0, r.stderr
    again = (cq.parent / "again" / "report.html").read_text()
    assert "Verdict over 3 seeds" in again and html.escape(sentence(v)) in again
    check_report(cq.parent / "again" / "report.html", VARIANTS, FLOWS)


def test_verdict_by_hand() -> None:
    from lasthop.verdict import sentence, summarize, verdicts

    rows = [{"variant": v, "flow": "f", "latency_p99_ms": x} for v, xs in
            (("a", [10.0, 11.0, 12.0]), ("b", [30.0, 31.0, 29.0]), ("c", [10.5, 12.5, 9.0])) for x in xs]
    s = {x["variant"]: x for x in summarize(rows)}
    # mean 11, sd 1, t(0.975, 2) = 4.303: half-width 4.303 / √3 = 2.484.
    assert s["a"]["mean"] == 11.0 and abs(s["a"]["ci95"] - 4.302653 / 3 ** 0.5) < 1e-5
    # One seed has no interval (it was shown as ± 0, claiming no uncertainty).
    assert summarize([{"variant": "a", "flow": "f", "latency_p99_ms": 4.0}])[0]["ci95"] is None
    (v,) = verdicts(rows)
    # c has the lowest mean (10.67), beats b clearly, and is indistinguishable from a.
    assert (v["best"], v["better_than"], v["no_significant_difference"]) == ("c", ["b"], ["a"])
    assert "no significant difference" in sentence(v)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_end_with_a_killed_parent(tmp_path: Path) -> None:
    d = wifi_variants(duration_s=1e6)
    d["warmup_s"] = 1e6 - 1
    d["output"] = {"packets": False}
    d["variants"] = [{"name": "endless1"}, {"name": "endless2"}]
    write_scenario(tmp_path / "e.toml", d)
    proc = subprocess.Popen([sys.executable, "-m", "lasthop", "compare", "e.toml", "--jobs", "2"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def children() -> list[int]:
        out = []
        for p in Path("/proc").iterdir():
            try:
                if p.name.isdigit() and int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == proc.pid:
                    out.append(int(p.name))
            except (OSError, ValueError, IndexError):
                pass
        return out

    try:
        deadline = time.monotonic() + 60
        while len(children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = children()
        assert len(workers) >= 2, "the workers started"
        time.sleep(1.0)
    finally:
        proc.kill()
        proc.wait()
    def running(w: int) -> bool:  # a zombie has ended (its new parent may never reap it)
        try:
            return (Path(f"/proc/{w}") / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    deadline = time.monotonic() + 20
    while any(map(running, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [w for w in workers if running(w)]
    for w in alive:
        os.kill(w, signal.SIGKILL)
    assert not alive, "every worker ended with its parent"


def test_another_base_seed_gives_the_same_verdict(tmp_path: Path) -> None:
    """Issue 18: the demo's comparison (shortened, three of its variants) over 5 seeds from base seed 1
    and again from base seed 101: per metric, the two top groups (the best and those not significantly
    different from it) share a variant, and no significant finding of one is contradicted by the other.
    (Significance at p < 0.05 over 5 seeds does not always replicate, so one side may find a difference
    the other calls insignificant; it must never find the opposite one.)"""
    import tomllib

    sc = tomllib.loads((EXAMPLES / "home_rtc.toml").read_text(encoding="utf-8"))
    sc["duration_s"] = 15.0
    path = write_scenario(tmp_path / "home.toml", sc)
    verdicts = []
    for base in (1, 101):
        r = lasthop_cli("compare", path.name, "--seeds", "5", "--seed", str(base), "--jobs", "2", "--json",
                        "--variant", "linux_fq_codel", "--variant", "zhuge", "--variant", "law",
                        "--out", f"runs/base{base}", cwd=tmp_path, timeout=600)
        assert r.returncode == 0, r.stderr
        verdicts.append({(v["flow"], v["metric"]): v for v in json.loads(r.stdout)["verdicts"]})
    a, b = verdicts
    assert a.keys() == b.keys()
    found = 0
    for key in a:
        sig_a = {(a[key]["best"], w) for w in a[key]["better_than"]}
        sig_b = {(b[key]["best"], w) for w in b[key]["better_than"]}
        assert not {(w, x) for x, w in sig_a} & sig_b, (key, a[key], b[key])
        top_a = {a[key]["best"], *a[key]["no_significant_difference"]}
        top_b = {b[key]["best"], *b[key]["no_significant_difference"]}
        assert top_a & top_b, (key, a[key], b[key])
        found += bool(sig_a and sig_b)
    assert found >= 3, "the comparison finds real differences"
