"""A UDP echo through the emulator: starts an echo server in the server's namespace, sends N datagrams
from here (the laptop's namespace) and prints {"rtt_ms": [...], "lost": n} as JSON on stdout."""

import json
import os
import socket
import subprocess
import sys
import time

N = int(os.environ.get("N", "30"))
SERVER = ("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.bind(('0.0.0.0', 9000))\n"
          "while True:\n    d, a = s.recvfrom(4096)\n    s.sendto(d, a)\n")
echo = subprocess.Popen(["ip", "netns", "exec", os.environ["LASTHOP_NS_SERVER"], sys.executable, "-c", SERVER])
try:
    time.sleep(0.5)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    rtts, lost = [], 0
    for i in range(N):
        t = time.monotonic()
        s.sendto(i.to_bytes(4, "big") + b"x" * 196, (os.environ["LASTHOP_IP_SERVER"], 9000))
        try:
            s.recvfrom(4096)
            rtts.append((time.monotonic() - t) * 1e3)
        except socket.timeout:
            lost += 1
        time.sleep(0.02)
    print(json.dumps({"rtt_ms": rtts, "lost": lost}))
finally:
    echo.kill()
