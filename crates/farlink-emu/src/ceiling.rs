//! References for the driver's throughput ceiling (`make bench-emu`): the same kernel TCP bulk
//! transfer between two namespaces as an emulation, carried by a bare TUN forwarder (read a
//! packet from one TUN device, write it to the other, nothing else) or by a veth pair (no user
//! space at all). What the driver moves with no delay and no rate limit, set beside these,
//! says what its own work per packet costs.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use serde::Serialize;

use crate::bulk::{self, SenderPlan};
use crate::clock::monotonic_ns;
use crate::error::EmuError;
use crate::netns::{Netns, RunLock};
use crate::signals::Signals;
use crate::tun::Tun;

/// What carries the packets between the two namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// A thread reading each packet from one TUN device and writing it to the other.
    BareTun,
    /// The same with both devices opened with offloads (`IFF_VNET_HDR`, TSO): whatever the
    /// kernel hands over, a TCP super-segment of up to 64 KiB behind its `virtio_net_hdr`, is
    /// written to the other device as it came.
    BareTunOffload,
    /// A veth pair, one end in each namespace.
    Veth,
}

impl Carrier {
    /// The name the benchmark and the example use.
    pub fn name(self) -> &'static str {
        match self {
            Carrier::BareTun => "bare_tun",
            Carrier::BareTunOffload => "bare_tun_offload",
            Carrier::Veth => "veth",
        }
    }

    pub fn from_name(name: &str) -> Option<Carrier> {
        [Carrier::BareTun, Carrier::BareTunOffload, Carrier::Veth]
            .into_iter()
            .find(|c| c.name() == name)
    }
}

/// One reference run.
#[derive(Clone, Debug, Serialize)]
pub struct CeilingResult {
    pub carrier: &'static str,
    pub mtu: u32,
    pub congestion: String,
    /// Payload bytes the sink read, and the time from the first write to the last byte read.
    pub delivered_bytes: u64,
    pub transfer_time_s: f64,
    pub goodput_bps: f64,
    /// Reads the forwarder moved (both ways; none for veth): packets, or with offloads
    /// super-segments.
    pub packets_forwarded: u64,
    /// CPU the forwarder's thread spent over the transfer (none for veth).
    pub forwarder_cpu_fraction: f64,
    pub interrupted: bool,
    pub error: Option<String>,
}

const S_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const D_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const PORT: u16 = 5001;

/// Moves an unbounded kernel TCP transfer (`congestion`, MTU `mtu`) from one namespace to
/// another for `duration` over `carrier`; everything made is removed before it returns.
pub fn reference_transfer(
    carrier: Carrier,
    mtu: u32,
    congestion: &str,
    duration: Duration,
) -> Result<CeilingResult, EmuError> {
    crate::run::check_host()?;
    let signals = Signals::install()?;
    let lock = RunLock::acquire()?;
    let s = Netns::create(&lock.id, "S")?;
    let d = Netns::create(&lock.id, "D")?;
    let mut tuns = join(carrier, &s, &d, &format!("farlink-{}", lock.id), mtu)?;

    let stop = Arc::new(AtomicBool::new(false));
    let forwarding = Arc::new(AtomicBool::new(true));
    let forwarder = (carrier != Carrier::Veth).then(|| {
        let run = Arc::clone(&forwarding);
        let tuns = std::mem::take(&mut tuns);
        std::thread::spawn(move || forward(tuns, &run))
    });
    let ready = Arc::new(AtomicBool::new(false));
    let at = SocketAddrV4::new(D_ADDR, PORT);
    let (r, st) = (Arc::clone(&ready), Arc::clone(&stop));
    let sink = d.spawn("farlink-sink", move || {
        bulk::sink(at, Some(32 << 20), r, st, monotonic_ns, false, false)
    })?;
    while !ready.load(Ordering::Acquire) && !sink.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let now = monotonic_ns();
    let plan = SenderPlan {
        peer: at,
        size_bytes: u64::MAX,
        start_ns: now,
        stop_ns: Some(now + duration.as_nanos() as u64),
        congestion: congestion.to_owned(),
        send_buffer_bytes: None,
        payload_seed: None,
        mptcp: false,
        shutdown: farlink_core::scenario::Shutdown::Written,
    };
    let st = Arc::clone(&stop);
    let sender = s.spawn("farlink-sender", move || {
        bulk::sender(plan, st, monotonic_ns)
    })?;
    // The transfer, its drain, and a bound on both.
    let limit = now + duration.as_nanos() as u64 + 30_000_000_000;
    while !sender.is_finished() && !signals.interrupted() && monotonic_ns() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let snd = sender.join().ok().flatten().unwrap_or_default();
    let got = sink.join().ok().flatten().unwrap_or_default();
    forwarding.store(false, Ordering::Relaxed);
    let (packets, cpu_ns) = forwarder
        .map(|h| h.join().unwrap_or((0, 0)))
        .unwrap_or((0, 0));
    let time_ns = match (snd.first_write_ns, got.last_byte_ns) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    let secs = time_ns as f64 / 1e9;
    Ok(CeilingResult {
        carrier: carrier.name(),
        mtu,
        congestion: congestion.to_owned(),
        delivered_bytes: got.received_bytes,
        transfer_time_s: secs,
        goodput_bps: if secs > 0.0 {
            got.received_bytes as f64 * 8.0 / secs
        } else {
            0.0
        },
        packets_forwarded: packets,
        forwarder_cpu_fraction: if secs > 0.0 {
            cpu_ns as f64 / 1e9 / secs
        } else {
            0.0
        },
        interrupted: signals.interrupted(),
        error: snd.error.or(got.error),
    })
}

/// Joins namespaces `s` and `d` by `carrier` (a TUN device `device` in each, returned for the
/// forwarder, or a veth pair), addressed and routed, MTU `mtu`.
fn join(
    carrier: Carrier,
    s: &Netns,
    d: &Netns,
    device: &str,
    mtu: u32,
) -> Result<Vec<Tun>, EmuError> {
    let mut tuns = Vec::new();
    match carrier {
        Carrier::BareTun | Carrier::BareTunOffload => {
            let offload = carrier == Carrier::BareTunOffload;
            for ns in [s, d] {
                let dev = device.to_owned();
                tuns.push(ns.run(move || Tun::create_with(&dev, offload))??);
            }
        }
        Carrier::Veth => {
            s.ip(&[
                "link", "add", device, "type", "veth", "peer", "name", device, "netns", &d.name,
            ])?;
        }
    }
    for (ns, me, peer) in [(s, S_ADDR, D_ADDR), (d, D_ADDR, S_ADDR)] {
        ns.ip(&["addr", "add", &format!("{me}/32"), "dev", device])?;
        ns.ip(&["link", "set", device, "mtu", &mtu.to_string(), "up"])?;
        ns.ip(&["route", "add", &format!("{peer}/32"), "dev", device])?;
        ns.run(|| crate::netns::write_sysctl("net.ipv6.conf.all.disable_ipv6", "1"))??;
    }
    Ok(tuns)
}

/// The bare forwarder: whatever one TUN gives, written to the other at once. Returns the
/// packets moved and the thread's CPU time.
fn forward(mut tuns: Vec<Tun>, run: &AtomicBool) -> (u64, u64) {
    let cpu_before = crate::driver::thread_cpu_ns();
    let mut moved = 0u64;
    let Ok(epoll) = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC) else {
        return (0, 0);
    };
    for (i, t) in tuns.iter().enumerate() {
        if epoll
            .add(t.fd(), EpollEvent::new(EpollFlags::EPOLLIN, i as u64))
            .is_err()
        {
            return (0, 0);
        }
    }
    let mut buf = vec![0u8; farlink_core::tcp::gso::VNET_HDR_BYTES + 65536];
    let mut events = [EpollEvent::empty(); 2];
    while run.load(Ordering::Relaxed) {
        let Ok(n) = epoll.wait(&mut events, EpollTimeout::from(100u16)) else {
            continue;
        };
        for ev in &events[..n] {
            let from = ev.data() as usize;
            let to = 1 - from;
            while let Ok(Some(len)) = tuns[from].recv(&mut buf) {
                // A packet the kernel will not take is lost, as on a wire.
                let _ = tuns[to].send(&buf[..len]);
                moved += 1;
            }
        }
    }
    (
        moved,
        crate::driver::thread_cpu_ns().saturating_sub(cpu_before),
    )
}
