//! The seam between the link manager's control plane (the daemon: modems, calls, the
//! supervisor) and its data plane (the members bonded into one multilink PPP bundle on a TUN
//! device). The daemon hands a member's serial port to the data plane when its call is up and
//! takes it back when the call is gone; the data plane owns the octets in between. Both run on
//! the daemon's one thread and clock (nanoseconds of `CLOCK_MONOTONIC` since the daemon
//! started, the clock the supervisor is given).

use std::net::Ipv4Addr;
use std::os::fd::RawFd;

use crate::dataplane::bundle_config;

use farlink_core::time::SimTime;

/// Bytes carried, per member (index = member number) and for the bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlaneStats {
    pub member_tx_bytes: Vec<u64>,
    pub member_rx_bytes: Vec<u64>,
    pub bundle_tx_bytes: u64,
    pub bundle_rx_bytes: u64,
}

/// A data plane the daemon drives.
pub trait DataPlane {
    /// `member`'s call is up: `fd` (the serial port, non-blocking, raw, in data mode) carries
    /// the bundle's frames until [`DataPlane::member_down`]. The daemon keeps owning the fd;
    /// the data plane must not close it.
    fn member_up(&mut self, member: u32, fd: RawFd, now: SimTime);
    /// `member`'s call is gone (dropped, hung up, the port vanished): forget its fd.
    fn member_down(&mut self, member: u32, now: SimTime);
    /// The descriptors the data plane wants polled for reading (its TUN device, the ports
    /// of the members up); the daemon calls [`DataPlane::on_ready`] when one is readable.
    fn fds(&self) -> Vec<RawFd>;
    fn on_ready(&mut self, fd: RawFd, now: SimTime);
    /// When the data plane next wants [`DataPlane::on_timer`].
    fn next_wakeup(&self) -> Option<SimTime>;
    fn on_timer(&mut self, now: SimTime);
    fn stats(&self) -> PlaneStats;
    /// A member the data plane found dead, with how: `no carrier` (the modem's `NO CARRIER`
    /// among its octets: the modem is back in command mode) or anything else (`lcp echo
    /// timeout`: the modem may still hold the call, and the daemon hangs it up). The daemon
    /// takes it as a call drop. Asked after every `on_ready` and `on_timer`; a data plane
    /// that cannot tell leaves the default.
    fn take_member_lost(&mut self) -> Option<(u32, String)> {
        None
    }
}

/// The data plane the configuration asks for: none without a `[tun]` table (the daemon then
/// supervises and logs only); with one, the bundle on a TUN device made in the daemon's own
/// network namespace, given the table's address, a route to the peer and an MTU of 1500.
pub fn from_config(
    cfg: &super::config::LinkMgrConfig,
) -> Result<Option<Box<dyn DataPlane>>, String> {
    let Some(t) = &cfg.tun else {
        return Ok(None);
    };
    let local: Ipv4Addr = t
        .address
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("tun.address: {} is not an IPv4 address", t.address))?;
    let peer: Ipv4Addr = t
        .peer
        .parse()
        .map_err(|_| format!("tun.peer: {} is not an IPv4 address", t.peer))?;
    // RFC 1661 section 6.4: the magic number should be unique to this end and this start; the
    // endpoint discriminator (RFC 1990 section 5.1.3, class 1, locally assigned) names the
    // daemon's end of the bundle so that the peer joins every member to one bundle.
    let magic = std::process::id()
        ^ (std::time::UNIX_EPOCH
            .elapsed()
            .unwrap_or_default()
            .subsec_nanos());
    let rates = vec![t.member_rate_bps; cfg.members.len()];
    let mut bond = bundle_config(rates, local, peer, magic, local.octets().as_slice());
    // Over modems: the data plane reads their `NO CARRIER` among the octets (see the const).
    bond.lcp.accm = crate::dataplane::ACCM_CR_LF;
    let plane =
        crate::dataplane::DataPlane::create(&t.name, bond).map_err(|e| format!("tun: {e}"))?;
    for args in [
        vec!["addr", "add", t.address.as_str(), "dev", t.name.as_str()],
        vec!["link", "set", t.name.as_str(), "mtu", "1500", "up"],
    ] {
        farlink_emu::netns::ip(&args).map_err(|e| format!("tun: {e}"))?;
    }
    let peer_route = format!("{peer}/32");
    if let Err(e) = farlink_emu::netns::ip(&["route", "replace", &peer_route, "dev", &t.name]) {
        return Err(format!("tun: {e}"));
    }
    Ok(Some(Box::new(plane)))
}

impl DataPlane for crate::dataplane::DataPlane {
    fn member_up(&mut self, member: u32, fd: RawFd, now: SimTime) {
        crate::dataplane::DataPlane::member_up(self, member, fd, now)
    }
    fn member_down(&mut self, member: u32, now: SimTime) {
        crate::dataplane::DataPlane::member_down(self, member, now)
    }
    fn fds(&self) -> Vec<RawFd> {
        crate::dataplane::DataPlane::fds(self)
    }
    fn on_ready(&mut self, fd: RawFd, now: SimTime) {
        crate::dataplane::DataPlane::on_ready(self, fd, now)
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        crate::dataplane::DataPlane::next_wakeup(self)
    }
    fn on_timer(&mut self, now: SimTime) {
        crate::dataplane::DataPlane::on_timer(self, now)
    }
    fn stats(&self) -> PlaneStats {
        let s = crate::dataplane::DataPlane::stats(self);
        PlaneStats {
            member_tx_bytes: s.member_tx_bytes,
            member_rx_bytes: s.member_rx_bytes,
            bundle_tx_bytes: s.bundle_tx_bytes,
            bundle_rx_bytes: s.bundle_rx_bytes,
        }
    }
    fn take_member_lost(&mut self) -> Option<(u32, String)> {
        crate::dataplane::DataPlane::take_member_lost(self)
    }
}
