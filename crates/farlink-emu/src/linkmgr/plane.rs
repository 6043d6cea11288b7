//! The seam between the link manager's control plane (the daemon: modems, calls, the
//! supervisor) and its data plane (the members bonded into one multilink PPP bundle on a TUN
//! device). The daemon hands a member's serial port to the data plane when its call is up and
//! takes it back when the call is gone; the data plane owns the octets in between. Both run on
//! the daemon's one thread and clock (nanoseconds of `CLOCK_MONOTONIC` since the daemon
//! started, the clock the supervisor is given).

use std::os::fd::RawFd;

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
/// supervises and logs only). This is where a data plane on the TUN device is made and handed
/// to the daemon; until one is built in, a `[tun]` table is refused (exit 2, naming `tun`).
pub fn from_config(
    cfg: &super::config::LinkMgrConfig,
) -> Result<Option<Box<dyn DataPlane>>, String> {
    match &cfg.tun {
        None => Ok(None),
        Some(t) => Err(format!(
            "tun: this build of the link manager has no data plane to put on {} (remove the \
             [tun] table to supervise and log only)",
            t.name
        )),
    }
}
