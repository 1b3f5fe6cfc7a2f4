"""Real kernel TCP through the emulator: serves BYTES from the server's namespace with http.server and
fetches them from here (the laptop's namespace) with urllib; prints {"bytes", "seconds"} as JSON."""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

BYTES = int(os.environ.get("BYTES", str(2_000_000)))
START_S = float(os.environ.get("START_S", "0"))  # wait this long (after the server listens) before fetching
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "blob"), "wb") as f:
        f.write(os.urandom(BYTES))
    srv = subprocess.Popen(["ip", "netns", "exec", os.environ["LASTHOP_NS_SERVER"], sys.executable, "-m", "http.server",
                            "8000", "--bind", "0.0.0.0", "--directory", d], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        url = f"http://{os.environ['LASTHOP_IP_SERVER']}:8000/blob"
        for _ in range(50):  # until the server listens
            try:
                urllib.request.urlopen(url.replace("/blob", "/"), timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(START_S)
        t = time.monotonic()
        data = urllib.request.urlopen(url, timeout=30).read()
        print(json.dumps({"bytes": len(data), "seconds": time.monotonic() - t}))
    finally:
        srv.kill()
