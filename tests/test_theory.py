"""The wired link against queueing theory: M/D/1 sojourn and tail-drop loss of an overloaded link."""

from __future__ import annotations

import pytest
from support import EXAMPLES, small_scenario

import lasthop
from lasthop import Scenario


def test_mdl_mean_sojourn_matches_theory() -> None:
    """Poisson arrivals of 1500-byte packets into a 12 Mbit/s link at ρ = 0.7 (examples/mdl.toml).

    M/D/1: W = 1/μ + ρ / (2μ(1−ρ)). Sojourn = queue wait (serialization start − enqueue) + service.
    600 simulated seconds give ~420,000 packets; across seeds the mean lands within about 1 %.
    """
    sc = Scenario.load(EXAMPLES / "mdl.toml").replace(duration_s=600, warmup_s=1)
    p = lasthop.run(sc, seed=1).packets
    p = p[(p["t_sent_ns"] >= 1_000_000_000) & p["t_wired_tx_ns"].notna()]
    service_s = 1500 * 8 / 12e6
    mu, rho = 1 / service_s, 8.4 / 12
    wait_s = (p["t_wired_tx_ns"] - p["t_wired_enq_ns"]).astype(float) / 1e9
    sojourn = wait_s.mean() + service_s
    theory = 1 / mu + rho / (2 * mu * (1 - rho))
    print(f"M/D/1 at rho=0.7: measured {sojourn * 1e3:.4f} ms, theory {theory * 1e3:.4f} ms, "
          f"{len(p)} packets")
    assert len(p) > 400_000
    assert sojourn == pytest.approx(theory, rel=0.03)
    # Cross-check with the arrival at the far end (no propagation delay on this link).
    arrival = (p["t_qdisc_enq_ns"] - p["t_wired_enq_ns"]).astype(float).mean() / 1e9
    assert arrival == pytest.approx(sojourn, rel=1e-9)


@pytest.mark.parametrize("kind", ["udp_cbr", "udp_poisson"])
def test_overloaded_last_hop_loses_the_excess(kind: str) -> None:
    """Offering twice the capacity of a tail-drop FIFO loses half the packets (minus the queue's fill)."""
    d = small_scenario(duration_s=10)
    d["warmup_s"] = 1
    d["aps"][0]["last_hop"] = {"type": "wired", "rate_mbps": 10, "queue": {"type": "fifo", "packets": 50}}
    d["flows"] = [{"name": "over", "type": kind, "from": "server", "to": "laptop", "rate_mbps": 20,
                   "packet_bytes": 1250}]
    r = lasthop.run(d, seed=1)
    m = r.summary["metrics"]["flows"]["over"]
    print(f"{kind}: offered 2x capacity, loss {m['loss_rate']:.4f}, throughput {m['throughput_mbps']:.3f} Mbit/s")
    assert m["loss_rate"] == pytest.approx(0.5, abs=0.01)
    assert m["throughput_mbps"] == pytest.approx(10, rel=0.01)
    drops = r.packets["drop_reason"].dropna()
    assert len(drops) > 0 and (drops == "queue_full").all()
    [last_hop] = [c for c in r.summary["components"]["links"] if c["link"] == "ap->stations"]
    assert last_hop["queue"]["max_packets"] == 50
    assert last_hop["utilization"] == pytest.approx(1.0, abs=0.01)


def test_overloaded_wired_link_loses_the_excess() -> None:
    d = small_scenario(duration_s=10)
    d["warmup_s"] = 1
    d["links"][0].update(rate_mbps=5, queue={"type": "fifo", "packets": 20})
    d["flows"] = [{"name": "over", "type": "udp_poisson", "from": "server", "to": "laptop", "rate_mbps": 7.5,
                   "packet_bytes": 1250}]
    m = lasthop.run(d, seed=2).summary["metrics"]["flows"]["over"]
    assert m["loss_rate"] == pytest.approx(1 / 3, abs=0.01)
