"""ns-3 reference for farlink's competing traffic (issue 30): UDP on-off beside a bulk CUBIC
flow, and Poisson arrivals of short NewReno flows, on one 10 Mbit/s, 50 ms drop-tail bottleneck.

Two cases on the path S --100 Mbit/s, 1 ms-- R --10 Mbit/s, 50 ms-- D (device DropTail queues
of 100 packets at both ends of both links, no queue discs):

- `onoff`: ns-3's OnOffApplication (UDP, 5 Mbit/s of payload while on, 1000-byte payloads,
  exponential on and off periods of mean 1 s each, beginning with an off period) beside one
  BulkSendApplication (TcpCubic, unbounded) from S to D, both from t = 0;
- `poisson`: BulkSendApplications started at the instants of a Poisson process, each with its
  own socket (its own handshake) and `MaxBytes` an exponential size of mean 50 kB (rounded, at
  least 1 byte), at a load of `--load` of the bottleneck's rate (payload: rate = load x 10e6 /
  (8 x 50e3) per second), arrivals for `--arrivals` seconds, then `--drain` seconds more.

Each short flow's completion time runs from its start (its SYN: BulkSend connects when it
starts) to the arrival of its last byte at the receiving application (the PacketSink reads in
order), farlink's definition (crates/farlink-core/src/apps/metrics.rs). The sink sorts bytes by
the sender's port: flow i binds port `SHORT_FLOW_BASE_PORT + i`.

Where ns-3's TCP defaults differ from farlink's (docs/congestion-control.md, scenario/tcp.rs),
they are set to farlink's and listed in the JSON (`tcp.aligned`). Nothing per packet runs in
Python: the trace sinks and the flow plan are C++ of our own, compiled at run time by cppyy.

    .venv-ns3/bin/python bench/ns3/traffic.py --case onoff --run 1 --json
    .venv-ns3/bin/python bench/ns3/traffic.py --case poisson --load 0.8 --run 1 --json
    .venv-ns3/bin/python bench/ns3/traffic.py --grid            # results/ns3_traffic.json

See bench/ns3/README.md ("Competing traffic") for every field.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "ns3_traffic.json"
DIAG_RESULTS = HERE / "results" / "ns3_traffic_diagnostics.json"
# ns-3 with one rule changed (C++ above), to test an explanation; never the reference.
DIAGNOSTICS = {"none": 0, "cwnd-ssthresh": 1}

# The path, as validate_traffic_ns3.py builds it in farlink: (rate, one-way delay, DropTail
# limit in packets waiting, the one being serialised not counted, as farlink's queue_pkts).
ACCESS = ("100Mbps", "1ms", 100)
BOTTLENECK = ("10Mbps", "50ms", 100)
BOTTLENECK_BPS = 10e6

IPV4_HEADER_BYTES = 20
TCP_HEADER_BYTES_WITH_TS = 32  # 20 + timestamps (10) padded to 12
# farlink's default MSS option is 1460; with timestamps a segment carries 1460 - 12 bytes
# (tcp::TcpOptions::smss_bytes), a 1500-byte IP packet. ns-3's SegmentSize is the payload.
SEGMENT_BYTES = 1448

UDP_RATE = "5Mbps"  # payload bits per second while on, as ns-3's OnOff and farlink count it
UDP_PAYLOAD_BYTES = 1000
ON_MEAN_S = 1.0
OFF_MEAN_S = 1.0
MEAN_SIZE_BYTES = 50_000.0
SOCKET_BUFFER_BYTES = 1 << 20  # both ends, both simulators: the window is never the limit
SHORT_FLOW_BASE_PORT = 10_000
MAX_SHORT_FLOWS = 39_000  # below ns-3's ephemeral ports (49152 on)

CASES = {
    # duration: the run; arrivals + drain for `poisson`
    "onoff": {"duration_s": 200.0},
    "poisson": {"arrivals_s": 200.0, "drain_s": 30.0},
}
GRID = {"runs": 5, "loads": (0.5, 0.8)}

# ns-3 defaults set to farlink's (farlink's default named on the right); the JSON records them.
ALIGNED = {
    # payload of a 1500-byte packet with timestamps (farlink mss 1460 - 12)
    "ns3::TcpSocket::SegmentSize": str(SEGMENT_BYTES),
    # farlink initial_rto 1 s times the SYN too (ns-3: ConnTimeout 3 s)
    "ns3::TcpSocket::ConnTimeout": "1s",
    # farlink's default cwnd_reduction "immediate" with RFC 6675 recovery: cwnd = ssthresh on
    # entering recovery, sending while pipe < cwnd (ns-3's default is TcpPrrRecovery)
    "ns3::TcpL4Protocol::RecoveryType": "ns3::TcpClassicRecovery",
    # farlink has no HyStart in `cubic` (ns-3: on)
    "ns3::TcpCubic::HyStart": "false",
    # the scenario's buffers, given to both simulators (ns-3: 128 KiB; farlink: 128 KiB
    # receive, unbounded send)
    "ns3::TcpSocket::SndBufSize": str(SOCKET_BUFFER_BYTES),
    "ns3::TcpSocket::RcvBufSize": str(SOCKET_BUFFER_BYTES),
}
# ns-3 defaults that already are farlink's (read back from a live socket into the JSON).
SOCKET_ATTRS = [
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
    "TcpNoDelay",
    "DelAckCount",
    "DelAckTimeout",
    "ConnTimeout",
]

_CPP = r"""
#include <algorithm>
#include <cmath>
#include <vector>
namespace farlink_traffic {
using namespace ns3;

struct Counters {
    uint64_t dropQueueR = 0, dropTcR = 0, dropQueueS = 0, dropTcS = 0;
    uint64_t retx = 0, lossEntries = 0, recoveryEntries = 0, synRetx = 0;
    uint64_t udpTx = 0, udpRx = 0, udpRxBytes = 0;
};
Counters g;
std::vector<double> g_udpDelay;  // one-way delay of each UDP datagram received, s

// Diagnostic (--diag cwnd-ssthresh), not a reference: TcpNewReno with ssthresh = cwnd / 2, RFC
// 5681's FlightSize rule as farlink applies it, instead of ns-3's pipe / 2 (BytesInFlight, less
// the segments SACKed and marked lost); docs/validation-notes.md measured it on stpd-wireless.
class NewRenoCwndSsthresh : public TcpNewReno {
  public:
    uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t) override {
        return std::max(2 * tcb->m_segmentSize, tcb->m_cWnd.Get() / 2);
    }
};
int g_diag = 0;  // 1: NewRenoCwndSsthresh on every short flow

void OnDropQueueR(Ptr<const Packet>) { g.dropQueueR++; }
void OnDropTcR(Ptr<const Packet>) { g.dropTcR++; }
void OnDropQueueS(Ptr<const Packet>) { g.dropQueueS++; }
void OnDropTcS(Ptr<const Packet>) { g.dropTcS++; }

Ptr<Queue<Packet>> TxQueue(Ptr<NetDevice> d) {
    return DynamicCast<PointToPointNetDevice>(d)->GetQueue();
}
void SetQueuePackets(Ptr<NetDevice> d, uint32_t packets) {
    TxQueue(d)->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, packets));
}
uint32_t QueueLimitPackets(Ptr<NetDevice> d) { return TxQueue(d)->GetMaxSize().GetValue(); }

void HookQueues(Ptr<NetDevice> sOut, Ptr<NetDevice> rOut, Ptr<Node> s, Ptr<Node> r) {
    TxQueue(rOut)->TraceConnectWithoutContext("Drop", MakeCallback(&OnDropQueueR));
    TxQueue(sOut)->TraceConnectWithoutContext("Drop", MakeCallback(&OnDropQueueS));
    r->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop",
                                                                  MakeCallback(&OnDropTcR));
    s->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop",
                                                                  MakeCallback(&OnDropTcS));
}

// A TCP sender's counters: data retransmissions (the app's trace), entries into loss (RTO) and
// recovery, and SYNs sent again (the first SYN leaves inside StartApplication, before the
// socket exists for us, so every SYN the hook sees is a retransmission).
void OnRetx(Ptr<const Packet>, const TcpHeader&, const Address&, const Address&,
            Ptr<const TcpSocketBase>) { g.retx++; }
void OnCongState(TcpSocketState::TcpCongState_t o, TcpSocketState::TcpCongState_t n) {
    if (n == TcpSocketState::CA_LOSS && o != TcpSocketState::CA_LOSS) g.lossEntries++;
    if (n == TcpSocketState::CA_RECOVERY && o != TcpSocketState::CA_RECOVERY) g.recoveryEntries++;
}
void OnTx(Ptr<const Packet>, const TcpHeader& h, Ptr<const TcpSocketBase>) {
    if ((h.GetFlags() & TcpHeader::SYN) && !(h.GetFlags() & TcpHeader::ACK)) g.synRetx++;
}
void HookSocketNow(Ptr<Application> app) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    if (g_diag == 1) {
        // the SYN is out, no data yet: the controller is in place before it is first asked
        DynamicCast<TcpSocketBase>(s)->SetCongestionControlAlgorithm(
            CreateObject<NewRenoCwndSsthresh>());
    }
    s->TraceConnectWithoutContext("CongState", MakeCallback(&OnCongState));
    s->TraceConnectWithoutContext("Tx", MakeCallback(&OnTx));
}
void HookSender(Ptr<Application> app, double startS) {
    app->TraceConnectWithoutContext("TcpRetransmission", MakeCallback(&OnRetx));
    // BulkSendApplication makes its socket when it starts; hook it just after.
    Simulator::Schedule(Seconds(startS) + NanoSeconds(1), &HookSocketNow, app);
}

// UDP: datagrams sent, and received with their one-way delay (the SeqTsSize header's stamp).
void OnUdpTx(Ptr<const Packet>) { g.udpTx++; }
void OnUdpRx(Ptr<const Packet> p, const Address&, const Address&, const SeqTsSizeHeader& h) {
    g.udpRx++;
    g.udpRxBytes += p->GetSize() + h.GetSerializedSize();
    g_udpDelay.push_back((Simulator::Now() - h.GetTs()).GetSeconds());
}
void HookUdp(Ptr<Application> source, Ptr<Application> sink) {
    source->TraceConnectWithoutContext("Tx", MakeCallback(&OnUdpTx));
    sink->TraceConnectWithoutContext("RxWithSeqTsSize", MakeCallback(&OnUdpRx));
}

// Short flows: flow i binds port basePort + i, starts at g_startNs[i], carries g_size[i] bytes.
uint16_t g_basePort = 0;
std::vector<int64_t> g_startNs, g_fctNs;  // completion time; -1 while unfinished
std::vector<uint64_t> g_size, g_rx;
uint64_t g_strayRx = 0;  // bytes from a port no flow owns (must stay 0)
Ptr<Application> g_firstShort;  // its socket's attributes go into the JSON

void OnShortRx(Ptr<const Packet> p, const Address& from) {
    uint16_t port = InetSocketAddress::ConvertFrom(from).GetPort();
    if (port < g_basePort || port - g_basePort >= g_size.size()) {
        g_strayRx += p->GetSize();
        return;
    }
    size_t i = port - g_basePort;
    g_rx[i] += p->GetSize();
    if (g_fctNs[i] < 0 && g_rx[i] >= g_size[i]) {
        g_fctNs[i] = Simulator::Now().GetNanoSeconds() - g_startNs[i];
    }
}

// The class's plan, drawn from ns-3's own streams (exponential gaps of mean 1/rate from
// startS, exponential sizes of mean meanBytes rounded, at least 1), and one BulkSend per flow.
size_t PlanShortFlows(Ptr<Node> s, Address remote, double ratePerS, double meanBytes,
                      double startS, double endS, uint32_t segBytes, uint16_t basePort,
                      int64_t stream, size_t maxFlows) {
    g_basePort = basePort;
    Ptr<ExponentialRandomVariable> gap = CreateObject<ExponentialRandomVariable>();
    gap->SetAttribute("Mean", DoubleValue(1.0 / ratePerS));
    gap->SetStream(stream);
    Ptr<ExponentialRandomVariable> size = CreateObject<ExponentialRandomVariable>();
    size->SetAttribute("Mean", DoubleValue(meanBytes));
    size->SetStream(stream + 1);
    double t = startS;
    while (true) {
        t += gap->GetValue();
        if (t >= endS) break;
        uint64_t bytes = std::max<uint64_t>(1, (uint64_t) std::llround(size->GetValue()));
        size_t i = g_size.size();
        if (i >= maxFlows) return 0;  // the caller reports it
        Ptr<BulkSendApplication> app = CreateObject<BulkSendApplication>();
        app->SetAttribute("Protocol", TypeIdValue(TcpSocketFactory::GetTypeId()));
        app->SetAttribute("Remote", AddressValue(remote));
        app->SetAttribute("Local", AddressValue(InetSocketAddress(Ipv4Address::GetAny(),
                                                                  basePort + i)));
        app->SetAttribute("MaxBytes", UintegerValue(bytes));
        app->SetAttribute("SendSize", UintegerValue(segBytes));
        s->AddApplication(app);
        if (i == 0) g_firstShort = app;
        Time at = NanoSeconds(std::llround(t * 1e9));
        app->SetStartTime(at);
        HookSender(app, at.GetSeconds());
        g_startNs.push_back(at.GetNanoSeconds());
        g_fctNs.push_back(-1);
        g_size.push_back(bytes);
        g_rx.push_back(0);
    }
    return g_size.size();
}
void HookShortSink(Ptr<Application> sink) {
    sink->TraceConnectWithoutContext("Rx", MakeCallback(&OnShortRx));
}

Ptr<Object> SenderSocket(Ptr<Application> app) {
    return DynamicCast<BulkSendApplication>(app)->GetSocket();
}
uint64_t SinkRxBytes(Ptr<Application> app) { return DynamicCast<PacketSink>(app)->GetTotalRx(); }
std::string Attr(Ptr<Object> o, const std::string& name) {
    TypeId::AttributeInformation info;
    if (!o->GetInstanceTypeId().LookupAttributeByName(name, &info)) return "missing";
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
}  // namespace farlink_traffic
"""


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


def percentiles(values: list[float]) -> dict | None:
    """p50, p90, p99 by nearest rank and the mean, as farlink's `Percentiles::of`."""
    if not values:
        return None
    v = sorted(values)
    n = len(v)

    def rank(q: float) -> float:
        return v[min(max(math.ceil(q * n), 1), n) - 1]

    return {"p50": rank(0.5), "p90": rank(0.9), "p99": rank(0.99), "mean": statistics.fmean(v)}


def build_path(ns, cpp):
    """S -- R -- D, DropTail device queues only (the FqCoDel address assignment installs is
    removed), IPv4 global routes. Returns the nodes, the two device pairs and D's address."""
    nodes = ns.NodeContainer()
    nodes.Create(3)
    devices = []
    for i, (rate, delay, _) in enumerate((ACCESS, BOTTLENECK)):
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
    tch = ns.TrafficControlHelper()
    for (_, _, queue_pkts), devs in zip((ACCESS, BOTTLENECK), devices, strict=True):
        tch.Uninstall(devs)
        for k in (0, 1):  # both directions of the link
            cpp.SetQueuePackets(devs.Get(k), queue_pkts)
    return nodes, devices, last_if.GetAddress(1)


def tcp_sink(ns, node, port: int):
    helper = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
    )
    return helper.Install(node).Get(0)


def run(a: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    from ns import ns  # about 5 s: cppyy loads and parses the ns-3 headers

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    ns.cppyy.cppdef(_CPP)
    cpp = ns.cppyy.gbl.farlink_traffic
    if a.diag != "none" and a.case != "poisson":
        raise SystemExit(f"--diag {a.diag}: changes the short flows' NewReno; use --case poisson")
    cpp.g_diag = DIAGNOSTICS[a.diag]

    ns.RngSeedManager.SetSeed(a.seed)
    ns.RngSeedManager.SetRun(a.run)
    variant = "ns3::TcpCubic" if a.case == "onoff" else "ns3::TcpNewReno"
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue(variant))
    for name, value in ALIGNED.items():
        if not ns.Config.SetDefaultFailSafe(name, ns.StringValue(value)):
            raise SystemExit(f"ns-3 has no attribute {name!r} that accepts {value!r}")

    nodes, devices, d_addr = build_path(ns, cpp)
    s, r, d = nodes.Get(0), nodes.Get(1), nodes.Get(2)
    cpp.HookQueues(devices[0].Get(0), devices[1].Get(0), s, r)

    tcp_port, udp_port = 9, 10
    out: dict = {}
    if a.case == "onoff":
        duration_s = a.duration
        sink = tcp_sink(ns, d, tcp_port)
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(d_addr, tcp_port).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(SEGMENT_BYTES))
        sender = bulk.Install(s).Get(0)
        cpp.HookSender(sender, 0.0)

        onoff = ns.OnOffHelper(
            "ns3::UdpSocketFactory", ns.InetSocketAddress(d_addr, udp_port).ConvertTo()
        )
        onoff.SetAttribute("DataRate", ns.StringValue(UDP_RATE))
        onoff.SetAttribute("PacketSize", ns.UintegerValue(UDP_PAYLOAD_BYTES))
        onoff.SetAttribute(
            "OnTime", ns.StringValue(f"ns3::ExponentialRandomVariable[Mean={ON_MEAN_S}]")
        )
        onoff.SetAttribute(
            "OffTime", ns.StringValue(f"ns3::ExponentialRandomVariable[Mean={OFF_MEAN_S}]")
        )
        # a sequence and send-time header inside the payload (PacketSize stays the datagram's
        # payload), read by the sink for the one-way delay
        onoff.SetAttribute("EnableSeqTsSizeHeader", ns.BooleanValue(True))
        udp_apps = onoff.Install(s)
        udp_apps.Get(0).AssignStreams(10)
        udp_sink_helper = ns.PacketSinkHelper(
            "ns3::UdpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), udp_port).ConvertTo(),
        )
        udp_sink_helper.SetAttribute("EnableSeqTsSizeHeader", ns.BooleanValue(True))
        udp_sink = udp_sink_helper.Install(d).Get(0)
        cpp.HookUdp(udp_apps.Get(0), udp_sink)
        for app in (sink, sender, udp_apps.Get(0), udp_sink):
            app.SetStartTime(ns.Seconds(0.0))
            app.SetStopTime(ns.Seconds(duration_s))
        flows_planned = None
    else:
        duration_s = a.arrivals + a.drain
        sink = tcp_sink(ns, d, tcp_port)
        rate_per_s = a.load * BOTTLENECK_BPS / (8 * MEAN_SIZE_BYTES)
        remote = ns.InetSocketAddress(d_addr, tcp_port).ConvertTo()
        flows_planned = int(
            cpp.PlanShortFlows(
                s,
                remote,
                rate_per_s,
                MEAN_SIZE_BYTES,
                0.0,
                a.arrivals,
                SEGMENT_BYTES,
                SHORT_FLOW_BASE_PORT,
                20,
                MAX_SHORT_FLOWS,
            )
        )
        if flows_planned == 0:
            raise SystemExit(f"more than {MAX_SHORT_FLOWS} short flows: shorten --arrivals")
        cpp.HookShortSink(sink)
        sender = cpp.g_firstShort

    ns.Simulator.Stop(ns.Seconds(duration_s))
    t_setup = time.perf_counter() - t1
    t2 = time.perf_counter()
    ns.Simulator.Run()
    t_run = time.perf_counter() - t2
    events = int(ns.Simulator.GetEventCount())

    g = cpp.g
    queue_limits = {
        "s_to_r": int(cpp.QueueLimitPackets(devices[0].Get(0))),
        "r_to_d": int(cpp.QueueLimitPackets(devices[1].Get(0))),
        "d_to_r": int(cpp.QueueLimitPackets(devices[1].Get(1))),
        "r_to_s": int(cpp.QueueLimitPackets(devices[0].Get(1))),
    }
    if a.case == "onoff":
        delivered = int(cpp.SinkRxBytes(sink))
        delays = list(cpp.g_udpDelay)
        lost_or_received = int(g.udpTx)  # the few in flight at the end count as lost here
        out["bulk"] = {
            "delivered_bytes": delivered,
            "goodput_bps": delivered * 8 / duration_s,
        }
        out["udp"] = {
            "packets_sent": int(g.udpTx),
            "packets_received": int(g.udpRx),
            "goodput_bps": int(g.udpRxBytes) * 8 / duration_s,
            "loss_rate": 1 - int(g.udpRx) / lost_or_received if lost_or_received else None,
            "one_way_delay_s": percentiles(delays),
        }
    else:
        sizes = [int(x) for x in cpp.g_size]
        fct_ns = [int(x) for x in cpp.g_fctNs]
        finished = [x / 1e9 for x in fct_ns if x >= 0]
        out["short_flows"] = {
            "rate_per_s": rate_per_s,
            "flows_arrived": len(sizes),
            "flows_finished": len(finished),
            "offered_bytes": sum(sizes),
            "delivered_bytes": int(cpp.SinkRxBytes(sink)),
            "stray_bytes": int(cpp.g_strayRx),
            "fct_s": percentiles(finished),
            "size_bytes": percentiles([float(x) for x in sizes]),
            # every flow in arrival order: size (bytes), completion time (integer
            # microseconds, null if unfinished)
            "flows": [
                [n, (None if f < 0 else round(f / 1e3))] for n, f in zip(sizes, fct_ns, strict=True)
            ],
        }
    out["tcp_counters"] = {
        "retransmissions": int(g.retx),
        "timeouts": int(g.lossEntries),
        "fast_recoveries": int(g.recoveryEntries),
        "syn_retransmissions": int(g.synRetx),
    }
    out["drops"] = {
        "queue_r_to_d": int(g.dropQueueR + g.dropTcR),
        "queue_s_to_r": int(g.dropQueueS + g.dropTcS),
    }
    probe = cpp.SenderSocket(sender)
    sock = {n: typed(str(cpp.Attr(probe, n))) for n in SOCKET_ATTRS}
    sock["CongestionOps"] = str(cpp.PointedType(probe, "CongestionOps"))
    sock["RecoveryOps"] = str(cpp.PointedType(probe, "RecoveryOps"))
    # not attributes of a socket: the defaults in effect
    sock["TcpSocketState::EnablePacing"] = typed(
        str(cpp.DefaultAttr("ns3::TcpSocketState", "EnablePacing"))
    )
    sock["TcpL4Protocol::RttEstimatorType"] = str(
        cpp.DefaultAttr("ns3::TcpL4Protocol", "RttEstimatorType")
    )
    sim_s = ns.Simulator.Now().GetSeconds()
    ns.Simulator.Destroy()
    return {
        "engine": "ns-3",
        "ns3_version": _ns3_version(),
        "inputs": {
            "case": a.case,
            "load": a.load if a.case == "poisson" else None,
            "seed": a.seed,
            "run": a.run,
            "duration_s": duration_s,
            "arrivals_s": a.arrivals if a.case == "poisson" else None,
            "diag": a.diag,
        },
        "topology": {
            "links": [
                {"name": "S-R", "rate": ACCESS[0], "delay": ACCESS[1]},
                {"name": "R-D", "rate": BOTTLENECK[0], "delay": BOTTLENECK[1]},
            ],
            "queue_limit_packets": queue_limits,
            "queue_discs": "none (uninstalled); device DropTail queues only",
            "ppp_header_bytes": 2,
            "segment_bytes": SEGMENT_BYTES,
        },
        "traffic": {
            "tcp": variant,
            "udp": (
                {
                    "rate": UDP_RATE,
                    "payload_bytes": UDP_PAYLOAD_BYTES,
                    "on_mean_s": ON_MEAN_S,
                    "off_mean_s": OFF_MEAN_S,
                    "distribution": "exponential",
                }
                if a.case == "onoff"
                else None
            ),
            "short_flows": (
                {
                    "load": a.load,
                    "size": {"distribution": "exponential", "mean_bytes": MEAN_SIZE_BYTES},
                    "flows_planned": flows_planned,
                }
                if a.case == "poisson"
                else None
            ),
        },
        "tcp": {"aligned": ALIGNED, "socket": sock},
        **out,
        "events": events,
        "simulated_s": sim_s,
        "wall_import_s": t_import,
        "wall_setup_s": t_setup,
        "wall_run_s": t_run,
    }


def _ns3_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ns3")
    except PackageNotFoundError:
        return "unknown"


# ---------------------------------------------------------------------------------------------
# The grid: every point in its own process (ns-3 keeps global state), --jobs at a time.


def point_args(p: dict, a: argparse.Namespace) -> list[str]:
    args = [sys.executable, str(Path(__file__).resolve()), "--case", p["case"], "--json"]
    args += ["--diag", a.diag]
    args += ["--seed", str(a.seed), "--run", str(p["run"])]
    if p["case"] == "onoff":
        args += ["--duration", repr(a.duration)]
    else:
        args += ["--load", repr(p["load"]), "--arrivals", repr(a.arrivals)]
        args += ["--drain", repr(a.drain)]
    return args


def run_point(p: dict, a: argparse.Namespace) -> dict:
    proc = subprocess.run(point_args(p, a), capture_output=True, text=True)
    if proc.returncode != 0:
        # cppyy prints harmless "Failed to materialize symbols" lines on import; show the rest
        tail = [ln for ln in proc.stderr.splitlines() if "materialize symbols" not in ln][-15:]
        return {"inputs": p, "error": f"exit {proc.returncode}: " + "\n".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cell_of(r: dict) -> str:
    i = r["inputs"]
    return "onoff" if i["case"] == "onoff" else f"poisson-{i['load']:g}"


def rounded(x):
    if isinstance(x, float):
        return float(f"{x:.6g}")
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [rounded(v) for v in x]
    return x


def grid(a: argparse.Namespace) -> int:
    # a diagnostic changes the short flows only
    onoff_runs = a.runs if a.diag == "none" else 0
    points = [{"case": "onoff", "run": r} for r in range(1, onoff_runs + 1)] + [
        {"case": "poisson", "load": load, "run": r}
        for load in a.loads
        for r in range(1, a.runs + 1)
    ]
    t0 = time.perf_counter()
    results: list[dict] = []
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = [pool.submit(run_point, p, a) for p in points]
        for k, f in enumerate(futures, 1):
            r = f.result()
            results.append(r)
            if "error" in r:
                what = f"error {r['error'].splitlines()[0]}"
            elif r["inputs"]["case"] == "onoff":
                what = f"TCP {r['bulk']['goodput_bps'] / 1e6:.3f} Mbit/s"
            else:
                fct = r["short_flows"]["fct_s"]
                what = (
                    f"{r['short_flows']['flows_finished']}/{r['short_flows']['flows_arrived']} "
                    f"flows, FCT p50 {fct['p50']:.3f} s, p99 {fct['p99']:.3f} s"
                )
            label = cell_of(r) if "error" not in r else str(r["inputs"])
            print(f"[{k}/{len(points)}] {label} run {r['inputs']['run']}: {what}", flush=True)
    wall = time.perf_counter() - t0
    ok = [r for r in results if "error" not in r]
    failed = [r for r in results if "error" in r]
    first = {cell_of(r): r for r in reversed(ok)}
    doc = {
        "engine": "ns-3",
        "ns3_version": ok[0]["ns3_version"] if ok else None,
        "command": "make ns3-traffic  (bench/ns3/traffic.py --grid)"
        if a.diag == "none"
        else f"bench/ns3/traffic.py --grid --diag {a.diag} --loads "
        + " ".join(f"{x:g}" for x in a.loads),
        "grid": {
            "runs": list(range(1, a.runs + 1)),
            "seed": a.seed,
            "diag": a.diag,
            "loads": list(a.loads),
            "onoff_duration_s": a.duration,
            "poisson_arrivals_s": a.arrivals,
            "poisson_drain_s": a.drain,
        },
        "topology": ok[0]["topology"] if ok else None,
        "tcp": {c: r["tcp"] for c, r in first.items()},
        "traffic": {c: r["traffic"] for c, r in first.items()},
        "wall_grid_s": rounded(wall),
        "records": [
            rounded({k: v for k, v in r.items() if k not in ("tcp", "topology", "traffic")})
            for r in ok
        ]
        + failed,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(dumps_records(doc))
    print(f"{len(ok)} runs in {wall:.0f} s wall ({a.jobs} at a time); wrote {a.out}")
    if failed:
        print(f"{len(failed)} runs failed; see 'error' in the records", file=sys.stderr)
        return 1
    return 0


def dumps_records(doc: dict) -> str:
    """JSON with one line per record (a record's flows on one line), diffable and small."""
    head = {k: v for k, v in doc.items() if k != "records"}
    body = ",\n".join("  " + json.dumps(r, separators=(",", ":")) for r in doc["records"])
    text = json.dumps(head, indent=1)
    return text[:-2] + ',\n "records": [\n' + body + "\n ]\n}\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", action="store_true", help="every case and run; writes --out")
    ap.add_argument("--case", choices=sorted(CASES), default="poisson")
    ap.add_argument("--load", type=float, default=0.5, help="poisson: fraction of 10 Mbit/s")
    ap.add_argument("--seed", type=int, default=1, help="ns-3 RngSeedManager seed")
    ap.add_argument("--run", type=int, default=1, help="ns-3 RngSeedManager run (substream)")
    ap.add_argument("--runs", type=int, default=GRID["runs"], help="--grid: runs per case")
    ap.add_argument("--duration", type=float, default=CASES["onoff"]["duration_s"])
    ap.add_argument("--arrivals", type=float, default=CASES["poisson"]["arrivals_s"])
    ap.add_argument("--drain", type=float, default=CASES["poisson"]["drain_s"])
    ap.add_argument("--jobs", type=int, default=1, help="--grid: simulations at once (1 or 2)")
    ap.add_argument(
        "--loads", type=float, nargs="+", default=list(GRID["loads"]), help="--grid: poisson loads"
    )
    ap.add_argument(
        "--diag",
        choices=sorted(DIAGNOSTICS),
        default="none",
        help="ns-3 with one rule changed, to test an explanation (not a reference)",
    )
    ap.add_argument("--out", type=Path, default=None, help="--grid: results file")
    ap.add_argument("--json", action="store_true", help="print one JSON object (else a summary)")
    a = ap.parse_args(argv)
    for load in (a.load, *a.loads):
        if not 0 < load < 1:
            ap.error(f"--load, --loads: expected fractions in (0, 1), got {load}")
    if a.out is None:
        a.out = RESULTS if a.diag == "none" else DIAG_RESULTS
    for name in ("duration", "arrivals"):
        if getattr(a, name) <= 0:
            ap.error(f"--{name}: expected a positive number of seconds, got {getattr(a, name)}")
    if a.drain < 0:
        ap.error(f"--drain: expected seconds >= 0, got {a.drain}")
    if a.seed < 1 or a.run < 1 or a.runs < 1:
        ap.error("--seed, --run and --runs: expected integers >= 1")
    if not 1 <= a.jobs <= 2:
        ap.error(f"--jobs: expected 1 or 2 (the machine has two cores), got {a.jobs}")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.grid:
        return grid(a)
    res = run(a)
    if a.json:
        print(json.dumps(res))
        return 0
    summary = {k: v for k, v in res.items() if k not in ("short_flows",)}
    if "short_flows" in res:
        summary["short_flows"] = {k: v for k, v in res["short_flows"].items() if k != "flows"}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
