//! Competing traffic on real sockets (issue 30): a UDP flow's source and sink, and a class of
//! short TCP flows (`flows_poisson`), each end a thread in its node's namespace.
//!
//! The schedules are the core's, driven by the wall clock: a UDP source is the simulator's
//! `apps::udp::UdpSource` (same stream `flow:<name>:app`, so the same on-off periods for a
//! seed), asked `poll_at` and called back at that instant of the run; a short-flow class is
//! `apps::short_flows::plan_of` (the same arrival instants and sizes). The measurements are
//! the core's too: the UDP sink is `apps::udp::UdpSink` (one-way delay, RFC 3550 jitter), the
//! class's figures `apps::short_flows::summarize` (`report/traffic.rs`).
//!
//! Both ends read the same CLOCK_MONOTONIC (namespaces do not split clocks), so a datagram's
//! one-way delay is its receive instant less the send instant it carries, and a short flow's
//! completion time is the sink's read of its last byte less the sender's connect(): the
//! simulator's definition (arrival, SYN included, to the last byte read), measured directly.
//!
//! Every blocking call is bounded (100 ms, 10 ms for a sender's writes) and looks at the run's
//! stop flag between calls.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use farlink_core::apps::exchange::Exchanges;
use farlink_core::apps::short_flows::{self, Arrival, Completed};
use farlink_core::apps::udp::{UdpSink, UdpSource};
use farlink_core::rng::StreamRng;
use farlink_core::scenario::{AppSpec, FlowSpec, Scenario};
use farlink_core::time::SimTime;
use farlink_core::ScenarioError;

use crate::clock::monotonic_ns;
use crate::error::EmuError;
use crate::exchange;
use crate::netns::Netns;
use crate::sockets::{
    connect, finish_write, is_timeout, short_flow_listener, wait_until, ShortFlowSettings, POLL,
};
use crate::wire_sender::SenderChoice;

/// What each datagram carries first: its number and its send instant (monotonic ns), both
/// big-endian u64.
pub(crate) const DATAGRAM_HEADER_BYTES: u32 = 16;

/// What a UDP flow's ends share while it runs, for the run to tell when its datagrams are
/// all in: the source's count once it ended, the highest number the sink read and when it
/// last read one (monotonic ns).
#[derive(Debug, Default)]
pub(crate) struct UdpProgress {
    ended_sent: AtomicU64,
    ended_at_ns: AtomicU64,
    /// The highest number read, plus one (0: none yet).
    seen: AtomicU64,
    last_arrival_ns: AtomicU64,
}

impl UdpProgress {
    /// Every datagram has arrived or was dropped: the source ended and the sink read its last
    /// datagram (a route delivers in order, so each before it arrived or was lost), or, that
    /// one lost, nothing arrived for `quiet_ns` since the source ended or the last arrival.
    fn drained(&self, quiet_ns: u64) -> bool {
        let sent = self.ended_sent.load(Ordering::Acquire);
        let ended_at = self.ended_at_ns.load(Ordering::Acquire);
        if ended_at == 0 {
            return false;
        }
        let last = ended_at.max(self.last_arrival_ns.load(Ordering::Relaxed));
        self.seen.load(Ordering::Relaxed) >= sent || monotonic_ns().saturating_sub(last) >= quiet_ns
    }
}

/// What a UDP source did.
#[derive(Debug, Default)]
pub(crate) struct UdpSent {
    pub(crate) sent: u64,
    pub(crate) sent_bytes: u64,
    /// The source will never send again (its stop, or its last send before the run's end).
    pub(crate) ended: bool,
    /// Datagrams the kernel refused (`send` failed), counted in `sent` as the source's.
    pub(crate) send_errors: u64,
    pub(crate) error: Option<String>,
}

/// A UDP flow's source: `source`'s datagrams to `peer`, each at its instant of the run
/// (`t0_ns` its time zero), none after `end`.
pub(crate) fn udp_sender(
    peer: SocketAddrV4,
    mut source: UdpSource,
    end: SimTime,
    t0_ns: u64,
    stop: Arc<AtomicBool>,
    progress: Arc<UdpProgress>,
) -> UdpSent {
    let mut out = UdpSent::default();
    let sock = match UdpSocket::bind("0.0.0.0:0").and_then(|s| s.connect(peer).map(|()| s)) {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(format!("UDP source: {e}"));
            return out;
        }
    };
    let mut buf = Vec::new();
    loop {
        let Some(at) = source.poll_at().filter(|&t| t <= end) else {
            out.ended = source.poll_at().is_none();
            if out.ended {
                progress.ended_sent.store(out.sent, Ordering::Release);
                progress
                    .ended_at_ns
                    .store(monotonic_ns().max(1), Ordering::Release);
            }
            return out;
        };
        if !wait_until(t0_ns + at.as_nanos(), &stop) {
            return out;
        }
        let now_ns = monotonic_ns();
        let now = SimTime::from_nanos(now_ns.saturating_sub(t0_ns));
        let Some((seq, payload_bytes)) = source.on_timer(now) else {
            continue;
        };
        buf.resize(payload_bytes as usize, 0);
        buf[..8].copy_from_slice(&seq.to_be_bytes());
        buf[8..16].copy_from_slice(&now_ns.to_be_bytes());
        out.sent += 1;
        out.sent_bytes += u64::from(payload_bytes);
        if sock.send(&buf).is_err() {
            out.send_errors += 1;
        }
    }
}

/// What a UDP sink measured.
#[derive(Debug, Default)]
pub(crate) struct UdpReceived {
    pub(crate) sink: UdpSink,
    pub(crate) error: Option<String>,
}

/// A UDP flow's sink on `sock` (bound in the receiver's namespace) until the run stops: each
/// datagram handed to the core's `UdpSink` at its receive instant with the send instant it
/// carries, both on the run's time line.
pub(crate) fn udp_receiver(
    sock: UdpSocket,
    t0_ns: u64,
    stop: Arc<AtomicBool>,
    progress: Arc<UdpProgress>,
) -> UdpReceived {
    let mut out = UdpReceived::default();
    if let Err(e) = sock.set_read_timeout(Some(POLL)) {
        out.error = Some(format!("UDP sink: {e}"));
        return out;
    }
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        match sock.recv(&mut buf) {
            Ok(n) if n >= DATAGRAM_HEADER_BYTES as usize => {
                let now_ns = monotonic_ns();
                let seq = u64::from_be_bytes(buf[..8].try_into().unwrap_or_default());
                let sent_ns = u64::from_be_bytes(buf[8..16].try_into().unwrap_or_default());
                progress.seen.fetch_max(seq + 1, Ordering::Relaxed);
                progress.last_arrival_ns.store(now_ns, Ordering::Relaxed);
                let on_line = |ns: u64| SimTime::from_nanos(ns.saturating_sub(t0_ns));
                out.sink
                    .on_datagram(on_line(now_ns), on_line(sent_ns), n as u32);
            }
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {}
            Err(e) => {
                out.error = Some(format!("UDP sink: {e}"));
                return out;
            }
        }
    }
    out
}

/// A UDP socket bound to `at` (in the calling thread's namespace).
pub(crate) fn udp_bind(at: SocketAddrV4) -> std::io::Result<UdpSocket> {
    UdpSocket::bind(at)
}

/// One connection of a short-flow class as its sender saw it.
#[derive(Debug, Default, Clone)]
pub(crate) struct ConnSent {
    pub(crate) size_bytes: u64,
    /// Monotonic ns of its connect(), and the local port it got.
    pub(crate) connect_ns: Option<u64>,
    pub(crate) local_port: Option<u16>,
    pub(crate) written_bytes: u64,
    pub(crate) error: Option<String>,
}

/// One connection of a short-flow class as its sink saw it.
#[derive(Debug, Default, Clone)]
pub(crate) struct ConnRead {
    pub(crate) peer_port: u16,
    pub(crate) received_bytes: u64,
    pub(crate) last_byte_ns: Option<u64>,
    pub(crate) eof: bool,
}

/// A short-flow class's sender: at each arrival's instant a connection of its own (a thread,
/// in this namespace) writing the drawn size; returns once every connection ended.
pub(crate) fn short_flow_sender(
    arrivals: Vec<Arrival>,
    settings: ShortFlowSettings,
    t0_ns: u64,
    stop: Arc<AtomicBool>,
) -> Vec<ConnSent> {
    let mut conns: Vec<JoinHandle<ConnSent>> = Vec::with_capacity(arrivals.len());
    for a in arrivals {
        if !wait_until(t0_ns + a.at.as_nanos(), &stop) {
            break;
        }
        let (s, settings) = (Arc::clone(&stop), settings.clone());
        let spawned = std::thread::Builder::new()
            .name("farlink-short".into())
            .spawn(move || short_flow(a.size_bytes, &settings, &s));
        match spawned {
            Ok(h) => conns.push(h),
            Err(e) => {
                let error = Some(format!("short flow: spawn: {e}"));
                let failed = ConnSent {
                    size_bytes: a.size_bytes,
                    error,
                    ..ConnSent::default()
                };
                conns.push(std::thread::spawn(move || failed));
            }
        }
    }
    conns
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect()
}

/// One short flow: connect, write `size_bytes`, close the sending side, wait for the sink to
/// close (it does once it read everything).
fn short_flow(size_bytes: u64, settings: &ShortFlowSettings, stop: &AtomicBool) -> ConnSent {
    let mut out = ConnSent {
        size_bytes,
        connect_ns: Some(monotonic_ns()),
        ..ConnSent::default()
    };
    let result = (|| -> std::io::Result<()> {
        let mut conn = connect(settings, stop)?;
        out.local_port = Some(conn.local_addr()?.port());
        conn.set_read_timeout(Some(POLL))?;
        let chunk = vec![0u8; 64 * 1024];
        while out.written_bytes < size_bytes {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let want = (size_bytes - out.written_bytes).min(chunk.len() as u64) as usize;
            match conn.write(&chunk[..want]) {
                Ok(n) => out.written_bytes += n as u64,
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        finish_write(&mut conn, stop)
    })();
    if let Err(e) = result {
        out.error = Some(format!("short flow: {e}"));
    }
    out
}

/// A short-flow class's sink: every connection accepted until the run stops, each read to
/// its end by a thread of its own, which then closes it.
pub(crate) fn short_flow_sink(listener: TcpListener, stop: Arc<AtomicBool>) -> Vec<ConnRead> {
    let mut readers: Vec<JoinHandle<ConnRead>> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, peer)) => {
                let s = Arc::clone(&stop);
                let port = peer.port();
                if let Ok(h) = std::thread::Builder::new()
                    .name("farlink-short-sink".into())
                    .spawn(move || read_to_end(conn, port, &s))
                {
                    readers.push(h);
                }
            }
            Err(e) if is_timeout(&e) => {}
            Err(_) => break,
        }
    }
    readers
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect()
}

fn read_to_end(mut conn: TcpStream, peer_port: u16, stop: &AtomicBool) -> ConnRead {
    let mut out = ConnRead {
        peer_port,
        ..ConnRead::default()
    };
    if conn.set_read_timeout(Some(POLL)).is_err() {
        return out;
    }
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match conn.read(&mut buf) {
            Ok(0) => {
                out.eof = true;
                break;
            }
            Ok(n) => {
                out.received_bytes += n as u64;
                out.last_byte_ns = Some(monotonic_ns());
            }
            Err(e) if is_timeout(&e) => {}
            Err(_) => break,
        }
    }
    out
}

/// Each sent connection's completion, its sink's record found by the sender's port (taken in
/// order: a port comes back only after its TIME_WAIT, so never while an earlier connection on
/// it is unmatched): finished once its sink read all of it and the end.
pub(crate) fn completions(sent: &[ConnSent], read: &[ConnRead]) -> Vec<Completed> {
    let mut by_port: HashMap<u16, VecDeque<&ConnRead>> = HashMap::new();
    for r in read {
        by_port.entry(r.peer_port).or_default().push_back(r);
    }
    sent.iter()
        .map(|s| {
            let r = s
                .local_port
                .and_then(|p| by_port.get_mut(&p).and_then(VecDeque::pop_front));
            let fct_s = r
                .filter(|r| r.eof && r.received_bytes == s.size_bytes)
                .and_then(|r| Some(r.last_byte_ns?.saturating_sub(s.connect_ns?) as f64 / 1e9));
            Completed {
                size_bytes: s.size_bytes,
                fct_s,
            }
        })
        .collect()
}

/// What the emulator cannot run of flow `i`'s traffic: datagrams too small for the number
/// and send instant each carries.
pub(crate) fn check_flow(i: usize, f: &FlowSpec) -> Result<(), EmuError> {
    match f.app {
        AppSpec::Udp(u) if u.packet_bytes < DATAGRAM_HEADER_BYTES => Err(ScenarioError::new(
            format!("flows[{i}].app.packet_bytes"),
            format!(
                "the emulator's datagrams carry their number and send time in their first \
                 {DATAGRAM_HEADER_BYTES} bytes: expected at least {DATAGRAM_HEADER_BYTES}, got {}",
                u.packet_bytes
            ),
        )
        .into()),
        _ => Ok(()),
    }
}

/// The TUN devices' MTU: the largest full packet of the TCP flows (a UDP flow's `[flows.tcp]`
/// is the defaults', which must not change the TCP flows' MSS), 1500 without any; a UDP
/// flow's datagram must fit it whole, as the simulator carries it (the kernel would fragment
/// it, and the links would see pieces).
pub(crate) fn tun_mtu(sc: &Scenario) -> Result<u32, EmuError> {
    let is_udp = |f: &&FlowSpec| matches!(f.app, AppSpec::Udp(_));
    let tcp = sc.flows().iter().filter(|f| !is_udp(f));
    let mtu = tcp.map(|f| f.tcp.full_packet_bytes()).max().unwrap_or(1500);
    for (i, f) in sc.flows().iter().enumerate() {
        if let AppSpec::Udp(u) = f.app {
            let wire_bytes = farlink_core::apps::udp::wire_bytes(u.packet_bytes);
            if wire_bytes > mtu {
                return Err(ScenarioError::new(
                    format!("flows[{i}].app.packet_bytes"),
                    format!(
                        "{} bytes of payload make {wire_bytes}-byte datagrams, more than the \
                         emulator's {mtu}-byte MTU (the TCP flows' largest packet), which the \
                         kernel would fragment: at most {}",
                        u.packet_bytes,
                        mtu - farlink_core::scenario::UDP_HEADER_BYTES
                    ),
                )
                .into());
            }
        }
    }
    Ok(mtu)
}

/// A program as the workload (`-- COMMAND`) runs beside the scenario's bulk sinks only: the
/// traffic flows' ends are the built-in workload's.
pub(crate) fn refuse_with_command(sc: &Scenario) -> Result<(), EmuError> {
    match sc
        .flows()
        .iter()
        .position(|f| crate::workload::is_traffic(&f.app))
    {
        Some(i) => Err(EmuError::Usage(format!(
            "flows[{i}].app: a {} flow runs in the built-in workload only, not beside a \
             command (-- COMMAND, --shell)",
            sc.flows()[i].app.kind()
        ))),
        None => Ok(()),
    }
}

/// The senders' choices with the traffic flows': a UDP flow has no TCP (its source is
/// `udp_sender`, whatever `--sender` says); a short-flow class's connections are the
/// kernel's (farlink's sender runs one bulk transfer per flow).
pub(crate) fn choices(
    sc: &Scenario,
    mut choices: Vec<SenderChoice>,
) -> Result<Vec<SenderChoice>, EmuError> {
    for (k, (f, c)) in sc.flows().iter().zip(choices.iter_mut()).enumerate() {
        match f.app {
            AppSpec::Udp(_) => *c = SenderChoice::Kernel("none".into()),
            AppSpec::FlowsPoisson(_) | AppSpec::RequestResponse(_) if c.is_farlink() => {
                return Err(ScenarioError::new(
                    format!("flows[{k}].tcp.cc"),
                    format!(
                        "the emulator runs a {} flow on the kernel's TCP only, and \"{}\" is \
                         farlink's sender's (drop --sender farlink, or give a controller the \
                         kernel has)",
                        f.app.kind(),
                        c.congestion()
                    ),
                )
                .into())
            }
            _ => {}
        }
    }
    Ok(choices)
}

/// What a traffic flow's two ends saw, once the run ended.
#[derive(Debug, Default)]
pub(crate) enum TrafficOutcome {
    /// A TCP flow of the built-in workload.
    #[default]
    None,
    Udp {
        sent: UdpSent,
        received: UdpReceived,
    },
    ShortFlows {
        sent: Vec<ConnSent>,
        read: Vec<ConnRead>,
    },
    Exchanges {
        ex: Box<Exchanges>,
        /// Bytes read by the server (requests) and the client (responses).
        delivered_bytes: u64,
        error: Option<String>,
    },
}

/// A traffic flow's threads while the run goes on.
pub(crate) enum Running {
    Udp {
        sender: JoinHandle<Option<UdpSent>>,
        receiver: JoinHandle<UdpReceived>,
        progress: Arc<UdpProgress>,
        /// How long no arrival means the rest was lost (`UdpProgress::drained`).
        quiet_ns: u64,
    },
    ShortFlows {
        sender: JoinHandle<Option<Vec<ConnSent>>>,
        sink: JoinHandle<Vec<ConnRead>>,
    },
    Exchanges {
        client: JoinHandle<Option<exchange::Ended>>,
        server: JoinHandle<Option<exchange::Ended>>,
        ex: Arc<Mutex<Exchanges>>,
    },
}

impl Running {
    /// Flow `k` of `sc`, if it is a UDP flow or a short-flow class: its receiving end bound in
    /// `to_ns` (before the sender starts), its sending end in `from_ns`.
    pub(crate) fn start(
        sc: &Scenario,
        k: usize,
        (from_ns, to_ns): (&Netns, &Netns),
        (client_at, peer): (SocketAddrV4, SocketAddrV4),
        congestion: &str,
        t0_ns: u64,
        stop: &Arc<AtomicBool>,
    ) -> Result<Option<Running>, EmuError> {
        let f = &sc.flows()[k];
        let end = SimTime::ZERO + sc.duration();
        let bound = |what: &str, e: std::io::Error| EmuError::sys(format!("{what} {peer}"), e);
        match &f.app {
            AppSpec::Udp(spec) => {
                let sock = to_ns
                    .spawn("farlink-udp-bind", move || udp_bind(peer))?
                    .join()
                    .ok()
                    .flatten()
                    .ok_or_else(|| EmuError::Internal("UDP sink: bind thread".into()))?
                    .map_err(|e| bound("UDP sink bind", e))?;
                let progress = Arc::new(UdpProgress::default());
                let (s, p) = (Arc::clone(stop), Arc::clone(&progress));
                let receiver = std::thread::Builder::new()
                    .name("farlink-udp-sink".into())
                    .spawn(move || udp_receiver(sock, t0_ns, s, p))
                    .map_err(|e| EmuError::sys("spawn thread", e))?;
                let rng = StreamRng::derive(sc.seed(), &format!("flow:{}:app", f.name));
                let source = UdpSource::new(*spec, f.start, f.stop, rng);
                let (s, p) = (Arc::clone(stop), Arc::clone(&progress));
                let sender = from_ns.spawn("farlink-udp-source", move || {
                    udp_sender(peer, source, end, t0_ns, s, p)
                })?;
                // Twice the propagation round trip and a second: longer than any queue of a
                // preset holds a datagram.
                let quiet_ns = 2 * sc.round_trip(&f.path).as_nanos() + 1_000_000_000;
                Ok(Some(Running::Udp {
                    sender,
                    receiver,
                    progress,
                    quiet_ns,
                }))
            }
            AppSpec::FlowsPoisson(_) => {
                let rcvbuf = f.tcp.receive_buffer_bytes;
                let listener = to_ns
                    .spawn("farlink-short-bind", move || {
                        short_flow_listener(peer, rcvbuf)
                    })?
                    .join()
                    .ok()
                    .flatten()
                    .ok_or_else(|| EmuError::Internal("short flows: bind thread".into()))?
                    .map_err(|e| bound("short flows listen", e))?;
                let s = Arc::clone(stop);
                let sink = std::thread::Builder::new()
                    .name("farlink-short-sink".into())
                    .spawn(move || short_flow_sink(listener, s))
                    .map_err(|e| EmuError::sys("spawn thread", e))?;
                let arrivals = short_flows::plan_of(sc, k).unwrap_or_default();
                let settings = ShortFlowSettings {
                    peer,
                    congestion: congestion.to_owned(),
                    send_buffer_bytes: f.tcp.send_buffer_bytes,
                };
                let s = Arc::clone(stop);
                let sender = from_ns.spawn("farlink-short-flows", move || {
                    short_flow_sender(arrivals, settings, t0_ns, s)
                })?;
                Ok(Some(Running::ShortFlows { sender, sink }))
            }
            AppSpec::RequestResponse(spec) => {
                let rcvbuf = f.tcp.receive_buffer_bytes;
                let bind = |ns: &Netns, at: SocketAddrV4| {
                    ns.spawn("farlink-rr-bind", move || exchange::listener(at, rcvbuf))?
                        .join()
                        .ok()
                        .flatten()
                        .ok_or_else(|| EmuError::Internal("request/response: bind thread".into()))?
                        .map_err(|e| EmuError::sys(format!("request/response listen {at}"), e))
                };
                let requests = bind(to_ns, peer)?;
                let responses = bind(from_ns, client_at)?;
                let ex = Arc::new(Mutex::new(Exchanges::new(spec.clone(), sc.seed(), &f.name)));
                let settings = |to| ShortFlowSettings {
                    peer: to,
                    congestion: congestion.to_owned(),
                    send_buffer_bytes: f.tcp.send_buffer_bytes,
                };
                let (back, to) = (settings(client_at), settings(peer));
                let (s, e) = (Arc::clone(stop), Arc::clone(&ex));
                let server = to_ns.spawn("farlink-rr-server", move || {
                    exchange::server(requests, back, e, s)
                })?;
                let (s, e) = (Arc::clone(stop), Arc::clone(&ex));
                let span = (f.start, f.stop);
                let client = from_ns.spawn("farlink-rr-client", move || {
                    exchange::client(to, responses, e, span, t0_ns, s)
                })?;
                Ok(Some(Running::Exchanges { client, server, ex }))
            }
            _ => Ok(None),
        }
    }

    /// Its sender has ended: a UDP source past its last send and its datagrams all in (or
    /// past the run's end), a class's last connection.
    pub(crate) fn sender_done(&self) -> bool {
        match self {
            Running::Udp {
                sender,
                progress,
                quiet_ns,
                ..
            } => {
                let ended = progress.ended_at_ns.load(Ordering::Acquire) != 0;
                sender.is_finished() && (!ended || progress.drained(*quiet_ns))
            }
            Running::ShortFlows { sender, .. } => sender.is_finished(),
            // The client ended at its stop; done once its last exchange is answered.
            Running::Exchanges { client, ex, .. } => {
                client.is_finished() && ex.lock().map_or(true, |e| e.idle())
            }
        }
    }

    /// What both ends saw (the run's stop flag set first).
    pub(crate) fn finish(self) -> TrafficOutcome {
        match self {
            Running::Udp {
                sender, receiver, ..
            } => TrafficOutcome::Udp {
                sent: sender.join().ok().flatten().unwrap_or_default(),
                received: receiver.join().unwrap_or_default(),
            },
            Running::ShortFlows { sender, sink } => TrafficOutcome::ShortFlows {
                sent: sender.join().ok().flatten().unwrap_or_default(),
                read: sink.join().unwrap_or_default(),
            },
            Running::Exchanges { client, server, ex } => {
                let ends: Vec<exchange::Ended> = [client, server]
                    .into_iter()
                    .map(|h| h.join().ok().flatten().unwrap_or_default())
                    .collect();
                let errors: Vec<String> = ends.iter().filter_map(|e| e.error.clone()).collect();
                // Both ends joined: this is the last handle (a panicked end's mutex is
                // poisoned, its exchanges still what they were).
                let Ok(ex) = Arc::try_unwrap(ex) else {
                    return TrafficOutcome::None;
                };
                let ex = ex.into_inner().unwrap_or_else(|p| p.into_inner());
                TrafficOutcome::Exchanges {
                    ex: Box::new(ex),
                    delivered_bytes: ends.iter().map(|e| e.read_bytes).sum(),
                    error: (!errors.is_empty()).then(|| errors.join("; ")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_match_by_port_in_order_and_need_every_byte() {
        let sent = |port, size, at| ConnSent {
            size_bytes: size,
            connect_ns: Some(at),
            local_port: Some(port),
            written_bytes: size,
            error: None,
        };
        let read = |port, bytes, last, eof| ConnRead {
            peer_port: port,
            received_bytes: bytes,
            last_byte_ns: Some(last),
            eof,
        };
        let s = [sent(40000, 10, 0), sent(40001, 20, 5), sent(40000, 30, 100)];
        let r = [
            read(40001, 20, 2_000_000_005, true),
            read(40000, 10, 1_000_000_000, true),
            read(40000, 29, 3_000_000_000, true),
        ];
        let c = completions(&s, &r);
        assert_eq!(c[0].fct_s, Some(1.0));
        assert_eq!(c[1].fct_s, Some(2.0));
        assert_eq!(c[2].fct_s, None, "a byte short is unfinished");
    }
}
