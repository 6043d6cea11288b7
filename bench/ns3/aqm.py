"""ns-3's traffic-control queue discs at a dumbbell's bottleneck, as farlink's AQM tests build it.

The bottleneck of crates/farlink-core/tests/integration/aqm.rs (issue 29, "Against ns-3"): N
senders, each on
its own 1 Gbit/s, 1 ms access link to the router R; R--D 10 Mbit/s, 50 ms, its queue at R toward
D a queue disc of 1000 packets: FifoQueueDisc (drop-tail), RedQueueDisc, CoDelQueueDisc,
FqCoDelQueueDisc or PieQueueDisc. One or four unbounded CUBIC flows (TcpCubic, HyStart off as
farlink's CUBIC has none), ECN off or on (TcpSocketBase::UseEcn and the disc's UseEcn). Measured:
goodput from 10 s to the end (the payload the receivers took in), the wait of every packet from
its arrival at the disc to its first bit on the wire after 10 s (farlink's `queue_delay`; the disc's
own SojournTime beside it), median and 95th percentile, and the disc's drops and CE marks over the
whole run (QueueDisc::Stats) and after 10 s. Nothing per packet runs in Python: small C++
sinks of our own, compiled at run time by cppyy, count and keep the sojourns.

Run it with the interpreter of `.venv-ns3` (`make ns3-env`); bench/ns3/README.md says what every
field is. `--grid` runs every cell, one subprocess each, and writes results/ns3_aqm.json.

    .venv-ns3/bin/python bench/ns3/aqm.py --discipline codel --flows 1 --json
    .venv-ns3/bin/python bench/ns3/aqm.py --grid --jobs 1          # make ns3-aqm
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "ns3_aqm.json"

BOTTLENECK_RATE = "10Mbps"
BOTTLENECK_RATE_BPS = 10e6
BOTTLENECK_DELAY = "50ms"
ACCESS_RATE = "1Gbps"
ACCESS_DELAY = "1ms"
QUEUE_LIMIT_PKTS = 1000
# farlink's flows in tests/aqm.rs: mss_bytes 1448 with timestamps, so 1436 bytes of payload in
# 1488-byte IP packets (20 IP + 32 TCP with the timestamp option); ns-3's SegmentSize is the
# payload. Socket buffers of 8 MiB, as the tests' receive_buffer: the window never limits.
SEGMENT_BYTES = 1436
BUFFER_BYTES = 8 << 20
WARM_S = 10.0  # steady state from here, as tests/aqm.rs's WARM_NS

DISCIPLINES = {
    "droptail": "ns3::FifoQueueDisc",
    "red": "ns3::RedQueueDisc",
    "codel": "ns3::CoDelQueueDisc",
    "fq_codel": "ns3::FqCoDelQueueDisc",
    "pie": "ns3::PieQueueDisc",
}

# Each disc's attributes set where ns-3's default differs from farlink's (the value farlink's
# default has; crates/farlink-core/src/links/queue/), as {attribute: (value, ns-3's default,
# why)}. MaxSize is the scenario's 1000-packet limit for every disc.
DISC_SETTINGS = {
    "droptail": {},
    "red": {
        # farlink's RED is FJ93's: p_a = p_b / (1 - count p_b); ns-3's Wait=true spaces drops
        # further (p_b / (2 - count p_b), none before count p_b reaches 1).
        "Wait": ("false", "true", "farlink codes FJ93's count rule without ns-2's wait"),
        # The idle decay's typical transmission time: farlink takes the link's own rate.
        "LinkBandwidth": ("10Mbps", "1500000bps", "farlink uses the link's rate"),
        "LinkDelay": ("50ms", "20ms", "the link's delay (read by ns-3's automatic modes only)"),
    },
    "codel": {},
    "fq_codel": {
        # farlink drops one packet from the fattest queue when over the limit (RFC 8290 4.1);
        # ns-3 drops up to 64 (Linux's drop_batch_size).
        "DropBatchSize": ("1", "64", "farlink drops one packet from the fattest flow queue"),
    },
    # PIE: nothing to set. Its "2 * MEAN_PKTSIZE" floor (RFC 8033 4.1) is 2 packets in ns-3's
    # packet mode (MeanPktSize is read in byte mode only) and 2 x the largest packet seen in
    # farlink's, the same for these full-sized packets.
    "pie": {},
}
# Set through the disc's own setter (not an attribute): FQ-CoDel's quantum, farlink's and RFC
# 8290's 1514 bytes; ns-3 takes the device's MTU (1500) when it is 0, its default.
FQ_CODEL_QUANTUM_BYTES = 1514

_CPP = r"""
#include <algorithm>
#include <deque>
#include <fstream>
#include <vector>
namespace farlink_aqm {
using namespace ns3;

double g_warm = 10.0;
// The wait from the disc's enqueue to the first bit on the wire (the device's PhyTxBegin):
// farlink's queue_delay (arrival to start of serialization), the device's one-packet queue
// included. Packets leave the disc for the device in order and the device sends them in that
// order (its queue is FIFO and never drops: the disc stops while it is full), so each start
// of transmission is the oldest packet handed over; a packet the device refused is requeued
// by the disc and handed over again. (Packet uids cannot be the key: ns-3's TCP cuts its
// segments from the application's writes, and they share the writes' uids.) And the disc's
// own SojournTime (enqueue to its dequeue).
std::deque<int64_t> g_handed_over;     // disc enqueue instants of the packets handed over
std::vector<int64_t> g_wait_ns;        // every packet starting on the wire after g_warm
std::vector<int64_t> g_sojourn_ns;     // every dequeue from the bottleneck's disc after g_warm
uint64_t g_drops_steady = 0, g_marks_steady = 0, g_requeues = 0, g_unmatched = 0;
uint64_t g_dropped_after_dequeue = 0;
std::vector<uint64_t> g_rx_steady;    // payload bytes each receiver took in after g_warm
std::vector<uint64_t> g_rx_total;
// Diagnostics (--trace), filled only when HookDiag was called: see WriteDiag.
struct DiagRow { double t; char kind; uint32_t flow; double value; };
std::vector<DiagRow> g_diag;
bool g_diag_on = false;

bool Steady() { return Simulator::Now().GetSeconds() >= g_warm; }
void OnSojourn(Time t) {
    if (Steady()) g_sojourn_ns.push_back(t.GetNanoSeconds());
}
void OnDequeue(Ptr<const QueueDiscItem> item) {
    g_handed_over.push_back(item->GetTimeStamp().GetNanoSeconds());
}
void OnRequeue(Ptr<const QueueDiscItem>) {
    g_requeues++;
    if (!g_handed_over.empty()) g_handed_over.pop_back();
}
void OnDrop(Ptr<const QueueDiscItem>) {
    if (Steady()) g_drops_steady++;
}
// CoDel drops at the head after taking the packet out of its internal queue, which fires the
// disc's Dequeue trace: that packet is not handed over. Its entry is among the last pushed
// (found by its enqueue instant; none when the disc's Dequeue did not fire for it).
void OnDropAfterDequeue(Ptr<const QueueDiscItem> item, const char*) {
    int64_t ts = item->GetTimeStamp().GetNanoSeconds();
    size_t n = g_handed_over.size();
    for (size_t back = 0; back < std::min<size_t>(n, 4); back++) {
        if (g_handed_over[n - 1 - back] == ts) {
            g_handed_over.erase(g_handed_over.begin() + (n - 1 - back));
            g_dropped_after_dequeue++;
            return;
        }
    }
}
void OnMark(Ptr<const QueueDiscItem>, const char*) {
    if (Steady()) g_marks_steady++;
}
void OnTxBegin(Ptr<const Packet>) {
    if (g_handed_over.empty()) { g_unmatched++; return; }
    if (Steady()) {
        int64_t wait = Simulator::Now().GetNanoSeconds() - g_handed_over.front();
        g_wait_ns.push_back(wait);
        if (g_diag_on) g_diag.push_back({Simulator::Now().GetSeconds(), 'w', 0, wait / 1e6});
    }
    g_handed_over.pop_front();
}
void OnRx(uint32_t flow, Ptr<const Packet> p, const Address&) {
    g_rx_total[flow] += p->GetSize();
    if (Simulator::Now().GetSeconds() >= g_warm) g_rx_steady[flow] += p->GetSize();
}
void Hook(Ptr<QueueDisc> q, Ptr<NetDevice> dev, uint32_t flows, double warm) {
    g_warm = warm;
    g_rx_steady.assign(flows, 0);
    g_rx_total.assign(flows, 0);
    q->TraceConnectWithoutContext("SojournTime", MakeCallback(&OnSojourn));
    q->TraceConnectWithoutContext("Dequeue", MakeCallback(&OnDequeue));
    q->TraceConnectWithoutContext("Requeue", MakeCallback(&OnRequeue));
    q->TraceConnectWithoutContext("Drop", MakeCallback(&OnDrop));
    q->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(&OnDropAfterDequeue));
    q->TraceConnectWithoutContext("Mark", MakeCallback(&OnMark));
    dev->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&OnTxBegin));
}
// The first flow's sender: its window (a change each ACK) and its entries into ns-3's loss
// (retransmission timeout) and CWR (ECN reduction) states, to read its recovery by.
std::vector<double> g_cwnd_t, g_cwnd_segments;
uint64_t g_loss_entries = 0, g_cwr_entries = 0;
uint32_t g_segment = 1;
void OnCwnd(uint32_t, uint32_t n) {
    g_cwnd_t.push_back(Simulator::Now().GetSeconds());
    g_cwnd_segments.push_back(double(n) / g_segment);
}
void OnCongState(TcpSocketState::TcpCongState_t o, TcpSocketState::TcpCongState_t n) {
    if (n == TcpSocketState::CA_LOSS && o != TcpSocketState::CA_LOSS) g_loss_entries++;
    if (n == TcpSocketState::CA_CWR && o != TcpSocketState::CA_CWR) g_cwr_entries++;
}
void HookSenderNow(Ptr<Application> app) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&OnCwnd));
    s->TraceConnectWithoutContext("CongState", MakeCallback(&OnCongState));
}
void HookSender(Ptr<Application> app, uint32_t segment, double start_s) {
    g_segment = segment;
    // BulkSendApplication makes its socket when it starts: hook it just after.
    Simulator::Schedule(Seconds(start_s) + NanoSeconds(1), &HookSenderNow, app);
}
double CwndAt(double t) {
    auto it = std::upper_bound(g_cwnd_t.begin(), g_cwnd_t.end(), t);
    if (it == g_cwnd_t.begin()) return -1;
    return g_cwnd_segments[(it - g_cwnd_t.begin()) - 1];
}
// Diagnostics (--trace): every flow's window changes and congestion states, every drop at
// the bottleneck's disc with the flow it belonged to (by its source address, 10.1.<flow + 1>.1)
// and its TCP sequence number, and (OnTxBegin) every wait after the warm-up, kept in memory and
// written as CSV at the end.
void OnDiagCwnd(uint32_t flow, uint32_t, uint32_t n) {
    g_diag.push_back({Simulator::Now().GetSeconds(), 'c', flow, double(n) / g_segment});
}
void OnDiagState(uint32_t flow, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t n) {
    g_diag.push_back({Simulator::Now().GetSeconds(), 's', flow, double(n)});
}
void OnDiagDrop(Ptr<const QueueDiscItem> item) {
    Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    uint32_t flow = ip ? ((ip->GetHeader().GetSource().Get() >> 8) & 0xff) - 1 : 0xffffffff;
    TcpHeader tcp;
    double seq = -1;
    if (item->GetPacket()->PeekHeader(tcp)) seq = tcp.GetSequenceNumber().GetValue();
    g_diag.push_back({Simulator::Now().GetSeconds(), 'd', flow, seq});
}
void HookDiagSenderNow(Ptr<Application> app, uint32_t flow) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnDiagCwnd, flow));
    s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnDiagState, flow));
}
void HookDiag(Ptr<QueueDisc> q, Ptr<Application> app, uint32_t flow, double start_s) {
    if (!g_diag_on) {
        g_diag_on = true;
        q->TraceConnectWithoutContext("Drop", MakeCallback(&OnDiagDrop));
    }
    Simulator::Schedule(Seconds(start_s) + NanoSeconds(1), &HookDiagSenderNow, app, flow);
}
bool WriteDiag(std::string path) {
    std::ofstream o(path);
    o << "time_s,kind,flow,value\n";
    o.precision(9);
    for (auto& r : g_diag)
        o << r.t << ','
          << (r.kind == 'c' ? "cwnd" : r.kind == 's' ? "state" : r.kind == 'w' ? "wait" : "drop")
          << ',' << r.flow << ',' << r.value << '\n';
    return bool(o);
}
uint64_t LossEntries() { return g_loss_entries; }
uint64_t CwrEntries() { return g_cwr_entries; }

void HookSink(Ptr<Application> app, uint32_t flow) {
    app->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnRx, flow));
}
int64_t Pick(std::vector<int64_t> v, double f) {
    if (v.empty()) return -1;
    size_t k = (size_t)((v.size() - 1) * f);  // the index tests/aqm.rs's pick takes
    std::nth_element(v.begin(), v.begin() + k, v.end());
    return v[k];
}
int64_t WaitPercentile(double f) { return Pick(g_wait_ns, f); }
int64_t SojournPercentile(double f) { return Pick(g_sojourn_ns, f); }
uint64_t WaitCount() { return g_wait_ns.size(); }
uint64_t SojournCount() { return g_sojourn_ns.size(); }
uint64_t DropsSteady() { return g_drops_steady; }
uint64_t MarksSteady() { return g_marks_steady; }
uint64_t Requeues() { return g_requeues; }
uint64_t Unmatched() { return g_unmatched; }
uint64_t DroppedAfterDequeue() { return g_dropped_after_dequeue; }
uint64_t LeftOver() { return g_handed_over.size(); }
uint64_t RxSteady(uint32_t f) { return g_rx_steady[f]; }
uint64_t RxTotal(uint32_t f) { return g_rx_total[f]; }

void SetDevQueue(Ptr<NetDevice> d, uint32_t packets) {
    DynamicCast<PointToPointNetDevice>(d)->GetQueue()->SetMaxSize(
        QueueSize(QueueSizeUnit::PACKETS, packets));
}
void SetFqQuantum(Ptr<QueueDisc> q, uint32_t bytes) {
    DynamicCast<FqCoDelQueueDisc>(q)->SetQuantum(bytes);
}
uint32_t FqQuantum(Ptr<QueueDisc> q) { return DynamicCast<FqCoDelQueueDisc>(q)->GetQuantum(); }

// The disc's counters by reason; the names are ns-3's (QueueDisc::Stats).
std::string StatsText(Ptr<QueueDisc> q) {
    std::ostringstream o;
    q->GetStats().Print(o);
    return o.str();
}
uint64_t Dropped(Ptr<QueueDisc> q) { return q->GetStats().nTotalDroppedPackets; }
uint64_t Marked(Ptr<QueueDisc> q) { return q->GetStats().nTotalMarkedPackets; }
uint64_t Received(Ptr<QueueDisc> q) { return q->GetStats().nTotalReceivedPackets; }
std::string DroppedByReason(Ptr<QueueDisc> q) {
    std::ostringstream o;
    for (auto& [k, v] : q->GetStats().nDroppedPacketsBeforeEnqueue)
        o << "before:" << k << "=" << v << ";";
    for (auto& [k, v] : q->GetStats().nDroppedPacketsAfterDequeue)
        o << "after:" << k << "=" << v << ";";
    return o.str();
}
std::string MarkedByReason(Ptr<QueueDisc> q) {
    std::ostringstream o;
    for (auto& [k, v] : q->GetStats().nMarkedPackets) o << k << "=" << v << ";";
    return o.str();
}
}  // namespace farlink_aqm
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--discipline", choices=sorted(DISCIPLINES), default="codel")
    ap.add_argument("--flows", type=int, default=1)
    ap.add_argument("--ecn", action="store_true", help="ECN on the sockets and the disc")
    ap.add_argument("--duration", type=float, default=40.0, help="simulated seconds")
    ap.add_argument("--seed", type=int, default=1, help="ns-3 RngSeedManager seed")
    ap.add_argument("--run", type=int, default=1, help="ns-3 RngSeedManager run (substream)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument(
        "--stagger-ms",
        type=float,
        default=0.0,
        help="diagnosis: flow i starts at i times this (default 0: every flow at 0)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="ATTR=VALUE",
        help="diagnosis: an extra ns-3 default, e.g. ns3::TcpCubic::Beta=0.7 (repeatable)",
    )
    ap.add_argument(
        "--prr-sack-delivered",
        action="store_true",
        help="diagnosis: the senders' PRR counts only SACKed bytes as delivered on a duplicate "
        "ACK (ns-3 3.44's TcpPrrRecovery adds a segment more)",
    )
    ap.add_argument(
        "--trace",
        type=Path,
        help="diagnosis: write every flow's cwnd (segments) and congestion state changes, "
        "every drop at the disc (flow, TCP sequence number) and every packet's queue delay "
        "after the warm-up (ms) to this CSV",
    )
    ap.add_argument("--grid", action="store_true", help="every cell; writes results/ns3_aqm.json")
    ap.add_argument("--jobs", type=int, default=1, help="cells at a time with --grid")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results file of --grid")
    a = ap.parse_args(argv)
    if a.flows < 1:
        ap.error(f"--flows: expected at least 1, got {a.flows}")
    if a.duration <= WARM_S:
        ap.error(f"--duration: expected more than the {WARM_S:g} s warm-up, got {a.duration}")
    if a.stagger_ms < 0 or (a.flows - 1) * a.stagger_ms / 1e3 >= WARM_S:
        ap.error(f"--stagger-ms: every flow must start before {WARM_S:g} s, got {a.stagger_ms}")
    for item in a.set:
        name, eq, _ = item.partition("=")
        if not eq or not name.startswith("ns3::") or name.count("::") < 2:
            ap.error(f"--set: expected ns3::Type::Attribute=VALUE, got {item!r}")
    if a.seed < 1 or a.run < 1 or a.jobs < 1:
        ap.error("--seed, --run and --jobs: expected integers >= 1")
    return a


def install_disc(ns, cpp, discipline: str, ecn: bool, device):
    """The bottleneck's disc on R's device toward D; {attribute: value} as set."""
    tch = ns.TrafficControlHelper()
    type_id = DISCIPLINES[discipline]
    tch.SetRootQueueDisc(type_id)
    tch.Uninstall(device)
    qdiscs = tch.Install(device)
    q = qdiscs.Get(0)
    q.SetAttribute("MaxSize", ns.StringValue(f"{QUEUE_LIMIT_PKTS}p"))
    settings = {"MaxSize": f"{QUEUE_LIMIT_PKTS}p"}
    for name, (value, _, _) in DISC_SETTINGS[discipline].items():
        q.SetAttribute(name, ns.StringValue(value))
        settings[name] = value
    if discipline != "droptail":
        q.SetAttribute("UseEcn", ns.BooleanValue(ecn))
        settings["UseEcn"] = ecn
    if discipline == "fq_codel":
        cpp.SetFqQuantum(q, FQ_CODEL_QUANTUM_BYTES)
        settings["quantum (SetQuantum)"] = FQ_CODEL_QUANTUM_BYTES
    return q, settings


def build(ns, cpp, flows: int):
    """Senders S0.., router R, receiver D; every device's own queue disc removed but the
    bottleneck's (installed by install_disc)."""
    senders = ns.NodeContainer()
    senders.Create(flows)
    pair = ns.NodeContainer()
    pair.Create(2)
    r, d = pair.Get(0), pair.Get(1)
    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.StringValue(ACCESS_RATE))
    access.SetChannelAttribute("Delay", ns.StringValue(ACCESS_DELAY))
    neck = ns.PointToPointHelper()
    neck.SetDeviceAttribute("DataRate", ns.StringValue(BOTTLENECK_RATE))
    neck.SetChannelAttribute("Delay", ns.StringValue(BOTTLENECK_DELAY))
    access_devs = [access.Install(senders.Get(i), r) for i in range(flows)]
    neck_devs = neck.Install(r, d)
    stack = ns.InternetStackHelper()
    stack.Install(senders)
    stack.Install(pair)
    addr = ns.Ipv4AddressHelper()
    for i, devs in enumerate(access_devs):
        addr.SetBase(ns.Ipv4Address(f"10.1.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(devs)
    addr.SetBase(ns.Ipv4Address("10.2.1.0"), ns.Ipv4Mask("255.255.255.0"))
    neck_if = addr.Assign(neck_devs)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    # Address assignment installs an FqCoDel disc on every device: none anywhere but the
    # bottleneck's, whose device queue holds one packet so that the disc holds the queue (the
    # usual ns-3 AQM set-up); the other devices' own queues are farlink's 1000 packets.
    tch = ns.TrafficControlHelper()
    for devs in access_devs:
        tch.Uninstall(devs)
        cpp.SetDevQueue(devs.Get(0), QUEUE_LIMIT_PKTS)
        cpp.SetDevQueue(devs.Get(1), QUEUE_LIMIT_PKTS)
    tch.Uninstall(neck_devs.Get(1))
    cpp.SetDevQueue(neck_devs.Get(1), QUEUE_LIMIT_PKTS)
    cpp.SetDevQueue(neck_devs.Get(0), 1)
    return senders, d, neck_devs, neck_if


def parse_reasons(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in filter(None, text.split(";")):
        name, _, value = item.rpartition("=")
        out[name] = int(value)
    return out


def use_prr_sack_delivered(ns, app, start_s: float) -> None:
    """bench/ns3/prr.py's recovery on this sender (--prr-sack-delivered)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import prr

    prr.use_prr_sack_delivered(ns, app, start_s)


def run(a: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    from ns import ns  # about 5 s: cppyy loads and parses the ns-3 headers

    t_import = time.perf_counter() - t0
    ns.cppyy.cppdef(_CPP)
    cpp = ns.cppyy.gbl.farlink_aqm
    ns.RngSeedManager.SetSeed(a.seed)
    ns.RngSeedManager.SetRun(a.run)
    socket_defaults = {
        "ns3::TcpL4Protocol::SocketType": "ns3::TcpCubic",
        # farlink's CUBIC has no HyStart (docs/congestion-control.md); ns-3's default is on
        "ns3::TcpCubic::HyStart": "false",
        "ns3::TcpSocket::SegmentSize": str(SEGMENT_BYTES),
        "ns3::TcpSocket::SndBufSize": str(BUFFER_BYTES),
        "ns3::TcpSocket::RcvBufSize": str(BUFFER_BYTES),
        "ns3::TcpSocketBase::UseEcn": "On" if a.ecn else "Off",
    }
    for name, value in socket_defaults.items():
        if not ns.Config.SetDefaultFailSafe(name, ns.StringValue(value)):
            raise SystemExit(f"ns-3 has no attribute {name!r} that accepts {value!r}")
    for item in a.set:
        name, _, value = item.partition("=")
        if not ns.Config.SetDefaultFailSafe(name, ns.StringValue(value)):
            raise SystemExit(f"--set: ns-3 has no attribute {name!r} that accepts {value!r}")

    senders, d, neck_devs, neck_if = build(ns, cpp, a.flows)
    disc, disc_settings = install_disc(ns, cpp, a.discipline, a.ecn, neck_devs.Get(0))
    cpp.Hook(disc, neck_devs.Get(0), a.flows, WARM_S)

    sinks = []
    for i in range(a.flows):
        port = 9 + i
        sink = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
        ).Install(d)
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(neck_if.GetAddress(1), port).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        send = bulk.Install(senders.Get(i))
        start_s = i * a.stagger_ms / 1e3
        sink.Start(ns.Seconds(0.0))
        send.Start(ns.Seconds(start_s))
        for apps in (sink, send):
            apps.Stop(ns.Seconds(a.duration))
        cpp.HookSink(sink.Get(0), i)
        if i == 0:
            cpp.HookSender(send.Get(0), SEGMENT_BYTES, start_s)
        if a.trace:
            cpp.HookDiag(disc, send.Get(0), i, start_s)
        if a.prr_sack_delivered:
            use_prr_sack_delivered(ns, send.Get(0), start_s)
        sinks.append(sink)

    ns.Simulator.Stop(ns.Seconds(a.duration))
    t1 = time.perf_counter()
    ns.Simulator.Run()
    t_run = time.perf_counter() - t1
    events = int(ns.Simulator.GetEventCount())
    if a.trace and not cpp.WriteDiag(str(a.trace)):
        raise SystemExit(f"--trace: could not write {a.trace}")

    steady_s = a.duration - WARM_S
    per_flow = [int(cpp.RxSteady(i)) * 8 / steady_s for i in range(a.flows)]
    quantum = int(cpp.FqQuantum(disc)) if a.discipline == "fq_codel" else None
    result = {
        "engine": "ns-3",
        "ns3_version": _ns3_version(),
        "inputs": {
            "discipline": a.discipline,
            "flows": a.flows,
            "ecn": a.ecn,
            "duration_s": a.duration,
            "warm_s": WARM_S,
            "seed": a.seed,
            "run": a.run,
            # only when set (the grid's cells start every flow at 0)
            **({"stagger_ms": a.stagger_ms} if a.stagger_ms else {}),
            **({"set": a.set} if a.set else {}),
            **({"prr_sack_delivered": True} if a.prr_sack_delivered else {}),
        },
        "topology": {
            "bottleneck": {"rate": BOTTLENECK_RATE, "delay": BOTTLENECK_DELAY},
            "access": {"rate": ACCESS_RATE, "delay": ACCESS_DELAY},
            "queue_disc": DISCIPLINES[a.discipline],
            "queue_limit_pkts": QUEUE_LIMIT_PKTS,
            "bottleneck_device_queue_pkts": 1,
            "segment_bytes": SEGMENT_BYTES,
            "ip_packet_bytes": SEGMENT_BYTES + 52,
            "socket_buffers_bytes": BUFFER_BYTES,
        },
        "socket_defaults": socket_defaults,
        "disc_settings": disc_settings,
        # ns-3's defaults that differ from farlink's, set to farlink's (the value, ns-3's own
        # default, why)
        "disc_defaults_changed": {
            k: {"value": v, "ns3_default": d_, "why": w}
            for k, (v, d_, w) in DISC_SETTINGS[a.discipline].items()
        },
        "fq_codel_quantum_bytes": quantum,
        "goodput_bps": sum(per_flow),
        "goodput_flows_bps": per_flow,
        "normalized_goodput": sum(per_flow) / BOTTLENECK_RATE_BPS,
        "delivered_bytes": sum(int(cpp.RxTotal(i)) for i in range(a.flows)),
        # arrival at the disc to the first bit on the wire, after the warm-up: farlink's
        # queue_delay; the disc's own SojournTime (to its dequeue, the device's one-packet
        # queue left out) beside it
        "queue_delay_ms": {
            "p50": int(cpp.WaitPercentile(0.5)) / 1e6,
            "p95": int(cpp.WaitPercentile(0.95)) / 1e6,
            "samples": int(cpp.WaitCount()),
            # starts of transmission with no packet handed over (must be 0) and requeues
            "unmatched": int(cpp.Unmatched()),
            "requeues": int(cpp.Requeues()),
            # handed over at the end (at most the device's one packet and the one on the wire
            # when the matching holds) and drops taken back out of the hand-over line
            "left_over": int(cpp.LeftOver()),
            "dropped_after_dequeue": int(cpp.DroppedAfterDequeue()),
        },
        "disc_sojourn_ms": {
            "p50": int(cpp.SojournPercentile(0.5)) / 1e6,
            "p95": int(cpp.SojournPercentile(0.95)) / 1e6,
            "samples": int(cpp.SojournCount()),
        },
        "disc": {
            "received": int(cpp.Received(disc)),
            "dropped": int(cpp.Dropped(disc)),
            "marked": int(cpp.Marked(disc)),
            "dropped_after_warm": int(cpp.DropsSteady()),
            "marked_after_warm": int(cpp.MarksSteady()),
            "dropped_by_reason": parse_reasons(str(cpp.DroppedByReason(disc))),
            "marked_by_reason": parse_reasons(str(cpp.MarkedByReason(disc))),
        },
        # the first flow's sender: its window at a few instants (segments) and its entries
        # into ns-3's loss state (a retransmission timeout) and CWR state (an ECN reduction)
        "flow0": {
            "cwnd_segments_at_s": {
                f"{t:g}": round(float(cpp.CwndAt(t)), 1) for t in (2, 5, 8, 10, 12, 15, 20, 30)
            },
            "loss_state_entries": int(cpp.LossEntries()),
            "cwr_state_entries": int(cpp.CwrEntries()),
        },
        "events": events,
        "wall_import_s": t_import,
        "wall_run_s": t_run,
    }
    ns.Simulator.Destroy()
    return result


def _ns3_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ns3")
    except PackageNotFoundError:
        return "unknown"


def cells() -> list[tuple[str, int, bool]]:
    """The issue's grid: every disc, one and four flows, ECN off and on (drop-tail marks
    nothing, so only without)."""
    out = []
    for discipline in DISCIPLINES:
        for flows in (1, 4):
            for ecn in (False, True):
                if discipline == "droptail" and ecn:
                    continue
                out.append((discipline, flows, ecn))
    return out


def run_cell(cell: tuple[str, int, bool], a: argparse.Namespace) -> dict:
    discipline, flows, ecn = cell
    argv = [sys.executable, str(Path(__file__).resolve()), "--json", "--discipline", discipline]
    argv += ["--flows", str(flows), "--duration", str(a.duration)]
    argv += ["--seed", str(a.seed), "--run", str(a.run)] + (["--ecn"] if ecn else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ns-3 cell {cell} failed:\n{done.stderr[-2000:]}")
    print(f"  {discipline} flows={flows} ecn={ecn}: done", file=sys.stderr, flush=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def grid(a: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    todo = cells()
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        records = list(pool.map(lambda c: run_cell(c, a), todo))
    doc = {
        "engine": "ns-3",
        "ns3_version": records[0]["ns3_version"],
        "command": f"bench/ns3/aqm.py --grid --duration {a.duration:g} --seed {a.seed} "
        f"--run {a.run}",
        "wall_grid_s": time.perf_counter() - t0,
        "records": records,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, a.out)
    print(f"wrote {a.out} ({len(records)} cells, {doc['wall_grid_s']:.0f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.grid:
        return grid(a)
    res = run(a)
    if a.json:
        print(json.dumps(res))
        return 0
    i = res["inputs"]
    print(f"ns-3 {res['ns3_version']} {i['discipline']} flows={i['flows']} ecn={i['ecn']}")
    for key in ("goodput_bps", "normalized_goodput", "queue_delay_ms", "disc", "events"):
        print(f"  {key}: {res[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
