//! The TCP connections a program (`-- COMMAND`) opens to its peer, measured as the built-in
//! transfer's are: their `TCP_INFO` through sock_diag in the sender's namespace, sampled every
//! [`SAMPLE_INTERVAL`] while they live and read a last time as the kernel destroys them.
//! From them the run's first flow gets the program's figures (`outcome`).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use netlink_packet_sock_diag::constants::{TCP_LISTEN, TCP_TIME_WAIT};
use netlink_packet_sock_diag::inet::StateFlags;
use serde::Serialize;

use crate::bulk::{Sample, SenderOutcome, SinkOutcome, SAMPLE_INTERVAL};
use crate::error::EmuError;
use crate::netns::Netns;
use crate::sockdiag::{DiagSocket, SockDiag};
use crate::tcpinfo::TcpInfo;

/// One connection of the program's, as last seen.
#[derive(Clone, Debug)]
pub(crate) struct Connection {
    pub(crate) local: SocketAddr,
    pub(crate) remote: SocketAddr,
    /// Monotonic ns of the first sample that showed data sent or received.
    pub(crate) first_data_ns: Option<u64>,
    /// Monotonic ns of the last sample at which bytes acknowledged or received grew.
    pub(crate) last_progress_ns: Option<u64>,
    pub(crate) last: TcpInfo,
    pub(crate) samples: Vec<Sample>,
    /// The kernel destroyed it (its last `TCP_INFO` is the one the destruction carried).
    pub(crate) ended: bool,
}

impl Connection {
    /// Data bytes it moved: acknowledged by the peer plus received from it.
    pub(crate) fn moved_bytes(&self) -> u64 {
        self.last.bytes_acked + self.last.bytes_received
    }

    fn update(&mut self, info: TcpInfo, at_ns: u64) {
        if self.first_data_ns.is_none()
            && (info.data_segs_out.unwrap_or(0) > 0 || info.bytes_received > 0)
        {
            self.first_data_ns = Some(at_ns);
        }
        if info.bytes_acked + info.bytes_received > self.moved_bytes() {
            self.last_progress_ns = Some(at_ns);
        }
        self.last = info;
        self.samples.push(Sample { at_ns, info });
    }
}

/// What is watched, and the thread that watches.
pub(crate) struct Monitor {
    handle: std::thread::JoinHandle<Vec<Connection>>,
    stop: Arc<AtomicBool>,
    /// Connections to the peer the kernel has not destroyed yet.
    pub(crate) open: Arc<AtomicUsize>,
}

impl Monitor {
    /// Starts watching `ns`'s connections to `peer`.
    pub(crate) fn start(
        ns: &Netns,
        peer: IpAddr,
        now_ns: fn() -> u64,
    ) -> Result<Monitor, EmuError> {
        let dumps = SockDiag::open(ns)?;
        let destroys = SockDiag::open_destroyed(ns)?;
        let stop = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicUsize::new(0));
        let (s, o) = (Arc::clone(&stop), Arc::clone(&open));
        let handle = std::thread::Builder::new()
            .name("farlink-conns".into())
            .spawn(move || watch(&dumps, &destroys, peer, &s, &o, now_ns))
            .map_err(|e| EmuError::sys("thread", e))?;
        Ok(Monitor { handle, stop, open })
    }

    /// Takes a last look and returns the connections, in the order they were first seen.
    pub(crate) fn finish(self) -> Vec<Connection> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// The sampling loop: destructions first (their `TCP_INFO` is final), then a dump.
fn watch(
    dumps: &SockDiag,
    destroys: &SockDiag,
    peer: IpAddr,
    stop: &AtomicBool,
    open: &AtomicUsize,
    now_ns: fn() -> u64,
) -> Vec<Connection> {
    let mut conns: BTreeMap<[u8; 8], (usize, Connection)> = BTreeMap::new();
    let live = StateFlags::all() - StateFlags::LISTEN - StateFlags::TIME_WAIT;
    loop {
        let last_look = stop.load(Ordering::Relaxed);
        let at = now_ns();
        let mut seen = destroys.destroyed().unwrap_or_default();
        let ended = seen.len();
        seen.extend(dumps.dump(live.clone(), true).unwrap_or_default());
        for (i, s) in seen.into_iter().enumerate() {
            observe(&mut conns, s, peer, at, i < ended);
        }
        open.store(
            conns.values().filter(|(_, c)| !c.ended).count(),
            Ordering::Release,
        );
        if last_look {
            break;
        }
        std::thread::sleep(SAMPLE_INTERVAL);
    }
    let mut all: Vec<(usize, Connection)> = conns.into_values().collect();
    all.sort_by_key(|(order, _)| *order);
    all.into_iter().map(|(_, c)| c).collect()
}

/// Records what a sample says of one socket, if it is a connection to `peer`.
fn observe(
    conns: &mut BTreeMap<[u8; 8], (usize, Connection)>,
    s: DiagSocket,
    peer: IpAddr,
    at_ns: u64,
    destroyed: bool,
) {
    if s.remote.ip() != peer || s.state == TCP_LISTEN || s.state == TCP_TIME_WAIT {
        return;
    }
    let Some(info) = s.info else { return };
    let order = conns.len();
    let (_, c) = conns.entry(s.cookie).or_insert_with(|| {
        (
            order,
            Connection {
                local: s.local,
                remote: s.remote,
                first_data_ns: None,
                last_progress_ns: None,
                last: TcpInfo::default(),
                samples: Vec::new(),
                ended: false,
            },
        )
    });
    if c.ended {
        return;
    }
    c.update(info, at_ns);
    c.ended = destroyed;
}

/// One connection in the result's `command.connections`.
#[derive(Clone, Debug, Serialize)]
pub struct ConnectionReport {
    pub local: String,
    pub remote: String,
    /// Bytes the peer acknowledged, and bytes received from it.
    pub acked_bytes: u64,
    pub received_bytes: u64,
    pub retransmissions: u64,
    /// From its first data to its last progress (acknowledged or received bytes), s.
    pub active_s: Option<f64>,
    /// Whether it carried more than an initial window: only such connections' time counts
    /// in the flow's goodput (a control exchange or a request is bounded by round trips).
    pub transfer: bool,
    /// The kernel destroyed it before the run ended.
    pub ended: bool,
}

/// Whether `c` carried more than an initial window of `initial_window_segments`.
fn is_transfer(c: &Connection, initial_window_segments: u32) -> bool {
    let mss = u64::from(c.last.snd_mss.max(536));
    c.moved_bytes() > u64::from(initial_window_segments) * mss
}

/// The connections as the result lists them.
pub(crate) fn reports(conns: &[Connection], initial_window_segments: u32) -> Vec<ConnectionReport> {
    conns
        .iter()
        .map(|c| ConnectionReport {
            local: c.local.to_string(),
            remote: c.remote.to_string(),
            acked_bytes: c.last.bytes_acked,
            received_bytes: c.last.bytes_received,
            retransmissions: u64::from(c.last.total_retrans),
            active_s: c
                .first_data_ns
                .zip(c.last_progress_ns)
                .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9),
            transfer: is_transfer(c, initial_window_segments),
            ended: c.ended,
        })
        .collect()
}

/// The first flow's sender and (without a sink) sink as the program's connections make them:
/// bytes, retransmissions, timeouts and segments summed; the sender's state that of the
/// connection that moved the most; the goodput's time from the first data to the last progress
/// of the connections that carried more than an initial window (of all, if none did).
pub(crate) fn outcome(
    conns: &[Connection],
    initial_window_segments: u32,
    exited: bool,
) -> (SenderOutcome, SinkOutcome) {
    let transfers: Vec<&Connection> = conns
        .iter()
        .filter(|c| is_transfer(c, initial_window_segments))
        .collect();
    let timed: Vec<&Connection> = if transfers.is_empty() {
        conns.iter().collect()
    } else {
        transfers
    };
    let first_ns = timed.iter().filter_map(|c| c.first_data_ns).min();
    let last_ns = timed.iter().filter_map(|c| c.last_progress_ns).max();
    let main = conns.iter().max_by_key(|c| c.moved_bytes());
    let sum = |f: fn(&TcpInfo) -> u64| conns.iter().map(|c| f(&c.last)).sum::<u64>();
    let some_sum = |f: fn(&TcpInfo) -> Option<u64>| -> Option<u64> {
        conns.iter().map(|c| f(&c.last)).sum::<Option<u64>>()
    };
    let moved: u64 = conns.iter().map(Connection::moved_bytes).sum();
    let last = main.map(|m| TcpInfo {
        total_retrans: sum(|i| u64::from(i.total_retrans)).min(u64::from(u32::MAX)) as u32,
        bytes_acked: sum(|i| i.bytes_acked),
        bytes_received: sum(|i| i.bytes_received),
        bytes_sent: some_sum(|i| i.bytes_sent),
        bytes_retrans: some_sum(|i| i.bytes_retrans),
        total_rto: some_sum(|i| i.total_rto.map(u64::from))
            .map(|n| n.min(u64::from(u16::MAX)) as u16),
        data_segs_out: some_sum(|i| i.data_segs_out.map(u64::from))
            .map(|n| n.min(u64::from(u32::MAX)) as u32),
        min_rtt_us: conns.iter().filter_map(|c| c.last.min_rtt_us).min(),
        ..m.last
    });
    let all_ended = !conns.is_empty() && conns.iter().all(|c| c.ended);
    let sender = SenderOutcome {
        first_write_ns: first_ns,
        connected_ns: None,
        connect_started_ns: 0,
        written_bytes: moved,
        // What the program wrote is known once it has exited and its connections ended.
        stopped: exited && all_ended,
        samples: main.map(|m| m.samples.clone()).unwrap_or_default(),
        last,
        ..Default::default()
    };
    let sink = SinkOutcome {
        received_bytes: moved,
        last_byte_ns: last_ns,
        eof: all_ended,
        ..Default::default()
    };
    (sender, sink)
}

/// The first flow's sender and sinks for the report: the program's connections make the
/// sender; the sinks, where there are any, count what they received, else the connections do,
/// their last byte being, for bytes the program sent, the last data segment the links
/// delivered to the receiver (`last_data_ns`, monotonic) if that came before the last ACK the
/// sender saw (bytes the program received reached it when it saw them). `exited`: the
/// program ended by itself.
pub(crate) fn first_flow(
    conns: &[Connection],
    sinks: Vec<SinkOutcome>,
    exited: bool,
    initial_window_segments: u32,
    last_data_ns: Option<u64>,
) -> (Vec<SenderOutcome>, Vec<SinkOutcome>) {
    let (sender, mut counted) = outcome(conns, initial_window_segments, exited);
    let sent: u64 = conns.iter().map(|c| c.last.bytes_acked).sum();
    let received: u64 = conns.iter().map(|c| c.last.bytes_received).sum();
    if let (Some(at), Some(acked), true) = (last_data_ns, counted.last_byte_ns, sent >= received) {
        counted.last_byte_ns = Some(at.min(acked));
    }
    let sinks = if sinks.is_empty() {
        vec![counted]
    } else {
        sinks
    };
    (vec![sender], sinks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(acked: u64, first_ns: u64, last_ns: u64, retrans: u32) -> Connection {
        Connection {
            local: "10.0.0.1:40000".parse().unwrap(),
            remote: "10.0.0.3:5201".parse().unwrap(),
            first_data_ns: Some(first_ns),
            last_progress_ns: Some(last_ns),
            last: TcpInfo {
                snd_mss: 960,
                bytes_acked: acked,
                total_retrans: retrans,
                data_segs_out: Some((acked / 960) as u32),
                ..Default::default()
            },
            samples: Vec::new(),
            ended: true,
        }
    }

    #[test]
    fn a_control_exchange_adds_its_bytes_but_not_its_time() {
        // iperf3: a control connection open all along carrying a few hundred bytes, and the
        // data connection, opened later.
        let control = conn(300, 1_000_000_000, 12_000_000_000, 0);
        let data = conn(1_000_000, 2_000_000_000, 11_000_000_000, 7);
        let (snd, sink) = outcome(&[control, data], 10, true);
        assert_eq!(snd.first_write_ns, Some(2_000_000_000));
        assert_eq!(sink.last_byte_ns, Some(11_000_000_000));
        assert_eq!(sink.received_bytes, 1_000_300);
        assert!(sink.eof && snd.stopped);
        let last = snd.last.unwrap();
        assert_eq!((last.total_retrans, last.bytes_acked), (7, 1_000_300));
    }

    #[test]
    fn short_exchanges_alone_are_timed_all_together() {
        let a = conn(100, 1_000, 5_000, 0);
        let b = conn(200, 3_000, 9_000, 1);
        let (snd, sink) = outcome(&[a, b], 10, false);
        assert_eq!(
            (snd.first_write_ns, sink.last_byte_ns),
            (Some(1_000), Some(9_000))
        );
        // The program still ran: what it wrote is not known yet.
        assert!(!snd.stopped);
    }
}
