"""The one topology every experiment runs on, as scenario dicts::

    server ──(wired link)── ap ──(last hop: Wi-Fi BSS, wired bottleneck or capacity trace)── stations

The functions return plain dicts in the shape of a scenario file, so ``lasthop.Scenario.from_dict``
checks an experiment's scenario exactly as it checks a user's file. A key left as ``None`` here is
left out of the dict, so the scenario's own default applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

Json = dict[str, Any]
"""A scenario table (or a part of one) as a dict."""

WIRED_RATE_MBPS = 1000.0
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
"""The repository's example scenarios (experiments and benchmarks built on them load them from here)."""
"""The server–AP link of every experiment: gigabit Ethernet."""


def _present(**items: Any) -> Json:
    """The items whose value is not ``None``."""
    return {k: v for k, v in items.items() if v is not None}


def wifi(profile: str = "linux", *, standard: str = "ht", band: str = "5ghz", **extra: Any) -> Json:
    """An 802.11 BSS as the AP's last hop (802.11n at 5 GHz unless told); ``extra`` adds keys such as
    ``ap_path``, ``rate_control``, ``width_mhz``."""
    return {"type": "wifi", "standard": standard, "band": band, "profile": profile, **extra}


def fixed_snr(snr_db: float, *, coherence_ms: float | None = None) -> Json:
    """A channel at a fixed mean SNR, with Rayleigh fading of that coherence time if given."""
    fading = None if coherence_ms is None else rayleigh(coherence_ms)
    return _present(type="fixed_snr", snr_db=snr_db, fading=fading)


def rayleigh(coherence_ms: float) -> Json:
    """Rayleigh fading with the given coherence time."""
    return {"type": "rayleigh", "coherence_ms": coherence_ms}


def station(name: str, channel: Json | None = None, *, rate_control: Json | None = None,
            downlink_rate_control: Json | None = None, max_nss: int | None = None) -> Json:
    """A station: its channel, its own (uplink) rate control, the AP's rate control towards it, and the
    spatial streams it supports (default the BSS's)."""
    return _present(name=name, channel=channel, rate_control=rate_control,
                    downlink_rate_control=downlink_rate_control, max_nss=max_nss)


def flow(name: str, kind: str | None, src: str, dst: str, **params: Any) -> Json:
    """A flow of type ``kind`` from ``src`` to ``dst``; ``kind=None`` when ``params`` carry the type."""
    head = {"name": name} if kind is None else {"name": name, "type": kind}
    return {**head, "from": src, "to": dst, **params}


def udp_cbr(name: str, src: str, dst: str, rate_mbps: float, packet_bytes: int) -> Json:
    """A constant-bit-rate UDP flow."""
    return flow(name, "udp_cbr", src, dst, rate_mbps=rate_mbps, packet_bytes=packet_bytes)


def saturated(name: str, src: str, dst: str, backlog: int) -> Json:
    """A flow that always has ``backlog`` packets waiting at the sender."""
    return flow(name, "saturated", src, dst, backlog=backlog)


def single_ap(name: str, *, duration_s: float, warmup_s: float, server: str, last_hop: Json,
              stations: list[Json], flows: list[Json], link_delay_ms: float,
              mechanism: Json | None = None, packets: bool | None = None) -> Json:
    """A scenario with one server, one AP named ``ap`` (with ``mechanism``, if any) and its stations.

    ``packets`` sets ``output.packets`` (the per-packet log); ``None`` keeps the default.
    """
    ap = _present(name="ap", last_hop=last_hop, mechanism=mechanism)
    return _present(
        name=name,
        duration_s=duration_s,
        warmup_s=warmup_s,
        output=None if packets is None else {"packets": packets},
        servers=[{"name": server}],
        aps=[ap],
        stations=stations,
        links=[{"a": server, "b": "ap", "rate_mbps": WIRED_RATE_MBPS, "delay_ms": link_delay_ms}],
        flows=flows,
    )


def co_channel_pairs(name: str, *, pairs: int, duration_s: float, warmup_s: float, last_hop: Json,
                     flows: list[Json], link_delay_ms: float = 0.5, snr_db: float = 35.0,
                     node_mechanisms: list[Json] | None = None) -> Json:
    """``pairs`` AP–station pairs (``ap1``–``sta1`` …), each its own BSS with ``last_hop``, all on one
    channel and in one collision domain, every AP wired to one ``server``. ``node_mechanisms`` go on
    every AP and its station."""
    aps = [_present(name=f"ap{i}", last_hop=last_hop, node_mechanisms=node_mechanisms) for i in range(1, pairs + 1)]
    return {
        "name": name,
        "duration_s": duration_s,
        "warmup_s": warmup_s,
        "servers": [{"name": "server"}],
        "aps": aps,
        "stations": [{"name": f"sta{i}", "ap": f"ap{i}", "channel": fixed_snr(snr_db)} for i in range(1, pairs + 1)],
        "links": [{"a": "server", "b": f"ap{i}", "rate_mbps": WIRED_RATE_MBPS, "delay_ms": link_delay_ms}
                  for i in range(1, pairs + 1)],
        "flows": flows,
    }
