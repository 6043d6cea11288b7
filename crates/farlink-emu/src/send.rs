//! `farlink send`: farlink's own TCP sender to an arbitrary listener (a real program's
//! server), through a TUN device of its own.
//!
//! In the chosen namespace (one farlink made, by its `farlink-` name, or the host's), farlink
//! opens a TUN device `farlink<pid><n>` with the address `198.18.x.1/30` (RFC 2544's
//! benchmarking block, which no real network uses) and sends from `198.18.x.2`, the other end
//! of that on-link route. What it writes into the TUN reaches the kernel as if from a host
//! behind the device: to a listener on an address of the same namespace it is delivered
//! locally; to any other address the namespace must forward it (`net.ipv4.ip_forward`), and
//! the listener's side must route `198.18.0.0/15` back. The kernel's answers to `198.18.x.2`
//! follow the device's on-link route back into the TUN, where the connection reads them. So the
//! one route that matters is the device's own: a route to HOST through the device would send
//! the packets back out of it. farlink changes nothing else in a namespace it did not make; the
//! device (and with it its address and route) disappears when its descriptor closes, however
//! the process ends.
//!
//! The connection is the one `emulate --sender farlink` runs ([`WireClient`]), driven by the
//! wall clock and a `poll(2)` on the device (millisecond timers: enough for the links a real
//! listener sits behind).

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use farlink_core::pcap::{default_isn, Endpoints, FIRST_DYNAMIC_PORT};
use farlink_core::scenario::{AppSpec, Scenario};
use farlink_core::tcp::payload::PayloadStream;
use farlink_core::tcp::sender::AppSource;
use farlink_core::tcp::wire_client::{WireClient, WireClientConfig};
use farlink_core::time::SimTime;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sched::{setns, CloneFlags};
use sha2::{Digest as _, Sha256};

use crate::error::EmuError;
use crate::netns::ip;
use crate::signals::Signals;
use crate::tun::Tun;
use crate::wire_sender::payload_seed;

/// The prefix of every namespace and device farlink makes.
const FARLINK_PREFIX: &str = "farlink-";
/// Where iproute2 keeps named namespaces.
const NETNS_DIR: &str = "/run/netns";
/// The benchmarking block (RFC 2544), split into /30s: one per run.
const BLOCK_BASE: u32 = u32::from_be_bytes([198, 18, 0, 0]);
const BLOCK_SUBNETS: u32 = 1 << 15;
/// The largest packet the device carries (its default MTU is 1500).
const PACKET_BYTES: usize = 65_536;
/// The longest wait in `poll(2)`: how soon Ctrl-C and SIGTERM are seen.
const SIGNAL_CHECK_MS: u64 = 100;
/// Bytes of the payload hashed at a time.
const HASH_CHUNK_BYTES: usize = 64 * 1024;

/// What to send where.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendOptions {
    /// The listener's IPv4 address (a name is resolved by the caller).
    pub host: Ipv4Addr,
    pub port: u16,
    /// A namespace farlink made (`farlink-...`, under /run/netns); `None`: the host's.
    pub netns: Option<String>,
    /// How long the SYN may go unanswered before the send is given up.
    pub handshake_timeout_s: f64,
}

/// How a send went (`farlink send --json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SendReport {
    pub host: String,
    pub port: u16,
    pub netns: Option<String>,
    pub device: String,
    pub local_address: String,
    pub size_bytes: u64,
    pub bytes_acked: u64,
    /// First data segment to the last byte acknowledged; `None` unless all were.
    pub transfer_time_s: Option<f64>,
    pub goodput_bps: Option<f64>,
    pub retransmissions: u64,
    pub timeouts: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
    /// FNV-1a 64 of the bytes sent (as `emulate`'s `verified` uses), hex.
    pub digest_fnv1a64: String,
    /// SHA-256 of the bytes sent, hex: what a listener that hashes what it reads compares.
    pub sha256: String,
    pub interrupted: bool,
    /// Why the connection failed (refused, reset, unreachable, no answer); `None` when it
    /// completed or was interrupted.
    pub error: Option<String>,
}

/// Runs one send, the flow being `flows[0]` of `scenario_json` (its `tcp`, its bulk size, the
/// scenario's seed for the payload), and returns the report as JSON.
pub fn send_json(scenario_json: &str, options_json: &str) -> Result<String, EmuError> {
    let sc = farlink_core::scenario::parse_scenario_json(scenario_json)?;
    let opts: SendOptions = serde_json::from_str(options_json)
        .map_err(|e| EmuError::Usage(format!("send options: {e}")))?;
    let report = send(&sc, &opts)?;
    serde_json::to_string(&report).map_err(|e| EmuError::Internal(e.to_string()))
}

/// Runs one send (see [`send_json`]).
pub fn send(sc: &Scenario, opts: &SendOptions) -> Result<SendReport, EmuError> {
    check_host(opts.host)?;
    let flow = sc
        .flows()
        .first()
        .ok_or_else(|| EmuError::Internal("send: the scenario has no flow".into()))?;
    let AppSpec::Bulk { size_bytes } = flow.app else {
        return Err(EmuError::Usage("--size: send needs a size".into()));
    };
    let ns = match &opts.netns {
        Some(name) => Some(open_netns(name)?),
        None => None,
    };
    let seed = payload_seed(sc, 0);
    let tcp = flow.tcp;
    let opts = opts.clone();
    let name = opts.netns.clone();
    // A thread of its own: it enters the namespace, which the caller's thread must not.
    std::thread::Builder::new()
        .name("farlink-send".into())
        .spawn(move || {
            if let Some(file) = &ns {
                setns(file.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|e| {
                    EmuError::sys(format!("setns {}", name.as_deref().unwrap_or("")), e)
                })?;
            }
            let setup = Device::create(&opts)?;
            let config = WireClientConfig {
                sender: tcp.sender_config(AppSource::Bulk {
                    total_bytes: size_bytes,
                }),
                endpoints: setup.endpoints,
                isn: default_isn(&setup.endpoints),
                payload_seed: seed,
                start: SimTime::ZERO,
                stop: None,
            };
            let mut report = drive(setup, &config, &opts, size_bytes)?;
            let payload = PayloadStream::new(seed);
            report.digest_fnv1a64 = format!("{:016x}", payload.digest_of_prefix(size_bytes));
            report.sha256 = sha256_of_prefix(&payload, size_bytes);
            Ok(report)
        })
        .map_err(|e| EmuError::sys("spawn thread", e))?
        .join()
        .map_err(|_| EmuError::Internal("the send thread panicked".into()))?
}

/// Addresses no listener can be reached at from a device: refused in one line.
fn check_host(host: Ipv4Addr) -> Result<(), EmuError> {
    let why = if host.is_unspecified() {
        "is the unspecified address"
    } else if host.is_loopback() {
        "is a loopback address, which the kernel never accepts from a device (a martian); \
         give the listener another address of the namespace"
    } else if host.is_multicast() || host.is_broadcast() {
        "is not a unicast address"
    } else if (u32::from(host) & !(BLOCK_SUBNETS * 4 - 1)) == BLOCK_BASE {
        "is in 198.18.0.0/15, the block farlink's devices take their addresses from"
    } else {
        return Ok(());
    };
    Err(EmuError::Usage(format!("HOST: {host} {why}")))
}

/// A namespace farlink made, by name: the only kind `send` adds its device to.
fn open_netns(name: &str) -> Result<File, EmuError> {
    if !name.starts_with(FARLINK_PREFIX) || name.contains('/') {
        return Err(EmuError::Usage(format!(
            "--netns: \"{name}\" is not a namespace farlink made (farlink-...); farlink adds \
             devices only to its own namespaces, or sends from the host's (no --netns)"
        )));
    }
    let path = Path::new(NETNS_DIR).join(name);
    File::open(&path).map_err(|e| {
        EmuError::Usage(format!(
            "--netns: no namespace {name} ({}: {e})",
            path.display()
        ))
    })
}

/// The run's TUN device in the calling thread's namespace, up, with its address.
struct Device {
    tun: Tun,
    name: String,
    endpoints: Endpoints,
}

impl Device {
    fn create(opts: &SendOptions) -> Result<Device, EmuError> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed) % 16;
        let pid = std::process::id();
        // "farlink" + at most 7 hex digits of the pid + 1 of the sequence: IFNAMSIZ - 1.
        let name = format!("farlink{pid:x}{seq:x}");
        let subnet = (pid.wrapping_mul(16).wrapping_add(seq)) % BLOCK_SUBNETS;
        let base = BLOCK_BASE + subnet * 4;
        let device_addr = Ipv4Addr::from(base + 1);
        let local = Ipv4Addr::from(base + 2);
        check_reachable(opts)?;
        let tun = Tun::create(&name)?;
        let addr = format!("{device_addr}/30");
        let in_ns = |more: &[&str]| {
            let mut all: Vec<&str> = match &opts.netns {
                Some(ns) => vec!["-n", ns.as_str()],
                None => Vec::new(),
            };
            all.extend_from_slice(more);
            ip(&all)
        };
        in_ns(&["addr", "add", &addr, "dev", &name])?;
        in_ns(&["link", "set", &name, "up"])?;
        Ok(Device {
            tun,
            name,
            endpoints: Endpoints {
                src_ip: local.octets(),
                dst_ip: opts.host.octets(),
                src_port: FIRST_DYNAMIC_PORT,
                dst_port: opts.port,
            },
        })
    }
}

/// A listener on another host needs the namespace to forward: said in one line, never
/// changed (the namespace is not farlink's to change).
fn check_reachable(opts: &SendOptions) -> Result<(), EmuError> {
    // An address one can bind to is one of this namespace's own: delivered locally.
    if UdpSocket::bind(SocketAddrV4::new(opts.host, 0)).is_ok() {
        return Ok(());
    }
    let forwarding = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward")
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    if forwarding {
        return Ok(());
    }
    let ns = opts.netns.as_deref().unwrap_or("the host's namespace");
    Err(EmuError::Usage(format!(
        "HOST: {} is not an address of {ns}, and {ns} does not forward (net.ipv4.ip_forward \
         = 0); farlink changes no namespace it did not make: listen on an address of {ns}, or \
         enable forwarding there and route 198.18.0.0/15 back to it from the listener's side",
        opts.host
    )))
}

/// The connection on the device until it finishes, fails, is interrupted or its SYN goes
/// unanswered for the handshake timeout.
fn drive(
    mut dev: Device,
    config: &WireClientConfig,
    opts: &SendOptions,
    size_bytes: u64,
) -> Result<SendReport, EmuError> {
    let signals = Signals::install()?;
    let mut conn = WireClient::new(config);
    let t0 = Instant::now();
    let now = || SimTime::from_nanos(t0.elapsed().as_nanos() as u64);
    let handshake_timeout = Duration::from_secs_f64(opts.handshake_timeout_s.max(0.0));
    let mut out = vec![0u8; PACKET_BYTES];
    let mut inbox = vec![0u8; PACKET_BYTES];
    let mut acked_at: Option<SimTime> = None;
    let mut interrupted = false;
    let mut timed_out = false;
    while !conn.is_finished() {
        if signals.interrupted() {
            interrupted = true;
            break;
        }
        if conn.established_at().is_none() && t0.elapsed() > handshake_timeout {
            timed_out = true;
            break;
        }
        let t = now();
        if conn.next_wakeup().is_some_and(|w| w <= t) {
            conn.on_timeout(t);
        }
        while let Some(n) = conn.poll_transmit(now(), &mut out) {
            dev.tun
                .send(&out[..n])
                .map_err(|e| EmuError::sys(format!("write {}", dev.name), e))?;
        }
        // Until the next timer (rounded up to a millisecond), a packet, or a signal's check.
        let wait_ms = conn.next_wakeup().map_or(SIGNAL_CHECK_MS, |w| {
            w.as_nanos()
                .saturating_sub(now().as_nanos())
                .div_ceil(1_000_000)
        });
        let mut fds = [PollFd::new(dev.tun.fd(), PollFlags::POLLIN)];
        let timeout = PollTimeout::from(wait_ms.min(SIGNAL_CHECK_MS) as u16);
        match poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(EmuError::sys("poll", e)),
        }
        while let Some(n) = dev
            .tun
            .recv(&mut inbox)
            .map_err(|e| EmuError::sys(format!("read {}", dev.name), e))?
        {
            conn.on_packet(now(), &inbox[..n]);
        }
        if acked_at.is_none() && conn.sender().stats().bytes_acked >= size_bytes {
            acked_at = Some(now());
        }
    }
    let s = conn.sender();
    let st = s.stats();
    let transfer_time_s = match (conn.first_data_at(), acked_at) {
        (Some(first), Some(last)) => Some(last.saturating_since(first).as_secs_f64()),
        _ => None,
    };
    let peer = SocketAddrV4::new(opts.host, opts.port);
    let error = if timed_out {
        Some(format!(
            "no answer to the SYN from {peer} within {:.0} s (no listener reachable there, or \
             its answers do not come back to farlink's address)",
            handshake_timeout.as_secs_f64()
        ))
    } else {
        conn.error().map(ToString::to_string)
    };
    let wire = conn.stats();
    Ok(SendReport {
        host: opts.host.to_string(),
        port: opts.port,
        netns: opts.netns.clone(),
        device: dev.name.clone(),
        local_address: Ipv4Addr::from(dev.endpoints.src_ip).to_string(),
        size_bytes,
        bytes_acked: st.bytes_acked,
        transfer_time_s,
        goodput_bps: transfer_time_s
            .filter(|&t| t > 0.0)
            .map(|t| size_bytes as f64 * 8.0 / t),
        retransmissions: st.retransmitted_segments,
        timeouts: st.timeouts,
        packets_sent: wire.packets_sent,
        packets_received: wire.packets_received,
        digest_fnv1a64: String::new(),
        sha256: String::new(),
        interrupted,
        error,
    })
}

/// SHA-256 of the payload's first `len` bytes, hex.
fn sha256_of_prefix(payload: &PayloadStream, len: u64) -> String {
    let mut hasher = Sha256::new();
    let mut chunk = vec![0u8; HASH_CHUNK_BYTES];
    let mut offset = 0u64;
    while offset < len {
        let n = (len - offset).min(HASH_CHUNK_BYTES as u64) as usize;
        payload.fill(offset, &mut chunk[..n]);
        hasher.update(&chunk[..n]);
        offset += n as u64;
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_no_device_can_reach_are_refused() {
        for bad in [
            "0.0.0.0",
            "127.0.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "198.19.0.7",
        ] {
            assert!(check_host(bad.parse().unwrap()).is_err(), "{bad}");
        }
        for good in ["10.0.0.1", "192.0.2.1", "198.20.0.1"] {
            assert!(check_host(good.parse().unwrap()).is_ok(), "{good}");
        }
    }

    #[test]
    fn only_farlink_namespaces_are_entered() {
        assert!(matches!(open_netns("other"), Err(EmuError::Usage(_))));
        assert!(matches!(
            open_netns("farlink-../x"),
            Err(EmuError::Usage(_))
        ));
    }

    #[test]
    fn the_hash_covers_exactly_the_prefix() {
        let p = PayloadStream::new(7);
        let mut bytes = vec![0u8; 70_000];
        p.fill(0, &mut bytes);
        let expected: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(sha256_of_prefix(&p, 70_000), expected);
        assert_ne!(sha256_of_prefix(&p, 69_999), expected);
    }
}
