"""RunResult: DataFrame columns and their null semantics, save/load, atomic run directories."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import small_scenario

import lasthop
from lasthop import RunResult, Scenario
from lasthop.result import RUN_FILES


@pytest.fixture(scope="module")
def result() -> RunResult:
    return lasthop.run(Scenario.from_dict(small_scenario()), seed=3)


def test_packets_columns(result: RunResult) -> None:
    p = result.packets
    assert list(p.columns[:4]) == ["flow", "flow_id", "seq", "size_bytes"]
    assert list(p.columns[-3:]) == ["latency_ms", "drop_reason", "reverse"]
    stages = [c for c in p.columns if c.startswith("t_")]
    assert stages[0] == "t_sent_ns" and stages[-1] == "t_delivered_ns"
    assert all(str(p[c].dtype) == "Int64" for c in stages)
    assert p["latency_ms"].dtype == np.float64
    assert isinstance(p["flow"].dtype, pd.CategoricalDtype)
    assert list(p["flow"].cat.categories) == ["video", "bulk"]
    assert set(p["drop_reason"].cat.categories) >= {"queue_full"}
    # Per-flow sequence numbers count up from 0.
    assert (p.groupby("flow", observed=True)["seq"].min() == 0).all()


def test_null_semantics(result: RunResult) -> None:
    p = result.packets
    # Nothing crosses the 802.11 stages yet: those columns are all <NA>.
    assert p["t_txq_enq_ns"].isna().all()
    assert p["t_sent_ns"].notna().all()
    dropped = p["drop_reason"].notna()
    assert dropped.any(), "the small scenario overloads the last hop"
    assert p.loc[dropped, "t_delivered_ns"].isna().all()
    assert p.loc[dropped, "latency_ms"].isna().all()
    delivered = p["t_delivered_ns"].notna()
    lat = (p.loc[delivered, "t_delivered_ns"] - p.loc[delivered, "t_sent_ns"]).astype(float) / 1e6
    assert np.allclose(lat.to_numpy(), p.loc[delivered, "latency_ms"].to_numpy())
    # The base latency is 10 ms + 2 ms of propagation plus serialization; never less.
    assert p["latency_ms"].min() > 12


def test_flows_frame_matches_summary(result: RunResult) -> None:
    f = result.flows.set_index("flow")
    assert list(f.index) == ["video", "bulk"]
    for name, m in result.summary["metrics"]["flows"].items():
        assert f.loc[name, "sent_packets"] == m["sent_packets"]
        assert f.loc[name, "dropped_packets"] == m["dropped_packets"]
    drops = result.packets["drop_reason"].notna().groupby(result.packets["flow"], observed=True).sum()
    # Packets sent in the warm-up are logged but not counted; there is no warm-up here.
    assert drops["bulk"] == f.loc["bulk", "dropped_packets"]


def test_summary_has_no_host_dependent_fields(result: RunResult) -> None:
    text = result.summary_json()
    for needle in (str(Path.home()), str(Path.cwd()), "hostname", "time_s", "wall"):
        assert needle not in text
    assert result.summary["git_revision"] == lasthop._lasthop.git_revision()


def test_save_load_roundtrip(result: RunResult, tmp_path: Path) -> None:
    result.save(tmp_path / "run")
    back = RunResult.load(tmp_path / "run")
    assert back.summary == result.summary
    pd.testing.assert_frame_equal(back.packets, result.packets)
    pd.testing.assert_frame_equal(back.flows, result.flows)


def test_embedded_scenario_reproduces_the_run(result: RunResult) -> None:
    again = lasthop.run(result.scenario)
    assert again.summary_json() == result.summary_json()


def test_a_failed_save_never_looks_complete(result: RunResult, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "run"
    result.save(d)
    assert (d / "summary.json").exists()

    def boom(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    import pyarrow.parquet as pq

    monkeypatch.setattr(pq, "write_table", boom)
    with pytest.raises(KeyboardInterrupt):
        result.save(d)
    # The old summary went first, and the temp file was cleaned up.
    assert sorted(p.name for p in d.iterdir()) == ["flows.parquet", "frames.parquet", "packets.parquet", "rtt.parquet",
                                                  "tx.parquet"]
    with pytest.raises(lasthop.LasthopError, match="not a complete run directory"):
        RunResult.load(d)


def test_run_accepts_paths_and_dicts(tmp_path: Path) -> None:
    d = small_scenario(duration_s=2.0)
    a = lasthop.run(d, seed=1)
    (tmp_path / "s.json").write_text(json.dumps(d))
    b = lasthop.run(tmp_path / "s.json", seed=1)
    assert a.summary["event_digest"] == b.summary["event_digest"]


def test_true_and_all_are_one_packets_setting() -> None:
    """`packets = true` and `"all"` (and `false` and `"none"`) resolve to one scenario, so a sweep point
    gets one key whichever was written."""
    from lasthop.sweeps import point_key

    for flag, mode in ((True, "all"), (False, "none")):
        a, b = _with_output({"packets": flag}), _with_output({"packets": mode})
        assert a.to_json() == b.to_json() and a.to_dict()["output"]["packets"] == mode
        assert point_key(a, 1) == point_key(b, 1)


def test_packet_log_can_be_disabled() -> None:
    d = small_scenario(duration_s=2.0)
    d["output"] = {"packets": False}
    r = lasthop.run(d)
    assert len(r.packets) == 0 and "t_sent_ns" in r.packets.columns
    assert r.summary["metrics"]["aggregate"]["sent_packets"] > 0


# -- output: which packets get a row ------------------------------------------------------------------

def _with_output(output: dict) -> lasthop.Scenario:
    from support import small_scenario

    return lasthop.Scenario.from_dict({**small_scenario(3.0), "output": output})


def test_a_packet_log_selection_keeps_the_same_rows_and_the_same_metrics() -> None:
    full = lasthop.run(_with_output({"packets": "all"}))
    sampled = lasthop.run(_with_output({"packets": "sampled", "sample_every": 7}))
    video = lasthop.run(_with_output({"packets": True, "flows": ["video"]}))
    none = lasthop.run(_with_output({"packets": "none"}))
    for r in (sampled, video, none):
        pd.testing.assert_frame_equal(r.flows, full.flows)  # flow metrics never depend on the log
        assert r.summary["event_digest"] == full.summary["event_digest"]
    assert len(none.packets) == 0
    p, s = full.packets, sampled.packets
    assert (p["packet_id"] == np.arange(len(p))).all()
    # Every 7th packet of each flow, starting with its first, with exactly the full log's timestamps.
    expect = p[p.groupby("flow", observed=True).cumcount() % 7 == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(s.reset_index(drop=True), expect)
    v = video.packets
    assert set(v["flow"]) == {"video"} and len(v) == (p["flow"] == "video").sum()


@pytest.mark.parametrize(("output", "where", "message"), [
    ({"packets": "all", "sample_every": 3}, "output.sample_every", 'only with packets = "sampled"'),
    ({"packets": "sampled", "sample_every": 0}, "output.sample_every", "at least 1"),
    ({"flows": ["video", "nope"]}, "output.flows[1]", "no flow named 'nope'"),
    ({"packets": "some"}, "output.packets", 'invalid value: string "some", expected "all", "none", "sampled", true or false'),
    ({"packets": 5}, "output.packets", 'expected "all", "none", "sampled", true or false'),
])
def test_bad_output_options_name_their_key(output: dict, where: str, message: str) -> None:
    with pytest.raises(lasthop.ScenarioError) as e:
        _with_output(output)
    assert where in str(e.value) and message in str(e.value), str(e.value)


def test_tx_log_has_every_psdu_at_its_rate_and_snr(tmp_path: Path) -> None:
    """On a fixed 25 dB channel at a fixed HT MCS 5, every PSDU of the AP and the stations is logged at
    that rate and SNR (collisions: NaN, nothing received), each MPDU delivered over the air counted once
    in ``received``; the table survives save and load."""
    d = small_scenario(3.0)
    d["aps"][0]["last_hop"] = {"type": "wifi", "standard": "ht", "band": "5ghz", "width_mhz": 20,
                               "rate_control": {"type": "fixed", "mcs": 5}}
    for st in d["stations"]:
        st["channel"] = {"type": "fixed_snr", "snr_db": 25}
    res = lasthop.run(d, seed=3)
    tx = res.tx
    assert set(tx["link"].astype(str)) >= {"ap->laptop", "ap->phone"}
    assert (tx["mcs"] == 5).all() and (tx["nss"] == 1).all() and np.allclose(tx["rate_mbps"], 52.0)
    clean = tx[~tx["collided"]]
    assert np.allclose(clean["snr_db"], 25.0) and tx[tx["collided"]]["snr_db"].isna().all()
    assert (tx["received"] <= tx["mpdus"]).all() and (tx[tx["collided"]]["received"] == 0).all()
    assert (np.diff(tx["t_ns"].to_numpy()) >= 0).all()
    p = res.packets
    over_air = p[p["t_air_end_ns"].notna() & ~p["reverse"]]
    dl = tx[tx["src"].astype(str) == "ap"]
    assert dl["received"].sum() == len(over_air), "each MPDU received once"
    res.save(tmp_path / "run")
    back = lasthop.RunResult.load(tmp_path / "run").tx
    assert back[["t_ns", "mcs", "mpdus", "received"]].equals(tx[["t_ns", "mcs", "mpdus", "received"]])
    assert list(back["link"].astype(str)) == list(tx["link"].astype(str))


def test_a_run_streamed_to_its_directory_equals_one_kept_in_memory(tmp_path: Path) -> None:
    """Issue 17: ``lasthop.run(..., out=DIR)`` writes the packet log as the run goes, in row groups of
    finished packets (chunks of 65536 here: three for the home call's 142,672 packets), and the
    per-PSDU log, the RTT samples and the video frames likewise, and gives the same tables and summary bytes as a run kept in memory and
    saved."""
    import pyarrow.parquet as pq

    home = Path(__file__).resolve().parent.parent / "examples" / "home_rtc.toml"
    kept = lasthop.run(home, seed=1)
    streamed = lasthop.run(home, seed=1, out=tmp_path / "streamed")
    assert pq.ParquetFile(tmp_path / "streamed" / "packets.parquet").metadata.num_row_groups == 3
    assert streamed.summary_json() == kept.summary_json()
    pd.testing.assert_frame_equal(streamed.packets, kept.packets)
    pd.testing.assert_frame_equal(streamed.tx, kept.tx)
    pd.testing.assert_frame_equal(streamed.rtt, kept.rtt)
    assert len(kept.frames) == 900, "30 s of 30-fps video"
    pd.testing.assert_frame_equal(streamed.frames, kept.frames)
    loaded = lasthop.RunResult.load(tmp_path / "streamed")
    pd.testing.assert_frame_equal(loaded.frames, kept.frames)
    pd.testing.assert_frame_equal(loaded.packets, kept.packets)
    pd.testing.assert_frame_equal(loaded.tx, kept.tx)
    pd.testing.assert_frame_equal(loaded.rtt, kept.rtt)
    assert sorted(p.name for p in (tmp_path / "streamed").iterdir()) == sorted(RUN_FILES)
    # The core writes the streamed tables (arrow-rs, without pandas or pyarrow): the files carry the
    # schema that a kept run's saved files (pyarrow, from pandas) carry, and the same pandas metadata and
    # categories but for the metadata's `creator`, which names the writer.
    kept.save(tmp_path / "kept")
    for name in ("packets.parquet", "tx.parquet", "rtt.parquet", "frames.parquet"):
        a, b = pq.read_schema(tmp_path / "streamed" / name), pq.read_schema(tmp_path / "kept" / name)
        assert a.equals(b), name
        meta = [{k: json.loads(v) for k, v in s.metadata.items()} for s in (a, b)]
        assert meta[0][b"pandas"].pop("creator") == {"library": "lasthop", "version": lasthop.__version__}, name
        assert meta[1][b"pandas"].pop("creator")["library"] == "pyarrow", name
        assert meta[0] == meta[1], name
    # Saving a streamed result elsewhere copies its file: the same table.
    streamed.save(tmp_path / "copy")
    pd.testing.assert_frame_equal(lasthop.RunResult.load(tmp_path / "copy").packets, kept.packets)
    copy = lasthop.RunResult.load(tmp_path / "copy")
    pd.testing.assert_frame_equal(copy.tx, kept.tx)
    pd.testing.assert_frame_equal(copy.rtt, kept.rtt)


def test_the_flows_table_has_one_schema_whatever_flows_a_run_has(tmp_path: Path) -> None:
    """flows.parquet is typed from the core's flow row, not inferred from its values: a count a flow may
    lack is a nullable ``Int64`` and a metric a run has for no flow a float column of nulls (pandas'
    inference made the first float where one flow lacked it and the second a column of type null). Two
    runs with different kinds of flows write the same schema, and the in-memory table equals the one read
    back, streamed or kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    home = Path(__file__).resolve().parent.parent / "examples" / "home_rtc.toml"
    udp = lasthop.run(small_scenario(duration_s=2.0), seed=1)
    rtc = lasthop.run(home, seed=1, out=tmp_path / "rtc")
    udp.save(tmp_path / "udp")
    schemas = [pq.read_schema(tmp_path / d / "flows.parquet") for d in ("udp", "rtc")]
    assert schemas[0].equals(schemas[1], check_metadata=True)
    assert not [f.name for f in schemas[0] if pa.types.is_null(f.type)]
    assert udp.flows["goodput_mbps"].isna().all() and udp.flows["goodput_mbps"].dtype == np.float64
    assert udp.flows["frames_decoded"].isna().all()
    video = rtc.flows.set_index("flow")["frames_decoded"].dropna()
    assert len(video) and (video > 0).all(), "the home call decodes frames"
    for r, d in ((udp, "udp"), (rtc, "rtc")):
        loaded = lasthop.RunResult.load(tmp_path / d)
        pd.testing.assert_frame_equal(loaded.flows, r.flows)
        assert str(r.flows["frames_decoded"].dtype) == "Int64" and r.flows["sent_packets"].dtype == np.int64
        assert r.flows["percentiles_exact"].dtype == bool
        for name, m in r.summary["metrics"]["flows"].items():
            row = r.flows.set_index("flow").loc[name]
            assert row["sent_packets"] == m["sent_packets"] and row["throughput_mbps"] == m["throughput_mbps"]


def test_a_streamed_run_needs_neither_pandas_nor_pyarrow(tmp_path: Path) -> None:
    """``lasthop run`` writes every table in the core, so neither it nor ``lasthop.run(..., out=)``
    imports pandas, pyarrow or numpy (their imports took a third of the ns-3 anchor's wall time); the
    tables are read when asked for. Nor does the CLI import :mod:`importlib.metadata` (40–90 ms)."""
    import subprocess
    import sys

    code = (
        "import sys, lasthop\n"
        f"r = lasthop.run({str(Path(__file__).resolve().parent.parent / 'examples' / 'home_rtc.toml')!r}, seed=1, "
        f"out={str(tmp_path / 'run')!r})\n"
        "heavy = sorted(m for m in ('pandas', 'pyarrow', 'numpy') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "assert len(r.flows) == 2 and 'pandas' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "lasthop", "run", "--seed", "1", "--out",
                           str(tmp_path / "cli"), str(Path(__file__).resolve().parent.parent / "examples" / "home_rtc.toml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    heavy = {"pandas", "pyarrow", "numpy", "importlib.metadata"}
    assert not imported & heavy, sorted(imported & heavy)
    assert (tmp_path / "cli" / "summary.json").exists()


def test_the_tables_name_the_installed_pandas() -> None:
    """The pandas version the core writes into the tables' metadata, read from its distribution's
    directory name, is the one :mod:`importlib.metadata` reads."""
    import importlib.metadata

    from lasthop.result import pandas_version

    assert pandas_version() == importlib.metadata.version("pandas")


def test_a_streamed_run_with_unnamed_flows(tmp_path: Path) -> None:
    """Flows without a name get the core's names (flow0, ...) in a streamed run too: ``lasthop run`` of
    such a scenario once failed at the end, the stream having guessed its flow names from the file."""
    sc = small_scenario(duration_s=2.0)
    for f in sc["flows"]:
        f.pop("name", None)
    kept = lasthop.run(sc, seed=1)
    streamed = lasthop.run(sc, seed=1, out=tmp_path / "run")
    assert list(streamed.flows["flow"]) == list(kept.flows["flow"]) == [f"flow{i}" for i in range(len(sc["flows"]))]
    pd.testing.assert_frame_equal(streamed.packets, kept.packets)
    # No RTT samples here: an empty table reads back from Parquet with its categories too (the files
    # name them), streamed or kept and saved.
    assert len(kept.rtt) == 0
    pd.testing.assert_frame_equal(streamed.rtt, kept.rtt)
    kept.save(tmp_path / "kept")
    pd.testing.assert_frame_equal(streamed.rtt, lasthop.RunResult.load(tmp_path / "kept").rtt)


def test_a_writer_error_stops_a_streamed_run_and_leaves_nothing(tmp_path: Path) -> None:
    """The tables are written by a thread of the core beside the run: when writing fails (here the
    process's file-size limit, which fails a write as a full disk would, once a row group of the
    packet log is on disk), the run stops with that error naming the file, and leaves neither a summary
    nor temporary files."""
    import subprocess
    import sys
    import textwrap

    home = Path(__file__).resolve().parent.parent / "examples" / "home_rtc.toml"
    out = tmp_path / "run"
    code = textwrap.dedent(f"""
        import resource, signal, lasthop
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_500_000, resource.RLIM_INFINITY))
        try:
            lasthop.run({str(home)!r}, seed=1, out={str(out)!r})
        except OSError as e:
            print("OSError:", e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OSError:") and ".packets.parquet.streaming-" in r.stdout, r.stdout
    assert "too large" in r.stdout.lower(), r.stdout
    assert list(out.iterdir()) == []


def test_a_table_whose_values_are_not_its_categories_is_refused(tmp_path: Path) -> None:
    """Restoring a file's categories never turns a value it does not name into a missing one."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from lasthop.errors import RunDirError
    from lasthop.result import read_table

    flow = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["call", "other"]))
    table = pa.table({"flow": flow}).replace_schema_metadata({b"lasthop.categories": b'{"flow": ["call", "download"]}'})
    pq.write_table(table, tmp_path / "rtt.parquet")
    with pytest.raises(RunDirError, match="not among the categories"):
        read_table(tmp_path, "rtt.parquet")
    ok = table.replace_schema_metadata({b"lasthop.categories": b'{"flow": ["download", "other", "call"]}'})
    pq.write_table(ok, tmp_path / "rtt.parquet")
    back = read_table(tmp_path, "rtt.parquet").column("flow").combine_chunks()
    assert back.dictionary.to_pylist() == ["download", "other", "call"] and back.to_pylist() == ["call", "other"]
