//! The link manager's data plane: the members' serial ports bonded into one multilink PPP
//! bundle ([`crate::ppp::bond::Bond`]) carried to and from a TUN device, so that the
//! kernel's TCP and any program use the bundle like any other interface.
//!
//! The bond decides everything (framing, LCP and IPCP, how a packet is cut over the members,
//! reassembly and when a lost fragment is given up); this owns the descriptors and moves
//! octets: IP packets read from the TUN go to the bond, octets a port delivers go to the bond,
//! and after every input the bond's output is written out (packets to the TUN, octets to each
//! port no faster than the member's line carries them). The caller's loop polls [`DataPlane::fds`]
//! for reading, calls [`DataPlane::on_ready`] and wakes at [`DataPlane::next_wakeup`]; `now` is
//! the caller's monotonic clock.
//!
//! A port is the daemon's: [`DataPlane::member_up`] takes a duplicate of its descriptor,
//! closed at [`DataPlane::member_down`], so the daemon's own stays open for `ATH` and redial.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::ppp::bond::{Bond, BondConfig, BondEvent, BondStats, MemberStats};
use farlink_core::time::{BitRate, SimDuration, SimTime};

use farlink_emu::EmuError;

/// The largest IP packet read from the TUN (its MTU is at most the bundle's MRRU, 1500).
const TUN_READ_BYTES: usize = 65_536;
/// Packets or port reads taken per readiness, so one busy descriptor cannot starve the rest.
const READS_PER_READY: usize = 64;
/// A port that would not take octets is tried again this soon.
const WRITE_RETRY: SimDuration = SimDuration::from_millis(10);

/// Octets and packets carried, per member (index = member number) and for the bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataPlaneStats {
    /// Octets written to, and read from, each member's port (framing included).
    pub member_tx_bytes: Vec<u64>,
    pub member_rx_bytes: Vec<u64>,
    /// IP octets read from the TUN and sent over the bundle, and received and written to it.
    pub bundle_tx_bytes: u64,
    pub bundle_rx_bytes: u64,
    pub members: Vec<MemberStats>,
    pub bond: BondStats,
    pub tun_write_errors: u64,
    /// Packets from the TUN that were not IPv4 (dropped).
    pub not_ipv4_pkts: u64,
    /// Writes to a port that failed with something other than "try again".
    pub port_write_errors: u64,
}

#[derive(Debug)]
struct Port {
    file: File,
    /// Octets the bond handed out that the port did not take yet.
    pending: Vec<u8>,
    /// The last octets read, shorter than `NO_CARRIER`: a result code split across reads.
    tail: Vec<u8>,
}

impl Port {
    /// Whether `octets` (read after the earlier ones) complete the modem's `NO CARRIER`.
    fn saw_no_carrier(&mut self, octets: &[u8]) -> bool {
        self.tail.extend_from_slice(octets);
        let found = self.tail.windows(NO_CARRIER.len()).any(|w| w == NO_CARRIER);
        let keep = NO_CARRIER.len() - 1;
        if self.tail.len() > keep {
            self.tail.drain(..self.tail.len() - keep);
        }
        found
    }
}

/// The ACCM a daemon over modems asks of its peer: CR (13) and LF (10) escaped in every frame
/// (RFC 1662 section 7.1), so that a bare `\r\nNO CARRIER\r` among a member's octets can
/// only be its modem's, back in command mode after a call drop, never a packet's payload.
pub const ACCM_CR_LF: u32 = (1 << 10) | (1 << 13);

/// A modem's verbose result code after a call drop (V.250 section 5.7.1), as it reaches the
/// port: the modem has left data mode, so the call is gone.
const NO_CARRIER: &[u8] = b"\r\nNO CARRIER\r";

/// The data plane of one end of the bundle.
#[derive(Debug)]
pub struct DataPlane {
    bond: Bond,
    tun: File,
    ports: Vec<Option<Port>>,
    buf: Vec<u8>,
    out: Vec<u8>,
    events: VecDeque<BondEvent>,
    lost: VecDeque<(u32, String)>,
    last_now: SimTime,
    tun_write_errors: u64,
    port_write_errors: u64,
    not_ipv4: u64,
    member_tx_bytes: Vec<u64>,
}

/// Sets `O_NONBLOCK` on `fd`.
fn set_nonblocking(fd: BorrowedFd<'_>) -> Result<(), EmuError> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = fcntl(fd, FcntlArg::F_GETFL).map_err(|e| EmuError::sys("fcntl F_GETFL", e))?;
    let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
    fcntl(fd, FcntlArg::F_SETFL(flags)).map_err(|e| EmuError::sys("fcntl F_SETFL", e))?;
    Ok(())
}

/// The bundle configuration of one end: members at `rates_bps` (bits/s of octets), IPv4
/// `local` and the `peer` address offered to a peer that asks for one, LCP's Magic-Number
/// base `magic` (nonzero, drawn by the caller: two ends must differ) and the Endpoint
/// Discriminator (class 1, locally assigned, `endpoint` as its address: the same for every
/// member of this end), the rest at [`BondConfig::new`]'s defaults.
pub fn bundle_config(
    rates_bps: Vec<u64>,
    local: std::net::Ipv4Addr,
    peer: std::net::Ipv4Addr,
    magic: u32,
    endpoint: &[u8],
) -> BondConfig {
    let mut lcp = crate::ppp::lcp::LcpConfig::multilink(magic);
    lcp.endpoint = Some((1, endpoint.to_vec()));
    BondConfig::new(
        rates_bps.into_iter().map(BitRate::from_bps).collect(),
        lcp,
        crate::ppp::ipcp::IpcpConfig::new(local.octets(), Some(peer.octets())),
    )
}

impl DataPlane {
    /// A data plane on the TUN device `tun` (opened by the caller, in whatever namespace the
    /// device is to live) for a bundle of `cfg.rates.len()` members.
    pub fn new(tun: OwnedFd, cfg: BondConfig) -> Result<DataPlane, EmuError> {
        set_nonblocking(tun.as_fd())?;
        let n = cfg.rates.len();
        Ok(DataPlane {
            bond: Bond::new(cfg),
            tun: File::from(tun),
            ports: (0..n).map(|_| None).collect(),
            buf: vec![0; TUN_READ_BYTES],
            out: Vec::with_capacity(4096),
            events: VecDeque::new(),
            lost: VecDeque::new(),
            last_now: SimTime::ZERO,
            tun_write_errors: 0,
            port_write_errors: 0,
            not_ipv4: 0,
            member_tx_bytes: vec![0; n],
        })
    }

    /// Creates the TUN device `name` in the calling thread's network namespace and a data
    /// plane on it.
    pub fn create(name: &str, cfg: BondConfig) -> Result<DataPlane, EmuError> {
        let tun = farlink_emu::tun::Tun::create(name)?;
        DataPlane::new(tun.into_file().into(), cfg)
    }

    /// The bundle endpoint, for its state (members joined, IPCP) and configuration.
    pub fn bond(&self) -> &Bond {
        &self.bond
    }

    /// `member`'s call is up: the port `fd` (raw, in data mode) carries the bundle's frames
    /// until [`DataPlane::member_down`]. The caller keeps owning `fd` and keeps it open until
    /// then; the data plane works on a duplicate.
    pub fn member_up(&mut self, member: u32, fd: RawFd, now: SimTime) {
        let m = member as usize;
        if m >= self.ports.len() {
            self.lost
                .push_back((member, format!("no member {member} in this bundle")));
            return;
        }
        // SAFETY: the caller guarantees `fd` is open for the duration of this call (the
        // daemon owns it and closes it only after `member_down`); it is only duplicated here.
        #[allow(unsafe_code)]
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let dup = borrowed.try_clone_to_owned().and_then(|d| {
            set_nonblocking(d.as_fd())
                .map(|()| d)
                .map_err(io::Error::other)
        });
        match dup {
            Ok(d) => {
                self.ports[m] = Some(Port {
                    file: File::from(d),
                    pending: Vec::new(),
                    tail: Vec::new(),
                });
                self.bond.member_up(m, now);
                self.flush(now);
            }
            Err(e) => self
                .lost
                .push_back((member, format!("cannot use its port: {e}"))),
        }
    }

    /// `member`'s call is gone (dropped, hung up, the port vanished): what it held is lost and
    /// its descriptor (the duplicate) is closed.
    pub fn member_down(&mut self, member: u32, now: SimTime) {
        let m = member as usize;
        if m >= self.ports.len() {
            return;
        }
        self.ports[m] = None;
        self.bond.member_down(m, now);
        self.flush(now);
    }

    /// The descriptors to poll for reading: the TUN and the ports of the members up.
    pub fn fds(&self) -> Vec<RawFd> {
        std::iter::once(self.tun.as_raw_fd())
            .chain(self.ports.iter().flatten().map(|p| p.file.as_raw_fd()))
            .collect()
    }

    /// `fd` (one of [`DataPlane::fds`]) is readable.
    pub fn on_ready(&mut self, fd: RawFd, now: SimTime) {
        if fd == self.tun.as_raw_fd() {
            self.read_tun(now);
        } else if let Some(m) = self
            .ports
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.file.as_raw_fd() == fd))
        {
            self.read_port(m, now);
        }
        self.flush(now);
    }

    /// When [`DataPlane::on_timer`] is next wanted.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        let retry = self
            .ports
            .iter()
            .flatten()
            .any(|p| !p.pending.is_empty())
            .then_some(self.last_now + WRITE_RETRY);
        [self.bond.next_wakeup(), retry].into_iter().flatten().min()
    }

    pub fn on_timer(&mut self, now: SimTime) {
        self.bond.on_timer(now);
        self.flush(now);
    }

    pub fn stats(&self) -> DataPlaneStats {
        let n = self.ports.len();
        let members: Vec<MemberStats> = (0..n).map(|m| self.bond.member_stats(m)).collect();
        let bond = self.bond.stats();
        DataPlaneStats {
            member_tx_bytes: self.member_tx_bytes.clone(),
            member_rx_bytes: members.iter().map(|s| s.rx_octets).collect(),
            bundle_tx_bytes: bond.tx_ip_bytes,
            bundle_rx_bytes: bond.rx_ip_bytes,
            members,
            bond,
            tun_write_errors: self.tun_write_errors,
            not_ipv4_pkts: self.not_ipv4,
            port_write_errors: self.port_write_errors,
        }
    }

    /// What the bond reported (members joined and left, the bundle and IPv4 up or down), in
    /// order.
    pub fn take_event(&mut self) -> Option<BondEvent> {
        self.events.pop_front()
    }

    /// A member the data plane found dead (its port closed or failed, its LCP gave up, its
    /// LCP echoes unanswered), and how: the daemon treats it as a call drop.
    pub fn take_member_lost(&mut self) -> Option<(u32, String)> {
        self.lost.pop_front()
    }

    fn read_tun(&mut self, now: SimTime) {
        for _ in 0..READS_PER_READY {
            match self.tun.read(&mut self.buf) {
                Ok(0) => break,
                // IPCP carries IPv4 only: anything else the kernel sends is dropped here.
                Ok(n) if self.buf[0] >> 4 == 4 => {
                    self.bond.send_ip(now, &self.buf[..n]);
                }
                Ok(_) => self.not_ipv4 += 1,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
    }

    fn read_port(&mut self, m: usize, now: SimTime) {
        for _ in 0..READS_PER_READY {
            let Some(port) = self.ports[m].as_mut() else {
                return;
            };
            match port.file.read(&mut self.buf[..4096]) {
                Ok(0) => {
                    self.port_lost(m, now, "port closed".into());
                    return;
                }
                Ok(n) => {
                    let carrier_lost = port.saw_no_carrier(&self.buf[..n]);
                    self.bond.on_member_octets(m, now, &self.buf[..n]);
                    if carrier_lost {
                        self.port_lost(m, now, "no carrier".into());
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EIO: a pty whose other side is gone, a USB port unplugged.
                    self.port_lost(m, now, format!("port gone: {e}"));
                    return;
                }
            }
        }
    }

    fn port_lost(&mut self, m: usize, now: SimTime, how: String) {
        self.ports[m] = None;
        self.bond.member_down(m, now);
        self.lost.push_back((m as u32, how));
    }

    /// Writes out what the bond has for the host and the ports.
    fn flush(&mut self, now: SimTime) {
        self.last_now = now;
        let (tun, errors) = (&mut self.tun, &mut self.tun_write_errors);
        self.bond.drain_ip(|p| {
            if tun.write(p).is_err() {
                *errors += 1;
            }
        });
        for m in 0..self.ports.len() {
            let Some(port) = self.ports[m].as_mut() else {
                continue;
            };
            if port.pending.is_empty() {
                self.out.clear();
                if self.bond.transmit(m, now, &mut self.out) == 0 {
                    continue;
                }
                port.pending.extend_from_slice(&self.out);
            }
            match port.file.write(&port.pending) {
                Ok(n) => {
                    port.pending.drain(..n);
                    self.member_tx_bytes[m] += n as u64;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => {
                    self.port_write_errors += 1;
                    self.port_lost(m, now, format!("port gone: {e}"));
                }
            }
        }
        while let Some(e) = self.bond.poll_event() {
            match e {
                BondEvent::MemberFinished(m) => self
                    .lost
                    .push_back((m as u32, "lcp gave up (the peer did not answer)".into())),
                BondEvent::EchoTimeout(m) => {
                    self.lost.push_back((m as u32, "lcp echo timeout".into()))
                }
                _ => {}
            }
            self.events.push_back(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppp::ipcp::IpcpConfig;
    use crate::ppp::lcp::LcpConfig;
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};

    fn pair(kind: SockType) -> (OwnedFd, OwnedFd) {
        socketpair(AddressFamily::Unix, kind, None, SockFlag::SOCK_CLOEXEC).unwrap()
    }

    fn config(members: usize, side: u8) -> BondConfig {
        let mut lcp = LcpConfig::multilink(0x7e57_0000 | u32::from(side));
        lcp.endpoint = Some((1, vec![side]));
        BondConfig::new(
            vec![BitRate::from_bps(1_000_000); members],
            lcp,
            IpcpConfig::new([10, 1, 0, side], Some([10, 1, 0, 3 - side])),
        )
    }

    /// Two data planes whose TUNs are packet sockets (a TUN hands over one IP packet per
    /// read, as a SOCK_SEQPACKET socket does) and whose members are socketpairs: what one
    /// host end writes, the other reads, through the bond's framing, LCP, IPCP and MP.
    #[test]
    fn packets_cross_two_data_planes_over_socketpair_members() {
        let (air_tun, air_host) = pair(SockType::SeqPacket);
        let (gnd_tun, gnd_host) = pair(SockType::SeqPacket);
        let mut air = DataPlane::new(air_tun, config(3, 1)).unwrap();
        let mut gnd = DataPlane::new(gnd_tun, config(3, 2)).unwrap();
        let members: Vec<(OwnedFd, OwnedFd)> = (0..3).map(|_| pair(SockType::Stream)).collect();
        let t0 = farlink_emu::clock::monotonic_ns();
        let clock = || SimTime::from_nanos(farlink_emu::clock::monotonic_ns() - t0);
        for (m, (a, g)) in members.iter().enumerate() {
            air.member_up(m as u32, a.as_raw_fd(), clock());
            gnd.member_up(m as u32, g.as_raw_fd(), clock());
        }
        let step = |dp: &mut DataPlane| {
            let now = clock();
            for fd in dp.fds() {
                dp.on_ready(fd, now);
            }
            if dp.next_wakeup().is_some_and(|w| w <= now) {
                dp.on_timer(now);
            }
        };
        let limit = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !(air.bond().ip_is_up() && gnd.bond().ip_is_up()) {
            step(&mut air);
            step(&mut gnd);
            std::thread::sleep(std::time::Duration::from_millis(1));
            assert!(std::time::Instant::now() < limit, "IPCP never opened");
        }
        nix::fcntl::fcntl(
            gnd_host.as_fd(),
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .unwrap();
        let packet = |k: u8| {
            let mut p = vec![k; 600];
            p[0] = 0x45;
            p
        };
        let mut air_host = File::from(air_host.try_clone().unwrap());
        for k in 0..20 {
            air_host.write_all(&packet(k)).unwrap();
        }
        // Not IPv4: never sent.
        air_host.write_all(&[0x60; 80]).unwrap();
        let mut gnd_host = File::from(gnd_host.try_clone().unwrap());
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while got.len() < 20 {
            step(&mut air);
            step(&mut gnd);
            while let Ok(n) = gnd_host.read(&mut buf) {
                got.push(buf[..n].to_vec());
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            assert!(
                std::time::Instant::now() < limit,
                "{} of 20 arrived",
                got.len()
            );
        }
        assert_eq!(got, (0..20).map(packet).collect::<Vec<_>>());
        let s = air.stats();
        assert_eq!(s.not_ipv4_pkts, 1);
        assert_eq!(s.bundle_tx_bytes, 20 * 600);
        assert_eq!(gnd.stats().bundle_rx_bytes, 20 * 600);
        assert!(s.member_tx_bytes.iter().all(|&b| b > 0));
        // The far end gone (its ports closed): each member's port is reported lost, once.
        drop(gnd);
        drop(members);
        for _ in 0..5 {
            step(&mut air);
        }
        let mut lost = Vec::new();
        while let Some(l) = air.take_member_lost() {
            lost.push(l.0);
        }
        lost.sort();
        assert_eq!(lost, vec![0, 1, 2]);
    }

    #[test]
    fn a_modems_no_carrier_is_seen_across_reads_and_only_bare() {
        let file = File::open("/dev/null").unwrap();
        let mut port = Port {
            file,
            pending: Vec::new(),
            tail: Vec::new(),
        };
        assert!(!port.saw_no_carrier(b"\x7e\x7d\x2d\x7d\x2aNO CARRIER\x7d\x2d\x7e"));
        assert!(!port.saw_no_carrier(b"\x7e\r\nNO CAR"));
        assert!(port.saw_no_carrier(b"RIER\r\n"));
        assert!(!port.saw_no_carrier(b"\r\nOK\r\n"));
    }
}
