"""Run-time commands from inside an emulation: at AT_S seconds (model time, about wall time from the
start), lowers the VR flow's LAST-PQ demand to 12 ms through the control socket in $LASTHOP_CONTROL,
sends one command the model refuses, prints both answers as JSON lines, and stays HOLD_S seconds more."""

import json
import os
import socket
import time

AT_S = float(os.environ.get("AT_S", "2"))
time.sleep(AT_S)
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
    s.connect(os.environ["LASTHOP_CONTROL"])
    f = s.makefile("rw")
    for request in ({"target": "aps.ap.lastpq", "set": {"demand_ms": {"vr": 12}}},
                    {"target": "aps.ap.lastpq", "set": {"demand_ms": {"nope": 12}}}):
        f.write(json.dumps(request) + "\n")
        f.flush()
        print(f.readline().strip(), flush=True)
time.sleep(float(os.environ.get("HOLD_S", "1")))
