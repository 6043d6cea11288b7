"""One ns-3 run of a seed-003 path: bulk TCP over a chain of point-to-point links, one lossy.

`stpd-wireless`, seed 003 section 4.4.1 (Figure 4.7, 4.8): S--R 10 Mbps 0.1 ms, R--D 1.5 Mbps
80 ms, a 30-packet DropTail buffer at R, uniform packet loss on the wireless hop in the data
direction. `stpd-geo-t1`, section 4.4.2 (Figure 4.18): S--R1 10 Mbps 0.2 ms, R1--R2 (the GEO T1)
1.5 Mbps 250 ms, R2--D 10 Mbps 0.2 ms, loss on the satellite hop. 1000-byte packets on both. This
script only *uses* ns-3 (the PyPI package `ns3`, through its cppyy bindings); run it with the
interpreter of `.venv-ns3` (`make ns3-env`). See bench/ns3/README.md for every field.

    .venv-ns3/bin/python bench/ns3/stpd_wireless.py --loss 0.01 --sack --variant newreno --json
    .venv-ns3/bin/python bench/ns3/stpd_wireless.py --scenario stpd-geo-t1 --variant cubic --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

CAPACITY_BPS = 1.5e6  # the lossy 1.5 Mbps link of both paths, the bottleneck
IP_PACKET_BYTES = 1000  # the seed's "packet size is 1000 bytes", taken as the whole IP packet
IPV4_HEADER_BYTES = 20
TCP_HEADER_BYTES_WITH_TS = 32  # 20 + timestamp option (10) padded to a multiple of 4

# The paths, as farlink's presets of the same names: links in order from the sender (rate,
# one-way delay, DropTail limit in packets of the device queue sending away from the sender),
# the index of the lossy (bottleneck) link, the socket buffers (None: ns-3's 128 KiB, which the
# wireless path never fills) and the default run length.
SCENARIOS = {
    "stpd-wireless": {
        "links": [("10Mbps", "0.1ms", 100), ("1.5Mbps", "80ms", 30)],
        "lossy": 1,
        "buffer_bytes": None,
        "duration_s": 100.0,
    },
    "stpd-geo-t1": {
        # queues "not given" in the seed; farlink's preset takes 100 packets (ns-3's default)
        "links": [("10Mbps", "0.2ms", 100), ("1.5Mbps", "250ms", 100), ("10Mbps", "0.2ms", 100)],
        "lossy": 1,
        # farlink's preset: receive_buffer 1 MiB, above the path's ~94-packet BDP + 100 queued
        "buffer_bytes": 1 << 20,
        "duration_s": 60.0,
    },
}

# farlink's controller names -> ns-3 TypeIds. The `-diag` entries are not ns-3 controllers but
# our own subclasses (defined in _CPP_HELPERS) that change one rule of ns-3's, to test an
# explanation of a gap (docs/validation-notes.md); never part of a comparison table.
VARIANTS = {
    "newreno": "ns3::TcpNewReno",
    "linuxreno": "ns3::TcpLinuxReno",
    "cubic": "ns3::TcpCubic",
    "bbr": "ns3::TcpBbr",
    "hybla": "ns3::TcpHybla",
    "vegas": "ns3::TcpVegas",
    "westwood": "ns3::TcpWestwoodPlus",
    "newreno-cwnd-ssthresh-diag": "ns3::TcpNewReno",
    "linuxreno-no-exit-credit-diag": "ns3::TcpLinuxReno",
    "linuxreno-fresh-count-diag": "ns3::TcpLinuxReno",
}
# the C++ class each diagnostic variant installs (g_diag in _CPP_HELPERS)
DIAGNOSTIC_CLASSES = {
    "newreno-cwnd-ssthresh-diag": 1,
    "linuxreno-no-exit-credit-diag": 2,
    "linuxreno-fresh-count-diag": 3,
}
# ns-3 defaults that differ from farlink's controller defaults (docs/congestion-control.md), set
# to farlink's so that the same algorithm is compared: Hybla's reference RTT (ns-3 50 ms, the
# paper and farlink 25 ms), Vegas' alpha/beta (ns-3 2/4, ns-2 and farlink 1/3), CUBIC's HyStart
# (farlink has none). BBR in ns-3 needs pacing (farlink's BBR paces).
VARIANT_DEFAULTS = {
    "hybla": {"ns3::TcpHybla::RRTT": "25ms"},
    "vegas": {"ns3::TcpVegas::Alpha": "1", "ns3::TcpVegas::Beta": "3", "ns3::TcpVegas::Gamma": "1"},
    "cubic": {"ns3::TcpCubic::HyStart": "false"},
    "bbr": {"ns3::TcpSocketState::EnablePacing": "true"},
}

# Counters filled by C++ trace sinks, so that nothing per packet runs in Python (which would both
# slow ns-3 down and make its events-per-second figure meaningless).
_CPP_HELPERS = r"""
#include <algorithm>
#include <fstream>
#include <string>
namespace farlink_ns3 {
using namespace ns3;

struct Stats {
    uint32_t segSize = 0;
    uint64_t dataTx = 0, dataTxBytes = 0, shortDataTx = 0, retx = 0;
    uint32_t maxIpPacket = 0, highTx = 0;
    uint64_t rtoExpirations = 0, lossEntries = 0, recoveryEntries = 0;
    uint64_t dropQueueR = 0, dropTcR = 0, dropQueueS = 0, dropTcS = 0, dropError = 0;
    double establishedAt = -1.0;
    double cwndArea = 0.0, cwndSince = -1.0; uint32_t cwnd = 0, cwndMax = 0;
    double qArea = 0.0, qSince = 0.0; uint32_t q = 0, qMax = 0;
    double rhoFirst = -1.0, rhoLast = 1.0, rhoMax = 1.0; uint64_t rhoChanges = 0;
    bool rhoHooked = false;
};
Stats g;
Ptr<ErrorModel> g_errorModel;

// Diagnostic controllers (see VARIANTS): each changes one rule of its ns-3 parent.
// ssthresh = cwnd / 2 (RFC 5681 eq. (4) with FlightSize as cwnd-limited data, Limited Transmit
// segments excluded) instead of ns-3's pipe / 2 (BytesInFlight, which leaves out the segments
// SACKed and the ones marked lost).
class NewRenoCwndSsthresh : public TcpNewReno {
  public:
    uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t) override {
        return std::max(2 * tcb->m_segmentSize, tcb->m_cWnd.Get() / 2);
    }
};
// No window growth on the ACK that ends fast recovery: ns-3 calls IncreaseWindow with every
// segment that ACK covers, including those SACKed (and counted) during recovery.
class LinuxRenoNoExitCredit : public TcpLinuxReno {
  public:
    bool exiting = false;
    void CongestionStateSet(Ptr<TcpSocketState> tcb,
                            const TcpSocketState::TcpCongState_t s) override {
        exiting = tcb->m_congState == TcpSocketState::CA_RECOVERY && s == TcpSocketState::CA_OPEN;
        TcpLinuxReno::CongestionStateSet(tcb, s);
    }
    void IncreaseWindow(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override {
        if (exiting) { exiting = false; return; }
        TcpLinuxReno::IncreaseWindow(tcb, segmentsAcked);
    }
};
// As LinuxRenoNoExitCredit, and the congestion-avoidance segment counter starts from 0 at each
// reduction (ns-3 keeps TcpLinuxReno::m_cWndCnt across it). The counting is TcpLinuxReno's
// CongestionAvoidance (one segment per cwnd segments acknowledged) with a counter of our own.
class LinuxRenoFreshCount : public LinuxRenoNoExitCredit {
  public:
    uint32_t count = 0;
    uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t inFlight) override {
        count = 0;
        return TcpLinuxReno::GetSsThresh(tcb, inFlight);
    }
    void CongestionAvoidance(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override {
        uint32_t w = std::max<uint32_t>(1, tcb->m_cWnd / tcb->m_segmentSize);
        count += segmentsAcked;
        if (count >= w) {
            uint32_t delta = count / w;
            count -= delta * w;
            tcb->m_cWnd += delta * tcb->m_segmentSize;
        }
    }
};
int g_diag = 0;  // 1: NewRenoCwndSsthresh, 2: LinuxRenoNoExitCredit, 3: LinuxRenoFreshCount
std::ofstream g_trace;  // optional event log: time_s,event,value

void Log(const char* what, double value) {
    if (g_trace.is_open()) {
        g_trace << Simulator::Now().GetSeconds() << ',' << what << ',' << value << '\n';
    }
}
void OpenTrace(const std::string& path) {
    g_trace.open(path);
    g_trace.precision(9);
    g_trace << "time_s,event,value\n";
}
void CloseTrace() { if (g_trace.is_open()) g_trace.close(); }

void OnTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
    uint32_t n = p->GetSize();
    if (n == 0) return;
    g.dataTx++; g.dataTxBytes += n;
    if (n < g.segSize) g.shortDataTx++;
    g.maxIpPacket = std::max(g.maxIpPacket, 20u + h.GetSerializedSize() + n);
}
void OnRetx(Ptr<const Packet>, const TcpHeader&, const Address&, const Address&,
            Ptr<const TcpSocketBase>) { g.retx++; }
void OnRetxSeq(Ptr<const Packet>, const TcpHeader& h, const Address&, const Address&,
               Ptr<const TcpSocketBase>) { Log("retx", h.GetSequenceNumber().GetValue()); }
void OnSsthresh(uint32_t, uint32_t n) { Log("ssthresh", n); }
void OnRho(double, double n) {
    // ns-3's TcpHybla::m_rho (a TracedValue): does it ever leave its initial 1?
    if (g.rhoFirst < 0) g.rhoFirst = Simulator::Now().GetSeconds();
    g.rhoChanges++; g.rhoLast = n; g.rhoMax = std::max(g.rhoMax, n);
    Log("rho", n);
}
void OnHighTx(SequenceNumber32, SequenceNumber32 n) { Log("high_tx", n.GetValue()); }
void OnInFlight(uint32_t, uint32_t n) { Log("in_flight", n); }
void OnRx(Ptr<const Packet>, const TcpHeader& h, Ptr<const TcpSocketBase>) {
    Log("ack", h.GetAckNumber().GetValue());
}
void OnRto(Time oldV, Time newV) {
    // TcpSocketBase::ReTxTimeout doubles the RTO (capped at 60 s); an RTT sample never yields
    // exactly twice the previous value in practice, so a doubling marks one expiration.
    if (newV != oldV && newV == Min(oldV + oldV, Seconds(60))) {
        g.rtoExpirations++;
        Log("timeout", newV.GetSeconds());
    }
}
void OnCongState(TcpSocketState::TcpCongState_t o, TcpSocketState::TcpCongState_t n) {
    if (n == TcpSocketState::CA_LOSS && o != TcpSocketState::CA_LOSS) g.lossEntries++;
    if (n == TcpSocketState::CA_RECOVERY && o != TcpSocketState::CA_RECOVERY) g.recoveryEntries++;
    Log("state", n);
}
void OnCwnd(uint32_t, uint32_t n) {
    double t = Simulator::Now().GetSeconds();
    if (g.cwndSince >= 0) g.cwndArea += g.cwnd * (t - g.cwndSince);
    g.cwndSince = t; g.cwnd = n; g.cwndMax = std::max(g.cwndMax, n);
    Log("cwnd", n);
}
void OnState(TcpSocket::TcpStates_t, TcpSocket::TcpStates_t n) {
    if (n == TcpSocket::ESTABLISHED && g.establishedAt < 0) {
        g.establishedAt = Simulator::Now().GetSeconds();
        if (g_errorModel) g_errorModel->Enable();
    }
}
void OnQueueR(uint32_t, uint32_t n) {
    double t = Simulator::Now().GetSeconds();
    g.qArea += g.q * (t - g.qSince); g.qSince = t; g.q = n; g.qMax = std::max(g.qMax, n);
}
void OnDropQueueR(Ptr<const Packet>) { g.dropQueueR++; Log("drop_queue_r", 0); }
void OnDropTcR(Ptr<const Packet>) { g.dropTcR++; Log("drop_queue_r", 0); }
void OnDropQueueS(Ptr<const Packet>) { g.dropQueueS++; }
void OnDropTcS(Ptr<const Packet>) { g.dropTcS++; }
void OnDropError(Ptr<const Packet> p) {
    g.dropError++;
    if (g_trace.is_open()) {
        Ptr<Packet> c = p->Copy();
        Ipv4Header ip; c->RemoveHeader(ip);
        TcpHeader h; c->PeekHeader(h);
        Log("drop_wireless", h.GetSequenceNumber().GetValue());
    }
}

Ptr<Queue<Packet>> TxQueue(Ptr<NetDevice> d) {
    return DynamicCast<PointToPointNetDevice>(d)->GetQueue();
}
void SetQueuePackets(Ptr<NetDevice> d, uint32_t packets) {
    TxQueue(d)->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, packets));
}
uint32_t QueueLimitPackets(Ptr<NetDevice> d) { return TxQueue(d)->GetMaxSize().GetValue(); }

void HookNetwork(Ptr<NetDevice> sOut, Ptr<NetDevice> rOut, Ptr<NetDevice> dIn,
                 Ptr<Node> s, Ptr<Node> r, Ptr<ErrorModel> em) {
    // sOut: the sender's device; rOut: the device sending onto the lossy link (its queue is
    // the bottleneck's, "queue_r"); dIn: the device receiving from it (the error model's).
    g_errorModel = em;
    TxQueue(rOut)->TraceConnectWithoutContext("Drop", MakeCallback(&OnDropQueueR));
    TxQueue(rOut)->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&OnQueueR));
    TxQueue(sOut)->TraceConnectWithoutContext("Drop", MakeCallback(&OnDropQueueS));
    r->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop",
                                                                  MakeCallback(&OnDropTcR));
    s->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop",
                                                                  MakeCallback(&OnDropTcS));
    dIn->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnDropError));
}

void HookSenderNow(Ptr<Application> app) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    if (g_diag == 1) {
        DynamicCast<TcpSocketBase>(s)->SetCongestionControlAlgorithm(
            CreateObject<NewRenoCwndSsthresh>());
    } else if (g_diag == 2) {
        DynamicCast<TcpSocketBase>(s)->SetCongestionControlAlgorithm(
            CreateObject<LinuxRenoNoExitCredit>());
    } else if (g_diag == 3) {
        DynamicCast<TcpSocketBase>(s)->SetCongestionControlAlgorithm(
            CreateObject<LinuxRenoFreshCount>());
    }
    {
        PointerValue cc;
        s->GetAttribute("CongestionOps", cc);
        // only Hybla has this trace source; the call is a no-op for the others
        g.rhoHooked =
            cc.Get<TcpCongestionOps>()->TraceConnectWithoutContext("Rho", MakeCallback(&OnRho));
    }
    s->TraceConnectWithoutContext("Tx", MakeCallback(&OnTx));
    s->TraceConnectWithoutContext("RTO", MakeCallback(&OnRto));
    s->TraceConnectWithoutContext("CongState", MakeCallback(&OnCongState));
    s->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&OnCwnd));
    s->TraceConnectWithoutContext("State", MakeCallback(&OnState));
    if (g_trace.is_open()) {
        s->TraceConnectWithoutContext("SlowStartThreshold", MakeCallback(&OnSsthresh));
        s->TraceConnectWithoutContext("Rx", MakeCallback(&OnRx));
        s->TraceConnectWithoutContext("Retransmission", MakeCallback(&OnRetxSeq));
        s->TraceConnectWithoutContext("HighestSequence", MakeCallback(&OnHighTx));
        s->TraceConnectWithoutContext("BytesInFlight", MakeCallback(&OnInFlight));
    }
}
void HookSender(Ptr<Application> app, uint32_t segSize, double startS) {
    g.segSize = segSize;
    app->TraceConnectWithoutContext("TcpRetransmission", MakeCallback(&OnRetx));
    // BulkSendApplication creates its socket when it starts; hook it just after.
    Simulator::Schedule(Seconds(startS) + NanoSeconds(1), &HookSenderNow, app);
}
void Finish() {
    OnCwnd(0, g.cwnd);
    OnQueueR(0, g.q);
}

Ptr<Object> SenderSocket(Ptr<Application> app) {
    return DynamicCast<BulkSendApplication>(app)->GetSocket();
}
Ptr<Object> ReceiverSocket(Ptr<Application> app) {
    auto l = DynamicCast<PacketSink>(app)->GetAcceptedSockets();
    return l.empty() ? Ptr<Object>() : Ptr<Object>(l.front());
}
uint64_t SinkRxBytes(Ptr<Application> app) { return DynamicCast<PacketSink>(app)->GetTotalRx(); }
std::string Attr(Ptr<Object> o, const std::string& name) {
    TypeId::AttributeInformation info;
    if (!o->GetInstanceTypeId().LookupAttributeByName(name, &info)) return "missing";
    if (!info.accessor->HasGetter()) {
        // write-only attributes (UseEcn): what was set is unreadable; we set none, so the default
        return info.initialValue->SerializeToString(info.checker);
    }
    StringValue v; o->GetAttribute(name, v); return v.Get();
}
std::string PointedType(Ptr<Object> o, const std::string& name) {
    PointerValue v; o->GetAttribute(name, v);
    Ptr<Object> p = v.Get<Object>();
    return p ? p->GetInstanceTypeId().GetName() : std::string("none");
}
std::string DefaultAttr(const std::string& type, const std::string& name) {
    TypeId tid = TypeId::LookupByName(type);
    TypeId::AttributeInformation info;
    tid.LookupAttributeByName(name, &info);
    return info.initialValue->SerializeToString(info.checker);
}
}  // namespace farlink_ns3
"""

SENDER_ATTRS = [
    "SegmentSize",
    "InitialCwnd",
    "InitialSlowStartThreshold",
    "SndBufSize",
    "RcvBufSize",
    "Sack",
    "Timestamp",
    "WindowScaling",
    "MinRto",
    "ClockGranularity",
    "ReTxThreshold",
    "LimitedTransmit",
    "UseEcn",
    "TcpNoDelay",
    "DelAckCount",
    "DelAckTimeout",
    "ConnTimeout",
    "DataRetries",
]
RECEIVER_ATTRS = [
    "DelAckCount",
    "DelAckTimeout",
    "Sack",
    "Timestamp",
    "WindowScaling",
    "RcvBufSize",
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), default="stpd-wireless")
    ap.add_argument(
        "--loss", type=float, default=0.0, help="packet loss probability on the lossy link"
    )
    ap.add_argument("--sack", dest="sack", action="store_true", default=True, help="(default)")
    ap.add_argument("--no-sack", dest="sack", action="store_false")
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="newreno")
    ap.add_argument("--seed", type=int, default=1, help="ns-3 RngSeedManager seed")
    ap.add_argument("--run", type=int, default=1, help="ns-3 RngSeedManager run (substream)")
    ap.add_argument(
        "--duration", type=float, default=None, help="simulated seconds (default: the scenario's)"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object (else a summary)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="ATTR=VALUE",
        help="extra ns-3 default, e.g. ns3::TcpSocket::DelAckCount=1 (repeatable; for diagnosis)",
    )
    ap.add_argument(
        "--prr-sack-delivered",
        action="store_true",
        help="diagnosis: the sender's PRR counts only SACKed bytes as delivered on a duplicate "
        "ACK (ns-3 3.44's TcpPrrRecovery adds a segment more; bench/ns3/prr.py)",
    )
    ap.add_argument(
        "--trace",
        metavar="CSV",
        help="also write the sender's events (cwnd, ssthresh, state, ack, retx, timeout, drops)",
    )
    a = ap.parse_args(argv)
    if not 0.0 <= a.loss < 1.0:
        ap.error(f"--loss: expected a probability in [0, 1), got {a.loss}")
    if a.duration is None:
        a.duration = SCENARIOS[a.scenario]["duration_s"]
    if a.duration <= 0:
        ap.error(f"--duration: expected a positive number of seconds, got {a.duration}")
    if a.seed < 1 or a.run < 1:
        ap.error("--seed and --run: expected integers >= 1")
    for item in a.set:
        name, eq, _ = item.partition("=")
        if not eq or not name.startswith("ns3::") or name.count("::") < 2:
            ap.error(f"--set: expected ns3::Type::Attribute=VALUE, got {item!r}")
    return a


def typed(value: str) -> bool | int | float | str:
    """An ns-3 attribute string as a JSON value: booleans, integers, times in seconds."""
    if value in ("true", "false"):
        return value == "true"
    if value.isdigit():
        return int(value)
    if value.endswith("ns") and value[0] in "+-":
        return float(value[:-2]) / 1e9
    try:
        return float(value)
    except ValueError:
        return value


def build_path(ns, cpp, links: list[tuple[str, str, int]]):
    """A chain of point-to-point links with DropTail device queues only; IPv4 routes."""
    nodes = ns.NodeContainer()
    nodes.Create(len(links) + 1)
    devices = []
    for i, (rate, delay, _) in enumerate(links):
        helper = ns.PointToPointHelper()
        helper.SetDeviceAttribute("DataRate", ns.StringValue(rate))
        helper.SetChannelAttribute("Delay", ns.StringValue(delay))
        devices.append(helper.Install(nodes.Get(i), nodes.Get(i + 1)))

    ns.InternetStackHelper().Install(nodes)
    addr = ns.Ipv4AddressHelper()
    last_if = None
    for i, devs in enumerate(devices):
        addr.SetBase(ns.Ipv4Address(f"10.1.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        last_if = addr.Assign(devs)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    # Address assignment installs an FqCoDel queue disc on every device; remove them all so that
    # each device's own DropTail queue is the only buffer, as in the seed's ns-2 setup.
    tch = ns.TrafficControlHelper()
    for devs in devices:
        tch.Uninstall(devs)
    for (_, _, queue_pkts), devs in zip(links, devices, strict=True):
        cpp.SetQueuePackets(devs.Get(0), queue_pkts)
    return nodes, devices, last_if


def use_prr_sack_delivered(ns, app, start_s: float) -> None:
    """bench/ns3/prr.py's recovery on this sender (--prr-sack-delivered)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import prr

    prr.use_prr_sack_delivered(ns, app, start_s)


def run(a: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    from ns import ns  # about 5 s: cppyy loads and parses the ns-3 headers

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    ns.cppyy.cppdef(_CPP_HELPERS)
    cpp = ns.cppyy.gbl.farlink_ns3

    header = TCP_HEADER_BYTES_WITH_TS  # timestamps are on by default; checked below
    seg = IP_PACKET_BYTES - IPV4_HEADER_BYTES - header
    ns.RngSeedManager.SetSeed(a.seed)
    ns.RngSeedManager.SetRun(a.run)
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue(VARIANTS[a.variant]))
    ns.Config.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(a.sack))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(seg))
    sc = SCENARIOS[a.scenario]
    if sc["buffer_bytes"] is not None:
        for attr in ("SndBufSize", "RcvBufSize"):
            ns.Config.SetDefault(f"ns3::TcpSocket::{attr}", ns.UintegerValue(sc["buffer_bytes"]))
    variant_defaults = VARIANT_DEFAULTS.get(a.variant, {})
    for name, value in variant_defaults.items():
        if not ns.Config.SetDefaultFailSafe(name, ns.StringValue(value)):
            raise SystemExit(f"ns-3 has no attribute {name!r} that accepts {value!r}")
    cpp.g_diag = DIAGNOSTIC_CLASSES.get(a.variant, 0)
    for item in a.set:
        name, _, value = item.partition("=")
        if not ns.Config.SetDefaultFailSafe(name, ns.StringValue(value)):
            raise SystemExit(f"--set: ns-3 has no attribute {name!r} that accepts {value!r}")

    nodes, devices, last_if = build_path(ns, cpp, sc["links"])
    s, d = nodes.Get(0), nodes.Get(len(sc["links"]))
    lossy = devices[sc["lossy"]]
    r = nodes.Get(sc["lossy"])  # the node whose queue feeds the lossy link
    links = sc["links"]

    em = ns.CreateObject[ns.RateErrorModel]()
    em.SetAttribute(
        "ErrorUnit", ns.EnumValue[ns.RateErrorModel.ErrorUnit](ns.RateErrorModel.ERROR_UNIT_PACKET)
    )
    em.SetAttribute("ErrorRate", ns.DoubleValue(a.loss))
    em.SetAttribute("RanVar", ns.StringValue("ns3::UniformRandomVariable[Min=0.0|Max=1.0]"))
    em.AssignStreams(0)
    em.Disable()  # enabled when the sender's connection is established (see README)
    lossy.Get(1).SetAttribute("ReceiveErrorModel", ns.PointerValue(em))

    port = 9
    start_s = 0.0
    sink_helper = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
    )
    sink_apps = sink_helper.Install(d)
    bulk = ns.BulkSendHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(last_if.GetAddress(1), port).ConvertTo()
    )
    bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
    send_apps = bulk.Install(s)
    for apps in (sink_apps, send_apps):
        apps.Start(ns.Seconds(start_s))
        apps.Stop(ns.Seconds(a.duration))
    sink, sender = sink_apps.Get(0), send_apps.Get(0)

    if a.trace:
        cpp.OpenTrace(a.trace)
    cpp.HookNetwork(devices[0].Get(0), lossy.Get(0), lossy.Get(1), s, r, em)
    cpp.HookSender(sender, seg, start_s)
    if a.prr_sack_delivered:
        use_prr_sack_delivered(ns, sender, start_s)
    ns.Simulator.Stop(ns.Seconds(a.duration))
    t_setup = time.perf_counter() - t1

    t2 = time.perf_counter()
    ns.Simulator.Run()
    t_run = time.perf_counter() - t2
    cpp.Finish()
    cpp.CloseTrace()
    events = int(ns.Simulator.GetEventCount())
    sim_s = ns.Simulator.Now().GetSeconds()

    st = cpp.g
    rx_bytes = int(cpp.SinkRxBytes(sink))
    tx_sock, rx_sock = cpp.SenderSocket(sender), cpp.ReceiverSocket(sink)
    sender_attrs = {n: typed(str(cpp.Attr(tx_sock, n))) for n in SENDER_ATTRS}
    sender_attrs["CongestionOps"] = str(cpp.PointedType(tx_sock, "CongestionOps"))
    sender_attrs["RecoveryOps"] = str(cpp.PointedType(tx_sock, "RecoveryOps"))
    receiver_attrs = (
        {n: typed(str(cpp.Attr(rx_sock, n))) for n in RECEIVER_ATTRS} if rx_sock else {}
    )
    if not sender_attrs["Timestamp"]:
        raise SystemExit("timestamps are off: the segment size assumed a 32-byte TCP header")
    global_attrs = {
        "TcpSocketState::EnablePacing": typed(
            str(cpp.DefaultAttr("ns3::TcpSocketState", "EnablePacing"))
        ),
        "TcpL4Protocol::RttEstimatorType": str(
            cpp.DefaultAttr("ns3::TcpL4Protocol", "RttEstimatorType")
        ),
        "RttMeanDeviation::Alpha": typed(str(cpp.DefaultAttr("ns3::RttMeanDeviation", "Alpha"))),
        "RttMeanDeviation::Beta": typed(str(cpp.DefaultAttr("ns3::RttMeanDeviation", "Beta"))),
    }

    measured_s = a.duration - start_s
    goodput_bps = rx_bytes * 8 / measured_s
    delivered_segments = rx_bytes / seg
    active = st.cwndSince - st.establishedAt if st.establishedAt >= 0 else 0.0
    queue_r = int(cpp.QueueLimitPackets(lossy.Get(0)))
    queue_s = int(cpp.QueueLimitPackets(devices[0].Get(0)))
    ns.Simulator.Destroy()
    return {
        "engine": "ns-3",
        "ns3_version": _ns3_version(),
        "scenario": a.scenario,
        "inputs": {
            "scenario": a.scenario,
            "loss": a.loss,
            "sack": a.sack,
            "variant": a.variant,
            "seed": a.seed,
            "run": a.run,
            "duration_s": a.duration,
            "set": a.set,
            **({"prr_sack_delivered": True} if a.prr_sack_delivered else {}),
            "variant_defaults": variant_defaults,
        },
        "topology": {
            "links": [{"rate": r_, "delay": d_, "queue_packets": q_} for r_, d_, q_ in links],
            "lossy_link": sc["lossy"],
            "queue_r_to_d_packets": queue_r,
            "queue_s_to_r_packets": queue_s,
            "queue_discs": "none (uninstalled); device DropTail queues only",
            "loss_model": "RateErrorModel, ERROR_UNIT_PACKET, uniform, on the lossy link's "
            "receive side",
            "ip_packet_bytes": IP_PACKET_BYTES,
            "ppp_header_bytes": 2,
            "segment_bytes": seg,
            "app_start_s": start_s,
        },
        "tcp": {"sender": sender_attrs, "receiver": receiver_attrs, "defaults": global_attrs},
        "delivered_bytes": rx_bytes,
        "delivered_segments": delivered_segments,
        "goodput_bps": goodput_bps,
        "normalized_goodput": goodput_bps / CAPACITY_BPS,
        "normalized_packet_throughput": delivered_segments
        * IP_PACKET_BYTES
        * 8
        / measured_s
        / CAPACITY_BPS,
        "data_segments_sent": int(st.dataTx),
        "short_data_segments_sent": int(st.shortDataTx),
        "max_data_ip_packet_bytes": int(st.maxIpPacket),
        "retransmissions": int(st.retx),
        # each dropped packet needs one retransmission; the rest were spurious (give or take the
        # few drops still unrepaired when the run stops)
        "retransmissions_minus_drops": int(st.retx)
        - int(st.dropError + st.dropQueueR + st.dropTcR + st.dropQueueS + st.dropTcS),
        "timeouts": int(st.rtoExpirations),
        "loss_state_entries": int(st.lossEntries),
        "fast_recoveries": int(st.recoveryEntries),
        "drops": {
            "wireless_loss": int(st.dropError),
            "queue_r": int(st.dropQueueR + st.dropTcR),
            "queue_s": int(st.dropQueueS + st.dropTcS),
        },
        "established_s": st.establishedAt,
        "cwnd_mean_segments": st.cwndArea / active / seg if active > 0 else None,
        "cwnd_max_segments": st.cwndMax / seg,
        "queue_r_mean_packets": st.qArea / sim_s if sim_s > 0 else None,
        "queue_r_max_packets": int(st.qMax),
        # Hybla only: ns-3's rho (TcpHybla trace source "Rho"); 1 and 0 changes if never updated
        "hybla_rho": {
            "hooked": bool(st.rhoHooked),
            "changes": int(st.rhoChanges),
            "first_change_s": st.rhoFirst if st.rhoChanges else None,
            "last": st.rhoLast,
            "max": st.rhoMax,
        },
        "events": events,
        "simulated_s": sim_s,
        "wall_import_s": t_import,
        "wall_setup_s": t_setup,
        "wall_run_s": t_run,
        "events_per_wall_s": events / t_run if t_run > 0 else None,
        "delivered_packets_per_wall_s": delivered_segments / t_run if t_run > 0 else None,
    }


def _ns3_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ns3")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    res = run(a)
    if a.json:
        print(json.dumps(res))
        return 0
    i = res["inputs"]
    print(
        f"ns-3 {res['ns3_version']} {i['scenario']}  loss={i['loss']:g} sack={i['sack']} "
        f"variant={i['variant']} seed={i['seed']} run={i['run']} duration={i['duration_s']:g}s"
    )
    for key in ("tcp",):
        print(f"  {key}: {json.dumps(res[key])}")
    for key in (
        "delivered_bytes",
        "goodput_bps",
        "normalized_goodput",
        "retransmissions",
        "timeouts",
        "fast_recoveries",
        "drops",
        "cwnd_mean_segments",
        "events",
        "wall_import_s",
        "wall_run_s",
        "events_per_wall_s",
        "delivered_packets_per_wall_s",
    ):
        print(f"  {key}: {res[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
