//! The real-time driver: the path runtime ([`farlink_core::path`]) driven by the wall clock.
//!
//! Every IP packet the kernel writes into a TUN device is read into a slot of the [`Slab`] and
//! offered, as a `Packet` carrying only the slot index and the size, to the first link
//! direction of its route at the current instant; a packet a link delivers goes to the next
//! link of the route at the instant the model gives, or, at the last one, is written to the
//! other end's TUN at once. Link events are handled in time order across all links (the
//! earliest due first), exactly as the event queue of the simulator would, so every offer a
//! link sees is at the instant the model's own schedule says, never at the instant the loop
//! happened to look. Only the final write is late, and by how much is recorded: the
//! departure-time error of each delivered packet against the model's schedule.
//!
//! Waiting: a timerfd (absolute, CLOCK_MONOTONIC) armed `spin` before the next deadline and an
//! epoll over the TUNs and the timer; then a busy wait to the deadline that keeps reading the
//! TUNs. With `spin = 0` the timerfd alone.
//!
//! With offloads (`crate::offload`), a read may carry a super-segment, cut into the packets
//! offered here one by one, and what the links deliver in one pass is written coalesced at the
//! end of the pass.

use std::fs::File;
use std::io::BufWriter;
use std::os::fd::AsFd;

use farlink_core::link::{drop_cause_code, N_DROP_CAUSES};
use farlink_core::link::{DropCause, Ecn, LinkEvent, Packet};
use farlink_core::path::{BundleEvent, BundleOutput, LinkDir, PathLinks};
use farlink_core::pcap::{PcapConfig, PcapWriter};
use farlink_core::tcp::wire::set_ipv4_ecn;
use farlink_core::time::SimTime;
use farlink_core::trace::MemberStateTrace;
use hdrhistogram::Histogram;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use nix::time::clock_gettime;

use crate::driver_stats::DriverStats;
use crate::error::EmuError;
use crate::mptcp::MemberDirs;
use crate::offload::{Offload, Read, Tally};
use crate::route::Route;
use crate::slab::{Meta, Slab};
use crate::tun::Tun;
use crate::wire_sender::WireFlow;

/// How the driver reads and writes its TUN devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IoPath {
    /// One IP packet per read and per write.
    PerPacket,
    /// Behind a `virtio_net_hdr`: super-segments read and cut, delivered packets coalesced.
    Offload,
}

/// CPU time of the calling thread so far.
pub(crate) fn thread_cpu_ns() -> u64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(0, |u| {
        let ns = |t: nix::sys::time::TimeVal| {
            t.tv_sec() as u64 * 1_000_000_000 + t.tv_usec() as u64 * 1000
        };
        ns(u.user_time()) + ns(u.system_time())
    })
}

/// Where the next thing due is.
#[derive(Clone, Copy)]
enum Step {
    Start,
    Timer,
    Event(BundleEvent),
}

#[derive(Clone, Copy)]
enum Due {
    Dir(usize),
    BundleTimer(usize),
    BundleEvent(usize),
    /// A timer of farlink's sender `i` at user node `u`.
    User(usize, usize),
}

pub(crate) struct Driver {
    links: PathLinks,
    /// Events the bundle drivers scheduled: (instant, bundle, event).
    pending: Vec<(SimTime, usize, BundleEvent)>,
    routes: Vec<Route>,
    tuns: Vec<Tun>,
    /// End nodes without a kernel, after the TUNs in the device numbering of [`Route`]: the
    /// farlink senders there (`wire_sender.rs`), and whether each has had its timer handled
    /// and waits for `read_all` to let it send.
    users: Vec<Vec<WireFlow>>,
    user_polled: Vec<Vec<bool>>,
    /// The instant farlink's senders are told while links are serviced: the wall clock when
    /// the servicing began, so the senders' time never runs backwards.
    user_now: SimTime,
    slab: Slab,
    t0_ns: u64,
    vnow: SimTime,
    spin_ns: u64,
    /// Receiver port of each flow (the data direction's destination port).
    flow_ports: Vec<u16>,
    pub(crate) stats: DriverStats,
    /// Departure-time error of delivered packets, ns.
    pub(crate) departure_error_ns: Histogram<u64>,
    /// Per link direction: loss-model outcomes seen (packets that reached the far end, intact
    /// or not), and the ordinals of those lost, if recorded.
    outcomes: Vec<u64>,
    pub(crate) lost_ordinals: Option<Vec<Vec<u64>>>,
    /// Per TUN, the capture of what crossed it (both ways), if asked for.
    pcap: Vec<Option<PcapWriter<BufWriter<File>>>>,
    /// Emulated time zero in Unix ns, for the captures' timestamps.
    t0_unix_ns: u64,
    /// The offload path's buffers and coalescers, when the TUNs were opened with offloads.
    pub(crate) offload: Option<Offload>,
    /// Multipath TCP's member links and what follows their members (`crate::mptcp`).
    pub(crate) members: MemberDirs,
    /// Every state change of every bundle member (simulate's `member_state` trace): when
    /// the calls dropped, for the stall after each (`farlink.bonding`).
    pub(crate) member_states: MemberStateTrace,
}

// The link manager still reads the clock here; `crate::clock` is where it lives.
pub(crate) use crate::clock::monotonic_ns;

/// Both directions of link `link`, forward first.
fn both_dirs(dirs: &mut [LinkDir], link: usize) -> [&mut LinkDir; 2] {
    let (fwd, rest) = dirs[link * 2..].split_at_mut(1);
    [&mut fwd[0], &mut rest[0]]
}

impl Driver {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        links: PathLinks,
        routes: Vec<Route>,
        tuns: Vec<Tun>,
        users: Vec<Vec<WireFlow>>,
        pcap: Vec<Option<File>>,
        slot_bytes: usize,
        flow_ports: Vec<u16>,
        spin_ns: u64,
        record_lost: bool,
        io: IoPath,
        members: MemberDirs,
    ) -> Result<Driver, EmuError> {
        let n_dirs = links.dirs.len();
        let n_flows = flow_ports.len();
        let mut d = Driver {
            links,
            pending: Vec::with_capacity(64),
            routes,
            tuns,
            user_polled: users.iter().map(|u| vec![true; u.len()]).collect(),
            users,
            user_now: SimTime::ZERO,
            slab: Slab::new(slot_bytes, 4096),
            t0_ns: 0,
            vnow: SimTime::ZERO,
            spin_ns,
            flow_ports,
            stats: DriverStats {
                flow_drops: vec![[0; N_DROP_CAUSES]; n_flows],
                flow_data_delivered: vec![0; n_flows],
                flow_acks_sent: vec![0; n_flows],
                flow_last_data_at: vec![None; n_flows],
                ..DriverStats::default()
            },
            departure_error_ns: crate::histogram::ns_histogram(),
            outcomes: vec![0; n_dirs],
            lost_ordinals: record_lost.then(|| vec![Vec::new(); n_dirs]),
            pcap: Vec::new(),
            t0_unix_ns: 0,
            offload: None,
            members,
            member_states: MemberStateTrace::default(),
        };
        if io == IoPath::Offload {
            d.offload = Some(Offload::new(d.tuns.len()));
        }
        d.t0_ns = monotonic_ns();
        let unix = clock_gettime(nix::time::ClockId::CLOCK_REALTIME)
            .map_err(|e| EmuError::sys("clock_gettime", e))?;
        d.t0_unix_ns = unix.tv_sec() as u64 * 1_000_000_000 + unix.tv_nsec() as u64;
        let config = PcapConfig {
            time_origin_unix_secs: (d.t0_unix_ns / 1_000_000_000) as u32,
            ..PcapConfig::default()
        };
        for file in pcap {
            d.pcap.push(match file {
                Some(f) => Some(
                    PcapWriter::with_config(BufWriter::new(f), config)
                        .map_err(|e| EmuError::sys("pcap", e))?,
                ),
                None => None,
            });
        }
        for b in 0..d.links.bundles.len() {
            d.drive_bundle(b, Step::Start, SimTime::ZERO);
        }
        Ok(d)
    }

    /// The emulated instant now.
    fn now(&self) -> SimTime {
        SimTime::from_nanos(monotonic_ns().saturating_sub(self.t0_ns))
    }

    pub(crate) fn links(&self) -> &PathLinks {
        &self.links
    }

    /// Packets inside the links now.
    pub(crate) fn in_flight(&self) -> u64 {
        self.slab.live
    }

    /// Runs until `stop` is set or `end` (emulated time) is reached.
    pub(crate) fn run(
        &mut self,
        end: SimTime,
        realtime: bool,
        stop: impl Fn(bool) -> bool,
    ) -> Result<(), EmuError> {
        let cpu_before = thread_cpu_ns();
        let rt = realtime
            .then(|| crate::sched::Realtime::enter(10))
            .flatten();
        self.stats.realtime = rt.is_some();
        let result = self.run_loop(end, stop);
        drop(rt);
        self.stats.cpu_ns = thread_cpu_ns().saturating_sub(cpu_before);
        result
    }

    /// Monotonic ns of emulated time zero.
    pub(crate) fn t0_ns(&self) -> u64 {
        self.t0_ns
    }

    /// Whether every farlink sender has closed its connection (or failed).
    fn users_done(&self) -> bool {
        self.users.iter().flatten().all(WireFlow::is_finished)
    }

    /// The farlink senders, for their outcomes.
    pub(crate) fn wire_flows(&self) -> impl Iterator<Item = &WireFlow> {
        self.users.iter().flatten()
    }

    /// `stop` is asked whether to stop, told whether every farlink sender is done.
    fn run_loop(&mut self, end: SimTime, stop: impl Fn(bool) -> bool) -> Result<(), EmuError> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)
            .map_err(|e| EmuError::sys("epoll_create", e))?;
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(|e| EmuError::sys("timerfd_create", e))?;
        for (i, tun) in self.tuns.iter().enumerate() {
            epoll
                .add(tun.fd(), EpollEvent::new(EpollFlags::EPOLLIN, i as u64))
                .map_err(|e| EmuError::sys("epoll_ctl", e))?;
        }
        epoll
            .add(
                timer.as_fd(),
                EpollEvent::new(EpollFlags::EPOLLIN, u64::MAX),
            )
            .map_err(|e| EmuError::sys("epoll_ctl", e))?;
        let mut events = [EpollEvent::empty(); 8];
        while !stop(self.users_done()) {
            let now = self.now();
            if now >= end {
                break;
            }
            self.advance(now);
            self.read_all(now)?;
            let deadline = self.next_due().map(|(t, _)| t).filter(|&t| t < end);
            let now = self.now();
            match deadline {
                Some(t) if t <= now => continue,
                Some(t) if t.as_nanos() - now.as_nanos() <= self.spin_ns => {
                    self.stats.spins += 1;
                    while self.now() < t {
                        if self.read_all(self.now())? > 0 {
                            break;
                        }
                    }
                }
                Some(t) => {
                    let wake_ns = self.t0_ns + t.as_nanos() - self.spin_ns;
                    let at = TimeSpec::new(
                        (wake_ns / 1_000_000_000) as libc::time_t,
                        (wake_ns % 1_000_000_000) as libc::c_long,
                    );
                    timer
                        .set(
                            Expiration::OneShot(at),
                            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
                        )
                        .map_err(|e| EmuError::sys("timerfd_settime", e))?;
                    // At most 100 ms, to notice `stop`.
                    let n = epoll.wait(&mut events, 100u16).unwrap_or(0);
                    if events[..n].iter().any(|e| e.data() == u64::MAX) {
                        self.stats.timer_wakeups += 1;
                    }
                }
                None => {
                    let _ = timer.unset();
                    let _ = epoll.wait(&mut events, 100u16);
                }
            }
        }
        Ok(())
    }

    /// Reads every packet waiting on every TUN and offers it at `now`; returns how many.
    fn read_all(&mut self, now: SimTime) -> Result<u64, EmuError> {
        let mut n = 0;
        for t in 0..self.tuns.len() {
            if self.offload.is_some() {
                n += self.read_offloaded(t, now)?;
                continue;
            }
            loop {
                let (slot, buf) = self.slab.take();
                let len = match self.tuns[t].recv(buf) {
                    Ok(Some(len)) => len,
                    Ok(None) => {
                        self.slab.untake(slot);
                        break;
                    }
                    Err(e) => {
                        self.slab.untake(slot);
                        return Err(EmuError::sys("read from TUN", e));
                    }
                };
                n += 1;
                self.ingest(t, slot, len, now);
            }
        }
        // farlink's senders: whatever they may send now.
        for u in 0..self.users.len() {
            let t = self.tuns.len() + u;
            for i in 0..self.users[u].len() {
                self.user_polled[u][i] = true;
                loop {
                    let (slot, buf) = self.slab.take();
                    let Some(len) = self.users[u][i].poll_transmit(now, buf) else {
                        self.slab.untake(slot);
                        break;
                    };
                    n += 1;
                    self.ingest(t, slot, len, now);
                }
            }
        }
        self.stats.slab_growths = self.slab.grown;
        Ok(n)
    }

    /// Reads everything waiting on TUN `t`, opened with offloads: each read cut into the
    /// packets it carries, each ingested as if read alone. Returns how many packets.
    fn read_offloaded(&mut self, t: usize, now: SimTime) -> Result<u64, EmuError> {
        // Out of `self` while its reads are cut, so that `ingest` may have all of `self`.
        let Some(mut off) = self.offload.take() else {
            return Ok(0);
        };
        let mut n = 0;
        let mut bad = 0;
        let result = loop {
            let seg = match off.read(&mut self.tuns[t]) {
                Ok(Read::Packets(seg)) => seg,
                Ok(Read::Bad) => continue,
                Ok(Read::Nothing) => break Ok(n),
                Err(e) => break Err(EmuError::sys("read from TUN", e)),
            };
            for i in 0..seg.count() {
                let (slot, buf) = self.slab.take();
                match seg.segment(i, buf) {
                    Ok(len) => {
                        n += 1;
                        self.ingest(t, slot, len, now);
                    }
                    Err(_) => {
                        bad += 1;
                        self.slab.untake(slot);
                    }
                }
            }
        };
        off.stats.header_errors += bad;
        self.offload = Some(off);
        result
    }

    /// A packet of `len` bytes in `slot`, from device `t`: captured, counted, and offered to
    /// the first link of its route at `now` (or dropped as unroutable).
    fn ingest(&mut self, t: usize, slot: u32, len: usize, now: SimTime) {
        self.capture(t, slot, len);
        self.stats.read_pkts += 1;
        self.stats.read_bytes += len as u64;
        let Some((route, flow)) = self.classify(t, slot, len) else {
            self.stats.unroutable_pkts += 1;
            self.slab.untake(slot);
            return;
        };
        let segment = flow.map_or(Segment::Other, |f| {
            segment_kind(
                &self.slab.slot(slot)[..len],
                self.flow_ports[usize::from(f)],
            )
        });
        if let (Some(f), Segment::Ack) = (flow, segment) {
            self.stats.flow_acks_sent[usize::from(f)] += 1;
        }
        if let Some(p) = self.members.data_path(route) {
            p.sent(&self.slab.slot(slot)[..len]);
        }
        self.slab.hold(
            slot,
            Meta {
                len: len as u32,
                route: route as u16,
                hop: 0,
                flow,
                data: segment == Segment::Data,
            },
        );
        let first = self.routes[route].dirs[0];
        self.offer(first, slot, now);
    }

    /// Writes the packet in `slot` (its first `len` bytes) to TUN `t`'s capture, if any.
    fn capture(&mut self, t: usize, slot: u32, len: usize) {
        if !matches!(self.pcap.get(t), Some(Some(_))) {
            return;
        }
        let now = self.now().as_nanos();
        if let Some(Some(w)) = self.pcap.get_mut(t) {
            let at = SimTime::from_nanos(self.t0_unix_ns % 1_000_000_000 + now);
            if w.write_packet(at, &self.slab.slot(slot)[..len]).is_err() {
                self.stats.pcap_errors += 1;
            }
        }
    }

    /// Flushes the captures.
    pub(crate) fn finish_captures(&mut self) {
        for w in self.pcap.iter_mut().flatten() {
            if w.flush().is_err() {
                self.stats.pcap_errors += 1;
            }
        }
    }

    /// Makes `port` flow `flow`'s receiver port: a `--server` listens where it chose.
    pub(crate) fn set_flow_port(&mut self, flow: usize, port: u16) {
        if let Some(p) = self.flow_ports.get_mut(flow) {
            *p = port;
        }
    }

    /// The route of an IPv4 packet read from TUN `t`, and its flow (by the receiver's port).
    fn classify(&self, t: usize, slot: u32, len: usize) -> Option<(usize, Option<u16>)> {
        let buf = &self.slab.slot(slot)[..len];
        if len < 20 || buf[0] >> 4 != 4 {
            return None;
        }
        let src: [u8; 4] = buf[12..16].try_into().ok()?;
        let dst: [u8; 4] = buf[16..20].try_into().ok()?;
        // A route for this source first (a Multipath TCP member's), else any source's.
        let matches = |r: &Route, from: Option<[u8; 4]>| {
            r.from_tun == t && r.to_addr == dst && r.from_addr == from
        };
        let route = self
            .routes
            .iter()
            .position(|r| matches(r, Some(src)))
            .or_else(|| self.routes.iter().position(|r| matches(r, None)))?;
        let ihl = usize::from(buf[0] & 0x0f) * 4;
        // TCP, and UDP (`traffic.rs`'s datagrams, to their flow's port).
        let flow = if (buf[9] == 6 || buf[9] == 17) && len >= ihl + 4 {
            let sport = u16::from_be_bytes([buf[ihl], buf[ihl + 1]]);
            let dport = u16::from_be_bytes([buf[ihl + 2], buf[ihl + 3]]);
            self.flow_ports
                .iter()
                .position(|&p| p == dport || p == sport)
                .map(|f| f as u16)
        } else {
            None
        };
        Some((route, flow))
    }

    /// Offers the packet in `slot` to link direction `d` at `at`.
    fn offer(&mut self, d: usize, slot: u32, at: SimTime) {
        let meta = *self.slab.meta_mut(slot);
        let pkt = Packet {
            id: u64::from(slot),
            size_bytes: meta.len,
            // FQ-CoDel's classifier: the flow, 0 for a packet of none.
            flow: meta.flow.map_or(0, |f| f.wrapping_add(1)),
            // The real header's ECN field, which the queue may mark CE.
            ecn: ecn_field(self.slab.packet(slot)),
        };
        if let Err(cause) = self.links.dirs[d].offer(at, pkt) {
            self.dropped(slot, cause);
        }
    }

    fn dropped(&mut self, slot: u32, cause: DropCause) {
        let c = usize::from(drop_cause_code(cause));
        self.stats.drops[c] += 1;
        if let Some(f) = self.slab.meta_mut(slot).flow {
            self.stats.flow_drops[usize::from(f)][c] += 1;
        }
        self.slab.release(slot);
    }

    /// The earliest thing due: a link direction, a bundle's timer, a bundle's event.
    fn next_due(&self) -> Option<(SimTime, Due)> {
        let mut best: Option<(SimTime, Due)> = None;
        let mut consider = |t: Option<SimTime>, due: Due| {
            if let Some(t) = t {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, due));
                }
            }
        };
        for (d, dir) in self.links.dirs.iter().enumerate() {
            consider(dir.next_wakeup(), Due::Dir(d));
        }
        for (b, bundle) in self.links.bundles.iter().enumerate() {
            consider(bundle.next_wakeup(), Due::BundleTimer(b));
        }
        for (i, &(t, _, _)) in self.pending.iter().enumerate() {
            consider(Some(t), Due::BundleEvent(i));
        }
        // A sender whose timer was handled waits for `read_all` before it is due again.
        for (u, flows) in self.users.iter().enumerate() {
            for (i, f) in flows.iter().enumerate() {
                if self.user_polled[u][i] {
                    consider(f.next_wakeup(), Due::User(u, i));
                }
            }
        }
        best
    }

    /// Handles, in time order, everything due at or before `until`.
    fn advance(&mut self, until: SimTime) {
        self.user_now = until;
        while let Some((t, due)) = self.next_due().filter(|&(t, _)| t <= until) {
            self.vnow = self.vnow.max(t);
            let now = self.vnow;
            match due {
                Due::Dir(d) => self.service(d, now),
                Due::BundleTimer(b) => self.drive_bundle(b, Step::Timer, now),
                Due::BundleEvent(i) => {
                    let (_, b, event) = self.pending.swap_remove(i);
                    self.drive_bundle(b, Step::Event(event), now);
                }
                // The sender runs on the wall clock: `until`, the instant `read_all` then
                // lets it send at.
                Due::User(u, i) => {
                    self.users[u][i].on_timeout(until);
                    self.user_polled[u][i] = false;
                }
            }
        }
        self.flush_offloaded();
    }

    /// Writes what the offload path's coalescers hold: the end of a pass of the loop.
    fn flush_offloaded(&mut self) {
        let Some(off) = &mut self.offload else {
            return;
        };
        let mut tally = Tally::new(self.t0_ns, &mut self.stats, &mut self.departure_error_ns);
        for (t, tun) in self.tuns.iter_mut().enumerate() {
            off.flush(t, tun, &mut tally);
        }
    }

    fn service(&mut self, d: usize, now: SimTime) {
        while let Some(event) = self.links.dirs[d].poll(now) {
            match event {
                LinkEvent::Delivered { at, pkt } => {
                    self.outcomes[d] += 1;
                    if pkt.ecn == Ecn::Ce {
                        mark_ce(self.slab.packet_mut(pkt.id as u32));
                    }
                    self.delivered(pkt.id as u32, at);
                }
                LinkEvent::Dropped { pkt, cause, .. } => {
                    if cause == DropCause::Corruption {
                        if let Some(lost) = &mut self.lost_ordinals {
                            lost[d].push(self.outcomes[d]);
                        }
                        self.outcomes[d] += 1;
                    }
                    self.dropped(pkt.id as u32, cause);
                }
            }
        }
    }

    /// A link delivered the packet in `slot` at `at`: on to the next hop, or out.
    fn delivered(&mut self, slot: u32, at: SimTime) {
        let meta = *self.slab.meta_mut(slot);
        let route = &self.routes[usize::from(meta.route)];
        let next = usize::from(meta.hop) + 1;
        if let Some(&d) = route.dirs.get(next) {
            self.slab.meta_mut(slot).hop = next as u16;
            self.offer(d, slot, at);
            return;
        }
        let out = route.to_tun;
        if let Some(p) = self.members.data_path(usize::from(meta.route)) {
            p.delivered(&self.slab.slot(slot)[..meta.len as usize]);
        }
        if let (true, Some(f)) = (meta.data, meta.flow) {
            self.stats.flow_data_delivered[usize::from(f)] += 1;
            self.stats.flow_last_data_at[usize::from(f)] = Some(at);
        }
        let late_ns = self.now().as_nanos().saturating_sub(at.as_nanos());
        if out >= self.tuns.len() {
            self.deliver_to_user(out - self.tuns.len(), slot);
            self.capture(out, slot, meta.len as usize);
            self.stats.written_pkts += 1;
            self.stats.written_bytes += u64::from(meta.len);
            self.slab.release(slot);
            return;
        }
        if self.offload.is_some() {
            self.capture(out, slot, meta.len as usize);
            let Some(off) = &mut self.offload else {
                return;
            };
            let mut tally = Tally::new(self.t0_ns, &mut self.stats, &mut self.departure_error_ns);
            off.push(
                out,
                self.slab.packet(slot),
                at,
                &mut self.tuns[out],
                &mut tally,
            );
            self.slab.release(slot);
            return;
        }
        match self.tuns[out].send(self.slab.packet(slot)) {
            Ok(()) => {
                self.capture(out, slot, meta.len as usize);
                self.stats.written_pkts += 1;
                self.stats.written_bytes += u64::from(meta.len);
                self.departure_error_ns.saturating_record(late_ns.max(1));
            }
            Err(_) => self.stats.write_errors += 1,
        }
        self.slab.release(slot);
    }

    /// Hands the packet in `slot` to the farlink sender at user node `u` it is for: by the
    /// TCP destination port, or to all of them (an ICMP message, which each matches against
    /// its own connection). They answer in the next `read_all`.
    fn deliver_to_user(&mut self, u: usize, slot: u32) {
        let pkt = self.slab.packet(slot);
        let ihl = usize::from(pkt.first().map_or(0, |b| b & 0x0f)) * 4;
        let port = (pkt.len() >= ihl + 4 && pkt.get(9) == Some(&6))
            .then(|| u16::from_be_bytes([pkt[ihl + 2], pkt[ihl + 3]]));
        let now = self.user_now;
        for f in &mut self.users[u] {
            if port.is_none_or(|p| p == f.local_port()) {
                f.on_packet(now, pkt);
            }
        }
    }

    /// Lets bundle `b`'s driver act at `now`, keeping what it schedules.
    fn drive_bundle(&mut self, b: usize, step: Step, now: SimTime) {
        let bundle = &mut self.links.bundles[b];
        let link = bundle.link();
        let dirs = both_dirs(&mut self.links.dirs, link);
        let pending = &mut self.pending;
        let changes = &mut self.members.changes;
        let states = &mut self.member_states;
        changes.clear();
        let mut out = |o: BundleOutput| match o {
            BundleOutput::Schedule { at, event } => pending.push((at, b, event)),
            BundleOutput::Member { member, change } => changes.push((member, change)),
            BundleOutput::MemberState { member, state } => {
                states.time_ns.push(now.as_nanos());
                states.link.push(link as u32);
                states.member.push(member);
                states.state.push(state);
            }
            BundleOutput::Capacity { .. } => {}
        };
        match step {
            Step::Start => bundle.start(now, dirs, &mut out),
            Step::Timer => bundle.on_timer(now, dirs, &mut out),
            Step::Event(event) => bundle.handle(now, event, dirs, &mut out),
        }
        self.members.apply(link, now, &mut self.links.dirs);
    }
}

/// What a flow's IPv4 packet is, for the per-flow counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    /// TCP data toward the receiver's port.
    Data,
    /// A segment from the receiver's port with no data and no SYN, FIN or RST: an ACK.
    Ack,
    Other,
}

/// Whether `pkt` (IPv4, TCP) is a data segment to `receiver_port` or an ACK from it.
pub(crate) fn segment_kind(pkt: &[u8], receiver_port: u16) -> Segment {
    let ihl = usize::from(pkt.first().map_or(0, |b| b & 0x0f)) * 4;
    if pkt.len() < ihl + 20 || pkt.get(9) != Some(&6) {
        return Segment::Other;
    }
    let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]])).min(pkt.len());
    let tcp = &pkt[ihl..];
    let sport = u16::from_be_bytes([tcp[0], tcp[1]]);
    let dport = u16::from_be_bytes([tcp[2], tcp[3]]);
    let header = usize::from(tcp[12] >> 4) * 4;
    let payload = total.saturating_sub(ihl + header);
    const FIN_SYN_RST: u8 = 0x07;
    const ACK: u8 = 0x10;
    let flags = tcp[13];
    if dport == receiver_port && payload > 0 {
        Segment::Data
    } else if sport == receiver_port && payload == 0 && flags & ACK != 0 && flags & FIN_SYN_RST == 0
    {
        Segment::Ack
    } else {
        Segment::Other
    }
}

/// The ECN field of the IPv4 packet `ip` (RFC 3168 section 5); not ECT if it is no IPv4
/// packet.
fn ecn_field(ip: &[u8]) -> Ecn {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return Ecn::NotEct;
    }
    match ip[1] & 0b11 {
        0b01 => Ecn::Ect1,
        0b10 => Ecn::Ect0,
        0b11 => Ecn::Ce,
        _ => Ecn::NotEct,
    }
}

/// Marks the IPv4 packet `ip` CE in its real header, the checksum updated (RFC 1624), as a
/// router's queue does; the queue marks only ECT packets, so CE is never set on another.
fn mark_ce(ip: &mut [u8]) {
    if ip.len() >= 20 && ip[0] >> 4 == 4 && ip[1] & 0b11 != Ecn::Ce as u8 {
        set_ipv4_ecn(ip, Ecn::Ce as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_sets_ce_in_the_real_header_and_keeps_its_checksum() {
        let mut ip = [0u8; 40];
        farlink_core::tcp::wire::write_ipv4_header(&mut ip, [10, 0, 0, 1], [10, 0, 0, 2], 6, 40, 7);
        assert_eq!(ecn_field(&ip), Ecn::NotEct);
        farlink_core::tcp::wire::set_ipv4_ecn(&mut ip, Ecn::Ect0 as u8);
        assert_eq!(ecn_field(&ip), Ecn::Ect0);
        mark_ce(&mut ip);
        assert_eq!(ecn_field(&ip), Ecn::Ce);
        let mut fresh = ip;
        farlink_core::tcp::wire::write_ipv4_header(
            &mut fresh,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            6,
            40,
            7,
        );
        farlink_core::tcp::wire::set_ipv4_ecn(&mut fresh, Ecn::Ce as u8);
        assert_eq!(ip[..20], fresh[..20], "the same header as one written CE");
        assert_eq!(ecn_field(&[0x60; 40]), Ecn::NotEct, "not IPv4");
    }

    /// An IPv4 TCP packet from `sport` to `dport` with `flags` and `payload` bytes of data.
    fn segment(sport: u16, dport: u16, flags: u8, payload: usize) -> Vec<u8> {
        let mut p = vec![0u8; 20 + 20 + payload];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
        p[9] = 6;
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p[32] = 5 << 4;
        p[33] = flags;
        p
    }

    #[test]
    fn data_to_the_receiver_and_its_pure_acks_are_told_apart() {
        let ack = 0x10;
        assert_eq!(
            segment_kind(&segment(40000, 5001, ack, 960), 5001),
            Segment::Data
        );
        assert_eq!(
            segment_kind(&segment(5001, 40000, ack, 0), 5001),
            Segment::Ack
        );
        // The SYN-ACK, the receiver's FIN and a window probe's empty segment to the receiver
        // are neither.
        assert_eq!(
            segment_kind(&segment(5001, 40000, ack | 0x02, 0), 5001),
            Segment::Other
        );
        assert_eq!(
            segment_kind(&segment(5001, 40000, ack | 0x01, 0), 5001),
            Segment::Other
        );
        assert_eq!(
            segment_kind(&segment(40000, 5001, ack, 0), 5001),
            Segment::Other
        );
        // Padding beyond the IP total length is not data.
        let mut padded = segment(5001, 40000, ack, 0);
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(segment_kind(&padded, 5001), Segment::Ack);
    }
}
