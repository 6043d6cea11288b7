"""Queue disciplines and ECN in the emulator, in real time (docs/scenarios.md, queue
disciplines): CoDel marks CE in the real IPv4 header of kernel TCP's ECT packets, and kernel
CUBIC with ``net.ipv4.tcp_ecn=1`` (set from ``tcp.ecn``) answers the marks, so the queue drops
nothing. These make network namespaces and TUN devices; without CAP_NET_ADMIN or /dev/net/tun
they are skipped, saying which.

(The issue's comparison against Linux's own ``red`` qdisc cannot run on this kernel: it has no
AQM qdisc, CONFIG_NET_SCH_RED, _CODEL, _FQ_CODEL and _PIE being unset.)"""

from farlink.emulate import emulate
from support import REAL_TIME, needs_namespaces

pytestmark = [REAL_TIME, needs_namespaces("emulator")]


def codel_run(ecn: bool) -> dict:
    doc = {
        "duration": "8s",
        "nodes": ["S", "D"],
        "links": [
            {
                "a": "S",
                "b": "D",
                "rate": "10Mbps",
                "delay": "50ms",
                "queue_pkts": 1000,
                "queue_discipline": "codel",
                "aqm": {"target": "5ms"},
            }
        ],
        "flows": [
            {
                "from": "S",
                "to": "D",
                "app": {"kind": "unbounded"},
                "tcp": {"cc": "cubic", "ecn": ecn, "receive_buffer": "8MiB"},
            }
        ],
    }
    return emulate(doc, sender="kernel").summary


def test_kernel_cubic_with_ecn_is_marked_not_dropped_by_codel():
    on, off = codel_run(True), codel_run(False)
    fwd_on, fwd_off = on["links"][0]["fwd"], off["links"][0]["fwd"]
    # With ECN the kernel's data leaves ECT(0): CoDel marks, and the kernel, reading CE in the
    # header the emulator rewrote, reduces; unanswered marks would fill the 1000 packets.
    assert fwd_on["ce_marked"] > 0
    # The receiver's kernel counted them arriving CE (IpExt InCEPkts), so the mark was in the
    # real header it read.
    assert on["flows"][0]["ce_marked"] == fwd_on["ce_marked"]
    assert "ce_marked" not in off["flows"][0]
    assert on["drops"]["aqm"] == 0 and on["drops"]["queue_overflow"] == 0
    assert on["retransmissions"] == 0
    # Without, the same queue drops instead, and marks nothing.
    assert fwd_off["ce_marked"] == 0 and off["drops"]["aqm"] > 0
    # Over 8 s with slow start: 6.8 Mbit/s with ECN, 8.4 without, in three runs each (the
    # kernel's answer to 5 marks costs more than to 5 losses here; not explained yet).
    assert on["goodput_bps"] > 0.6 * 10e6
