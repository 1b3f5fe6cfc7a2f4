"""Pinned results: the event digest and the summary bytes of every example (base and variants) and the
JSON of every quick experiment, so that a refactor that must not change behaviour is checked to the byte.

``python tests/pins.py --update`` rewrites ``tests/pins.json`` after an intended change of behaviour
(say why in the commit); ``test_pins.py`` compares against it. ``summary.json`` is hashed without
``git_revision`` and ``lasthop_version``, which change with every commit and release, and with the
checkout's own path replaced (resolved trace paths are absolute) and without ``scenario_sha256``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import lasthop
from lasthop.experiments import EXPERIMENTS, run_experiment

ROOT = Path(__file__).resolve().parent.parent
PINS = Path(__file__).resolve().parent / "pins.json"
# Examples run for at most this long after their warm-up (the pin is on the shortened scenario; long files stay cheap).
MAX_DURATION_S = 6.0


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def example_cases() -> list[tuple[str, Path, str | None]]:
    """(key, file, variant) for every example and each of its variants."""
    out: list[tuple[str, Path, str | None]] = []
    for path in sorted((ROOT / "examples").glob("*.toml")):
        out.append((f"example:{path.stem}", path, None))
        for v in lasthop.Scenario.variants(path):
            out.append((f"example:{path.stem}/{v.variant}", path, v.variant))
    return out


def example_pin(path: Path, variant: str | None) -> dict[str, str]:
    sc = lasthop.Scenario.load(path, variant=variant)
    d = sc.to_dict()
    sc = sc.replace(duration_s=min(d["duration_s"], d["warmup_s"] + MAX_DURATION_S))
    res = lasthop.run(sc)
    summary: dict[str, Any] = json.loads(res.summary_json())
    summary.pop("git_revision", None)
    summary.pop("lasthop_version", None)
    # Resolved file paths (traces) are absolute: hash them relative to the checkout, wherever it is
    # (and leave out the resolved scenario's own hash, which covers the absolute path; the scenario
    # itself is in the summary).
    summary.pop("scenario_sha256", None)
    text = json.dumps(summary, sort_keys=True).replace(str(ROOT), "<checkout>")
    return {"event_digest": res.summary["event_digest"], "summary_sha256": _sha(text)}


def experiment_pin(name: str) -> dict[str, str]:
    doc = run_experiment(name, seed=1, quick=True)
    return {"rows_sha256": _sha(json.dumps(doc, sort_keys=True, default=str))}


def compute() -> dict[str, dict[str, str]]:
    pins: dict[str, dict[str, str]] = {}
    for key, path, variant in example_cases():
        pins[key] = example_pin(path, variant)
    for name in sorted(EXPERIMENTS):
        pins[f"experiment:{name}"] = experiment_pin(name)
    return pins


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/pins.py --update")
    PINS.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINS}")
