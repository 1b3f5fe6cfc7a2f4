"""``lasthop report``: the HTML page of run directories, what it derives from the packet logs, and bad
input (exit 2 naming the path)."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import lasthop_cli, small_scenario, write_scenario
from test_compare import is_png, wifi_variants

import lasthop
from lasthop.report import build_report, open_runs
from lasthop.report.data import _occupancy, analyse, open_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two run directories, ``wired`` (the stand-in last hop) and ``wifi`` (the Linux AP path), and a
    third without a packet log."""
    root = tmp_path_factory.mktemp("runs")
    lasthop.run(small_scenario(duration_s=2.0), seed=1).save(root / "wired")
    wifi = wifi_variants()
    del wifi["variants"]
    lasthop.run(wifi, seed=1).save(root / "wifi")
    quiet = small_scenario(duration_s=2.0)
    quiet["output"] = {"packets": False}
    lasthop.run(quiet, seed=1).save(root / "quiet")
    return root


def images(html: str) -> dict[str, bytes]:
    return {name: base64.b64decode(b64) for b64, name in
            re.findall(r'<img src="data:image/png;base64,([^"]+)" alt="[^"]*" data-file="([^"]+)">', html)}


def rows(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<tr data-run="([^"]+)" data-flow="([^"]+)">', html)


def test_report_on_two_runs(runs: Path) -> None:
    r = lasthop_cli("report", "wired", "wifi", cwd=runs)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "report: report/report.html"  # beside the runs, in their parent
    html = (runs / "report" / "report.html").read_text(encoding="utf-8")
    imgs = images(html)
    assert list(imgs) == ["latency_ccdf.png", "radio.png", "timeseries_wired.png", "timeseries_wifi.png", "breakdown.png"]
    for name, data in imgs.items():
        assert is_png(data) and (runs / "report" / name).read_bytes() == data
    # Labelled by directory name; one row per run and flow, in the flows tables' order.
    assert rows(html) == [("wired", "video"), ("wired", "bulk"), ("wifi", "video"), ("wifi", "bulk"), ("wifi", "ping")]
    for col in ("throughput_mbps", "loss_rate", "latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "sent_packets"):
        assert f"<th>{col}</th>" in html
    # The breakdown shows the layers each path has: qdisc for the stand-in, txq and hw for Wi-Fi.
    assert "<th>qdisc ms</th>" in html and "<th>txq ms</th>" in html and "<th>hw ms</th>" in html


def test_report_of_one_run_goes_inside_it_with_a_title(runs: Path) -> None:
    r = lasthop_cli("report", "wifi", "--title", "Wi-Fi <test> & co", cwd=runs)
    assert r.returncode == 0, r.stderr
    html = (runs / "wifi" / "report" / "report.html").read_text(encoding="utf-8")
    assert "<title>Wi-Fi &lt;test&gt; &amp; co</title>" in html
    shutil.rmtree(runs / "wifi" / "report")


def test_report_of_a_comparison_directory_covers_its_runs(runs: Path, tmp_path: Path) -> None:
    """Issue 18: `lasthop report runs/demo` (what `lasthop compare` wrote) failed: it has no summary of
    its own. It stands for the runs inside it, and the report goes inside it."""
    cmp = tmp_path / "cmp"
    for name in ("wired", "wifi"):
        shutil.copytree(runs / name, cmp / name)
    r = lasthop_cli("report", "cmp", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "report: cmp/report/report.html"
    html = (cmp / "report" / "report.html").read_text(encoding="utf-8")
    assert {run for run, _ in rows(html)} == {"wired", "wifi"}
    assert "warning" not in r.stderr, "the report's own directory is no run left out"
    # A variant whose run did not finish is said to be left out (it was silently); the same run given
    # twice is an error (it was reported twice).
    shutil.copytree(runs / "wired", cmp / "broken")
    (cmp / "broken" / "summary.json").unlink()
    r = lasthop_cli("report", "cmp", cwd=tmp_path)
    assert r.returncode == 0 and "warning: cmp/broken: left out, not a complete run (no summary.json" in r.stderr, r.stderr
    (cmp / "empty").mkdir()  # what an interrupted first run of a variant leaves
    r = lasthop_cli("report", "cmp", cwd=tmp_path)
    assert r.returncode == 0 and "warning: cmp/empty: left out" in r.stderr, r.stderr
    r = lasthop_cli("report", "cmp/wired", "cmp/wired", "--out", "twice", cwd=tmp_path)
    assert r.returncode == 2 and "cmp/wired: given twice" in r.stderr, r.stderr


def test_run_without_packet_log(runs: Path, tmp_path: Path) -> None:
    path = build_report([runs / "quiet", runs / "wired"], tmp_path / "rep")
    html = path.read_text(encoding="utf-8")
    assert list(images(html)) == ["latency_ccdf.png", "timeseries_wired.png", "breakdown.png"]
    assert "quiet: no packet log." in html
    assert rows(html)[:2] == [("quiet", "video"), ("quiet", "bulk")]
    only = build_report([runs / "quiet"], tmp_path / "only").read_text(encoding="utf-8")
    assert images(only) == {} and "No packet log in these runs" in only


def test_variant_names_label_runs_and_duplicates_are_told_apart(runs: Path, tmp_path: Path) -> None:
    shutil.copytree(runs / "wired", tmp_path / "a" / "wired")
    shutil.copytree(runs / "wired", tmp_path / "b" / "wired")
    summary = json.loads((tmp_path / "b" / "wired" / "summary.json").read_text())
    summary["variant"] = {"name": "fq", "description": "", "set": {}}
    (tmp_path / "b" / "wired" / "summary.json").write_text(json.dumps(summary))
    shutil.copytree(runs / "wired", tmp_path / "c" / "wired")
    labels = [r.label for r in open_runs([tmp_path / "a" / "wired", tmp_path / "b" / "wired", tmp_path / "c" / "wired"])]
    assert labels == ["a/wired", "fq", "c/wired"]


def test_new_and_null_flow_columns(runs: Path, tmp_path: Path) -> None:
    """Flow metrics are found, not listed: a new column shows up, a null cell shows a dash, and a
    column that is null in every run is left out."""
    shutil.copytree(runs / "wired", tmp_path / "app")
    flows = pd.read_parquet(tmp_path / "app" / "flows.parquet")
    flows["frame_latency_p99_ms"] = [42.5, None]
    flows["freezes"] = pd.array([3, None], dtype="Int64")
    flows["goodput_mbps"] = [None, None]  # neither run has TCP: null everywhere
    flows.to_parquet(tmp_path / "app" / "flows.parquet")
    html = build_report([tmp_path / "app", runs / "wifi"], tmp_path / "rep").read_text(encoding="utf-8")
    head = re.search(r'<table class="comparison"><thead><tr>(.*?)</tr>', html)
    assert head is not None
    cols = re.findall(r"<th>([^<]+)</th>", head.group(1))
    assert cols[:5] == ["throughput_mbps", "loss_rate", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms"]
    assert "frame_latency_p99_ms" in cols and "freezes" in cols and "goodput_mbps" not in cols
    app_video = re.search(r'<tr data-run="app" data-flow="video">(.*?)</tr>', html)
    assert app_video is not None and "<td>42.5</td>" in app_video.group(1) and "<td>3</td>" in app_video.group(1)
    wifi_video = re.search(r'<tr data-run="wifi" data-flow="video">(.*?)</tr>', html)
    assert wifi_video is not None and '<span class="na">–</span>' in wifi_video.group(1)


def test_derived_series_agree_with_the_flow_metrics(runs: Path) -> None:
    run = open_run(runs / "wifi")
    s = analyse(run)
    metrics = run.summary["metrics"]["flows"]
    for f in s.flows:
        m = metrics[f.name]
        # The breakdown adds up to the mean one-way latency over the same packets (sent after warm-up).
        assert sum(f.breakdown_ms.values()) == pytest.approx(m["latency_mean_ms"], rel=1e-6)
        assert f.delivered == m["delivered_packets"]
        # The CCDF runs from every packet (p = 1) down to the worst one (p = 1/n).
        assert f.ccdf_p[0] == 1.0 and f.ccdf_p[-1] == pytest.approx(1 / f.delivered)
        assert f.ccdf_ms[-1] == pytest.approx(m["latency_max_ms"])
    assert {"txq", "hw"} <= set(s.queues) and s.bin_s == 0.1 and len(s.t_s) == 15
    video = s.flows[0]
    assert np.nanmean(video.throughput_mbps[3:]) == pytest.approx(5.0, rel=0.05)


def test_queue_occupancy() -> None:
    nan = np.nan
    # Packets in the queue over [0, 3), [1, 2), [1.5, never left), and one dropped without a leave time.
    enq = np.array([0.0, 1.0, 1.5, 2.5]) * 1e9
    deq = np.array([3.0, 2.0, nan, nan]) * 1e9
    dropped = np.array([False, False, False, True])
    occ = _occupancy(enq, deq, dropped, bin_s=1.0, nbins=5)
    assert occ.tolist() == [1, 3, 3, 2, 1]


@pytest.mark.parametrize(("setup", "message"), [
    (lambda d: None, "nope: no such directory"),
    (lambda d: d.mkdir(), "nope: not a run directory (no summary.json"),
    (lambda d: d.write_text("x"), "nope: not a directory"),
])
def test_bad_run_directory_exits_2(runs: Path, tmp_path: Path, setup: object, message: str) -> None:
    assert callable(setup)
    setup(tmp_path / "nope")
    r = lasthop_cli("report", runs / "wired", "nope", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: {message}" or message in r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize(("name", "content", "message"), [
    ("packets.parquet", b"not parquet at all", "bad/packets.parquet: cannot read: "),
    ("flows.parquet", b"PAR1garbagePAR1", "bad/flows.parquet: cannot read: "),
    ("summary.json", b"{not json", "bad/summary.json: cannot read: "),
    ("summary.json", b'{"format": "something-else"}', "bad/summary.json: not a lasthop run summary"),
])
def test_corrupt_run_files_exit_2(runs: Path, tmp_path: Path, name: str, content: bytes, message: str) -> None:
    shutil.copytree(runs / "wired", tmp_path / "bad")
    (tmp_path / "bad" / name).write_bytes(content)
    r = lasthop_cli("report", "bad", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {message}"), r.stderr
    assert "Traceback" not in r.stderr


def test_missing_packets_file_exits_2(runs: Path, tmp_path: Path) -> None:
    shutil.copytree(runs / "wired", tmp_path / "bad")
    (tmp_path / "bad" / "packets.parquet").unlink()
    r = lasthop_cli("report", "bad", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: bad: not a complete run directory (no packets.parquet)"


def test_no_run_directories_is_a_usage_error(tmp_path: Path) -> None:
    r = lasthop_cli("report", cwd=tmp_path)
    assert r.returncode == 2 and "Missing argument 'RUN_DIRS...'" in r.stderr


def _reported_home_call(tmp_path: Path, duration_s: float) -> tuple[lasthop.RunResult, str]:
    """home_rtc.toml shortened to `duration_s`, seed 1, saved to tmp_path/call; its result and report page."""
    sc = lasthop.Scenario.load(Path(__file__).resolve().parent.parent / "examples" / "home_rtc.toml").to_dict()
    sc["duration_s"] = duration_s
    res = lasthop.run(sc, seed=1)
    res.save(tmp_path / "call")
    r = lasthop_cli("report", "call", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return res, (tmp_path / "call" / "report" / "report.html").read_text(encoding="utf-8")


def test_a_video_call_gets_its_frame_latency_panel_with_the_deadline(tmp_path: Path) -> None:
    """A run with an RTC flow gets the frame-latency CCDF (capture to decode, deadline drawn), built from
    frames.parquet: the line's last point is the worst frame shown after the warm-up."""
    res, html = _reported_home_call(tmp_path, 8.0)
    assert "frame_latency_ccdf.png" in images(html) and "<h2>Frame latency</h2>" in html
    from lasthop.report.data import deadlines_ms, frame_delays

    run = open_run(tmp_path / "call")
    delays = frame_delays(run)
    assert list(delays) == ["call"] and deadlines_ms(run) == {"call": 100.0}
    frames = res.frames[(res.frames["flow"] == "call") & (res.frames["capture_ns"] >= 3e9)]
    assert delays["call"].size == len(frames)
    shown = frames[~frames["dropped"].astype(bool)]["delay_ms"]
    assert np.isclose(delays["call"][np.isfinite(delays["call"])].max(), shown.max())


def test_a_wifi_call_gets_its_rate_snr_and_mcs_over_time(tmp_path: Path) -> None:
    """The radio panel's series come from tx.parquet and packets.parquet: per station the mean SNR and
    median MCS of the AP's PSDUs to it in each bin, per video flow the bytes it sent; the laptop's walk
    to 12 dB in home_rtc shows as a dip of both."""
    res, html = _reported_home_call(tmp_path, 20.0)
    assert "radio.png" in images(html) and "<h2>Call rate, SNR and MCS over time</h2>" in html
    from lasthop.report.data import radio

    rs = radio(open_run(tmp_path / "call"), ["call"])
    assert rs is not None and sorted(rs.snr_db) == ["laptop", "tv"]
    tx = res.tx
    dl = tx[(tx["link"] == "ap->laptop") & (tx["mpdus"] > 0)]
    first = dl[dl["t_ns"] < rs.bin_s * 1e9]
    assert np.isclose(rs.snr_db["laptop"][0], first["snr_db"].dropna().mean())
    sent = res.packets[(res.packets["flow"] == "call") & ~res.packets["reverse"]]
    assert np.isclose(rs.sent_mbps["call"].sum() * rs.bin_s * 1e6 / 8, sent["size_bytes"].sum())
    walk = (rs.t_s >= 14) & (rs.t_s < 16)
    calm = (rs.t_s >= 5) & (rs.t_s < 12)
    assert np.nanmean(rs.snr_db["laptop"][walk]) < np.nanmean(rs.snr_db["laptop"][calm]) - 6
    assert np.nanmean(rs.mcs["laptop"][walk]) < np.nanmean(rs.mcs["laptop"][calm])


def test_a_wired_run_has_no_radio_panel(tmp_path: Path) -> None:
    res = lasthop.run(small_scenario(2.0), seed=1)
    assert res.tx.empty
    res.save(tmp_path / "wired")
    assert lasthop_cli("report", "wired", cwd=tmp_path).returncode == 0
    assert "radio.png" not in images((tmp_path / "wired" / "report" / "report.html").read_text(encoding="utf-8"))


def test_what_actually_ran_per_variant(tmp_path: Path) -> None:
    """Issue 18: the run, its table and the report say what ran, per node, as built. In the home call
    Law sets the stages of the AP's Linux path (its driver, scheduler, hardware queues, AQM) and takes
    over its downlink rates (the stations keep the Minstrel-HT they
    inherit from the linux profile's default); stock Linux runs Minstrel-HT on the linux path. Two seeds
    of a variant built the same thing and share their rows in a report of both."""
    import tomllib

    sc = tomllib.loads((Path(__file__).resolve().parent.parent / "examples" / "home_rtc.toml").read_text(encoding="utf-8"))
    sc["duration_s"], sc["warmup_s"] = 2.0, 0.5
    write_scenario(tmp_path / "home.toml", sc)
    r = lasthop_cli("compare", "home.toml", "--variant", "linux_fq_codel", "--variant", "law_zhuge", "--seeds", "2",
                    "--out", "cmp", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    law = lasthop.RunResult.load(tmp_path / "cmp" / "law_zhuge" / "seed1")
    setup = law.setup.set_index("link")
    assert list(setup.index) == ["ap->laptop", "ap->tv", "laptop->ap", "tv->ap"]
    assert list(setup["path"]) == ["linux", "linux", "fifo", "fifo"]
    assert list(setup["rate_control"]) == ["law", "law", "minstrel_ht", "minstrel_ht"]
    assert set(setup.loc[["ap->laptop", "ap->tv"], "mechanisms"]) == {"law, zhuge"}
    assert setup.loc["ap->tv", "mechanism_roles"] == ("law: set the driver's policy, schedule the TXQs, set the hardware queues, set the TXQs' AQM, "
                                                      "choose the downlink rates; "
                                                      "zhuge: act on the flows' feedback")
    linux = lasthop.RunResult.load(tmp_path / "cmp" / "linux_fq_codel" / "seed1").setup
    assert list(linux["path"]) == ["linux", "linux", "fifo", "fifo"] and set(linux["rate_control"]) == {"minstrel_ht"}
    assert set(linux["mechanisms"]) == {""}
    html = (tmp_path / "cmp" / "report" / "report.html").read_text(encoding="utf-8")
    assert "<h2>What actually ran</h2>" in html
    def setup_table(html: str) -> str:
        return html.split('<table class="setup">')[1].split("</table>")[0]

    table = setup_table(html)  # the comparison's report shows each variant's first seed
    assert table.count("<b>law</b> (joint rate + retry control") == 2 and table.count("<b>minstrel_ht</b> (modern") == 6
    assert ">law_zhuge<" in table and ">linux_fq_codel<" in table
    both = lasthop_cli("report", "cmp/law_zhuge/seed1", "cmp/law_zhuge/seed2", "--out", "two", cwd=tmp_path)
    assert both.returncode == 0, both.stderr
    table = setup_table((tmp_path / "two" / "report.html").read_text(encoding="utf-8"))
    assert table.count("(and 1 more)") == 1 and table.count("<b>law</b> (joint") == 2  # two seeds, one set of rows
    one = lasthop_cli("run", "home.toml", "--variant", "law_zhuge", "--out", "one", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    ran = one.stdout.split("what ran")[1].splitlines()
    assert [line.split()[:4] for line in ran if line.startswith(" ap ") or line.startswith(" laptop ")] == [
        ["ap", "linux", "ap->laptop", "law"], ["ap", "linux", "ap->tv", "law"], ["laptop", "fifo", "laptop->ap", "minstrel_ht"]]


def test_what_ran_shows_alike_links_and_stations_once() -> None:
    """``lasthop run``'s ``what ran`` shows a run of three or more rows alike but for their node and
    link (an AP's links to ten stations, the ten stations) as one row naming the first and last and
    how many; two alike rows, and rows that differ in anything else, stay as they are."""
    from lasthop.commands._display import collapse_alike

    def row(node: str, link: str | None, role: str = "station", rc: str = "minstrel_ht", mech: str = "") -> dict:
        return {"node": node, "role": role, "path": "fifo", "link": link, "rate_control": rc, "streams": 2,
                "mechanisms": mech}

    ap = [row("ap", f"ap->sta{i}", role="AP") for i in range(4)]
    stations = [row(f"sta{i}", f"sta{i}->ap") for i in range(3)]
    pair = [row("tv", "tv->ap", rc="fixed"), row("laptop", "laptop->ap", rc="fixed")]
    odd = [row("sta9", "sta9->ap", mech="qair")]
    shown = collapse_alike(ap + stations + pair + odd)
    assert [(r["node"], r["link"]) for r in shown] == [
        ("ap", "ap->sta0 … ap->sta3 (4)"), ("sta0 … sta2", "sta0->ap … sta2->ap (3)"),
        ("tv", "tv->ap"), ("laptop", "laptop->ap"), ("sta9", "sta9->ap")]
    assert shown[0]["role"] == "AP" and shown[1]["rate_control"] == "minstrel_ht" and shown[4]["mechanisms"] == "qair"
    wired = [row(f"ap{i}", None, role="AP", mech="law") for i in range(3)]
    assert collapse_alike(wired) == [{**wired[0], "node": "ap0 … ap2"}]
