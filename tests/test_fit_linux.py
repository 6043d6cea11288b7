"""farlink fit --profile linux: the options a capture shows written into the fitted flow beside
the linux TCP profile, and a capture of super-segments (TSO, offloads on) fitted in segments of
the sender's MSS."""

import struct

import dpkt
import pytest

from farlink.captures.fit import fit_path, scenario_toml
from farlink.captures.fit_tcp import tcp_lines
from farlink.scenario import load_scenario, resolve

A, B = b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02"
MSS_OPTION = 1460
WSCALE = 7


def _options(*, syn: bool, ts: bool, sack_ok: bool, wscale: bool, tsval: int) -> bytes:
    opts = b""
    if syn:
        opts += struct.pack("!BBH", 2, 4, MSS_OPTION)
        if sack_ok:
            opts += b"\x04\x02"
        if wscale:
            opts += struct.pack("!BBB", 3, 3, WSCALE)
    if ts:
        opts += struct.pack("!BBII", 8, 10, tsval, tsval)
    return opts + b"\x00" * (-len(opts) % 4)


def _capture(path, *, ts: bool, sack_ok: bool, wscale: bool, per_ack: int, seg_mss: int):
    """A bulk transfer of 100 segments of ``seg_mss`` MSS each, tapped next to the sender; the
    receiver acknowledges every ``per_ack`` of them and the 40th is lost after the tap."""
    payload_mss = MSS_OPTION - (12 if ts else 0)
    seg = seg_mss * payload_mss
    packets = []
    t = 0.0

    def add(src, dst, sport, dport, seq, ack, flags, length=0, *, syn=False, sack=(), win=1000):
        opts = _options(syn=syn, ts=ts, sack_ok=sack_ok, wscale=wscale, tsval=int(t * 1000) + 1)
        if sack:
            body = b"".join(struct.pack("!II", lo, hi) for lo, hi in sack)
            opts = b"\x01\x01" + struct.pack("!BB", 5, 2 + len(body)) + body + opts
        tcp = dpkt.tcp.TCP(
            sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=win, opts=opts
        )
        tcp.off = (20 + len(opts)) // 4
        tcp.data = b"x" * length
        ip = dpkt.ip.IP(src=src, dst=dst, p=6, data=tcp)
        ip.len = 20 + len(bytes(tcp))
        packets.append((t, bytes(ip)))

    isn, risn = 1000, 5000
    add(A, B, 40000, 5201, isn, 0, dpkt.tcp.TH_SYN, syn=True)
    t += 0.001
    add(B, A, 5201, 40000, risn, isn + 1, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, syn=True)
    t += 0.001
    base, lost, held = isn + 1, 40, []
    ack = base
    for i in range(100):
        t += 0.0005
        add(A, B, 40000, 5201, base + i * seg, risn + 1, dpkt.tcp.TH_ACK, seg)
        if i == lost:
            continue
        held.append(i)
        if (i + 1) % per_ack == 0 or i > lost:
            t += 0.0002
            if i < lost:
                ack = base + (i + 1) * seg
                add(B, A, 5201, 40000, risn + 1, ack, dpkt.tcp.TH_ACK)
            else:
                sack = ((base + (lost + 1) * seg, base + (i + 1) * seg),)
                add(B, A, 5201, 40000, risn + 1, ack, dpkt.tcp.TH_ACK, sack=sack)
        if i == lost + 3:
            t += 0.0005
            add(A, B, 40000, 5201, base + lost * seg, risn + 1, dpkt.tcp.TH_ACK, seg)
    t += 0.001
    add(B, A, 5201, 40000, risn + 1, base + 100 * seg, dpkt.tcp.TH_ACK)
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_RAW, nano=True)
        for when, frame in packets:
            writer.writepkt(frame, ts=when)
    return path


def _tcp_table(tmp_path, text: str) -> dict:
    path = tmp_path / "fitted.toml"
    path.write_text(text)
    return load_scenario(path)["flows"][0]["tcp"]


def _resolved_tcp(tmp_path, text: str) -> dict:
    path = tmp_path / "fitted.toml"
    path.write_text(text)
    return resolve(load_scenario(path))["flows"][0]["tcp"]


def test_linux_sender_gets_the_options_the_capture_shows(tmp_path):
    cap = _capture(tmp_path / "tso.pcap", ts=True, sack_ok=True, wscale=True, per_ack=1, seg_mss=10)
    fit = fit_path(cap)
    # Super-segments of 10 MSS: the fitted packet is the sender's MSS, and one lost
    # super-segment is one loss in the data counted in segments of that MSS.
    assert fit.mss_bytes == MSS_OPTION - 12
    assert fit.largest_segment_bytes == 10 * fit.mss_bytes
    assert fit.loss.lost_after_tap == 1
    assert fit.scenario_loss_p == pytest.approx(1 / (101 * 10), rel=1e-9)
    assert fit.scenario_loss_p < fit.loss.loss_rate_path / 9
    text = scenario_toml(fit, "fitted", tcp="reno", profile="linux")
    written = _tcp_table(tmp_path, text)
    # One word for Linux, and beside it only what the capture shows (and --tcp named).
    assert written["profile"] == "linux"
    assert set(written) == {
        "profile",
        "mss_bytes",
        "timestamps",
        "sack",
        "window_scaling",
        "receive_buffer_bytes",
        "delayed_ack",
        "cc",
    }
    tcp = _resolved_tcp(tmp_path, text)
    assert tcp["mss_bytes"] == MSS_OPTION and tcp["timestamps"] is True
    assert tcp["sack"] is True and tcp["window_scaling"] is True
    assert tcp["receive_buffer_bytes"] == 1000 << WSCALE
    # The receiver acknowledged a super-segment (10 segments) per ACK: it delays its ACKs.
    assert tcp["delayed_ack"] is True
    assert tcp["delayed_ack_timeout_s"] == 0.04
    # With Linux's quick-ACK mode, which the kernel's receiver always has.
    assert tcp["quick_ack"] is True
    assert tcp["growth"] == "byte-counting" and tcp["cc"] == "reno"
    assert tcp["rto"] == "linux" and tcp["recovery"] == "rack"
    assert "from the capture: both SYNs carried SACK-permitted" in text


def test_linux_sender_without_the_options_and_an_ack_per_segment(tmp_path):
    cap = _capture(
        tmp_path / "plain.pcap", ts=False, sack_ok=False, wscale=False, per_ack=1, seg_mss=1
    )
    fit = fit_path(cap)
    assert fit.scenario_loss_p == fit.loss.loss_rate_path
    text = scenario_toml(fit, "fitted", tcp="cubic", profile="linux")
    written = _tcp_table(tmp_path, text)
    assert written["mss_bytes"] == MSS_OPTION and written["timestamps"] is False
    assert written["sack"] is False and written["window_scaling"] is False
    assert written["receive_buffer_bytes"] == 1000
    assert written["delayed_ack"] is False
    # The synthetic receiver's 1000-byte window is below the MSS, which the core refuses as a
    # buffer: resolved with one that holds a segment, the profile's part is seen.
    doc = load_scenario(tmp_path / "fitted.toml")
    doc["flows"][0]["tcp"]["receive_buffer_bytes"] = 64000
    tcp = resolve(doc)["flows"][0]["tcp"]
    assert tcp["sack"] is False and tcp["delayed_ack"] is False
    # Quick-ACK mode and the 40 ms timer are modes of delayed ACKs: the profile's do not apply.
    assert "quick_ack" not in tcp and tcp["delayed_ack_timeout_s"] is None
    # Linux's CUBIC is farlink's model of the kernel's arithmetic, said so in its comment.
    assert tcp["cc"] == "cubic-linux" and tcp["growth"] == "per-ack"
    assert tcp["rto"] == "linux" and tcp["recovery"] == "rack"
    assert "named by --tcp; the profile runs cubic-linux" in text


def test_rfc_sender_table_is_the_capture_payload_and_farlink_defaults(tmp_path):
    cap = _capture(
        tmp_path / "plain.pcap", ts=True, sack_ok=True, wscale=True, per_ack=2, seg_mss=1
    )
    fit = fit_path(cap)
    assert fit.segments_per_ack == 2
    assert tcp_lines(fit, "rfc", "cubic") == [
        f"mss_bytes = {MSS_OPTION - 12}",
        "timestamps = false           # the MSS above is the payload the capture carried",
        'cc = "cubic"',
    ]
