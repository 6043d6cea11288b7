//! The data plane measured without modems: two network namespaces (`farlink-<run>-air` and
//! `farlink-<run>-gnd`), a TUN device and a [`DataPlane`] in each, and N member links between
//! them, each a pair of socketpairs joined by a pacer that clocks octets across at the
//! member's rate (8 bits an octet, as the air link of a data modem carries them; no delay, no
//! loss). Kernel TCP moves a file from air to ground across the bundle and the bytes are
//! checked. A member's call can be dropped mid-transfer: its pacer then loses whatever it
//! holds and carries nothing, and each end's data plane is told (or not) as the plan says.
//!
//! Everything made here is removed when [`run`] returns, whatever happened; a run killed
//! outright leaves namespaces that the next run (of this or of the emulator) removes, as
//! `netns` describes.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::ppp::bond::{BondConfig, BondEvent};
use farlink_core::rng::splitmix64;
use farlink_core::time::SimTime;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};

use super::dataplane::{bundle_config, DataPlane, DataPlaneStats};
use farlink_emu::clock::monotonic_ns;
use farlink_emu::netns::{self, Netns, RunLock};
use farlink_emu::signals::Signals;
use farlink_emu::EmuError;

const AIR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const GROUND: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
const PORT: u16 = 5001;

/// Which ends learn of a dropped call (as a daemon would from `NO CARRIER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    Both,
    /// The sender (air) only: the receiver's reassembler must find out by itself.
    SenderOnly,
}

/// A call drop during the transfer.
#[derive(Clone, Copy, Debug)]
pub struct DropPlan {
    pub member: usize,
    /// Dropped once the receiver has this many bytes of the file.
    pub after_bytes: u64,
    pub notice: Notice,
    /// The call comes back (both ends) this long after the drop; `None`: it stays down.
    pub redial_after: Option<Duration>,
}

#[derive(Clone, Debug)]
pub struct TestbedOptions {
    pub members: usize,
    /// Each member's rate, bits/s of octets (8 bits each).
    pub rate_bps: u64,
    pub file_bytes: u64,
    pub drop: Option<DropPlan>,
    /// The whole run (setup, bundle up, transfer) must end within this.
    pub limit: Duration,
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct TestbedReport {
    pub members: usize,
    pub rate_bps: u64,
    pub file_bytes: u64,
    /// From the first member up to IPv4 up at both ends.
    pub bundle_up_s: f64,
    /// From `connect` to the receiver's last byte.
    pub transfer_s: f64,
    pub goodput_bps: f64,
    /// Octets the air end wrote to its members during the transfer (framing included), and
    /// the file's share of them.
    pub wire_octets: u64,
    /// The receiver got exactly the file's bytes.
    pub bytes_ok: bool,
    pub stale_timeout_s: f64,
    pub air: DataPlaneStats,
    pub ground: DataPlaneStats,
}

impl TestbedReport {
    /// Σ of the members' rates, bits/s.
    pub fn line_bps(&self) -> f64 {
        (self.members as u64 * self.rate_bps) as f64
    }

    /// TCP payload delivered per second against the members' rates.
    pub fn goodput_ratio(&self) -> f64 {
        self.goodput_bps / self.line_bps()
    }

    /// The members' lines kept busy in the data direction: octets written during the
    /// transfer against what the lines carry in that time (the throughput net of framing).
    pub fn wire_utilisation(&self) -> f64 {
        self.wire_octets as f64 * 8.0 / (self.line_bps() * self.transfer_s)
    }

    /// The file's share of the octets on the wire (what framing, MP, IP and TCP headers and
    /// octet stuffing leave).
    pub fn payload_share(&self) -> f64 {
        self.file_bytes as f64 / self.wire_octets.max(1) as f64
    }
}

/// The file's bytes: a fixed pseudo-random stream (so octet stuffing costs what it would on
/// compressed data).
fn file_bytes(len: u64, mut emit: impl FnMut(&[u8])) {
    let mut state = 0x1990_1661_u64;
    let mut chunk = [0u8; 8192];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        for c in chunk[..n].chunks_mut(8) {
            let v = splitmix64(&mut state).to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
        emit(&chunk[..n]);
        left -= n as u64;
    }
}

/// One member's line, one direction: octets from `src` to `dst` at `rate_bps`.
fn pacer(src: OwnedFd, dst: OwnedFd, rate_bps: u64, cut: Arc<AtomicBool>, stop: Arc<AtomicBool>) {
    let mut src = std::fs::File::from(src);
    let mut dst = std::fs::File::from(dst);
    // 10 ms of octets per read: fine enough that frames arrive spread as on a line.
    let chunk = ((rate_bps / 8) / 100).clamp(1, 4096) as usize;
    let mut buf = vec![0u8; chunk];
    let mut free_ns = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(src.as_fd(), PollFlags::POLLIN)];
        if !matches!(poll(&mut fds, PollTimeout::from(20u16)), Ok(n) if n > 0) {
            continue;
        }
        let n = match src.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if cut.load(Ordering::Relaxed) {
            continue;
        }
        let now = monotonic_ns();
        free_ns = free_ns.max(now) + n as u64 * 8 * 1_000_000_000 / rate_bps;
        let wait = free_ns.saturating_sub(monotonic_ns());
        std::thread::sleep(Duration::from_nanos(wait));
        if cut.load(Ordering::Relaxed) {
            continue;
        }
        if dst.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

enum Command {
    Down(u32),
    Up(u32, RawFd),
}

/// What a data plane's loop shares while it runs.
#[derive(Default)]
struct Shared {
    ip_up: AtomicBool,
    stats: Mutex<DataPlaneStats>,
}

/// Polls `fds` for reading for up to `timeout_ms`; returns those readable.
fn readable(fds: &[RawFd], timeout_ms: u16) -> Vec<RawFd> {
    // SAFETY: `fds` come from `DataPlane::fds` of the data plane this loop owns, which keeps
    // them open until its next mutation; nothing mutates it during this call.
    #[allow(unsafe_code)]
    let borrowed: Vec<BorrowedFd<'_>> = fds
        .iter()
        .map(|&fd| unsafe { BorrowedFd::borrow_raw(fd) })
        .collect();
    let mut polls: Vec<PollFd<'_>> = borrowed
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    if poll(&mut polls, PollTimeout::from(timeout_ms)).unwrap_or(0) <= 0 {
        return Vec::new();
    }
    polls
        .iter()
        .zip(fds)
        .filter(|(p, _)| {
            p.revents()
                .is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP))
        })
        .map(|(_, &fd)| fd)
        .collect()
}

/// Runs `dp` on the wall clock (`t0_ns` its zero) until `stop`.
fn drive(
    mut dp: DataPlane,
    t0_ns: u64,
    commands: Receiver<Command>,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) -> DataPlane {
    let clock = || SimTime::from_nanos(monotonic_ns().saturating_sub(t0_ns));
    let mut published = 0u64;
    while !stop.load(Ordering::Relaxed) {
        while let Ok(c) = commands.try_recv() {
            match c {
                Command::Down(m) => dp.member_down(m, clock()),
                Command::Up(m, fd) => dp.member_up(m, fd, clock()),
            }
        }
        let now = clock();
        if dp.next_wakeup().is_some_and(|w| w <= now) {
            dp.on_timer(now);
        }
        let wait_ms = dp
            .next_wakeup()
            .map_or(20, |w| {
                w.saturating_since(clock()).as_nanos().div_ceil(1_000_000)
            })
            .min(20) as u16;
        for fd in readable(&dp.fds(), wait_ms) {
            dp.on_ready(fd, clock());
        }
        while let Some(e) = dp.take_event() {
            match e {
                BondEvent::IpUp { .. } => shared.ip_up.store(true, Ordering::Release),
                BondEvent::IpDown => shared.ip_up.store(false, Ordering::Release),
                _ => {}
            }
        }
        // As the daemon does: a member found dead is a call drop.
        while let Some((m, _how)) = dp.take_member_lost() {
            dp.member_down(m, clock());
        }
        let t = monotonic_ns();
        if t >= published + 100_000_000 {
            published = t;
            *shared.stats.lock().unwrap_or_else(|e| e.into_inner()) = dp.stats();
        }
    }
    dp
}

fn bond_config(opts: &TestbedOptions, local: Ipv4Addr, peer: Ipv4Addr, tag: u8) -> BondConfig {
    let mut cfg = bundle_config(
        vec![opts.rate_bps; opts.members],
        local,
        peer,
        0x4c4d_0000 | u32::from(tag),
        &[tag],
    );
    cfg.max_delay = farlink_core::time::SimDuration::from_millis(100);
    cfg
}

/// One end: its namespace, TUN device, address and route, and data plane.
fn make_end(
    ns: &Netns,
    device: &str,
    cfg: BondConfig,
    me: Ipv4Addr,
    peer: Ipv4Addr,
) -> Result<DataPlane, EmuError> {
    let dev = device.to_owned();
    let dp = ns.run(move || {
        // Only IPv4 crosses the bundle (IPCP); no IPv6 chatter into the TUN.
        netns::write_sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
        netns::write_sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
        DataPlane::create(&dev, cfg)
    })??;
    ns.ip(&["addr", "add", &format!("{me}/32"), "dev", device])?;
    ns.ip(&["link", "set", device, "mtu", "1500", "up"])?;
    ns.ip(&["route", "add", &format!("{peer}/32"), "dev", device])?;
    Ok(dp)
}

/// The member lines: per member, a pacer thread each way and the flag that cuts its call.
struct Lines {
    pacers: Vec<JoinHandle<()>>,
    cuts: Vec<Arc<AtomicBool>>,
    /// Per member: the data planes' ends of the socketpairs (kept open here for the run).
    ends: Vec<(OwnedFd, OwnedFd)>,
}

impl Lines {
    fn start(opts: &TestbedOptions, stop: &Arc<AtomicBool>) -> Result<Lines, EmuError> {
        let mut lines = Lines {
            pacers: Vec::new(),
            cuts: Vec::new(),
            ends: Vec::new(),
        };
        let pair = || {
            socketpair(
                AddressFamily::Unix,
                SockType::Stream,
                None,
                SockFlag::SOCK_CLOEXEC,
            )
            .map_err(|e| EmuError::sys("socketpair", e))
        };
        for _ in 0..opts.members {
            let (air_end, air_line) = pair()?;
            let (gnd_end, gnd_line) = pair()?;
            let cut = Arc::new(AtomicBool::new(false));
            let dup = |fd: &OwnedFd| fd.try_clone().map_err(|e| EmuError::sys("dup", e));
            let (a_in, g_out) = (dup(&air_line)?, dup(&gnd_line)?);
            for (src, dst) in [(a_in, g_out), (gnd_line, air_line)] {
                let (c, s, rate) = (Arc::clone(&cut), Arc::clone(stop), opts.rate_bps);
                lines.pacers.push(
                    std::thread::Builder::new()
                        .name("farlink-pacer".into())
                        .spawn(move || pacer(src, dst, rate, c, s))
                        .map_err(|e| EmuError::sys("spawn pacer", e))?,
                );
            }
            lines.cuts.push(cut);
            lines.ends.push((air_end, gnd_end));
        }
        Ok(lines)
    }
}

/// One end's data plane running on its own thread.
struct Loop {
    tx: Sender<Command>,
    shared: Arc<Shared>,
    handle: JoinHandle<DataPlane>,
}

impl Loop {
    fn start(dp: DataPlane, t0_ns: u64, stop: &Arc<AtomicBool>) -> Result<Loop, EmuError> {
        let (tx, rx): (Sender<Command>, Receiver<Command>) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let (sh, st) = (Arc::clone(&shared), Arc::clone(stop));
        let handle = std::thread::Builder::new()
            .name("farlink-dataplane".into())
            .spawn(move || drive(dp, t0_ns, rx, sh, st))
            .map_err(|e| EmuError::sys("spawn data plane", e))?;
        Ok(Loop { tx, shared, handle })
    }

    fn ip_up(&self) -> bool {
        self.shared.ip_up.load(Ordering::Acquire)
    }

    fn send(&self, c: Command) {
        let _ = self.tx.send(c);
    }
}

/// Everything the transfer runs on, set up and not yet torn down.
struct Bed<'a> {
    opts: &'a TestbedOptions,
    signals: &'a Signals,
    air_ns: &'a Netns,
    gnd_ns: &'a Netns,
    lines: &'a Lines,
    air: &'a Loop,
    gnd: &'a Loop,
    t0_ns: u64,
    deadline_ns: u64,
}

/// What the transfer measured, before the data planes are stopped.
struct Transfer {
    bundle_up_s: f64,
    transfer_s: f64,
    bytes_ok: bool,
    /// The air end's octets written per member before the transfer started.
    wire_before: Vec<u64>,
}

/// The receiver's thread: whether it got exactly the file's bytes and when its last byte came
/// (ns); `None` if it could not enter its namespace.
type Sink = JoinHandle<Option<Result<(bool, u64), String>>>;

/// The receiver, in the ground namespace: accepts one connection and reads the file.
fn spawn_sink(
    ns: &Netns,
    file_len: u64,
    received: Arc<AtomicU64>,
    ready: Sender<()>,
) -> Result<Sink, EmuError> {
    ns.spawn("farlink-sink", move || -> Result<(bool, u64), String> {
        let l = TcpListener::bind(SocketAddrV4::new(GROUND, PORT)).map_err(|e| e.to_string())?;
        let _ = ready.send(());
        let (mut s, _) = l.accept().map_err(|e| e.to_string())?;
        let mut expect = Vec::with_capacity(file_len as usize);
        file_bytes(file_len, |c| expect.extend_from_slice(c));
        let mut got = Vec::with_capacity(file_len as usize);
        let mut buf = [0u8; 65536];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    received.store(got.len() as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok((got == expect, monotonic_ns()))
    })
}

/// The sender, in the air namespace: the file to the receiver, then the write side shut.
fn spawn_sender(
    ns: &Netns,
    file_len: u64,
) -> Result<JoinHandle<Option<Result<(), String>>>, EmuError> {
    ns.spawn("farlink-sender", move || -> Result<(), String> {
        let mut s =
            TcpStream::connect(SocketAddrV4::new(GROUND, PORT)).map_err(|e| e.to_string())?;
        let mut res = Ok(());
        file_bytes(file_len, |c| {
            if res.is_ok() {
                res = s.write_all(c).map_err(|e| e.to_string());
            }
        });
        res?;
        s.shutdown(Shutdown::Write).map_err(|e| e.to_string())
    })
}

/// The call drop of a [`DropPlan`] as the transfer goes: cut once the receiver has its
/// bytes, redialled (both ends) after its delay.
struct CallDrop {
    plan: DropPlan,
    dropped_at_ns: Option<u64>,
    redialled: bool,
}

impl CallDrop {
    fn step(&mut self, bed: &Bed<'_>, received: u64) {
        let plan = self.plan;
        let m = plan.member;
        if self.dropped_at_ns.is_none() && received >= plan.after_bytes {
            bed.lines.cuts[m].store(true, Ordering::Relaxed);
            bed.air.send(Command::Down(m as u32));
            if plan.notice == Notice::Both {
                bed.gnd.send(Command::Down(m as u32));
            }
            self.dropped_at_ns = Some(monotonic_ns());
        }
        if let (Some(t), Some(after), false) =
            (self.dropped_at_ns, plan.redial_after, self.redialled)
        {
            if monotonic_ns() >= t + after.as_nanos() as u64 {
                // The ground end learns of the old call's end when the new one comes.
                bed.gnd.send(Command::Down(m as u32));
                bed.lines.cuts[m].store(false, Ordering::Relaxed);
                let (air_end, gnd_end) = &bed.lines.ends[m];
                bed.air.send(Command::Up(m as u32, air_end.as_raw_fd()));
                bed.gnd.send(Command::Up(m as u32, gnd_end.as_raw_fd()));
                self.redialled = true;
            }
        }
    }
}

impl Bed<'_> {
    fn out_of_time(&self) -> bool {
        monotonic_ns() > self.deadline_ns || self.signals.interrupted()
    }

    /// Waits for IPv4 up at both ends; returns the seconds since the members came up.
    fn bundle_up(&self) -> Result<f64, EmuError> {
        while !(self.air.ip_up() && self.gnd.ip_up()) {
            if self.out_of_time() {
                return Err(EmuError::System(
                    "the bundle did not come up (IPCP) in time".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok((monotonic_ns() - self.t0_ns) as f64 / 1e9)
    }

    /// The bundle up, then the file from air to ground, the call drop as planned.
    fn transfer(&self) -> Result<Transfer, EmuError> {
        let bundle_up_s = self.bundle_up()?;
        let received = Arc::new(AtomicU64::new(0));
        let file_len = self.opts.file_bytes;
        let (ready_tx, ready_rx) = mpsc::channel();
        let sink = spawn_sink(self.gnd_ns, file_len, Arc::clone(&received), ready_tx)?;
        let _ = ready_rx.recv_timeout(Duration::from_secs(10));
        let wire_before = self
            .air
            .shared
            .stats
            .lock()
            .map(|s| s.member_tx_bytes.clone())
            .unwrap_or_default();
        let started = monotonic_ns();
        let sender = spawn_sender(self.air_ns, file_len)?;
        let mut call_drop = self
            .opts
            .drop
            .filter(|p| p.member < self.opts.members)
            .map(|plan| CallDrop {
                plan,
                dropped_at_ns: None,
                redialled: false,
            });
        while !sink.is_finished() {
            if self.out_of_time() {
                return Err(EmuError::System(format!(
                    "the transfer did not end in time: {} of {} bytes received",
                    received.load(Ordering::Relaxed),
                    self.opts.file_bytes
                )));
            }
            if let Some(d) = call_drop.as_mut() {
                d.step(self, received.load(Ordering::Relaxed));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let (bytes_ok, end_ns) = sink
            .join()
            .ok()
            .flatten()
            .ok_or_else(|| EmuError::Internal("the sink thread panicked".into()))?
            .map_err(|e| EmuError::System(format!("the receiver: {e}")))?;
        if let Some(Err(e)) = sender.join().ok().flatten() {
            return Err(EmuError::System(format!("the sender: {e}")));
        }
        Ok(Transfer {
            bundle_up_s,
            transfer_s: end_ns.saturating_sub(started) as f64 / 1e9,
            bytes_ok,
            wire_before,
        })
    }
}

/// Runs one transfer across the bonded members; see the module docs.
pub fn run(opts: &TestbedOptions) -> Result<TestbedReport, EmuError> {
    if opts.members == 0 || opts.rate_bps == 0 {
        return Err(EmuError::Usage(
            "the testbed needs at least one member and a rate".into(),
        ));
    }
    farlink_emu::check_host()?;
    netns::remove_stale();
    let signals = Signals::install()?;
    let lock = RunLock::acquire()?;
    let air_ns = Netns::create(&lock.id, "air")?;
    let gnd_ns = Netns::create(&lock.id, "gnd")?;
    let device = format!("farlink-{}", lock.id);
    let air_cfg = bond_config(opts, AIR, GROUND, 1);
    let stale_timeout_s = air_cfg.stale_timeout().as_secs_f64();
    let air_dp = make_end(&air_ns, &device, air_cfg, AIR, GROUND)?;
    let gnd_dp = make_end(
        &gnd_ns,
        &device,
        bond_config(opts, GROUND, AIR, 2),
        GROUND,
        AIR,
    )?;

    let stop = Arc::new(AtomicBool::new(false));
    let lines = Lines::start(opts, &stop)?;
    let t0_ns = monotonic_ns();
    let air = Loop::start(air_dp, t0_ns, &stop)?;
    let gnd = Loop::start(gnd_dp, t0_ns, &stop)?;
    for (m, (a, g)) in lines.ends.iter().enumerate() {
        air.send(Command::Up(m as u32, a.as_raw_fd()));
        gnd.send(Command::Up(m as u32, g.as_raw_fd()));
    }
    let bed = Bed {
        opts,
        signals: &signals,
        air_ns: &air_ns,
        gnd_ns: &gnd_ns,
        lines: &lines,
        air: &air,
        gnd: &gnd,
        t0_ns,
        deadline_ns: t0_ns + opts.limit.as_nanos() as u64,
    };
    let result = bed.transfer();
    stop.store(true, Ordering::Relaxed);
    let air = air.handle.join();
    let gnd = gnd.handle.join();
    for t in lines.pacers {
        let _ = t.join();
    }
    drop(lines.ends);
    let measured = result?;
    let (air, gnd) = match (air, gnd) {
        (Ok(a), Ok(g)) => (a.stats(), g.stats()),
        _ => return Err(EmuError::Internal("a data plane thread panicked".into())),
    };
    let wire_after: u64 = air.member_tx_bytes.iter().sum();
    let wire_octets = wire_after - measured.wire_before.iter().sum::<u64>();
    drop(air_ns);
    drop(gnd_ns);
    Ok(TestbedReport {
        members: opts.members,
        rate_bps: opts.rate_bps,
        file_bytes: opts.file_bytes,
        bundle_up_s: measured.bundle_up_s,
        transfer_s: measured.transfer_s,
        goodput_bps: opts.file_bytes as f64 * 8.0 / measured.transfer_s,
        wire_octets,
        bytes_ok: measured.bytes_ok,
        stale_timeout_s,
        air,
        ground: gnd,
    })
}
