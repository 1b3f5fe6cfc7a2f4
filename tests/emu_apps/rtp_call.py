"""A plaintext RTP call through the emulator: media one way, transport-wide congestion-control feedback
(TWCC, RTCP RTPFB FMT 15) back, as a WebRTC receiver sends it, on one UDP port each side (RTCP mux).

Run in the receiver's namespace (the laptop's); it starts the sender in the server's
(``LASTHOP_NS_SERVER``). The sender sends RATE packets/s of SIZE bytes for CALL_S seconds, each with a
transport-wide sequence number in the one-byte header extension EXT_ID (SSRC 0x1111). Every 50 ms the
receiver sends a compound RTCP packet: a receiver report (SSRC 0x2222) and a TWCC message for what
arrived since the last one. At the end the receiver prints one JSON line: what it received and sent,
and what the sender received (each RTCP datagram's messages)."""

import json
import os
import socket
import struct
import subprocess
import sys
import time

EXT_ID = int(os.environ.get("EXT_ID", "5"))
RATE = int(os.environ.get("RATE", "200"))
SIZE = int(os.environ.get("SIZE", "1000"))
SECONDS = float(os.environ.get("CALL_S", "5"))
PORT = 5004
MEDIA_SSRC, RECEIVER_SSRC = 0x1111, 0x2222


def sender(peer: str) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", PORT))
    s.setblocking(False)
    rtcp = []
    t0 = time.monotonic()
    seq = 0
    while time.monotonic() - t0 < SECONDS + 1.0:
        due = t0 + seq / RATE
        if seq < SECONDS * RATE and time.monotonic() >= due:
            ext = bytes([0xBE, 0xDE, 0, 1, (EXT_ID << 4) | 1]) + struct.pack("!H", seq & 0xFFFF) + b"\0"
            head = struct.pack("!BBHII", 0x90, 96, seq & 0xFFFF, seq * 90, MEDIA_SSRC)
            s.sendto(head + ext + bytes(SIZE - len(head) - len(ext) - 28), (peer, PORT))
            seq += 1
        try:
            data, _ = s.recvfrom(2048)
            rtcp.append(_messages(data))
        except BlockingIOError:
            time.sleep(0.0005)
    print(json.dumps(_summary(seq, rtcp)))


def _summary(sent: int, rtcp: list[list[dict[str, int]]]) -> dict[str, object]:
    """What the sender got back: RTCP datagrams with a receiver report, how many of those carried TWCC,
    TWCC datagrams on their own (the AP's, under Zhuge), their SSRCs and the sequence numbers they cover."""
    with_rr = [d for d in rtcp if any(m["pt"] == 201 for m in d)]
    alone = [m for d in rtcp if all(m["pt"] == 205 for m in d) for m in d]
    covered = {q for m in alone for q in range(m["base_seq"], m["base_seq"] + m["count"])}
    return {"sent": sent, "datagrams": len(rtcp), "with_rr": len(with_rr),
            "rr_with_twcc": sum(any(m["pt"] == 205 for m in d) for d in with_rr), "twcc_alone": len(alone),
            "twcc_alone_ssrcs": sorted({(m["sender_ssrc"], m["media_ssrc"]) for m in alone}),
            "twcc_alone_covered": len(covered & set(range(sent)))}


def _messages(data: bytes) -> list[dict[str, int]]:
    """The messages of an RTCP compound packet: packet type, format, and for TWCC its header fields."""
    out, i = [], 0
    while i + 4 <= len(data):
        fmt, pt, words = data[i] & 0x1F, data[i + 1], struct.unpack("!H", data[i + 2:i + 4])[0]
        m = {"pt": pt, "fmt": fmt}
        if pt == 205 and fmt == 15:
            m.update(zip(("sender_ssrc", "media_ssrc", "base_seq", "count"), struct.unpack("!IIHH", data[i + 4:i + 16])))
        out.append(m)
        i += (words + 1) * 4
    return out


def twcc(base: int, arrivals: dict[int, float], count: int, fb_count: int) -> bytes:
    """A transport-cc feedback message (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1) for
    seqs base..base+count-1, `arrivals` in seconds: run-length chunks, 250 µs deltas."""
    seqs = range(base, base + count)
    first = min(arrivals.values())
    ref = int(first / 0.064)
    prev, symbols, deltas = ref * 0.064, [], b""
    for q in seqs:
        if q not in arrivals:
            symbols.append(0)
            continue
        d = round((arrivals[q] - prev) / 0.00025)
        prev += d * 0.00025
        if 0 <= d <= 255:
            symbols.append(1)
            deltas += bytes([d])
        else:
            symbols.append(2)
            deltas += struct.pack("!h", max(-32768, min(32767, d)))
    chunks, i = b"", 0
    while i < len(symbols):
        j = i
        while j < len(symbols) and symbols[j] == symbols[i] and j - i < 8191:
            j += 1
        chunks += struct.pack("!H", (symbols[i] << 13) | (j - i))
        i = j
    body = struct.pack("!IIHH", RECEIVER_SSRC, MEDIA_SSRC, base & 0xFFFF, count) + (ref & 0xFFFFFF).to_bytes(3, "big") + bytes([fb_count & 0xFF])
    msg = body + chunks + deltas
    pad = (4 - len(msg) % 4) % 4
    head_len = (4 + len(msg) + pad) // 4 - 1
    first_byte = 0x80 | (0x20 if pad else 0) | 15
    return struct.pack("!BBH", first_byte, 205, head_len) + msg + (bytes(pad - 1) + bytes([pad]) if pad else b"")


def receiver() -> None:
    snd = subprocess.Popen(["ip", "netns", "exec", os.environ["LASTHOP_NS_SERVER"], sys.executable, __file__, "sender",
                            os.environ["LASTHOP_IP_LAPTOP"]], stdout=subprocess.PIPE, text=True)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", PORT))
    s.settimeout(0.01)
    arrivals: dict[int, float] = {}
    reported, fb_count, feedback, got, peer = 0, 0, 0, 0, None
    next_fb = time.monotonic() + 0.05
    end = time.monotonic() + SECONDS + 1.5
    while time.monotonic() < end:
        try:
            data, peer = s.recvfrom(2048)
            if data[0] & 0x10 and data[12:14] == b"\xbe\xde":
                got += 1
                seq = struct.unpack("!H", data[17:19])[0]
                arrivals[seq] = time.monotonic()
        except TimeoutError:
            pass
        if time.monotonic() >= next_fb and peer is not None:
            next_fb += 0.05
            new = {q: t for q, t in arrivals.items() if q >= reported}
            if new:
                count = max(new) - reported + 1
                rr = struct.pack("!BBHI", 0x80, 201, 1, RECEIVER_SSRC)
                s.sendto(rr + twcc(reported, new, count, fb_count), peer)
                fb_count, reported, feedback = fb_count + 1, max(new) + 1, feedback + 1
    out = json.loads(snd.communicate(timeout=30)[0])
    print(json.dumps({"received": got, "feedback_sent": feedback, "sender": out}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["sender"]:
        sender(sys.argv[2])
    else:
        receiver()
