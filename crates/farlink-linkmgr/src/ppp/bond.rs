//! One end of a multilink PPP bundle over N serial members, sans I/O: per member RFC 1662
//! framing and LCP with the multilink options, IPCP over the bundle, MP fragmentation over the
//! members that are up and reassembly of what they deliver.
//!
//! Read first: RFC 1990 sections 3 (a member joins the bundle once its LCP is Opened with the
//! MRRU option; members with the same Endpoint Discriminator form one bundle), 4 (fragments
//! carry consecutive sequence numbers over all members) and 4.1 (the receiver's loss rule);
//! RFC 1332 (IPCP); the module docs of [`super::lcp`], [`super::mp`] and
//! [`farlink_core::links::mlppp::loss_rule`].
//!
//! Inputs: a member's call up or down, octets a member delivered, an IP packet to send, `now`.
//! Outputs: octets to write to each member ([`Bond::transmit`], handed out no faster than the
//! member's line carries them, so that the bond, not a port's buffer, holds the queue and can
//! choose), IP packets received ([`Bond::drain_ip`]), events ([`Bond::poll_event`]) and the
//! next instant it wants to be called ([`Bond::next_wakeup`]).
//!
//! **Distribution.** A packet waits in the bundle queue until the member that will be free
//! first has less than `lead` left to send. It is then cut so that the members it goes to all
//! finish at the same instant (water-filling over each member's backlog and rate); a member
//! whose share would be below `min_fragment_bytes` gets none, so a small packet (an ACK) goes
//! whole on the member free first. A member whose call drops loses what it held; the receiver
//! gives those fragments up by the loss rule (the member left, or every member has delivered
//! something later) or, if nobody noticed the drop, by the staleness timer sized to the
//! members' rates ([`farlink_core::links::mlppp::loss_rule::stale_timeout`]).
//!
//! **Idle members.** The loss rule can only give a fragment up on sequence numbers once every
//! member has delivered a later one; a member that carries nothing (the reverse direction of
//! a bulk transfer sends its ACKs whole on one member) would leave only the timer. So a
//! member that has carried nothing for `null_interval` while later numbers went out on others
//! carries a null fragment (B and E set, no data; the receiver hands up an empty packet and
//! discards it). Not sooner: a fresh receiver takes the first complete packet it sees as the
//! start of the sequence, so a null overtaking the bundle's first packet would cost it.

use std::collections::VecDeque;

use super::hdlc::{self, Decoder, FcsKind, RxOptions, TxOptions, DEFAULT_ACCM, PROTO_LCP};
use super::ipcp::{Ipcp, IpcpConfig, IpcpOutput, PROTO_IP, PROTO_IPCP};
use super::lcp::{Lcp, LcpConfig, LcpOutput, LcpState, Negotiated};
use super::mp::{
    self, Fragmenter, MpHeader, Reassembler, ReassemblerConfig, ReassemblerStats, SeqFormat,
    PROTO_MP,
};
use farlink_core::links::mlppp::loss_rule::stale_timeout;
use farlink_core::time::{BitRate, SimDuration, SimTime};

/// How a bundle endpoint behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BondConfig {
    /// Per member, the rate its line carries octets at (8 bits an octet: the air link of a
    /// data modem is the bottleneck, not its faster asynchronous port).
    pub rates: Vec<BitRate>,
    /// Each member's LCP; member `m`'s Magic-Number is `lcp.magic` plus `m` times a large odd
    /// constant, so no two members share one.
    pub lcp: LcpConfig,
    pub ipcp: IpcpConfig,
    /// The longest one-way delay of a member's call (for the staleness timer).
    pub max_delay: SimDuration,
    /// How far ahead of its line a member's port is given octets.
    pub handoff: SimDuration,
    /// A queued packet is cut onto the members once the member free first has less than this
    /// left to send.
    pub lead: SimDuration,
    pub min_fragment_bytes: usize,
    /// The bundle queue's limit; a packet that does not fit is dropped (the kernel's TCP sees
    /// a loss, as with a full interface queue).
    pub queue_limit_bytes: usize,
    /// Fragments the receiver holds at most (then it gives the head up).
    pub max_fragments: usize,
    /// How long a member lagging behind the bundle's numbers stays idle before it carries a
    /// null fragment.
    pub null_interval: SimDuration,
    /// LCP keepalive: a member that delivered nothing for this long is sent an Echo-Request
    /// (RFC 1661 section 5.8); `None`: never.
    pub echo_interval: Option<SimDuration>,
    /// Echo-Requests in a row without anything received before the member is reported dead
    /// ([`BondEvent::EchoTimeout`]).
    pub echo_failures: u32,
}

impl BondConfig {
    /// Defaults for members at `rates`: hand-off 100 ms ahead of the line (the I/O loop
    /// wakes well within it), lead 200 ms, 64-octet least fragment (its 8 octets of framing
    /// cost at most 12.5 %), a queue of 4 s of the bundle's rate (at least four 1500-octet
    /// packets), 1024 fragments held, a null fragment after 500 ms idle, an LCP echo after
    /// 10 s with nothing received and a member reported dead after 3 unanswered (an echo
    /// waits behind at most one full-size frame each way, 10 s at 2400 bit/s).
    pub fn new(rates: Vec<BitRate>, lcp: LcpConfig, ipcp: IpcpConfig) -> Self {
        let sum_bps = rates.iter().copied().sum::<BitRate>().bps();
        BondConfig {
            queue_limit_bytes: ((sum_bps / 8) * 4).max(4 * 1500) as usize,
            rates,
            lcp,
            ipcp,
            max_delay: SimDuration::from_secs(1),
            handoff: SimDuration::from_millis(100),
            lead: SimDuration::from_millis(200),
            min_fragment_bytes: 64,
            max_fragments: 1024,
            null_interval: SimDuration::from_millis(500),
            echo_interval: Some(SimDuration::from_secs(10)),
            echo_failures: 3,
        }
    }

    /// The staleness timeout the receiver uses: a fragment on the slowest member may trail a
    /// later one by its own largest frame plus what was queued ahead of it (at most `lead`
    /// and `handoff`), plus the delay.
    pub fn stale_timeout(&self) -> SimDuration {
        let min_rate = self.rates.iter().copied().min();
        let min_rate = min_rate.unwrap_or(BitRate::from_bps(1));
        let max_frame = u64::from(self.lcp.mru) + hdlc::MAX_OVERHEAD as u64 + 2;
        stale_timeout(
            min_rate,
            max_frame,
            0,
            self.max_delay + self.lead + self.handoff,
        )
    }
}

/// Something the owner of the ports may act on or log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BondEvent {
    /// A member's LCP opened with these options.
    MemberOpened {
        member: usize,
        negotiated: Negotiated,
    },
    /// A member joined the bundle.
    MemberJoined(usize),
    /// A member left the bundle (its call dropped, or its LCP went down).
    MemberLeft(usize),
    /// A member's LCP opened but it cannot join: the peer refused multilink, or its Endpoint
    /// Discriminator names another bundle.
    MemberRefused {
        member: usize,
        reason: &'static str,
    },
    /// A member's LCP gave up (the peer never answered) or was terminated: hang up.
    MemberFinished(usize),
    /// A member in the bundle delivered nothing through `echo_failures` LCP echoes: its call
    /// is presumably lost. The owner decides (hang up, [`Bond::member_down`]).
    EchoTimeout(usize),
    /// The first member joined: the bundle exists.
    BundleUp,
    /// The last member left.
    BundleDown,
    /// IPCP opened: IPv4 flows between these addresses.
    IpUp {
        local: [u8; 4],
        peer: [u8; 4],
    },
    IpDown,
}

/// Counters of one member.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberStats {
    /// Octets handed to the member's port, and received from it.
    pub tx_octets: u64,
    pub rx_octets: u64,
    pub tx_frames: u64,
    pub rx_frames: u64,
    /// Frames the decoder discarded (bad FCS, aborted, too long, ...).
    pub bad_frames: u64,
    /// MP fragments sent, null fragments among them.
    pub fragments: u64,
    pub null_fragments: u64,
    /// Octets still queued on the member when its call dropped (lost with it).
    pub lost_octets: u64,
    /// Calls that dropped while a frame was half received.
    pub cut_frames: u64,
    pub calls: u64,
}

/// Counters of the bundle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BondStats {
    /// IP packets (and their octets) accepted from the host and sent over the bundle.
    pub tx_ip_pkts: u64,
    pub tx_ip_bytes: u64,
    /// IP packets received over the bundle for the host.
    pub rx_ip_pkts: u64,
    pub rx_ip_bytes: u64,
    /// IP packets dropped: the bundle queue was full, or IPCP was not open.
    pub queue_drops: u64,
    pub not_open_drops: u64,
    /// IP packets longer than the peer's MRRU (dropped).
    pub too_long_drops: u64,
    /// Packets dropped from the queue when the last member left.
    pub flushed_pkts: u64,
    /// Frames or packets of a protocol nobody here speaks.
    pub unknown_protocol: u64,
    /// Reassembled packets that were empty (null fragments) or malformed.
    pub empty_pkts: u64,
    pub reassembly: ReassemblerStats,
}

#[derive(Debug)]
struct Member {
    rate: BitRate,
    lower_up: bool,
    lcp: Lcp,
    negotiated: Option<Negotiated>,
    joined: bool,
    tx: TxOptions,
    dec: Decoder,
    /// Framed octets not yet handed to the port.
    out: VecDeque<u8>,
    /// When the line will have sent everything given to this member (handed out or not).
    busy_until: SimTime,
    /// The last sequence number sent on this member (unwrapped), and when it joined or last
    /// carried a fragment.
    last_seq: Option<u64>,
    last_sent: SimTime,
    /// When the next Echo-Request is due, and how many went unanswered in a row.
    echo_due: Option<SimTime>,
    echo_missed: u32,
    stats: MemberStats,
}

impl Member {
    /// The time the line takes for `octets`.
    fn line_time(&self, octets: usize) -> SimDuration {
        SimDuration::from_nanos(
            (octets as u64 * 8).saturating_mul(1_000_000_000) / self.rate.bps().max(1),
        )
    }

    fn backlog(&self, now: SimTime) -> SimDuration {
        self.busy_until.saturating_since(now)
    }

    /// When the octets already handed to the port will have left the line.
    fn handed_until(&self) -> SimTime {
        SimTime::from_nanos(
            self.busy_until
                .as_nanos()
                .saturating_sub(self.line_time(self.out.len()).as_nanos()),
        )
    }
}

/// The working lists of one cut: members in the order they are free, their shares, the
/// fragments (member, octets), and each fragment's member, number, header and place.
#[derive(Debug, Default)]
struct Plan {
    order: Vec<usize>,
    shares: Vec<usize>,
    pieces: Vec<(usize, usize)>,
    sizes: Vec<usize>,
    frags: Vec<(usize, u64, MpHeader, usize, usize)>,
}

/// The bundle while at least one member is in it.
#[derive(Debug)]
struct Bundle {
    reasm: Reassembler,
    tx_format: SeqFormat,
    rx_format: SeqFormat,
    peer_endpoint: Option<(u8, Vec<u8>)>,
    /// One-octet protocol fields inside fragments (the peer accepts PFC).
    tx_pfc: bool,
    peer_mrru: usize,
}

/// One end of a multilink bundle.
#[derive(Debug)]
pub struct Bond {
    cfg: BondConfig,
    members: Vec<Member>,
    bundle: Option<Bundle>,
    ipcp: Ipcp,
    ip_up: bool,
    /// Never reset, so a peer that kept its reassembler across our bundle's restart sees the
    /// numbers go on.
    fragmenter: Fragmenter,
    /// Packets to send over the bundle: protocol field and information.
    queue: VecDeque<Vec<u8>>,
    queued_bytes: usize,
    to_host: VecDeque<Vec<u8>>,
    spare: Vec<Vec<u8>>,
    events: VecDeque<BondEvent>,
    stats: BondStats,
    stale: SimDuration,
    scratch: Vec<u8>,
    frame: Vec<u8>,
    rx_flat: Vec<u8>,
    rx_spans: Vec<(usize, usize)>,
    plan: Plan,
}

/// Member `m`'s magic number: distinct per member, never zero.
fn member_magic(base: u32, m: usize) -> u32 {
    let v = base.wrapping_add((m as u32).wrapping_mul(0x9e37_79b9));
    if v == 0 {
        1
    } else {
        v
    }
}

fn protocol_field(protocol: u16, pfc: bool, out: &mut Vec<u8>) {
    if pfc && protocol < 0x100 {
        out.push(protocol as u8);
    } else {
        out.extend_from_slice(&protocol.to_be_bytes());
    }
}

/// The protocol field (one octet if compressed) and the rest of a reassembled packet.
fn split_protocol(pkt: &[u8]) -> Option<(u16, &[u8])> {
    match pkt {
        [p, rest @ ..] if p & 1 == 1 => Some((u16::from(*p), rest)),
        [hi, lo, rest @ ..] if hi & 1 == 0 && lo & 1 == 1 => {
            Some((u16::from_be_bytes([*hi, *lo]), rest))
        }
        _ => None,
    }
}

impl Bond {
    pub fn new(cfg: BondConfig) -> Self {
        let members = cfg
            .rates
            .iter()
            .enumerate()
            .map(|(m, &rate)| {
                let mut lcp = cfg.lcp.clone();
                lcp.magic = member_magic(cfg.lcp.magic, m);
                Member {
                    rate,
                    lower_up: false,
                    lcp: Lcp::new(lcp),
                    negotiated: None,
                    joined: false,
                    tx: TxOptions::default(),
                    dec: Decoder::new(Self::rx_default(&cfg)),
                    out: VecDeque::new(),
                    busy_until: SimTime::ZERO,
                    last_seq: None,
                    last_sent: SimTime::ZERO,
                    echo_due: None,
                    echo_missed: 0,
                    stats: MemberStats::default(),
                }
            })
            .collect();
        Bond {
            ipcp: Ipcp::new(cfg.ipcp.clone()),
            stale: cfg.stale_timeout(),
            members,
            bundle: None,
            ip_up: false,
            fragmenter: Fragmenter::new(0),
            queue: VecDeque::new(),
            queued_bytes: 0,
            to_host: VecDeque::new(),
            spare: Vec::new(),
            events: VecDeque::new(),
            stats: BondStats::default(),
            scratch: Vec::new(),
            frame: Vec::new(),
            rx_flat: Vec::new(),
            rx_spans: Vec::new(),
            plan: Plan::default(),
            cfg,
        }
    }

    fn rx_default(cfg: &BondConfig) -> RxOptions {
        RxOptions {
            accm: DEFAULT_ACCM,
            fcs: FcsKind::Fcs16,
            mru: usize::from(cfg.lcp.mru).max(hdlc::DEFAULT_MRU),
        }
    }

    pub fn config(&self) -> &BondConfig {
        &self.cfg
    }

    pub fn members(&self) -> usize {
        self.members.len()
    }

    /// The staleness timeout the receiver runs with.
    pub fn stale_timeout(&self) -> SimDuration {
        self.stale
    }

    pub fn stats(&self) -> BondStats {
        let mut s = self.stats;
        if let Some(b) = &self.bundle {
            let r = b.reasm.stats();
            s.reassembly.delivered_pkts += r.delivered_pkts;
            s.reassembly.lost_pkts += r.lost_pkts;
            s.reassembly.timeouts += r.timeouts;
            s.reassembly.overflows += r.overflows;
            s.reassembly.discarded_fragments += r.discarded_fragments;
            s.reassembly.too_long_pkts += r.too_long_pkts;
        }
        s
    }

    pub fn member_stats(&self, member: usize) -> MemberStats {
        self.members[member].stats
    }

    /// Whether `member` is in the bundle now.
    pub fn is_joined(&self, member: usize) -> bool {
        self.members[member].joined
    }

    pub fn lcp_state(&self, member: usize) -> LcpState {
        self.members[member].lcp.state()
    }

    /// IPCP is open: IP packets go.
    pub fn ip_is_up(&self) -> bool {
        self.ip_up
    }

    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    pub fn poll_event(&mut self) -> Option<BondEvent> {
        self.events.pop_front()
    }

    /// `member`'s call is up (CONNECT): its LCP starts.
    pub fn member_up(&mut self, member: usize, now: SimTime) {
        let rx = Self::rx_default(&self.cfg);
        let m = &mut self.members[member];
        if m.lower_up {
            return;
        }
        m.lower_up = true;
        m.stats.calls += 1;
        m.dec = Decoder::new(rx);
        m.tx = TxOptions::default();
        m.out.clear();
        m.busy_until = now;
        m.last_seq = None;
        m.echo_due = None;
        m.lcp.open(now);
        self.pump_lcp(member, now);
    }

    /// `member`'s call is gone: what it held is lost, and it leaves the bundle.
    pub fn member_down(&mut self, member: usize, now: SimTime) {
        let rx = Self::rx_default(&self.cfg);
        let m = &mut self.members[member];
        if !m.lower_up {
            return;
        }
        if m.dec.buffered() > 0 {
            m.stats.cut_frames += 1;
        }
        m.stats.lost_octets += m.out.len() as u64;
        m.out.clear();
        m.dec = Decoder::new(rx);
        m.lower_up = false;
        m.lcp.lower_down();
        self.pump_lcp(member, now);
        self.leave(member, now);
        self.members[member].negotiated = None;
    }

    /// Octets `member`'s port delivered.
    pub fn on_member_octets(&mut self, member: usize, now: SimTime, octets: &[u8]) {
        let m = &mut self.members[member];
        m.stats.rx_octets += octets.len() as u64;
        if !m.lower_up {
            return;
        }
        self.rx_flat.clear();
        self.rx_spans.clear();
        let (flat, spans) = (&mut self.rx_flat, &mut self.rx_spans);
        let mut bad = 0;
        m.dec.push(octets, |r| match r {
            Ok(content) => {
                spans.push((flat.len(), content.len()));
                flat.extend_from_slice(content);
            }
            Err(_) => bad += 1,
        });
        m.stats.bad_frames += bad;
        m.stats.rx_frames += self.rx_spans.len() as u64;
        let flat = std::mem::take(&mut self.rx_flat);
        let spans = std::mem::take(&mut self.rx_spans);
        for &(at, len) in &spans {
            self.on_frame(member, now, &flat[at..at + len]);
        }
        self.rx_flat = flat;
        self.rx_spans = spans;
        self.release(now);
        self.schedule(now);
    }

    /// An IP packet from the host. `false`: dropped (queue full, or IPCP not open).
    pub fn send_ip(&mut self, now: SimTime, packet: &[u8]) -> bool {
        if !self.ip_up {
            self.stats.not_open_drops += 1;
            return false;
        }
        let pfc = self.bundle.as_ref().is_some_and(|b| b.tx_pfc);
        // The peer reassembles at most its MRRU octets of information (RFC 1990 5.1.1).
        if self
            .bundle
            .as_ref()
            .is_some_and(|b| packet.len() > b.peer_mrru)
        {
            self.stats.too_long_drops += 1;
            return false;
        }
        let len = packet.len() + if pfc { 1 } else { 2 };
        if self.queued_bytes + len > self.cfg.queue_limit_bytes {
            self.stats.queue_drops += 1;
            return false;
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        protocol_field(PROTO_IP, pfc, &mut buf);
        buf.extend_from_slice(packet);
        self.queued_bytes += buf.len();
        self.queue.push_back(buf);
        self.stats.tx_ip_pkts += 1;
        self.stats.tx_ip_bytes += packet.len() as u64;
        self.schedule(now);
        true
    }

    /// Hands every IP packet received for the host to `f`, in order.
    pub fn drain_ip(&mut self, mut f: impl FnMut(&[u8])) {
        while let Some(p) = self.to_host.pop_front() {
            f(&p);
            self.spare.push(p);
        }
    }

    /// Appends to `out` the octets `member`'s port may be given at `now` (none until its
    /// queued octets run within half the hand-off of the line, then up to the hand-off).
    /// Returns how many.
    pub fn transmit(&mut self, member: usize, now: SimTime, out: &mut Vec<u8>) -> usize {
        let handoff = self.cfg.handoff;
        let m = &mut self.members[member];
        if !m.lower_up || m.out.is_empty() {
            return 0;
        }
        let mut handed = m.handed_until();
        if handed < now {
            // The line went idle (the loop woke late): the schedule moves on from now.
            m.busy_until += now.saturating_since(handed);
            handed = now;
        }
        let half = SimDuration::from_nanos(handoff.as_nanos() / 2);
        if handed > now + half {
            return 0;
        }
        let room = m.rate.bytes_in((now + handoff).saturating_since(handed)) as usize;
        let n = room.min(m.out.len()).max(1);
        out.extend(m.out.drain(..n));
        m.stats.tx_octets += n as u64;
        n
    }

    /// The earliest instant the bond wants [`Bond::on_timer`] (or a [`Bond::transmit`] round).
    pub fn next_wakeup(&self) -> Option<SimTime> {
        let half = SimDuration::from_nanos(self.cfg.handoff.as_nanos() / 2);
        let mut t: Option<SimTime> = None;
        let mut at = |x: SimTime| t = Some(t.map_or(x, |y: SimTime| y.min(x)));
        for m in &self.members {
            if let Some(w) = m.lcp.next_wakeup() {
                at(w);
            }
            if let Some(w) = m.echo_due {
                at(w);
            }
            if m.lower_up && !m.out.is_empty() {
                let h = m.handed_until().as_nanos();
                at(SimTime::from_nanos(h.saturating_sub(half.as_nanos())));
            }
        }
        if let Some(w) = self.ipcp.next_wakeup() {
            at(w);
        }
        if let Some(b) = &self.bundle {
            if let Some(w) = b.reasm.deadline() {
                at(w);
            }
            let lead = self.cfg.lead.as_nanos();
            let joined = self.members.iter().filter(|m| m.joined);
            if !self.queue.is_empty() {
                if let Some(free) = joined.map(|m| m.busy_until.as_nanos()).min() {
                    at(SimTime::from_nanos(free.saturating_sub(lead)));
                }
            }
            for m in self.members.iter().filter(|m| self.wants_null(m)) {
                at((m.last_sent + self.cfg.null_interval).max(m.busy_until));
            }
        }
        t
    }

    /// Timers: LCP and IPCP restarts, the reassembler's staleness, pacing and queued packets.
    pub fn on_timer(&mut self, now: SimTime) {
        for m in 0..self.members.len() {
            self.members[m].lcp.on_timer(now);
            self.pump_lcp(m, now);
            self.keepalive(m, now);
        }
        self.ipcp.on_timer(now);
        self.pump_ipcp(now);
        self.release(now);
        self.schedule(now);
    }

    // ---- receiving ----

    /// LCP echoes on a member that has been silent (RFC 1661 section 5.8).
    fn keepalive(&mut self, member: usize, now: SimTime) {
        let (Some(interval), m) = (self.cfg.echo_interval, &mut self.members[member]) else {
            return;
        };
        if m.echo_due.is_none_or(|t| now < t) {
            return;
        }
        if m.echo_missed >= self.cfg.echo_failures {
            m.echo_due = None;
            self.events.push_back(BondEvent::EchoTimeout(member));
            return;
        }
        m.echo_missed += 1;
        m.echo_due = Some(now + interval);
        m.lcp.send_echo();
        self.pump_lcp(member, now);
    }

    fn on_frame(&mut self, member: usize, now: SimTime, content: &[u8]) {
        // Anything received is proof of life: no echo needed while traffic flows.
        if let (Some(interval), m) = (self.cfg.echo_interval, &mut self.members[member]) {
            if m.echo_due.is_some() {
                m.echo_missed = 0;
                m.echo_due = Some(now + interval);
            }
        }
        let Ok(f) = hdlc::parse_content(content) else {
            self.members[member].stats.bad_frames += 1;
            return;
        };
        match f.protocol {
            PROTO_LCP => {
                self.members[member].lcp.on_packet(now, f.info);
                self.pump_lcp(member, now);
            }
            PROTO_MP if self.members[member].joined => {
                let Some(b) = self.bundle.as_mut() else {
                    return;
                };
                match mp::decode_header(f.info, b.rx_format) {
                    Ok((h, payload)) => b.reasm.on_fragment(member, h, payload),
                    Err(_) => self.members[member].stats.bad_frames += 1,
                }
            }
            // Outside MP on a member that joined: the bundle's (RFC 1990 section 3).
            PROTO_IP | PROTO_IPCP if self.members[member].joined => {
                self.on_bundle_packet(now, f.protocol, f.info);
            }
            _ => self.stats.unknown_protocol += 1,
        }
    }

    fn release(&mut self, now: SimTime) {
        let Some(b) = self.bundle.as_mut() else {
            return;
        };
        let (flat, spans) = (&mut self.rx_flat, &mut self.rx_spans);
        flat.clear();
        spans.clear();
        b.reasm.release(now, |p| {
            spans.push((flat.len(), p.len()));
            flat.extend_from_slice(p);
        });
        let flat = std::mem::take(&mut self.rx_flat);
        let spans = std::mem::take(&mut self.rx_spans);
        for &(at, len) in &spans {
            match split_protocol(&flat[at..at + len]) {
                Some((proto, info)) => self.on_bundle_packet(now, proto, info),
                None => self.stats.empty_pkts += 1,
            }
        }
        self.rx_flat = flat;
        self.rx_spans = spans;
    }

    fn on_bundle_packet(&mut self, now: SimTime, protocol: u16, info: &[u8]) {
        match protocol {
            PROTO_IP if self.ip_up => {
                let mut buf = self.spare.pop().unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(info);
                self.to_host.push_back(buf);
                self.stats.rx_ip_pkts += 1;
                self.stats.rx_ip_bytes += info.len() as u64;
            }
            PROTO_IP => self.stats.not_open_drops += 1,
            PROTO_IPCP => {
                self.ipcp.on_packet(now, info);
                self.pump_ipcp(now);
            }
            _ => self.stats.unknown_protocol += 1,
        }
    }

    // ---- control ----

    fn pump_lcp(&mut self, member: usize, now: SimTime) {
        while let Some(o) = self.members[member].lcp.poll() {
            match o {
                LcpOutput::Send(p) => self.enqueue_frame(member, now, PROTO_LCP, &p),
                LcpOutput::Up(n) => {
                    let m = &mut self.members[member];
                    m.tx = TxOptions {
                        accm: n.tx_accm,
                        acfc: n.tx_acfc,
                        pfc: n.tx_pfc,
                        fcs: FcsKind::Fcs16,
                    };
                    m.dec.set_options(RxOptions {
                        accm: n.rx_accm,
                        fcs: FcsKind::Fcs16,
                        mru: usize::from(self.cfg.lcp.mru).max(hdlc::DEFAULT_MRU),
                    });
                    m.negotiated = Some(n.clone());
                    m.echo_due = self.cfg.echo_interval.map(|i| now + i);
                    m.echo_missed = 0;
                    self.events.push_back(BondEvent::MemberOpened {
                        member,
                        negotiated: n,
                    });
                    self.join(member, now);
                }
                LcpOutput::Down => {
                    self.leave(member, now);
                    let m = &mut self.members[member];
                    m.negotiated = None;
                    m.echo_due = None;
                    m.tx = TxOptions::default();
                }
                LcpOutput::Finished => self.events.push_back(BondEvent::MemberFinished(member)),
                LcpOutput::EchoReply { .. } | LcpOutput::ProtocolRejected(_) => {}
            }
        }
    }

    fn join(&mut self, member: usize, now: SimTime) {
        let Some(n) = self.members[member].negotiated.clone() else {
            return;
        };
        let Some(peer_mrru) = n.peer_mrru else {
            self.events.push_back(BondEvent::MemberRefused {
                member,
                reason: "the peer refused multilink (no MRRU)",
            });
            return;
        };
        match &self.bundle {
            Some(b) if b.peer_endpoint != n.peer_endpoint => {
                self.events.push_back(BondEvent::MemberRefused {
                    member,
                    reason: "its endpoint discriminator names another bundle",
                });
                return;
            }
            Some(_) => {}
            None => {
                let rx_format = if n.rx_short_seq {
                    SeqFormat::Short
                } else {
                    SeqFormat::Long
                };
                self.bundle = Some(Bundle {
                    reasm: Reassembler::new(ReassemblerConfig {
                        members: self.members.len(),
                        format: rx_format,
                        // The reassembled packet carries its protocol field too.
                        mrru: usize::from(self.cfg.lcp.mrru.unwrap_or(1500)) + 2,
                        max_fragments: self.cfg.max_fragments,
                        timeout: self.stale,
                    }),
                    tx_format: if n.tx_short_seq {
                        SeqFormat::Short
                    } else {
                        SeqFormat::Long
                    },
                    rx_format,
                    peer_endpoint: n.peer_endpoint.clone(),
                    tx_pfc: n.tx_pfc,
                    peer_mrru: usize::from(peer_mrru),
                });
                self.events.push_back(BondEvent::BundleUp);
            }
        }
        let first = !self.members.iter().any(|m| m.joined);
        self.members[member].joined = true;
        self.members[member].last_sent = now;
        if let Some(b) = self.bundle.as_mut() {
            b.reasm.join(member);
        }
        self.events.push_back(BondEvent::MemberJoined(member));
        if first {
            self.ipcp.open(now);
            self.pump_ipcp(now);
        }
        self.schedule(now);
    }

    fn leave(&mut self, member: usize, now: SimTime) {
        if !self.members[member].joined {
            return;
        }
        self.members[member].joined = false;
        self.events.push_back(BondEvent::MemberLeft(member));
        if self.members.iter().any(|m| m.joined) {
            if let Some(b) = self.bundle.as_mut() {
                b.reasm.leave(member);
            }
            // Its floor no longer holds anything back.
            self.release(now);
            return;
        }
        if let Some(b) = self.bundle.take() {
            let r = b.reasm.stats();
            let s = &mut self.stats.reassembly;
            s.delivered_pkts += r.delivered_pkts;
            s.lost_pkts += r.lost_pkts;
            s.timeouts += r.timeouts;
            s.overflows += r.overflows;
            s.discarded_fragments += r.discarded_fragments;
            s.too_long_pkts += r.too_long_pkts;
        }
        self.events.push_back(BondEvent::BundleDown);
        self.ipcp.lower_down();
        self.pump_ipcp(now);
        self.stats.flushed_pkts += self.queue.len() as u64;
        while let Some(p) = self.queue.pop_front() {
            self.spare.push(p);
        }
        self.queued_bytes = 0;
    }

    fn pump_ipcp(&mut self, now: SimTime) {
        while let Some(o) = self.ipcp.poll() {
            match o {
                IpcpOutput::Send(p) => {
                    // Ahead of queued data: control must not wait behind seconds of it.
                    let pfc = self.bundle.as_ref().is_some_and(|b| b.tx_pfc);
                    let mut buf = self.spare.pop().unwrap_or_default();
                    buf.clear();
                    protocol_field(PROTO_IPCP, pfc, &mut buf);
                    buf.extend_from_slice(&p);
                    self.queued_bytes += buf.len();
                    self.queue.push_front(buf);
                }
                IpcpOutput::Up { local, peer } => {
                    self.ip_up = true;
                    self.events.push_back(BondEvent::IpUp { local, peer });
                }
                IpcpOutput::Down => {
                    self.ip_up = false;
                    self.events.push_back(BondEvent::IpDown);
                }
                // The peer never answered: an unattended link keeps asking, every
                // Max-Configure × Restart (30 s by default), while the bundle lasts.
                IpcpOutput::Finished => {
                    if self.bundle.is_some() {
                        self.ipcp.open(now);
                    }
                }
            }
        }
        self.schedule(now);
    }

    // ---- sending ----

    fn enqueue_frame(&mut self, member: usize, now: SimTime, protocol: u16, info: &[u8]) {
        let m = &mut self.members[member];
        if !m.lower_up {
            return;
        }
        self.frame.clear();
        hdlc::encode_frame(&m.tx, protocol, info, &mut self.scratch, &mut self.frame);
        m.out.extend(self.frame.iter().copied());
        m.busy_until = m.busy_until.max(now) + m.line_time(self.frame.len());
        m.stats.tx_frames += 1;
    }

    /// Sends one MP fragment on `member`.
    fn send_fragment(
        &mut self,
        member: usize,
        now: SimTime,
        seq: u64,
        h: MpHeader,
        payload: &[u8],
    ) {
        let Some(b) = &self.bundle else { return };
        let mut info = std::mem::take(&mut self.rx_flat);
        info.clear();
        mp::encode_header(h, b.tx_format, &mut info);
        info.extend_from_slice(payload);
        self.enqueue_frame(member, now, PROTO_MP, &info);
        self.rx_flat = info;
        let m = &mut self.members[member];
        m.stats.fragments += 1;
        m.last_seq = Some(seq);
        m.last_sent = now;
    }

    /// Cuts queued packets onto the members while the member free first is within `lead`.
    fn cut_packets(&mut self, now: SimTime, plan: &mut Plan) {
        let Some(b) = &self.bundle else { return };
        let fmt = b.tx_format;
        while let Some(len) = self.queue.front().map(Vec::len) {
            plan.order.clear();
            plan.order
                .extend((0..self.members.len()).filter(|&m| self.members[m].joined));
            if plan.order.is_empty() {
                return;
            }
            plan.order
                .sort_by_key(|&m| (self.members[m].busy_until.max(now), m));
            if self.members[plan.order[0]].backlog(now) > self.cfg.lead {
                return;
            }
            self.water_fill(now, len, fmt, &mut plan.order, &mut plan.shares);
            let pkt = self.queue.pop_front().unwrap_or_default();
            self.queued_bytes -= pkt.len();
            // A member's share larger than a frame may carry goes as several fragments.
            plan.pieces.clear();
            for (&m, &share) in plan.order.iter().zip(&plan.shares) {
                // A fragment's information field (MP header and data) fits the member's
                // peer MRU.
                let peer_mru = self.members[m]
                    .negotiated
                    .as_ref()
                    .map_or(hdlc::DEFAULT_MRU, |n| usize::from(n.peer_mru));
                let per_frame = peer_mru.max(64) - fmt.header_len();
                let mut left = share;
                while left > 0 {
                    let n = left.min(per_frame);
                    plan.pieces.push((m, n));
                    left -= n;
                }
            }
            if plan.pieces.is_empty() {
                plan.pieces.push((plan.order[0], 0));
            }
            plan.sizes.clear();
            plan.sizes.extend(plan.pieces.iter().map(|p| p.1));
            plan.frags.clear();
            let (mut at, mut seq) = (0, self.fragmenter.next_seq());
            let (pieces, frags) = (&plan.pieces, &mut plan.frags);
            self.fragmenter.split_sizes(&pkt, &plan.sizes, |i, h, d| {
                frags.push((pieces[i].0, seq, h, at, d.len()));
                at += d.len();
                seq += 1;
            });
            for &(m, seq, h, from, len) in plan.frags.iter() {
                self.send_fragment(m, now, seq, h, &pkt[from..from + len]);
            }
            self.spare.push(pkt);
        }
    }

    fn wants_null(&self, m: &Member) -> bool {
        m.joined
            && m.out.is_empty()
            && self.fragmenter.next_seq() > 0
            && m.last_seq
                .is_none_or(|s| s + 1 < self.fragmenter.next_seq())
    }

    /// Cuts queued packets onto the members while the member free first is within `lead`,
    /// then sends null fragments on idle members that lag.
    fn schedule(&mut self, now: SimTime) {
        if self.bundle.is_none() {
            return;
        }
        // The cut's working lists live in the bond, so a packet allocates nothing.
        let mut plan = std::mem::take(&mut self.plan);
        self.cut_packets(now, &mut plan);
        self.plan = plan;
        // Null fragments: members idle while later numbers went out elsewhere.
        for m in 0..self.members.len() {
            let due = {
                let mem = &self.members[m];
                self.wants_null(mem)
                    && mem.busy_until <= now
                    && now >= mem.last_sent + self.cfg.null_interval
            };
            if due {
                let seq = self.fragmenter.next_seq();
                let mut null = None;
                self.fragmenter
                    .split_sizes(&[], &[0], |_, h, _| null = Some(h));
                if let Some(h) = null {
                    self.send_fragment(m, now, seq, h, &[]);
                }
                self.members[m].stats.null_fragments += 1;
            }
        }
    }

    /// Sizes of the shares of a `len`-octet packet over the members in `order` (sorted by the
    /// instant each is free), so that the members used all finish together; `order` is cut to
    /// the members used, `shares` gets their octets in the same order.
    fn water_fill(
        &self,
        now: SimTime,
        len: usize,
        fmt: SeqFormat,
        order: &mut Vec<usize>,
        shares: &mut Vec<usize>,
    ) {
        // Framing around each fragment: flags, address/control, protocol, MP header, FCS.
        let overhead = |m: &Member| {
            (2 + if m.tx.acfc { 0 } else { 2 } + if m.tx.pfc { 1 } else { 2 }) as f64
                + fmt.header_len() as f64
                + m.tx.fcs.octets() as f64
        };
        let rate = |m: &Member| m.rate.as_bps_f64() / 8e9; // octets per ns
        let free = |m: &Member| m.backlog(now).as_nanos() as f64;
        let least = self.cfg.min_fragment_bytes.min(len) as f64;
        let mut best_k = 1;
        let mut best_t = f64::INFINITY;
        for k in 1..=order.len() {
            let used = &order[..k];
            let (mut num, mut den) = (len as f64, 0.0);
            for &i in used {
                let m = &self.members[i];
                num += overhead(m) + free(m) * rate(m);
                den += rate(m);
            }
            let t = num / den;
            let ok = used.iter().all(|&i| {
                let m = &self.members[i];
                (t - free(m)) * rate(m) - overhead(m) >= least
            });
            if ok && t < best_t {
                best_t = t;
                best_k = k;
            }
        }
        order.truncate(best_k);
        shares.clear();
        if best_k == 1 {
            shares.push(len);
            return;
        }
        for &i in order.iter() {
            let m = &self.members[i];
            let s = ((best_t - free(m)) * rate(m) - overhead(m)).max(0.0);
            shares.push(s.floor() as usize);
        }
        // Rounding: the octets left go to the members in order, one each.
        let mut left = len - shares.iter().sum::<usize>().min(len);
        let n = shares.len();
        let mut k = 0;
        while left > 0 {
            shares[k % n] += 1;
            left -= 1;
            k += 1;
        }
        while shares.iter().sum::<usize>() > len {
            if let Some(s) = shares.iter_mut().filter(|s| **s > 0).last() {
                *s -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(members: usize, rate_bps: u64, magic: u32, local: u8, peer: u8) -> BondConfig {
        let mut lcp = LcpConfig::multilink(magic);
        lcp.endpoint = Some((1, vec![local]));
        BondConfig::new(
            vec![BitRate::from_bps(rate_bps); members],
            lcp,
            IpcpConfig::new([10, 0, 0, local], Some([10, 0, 0, peer])),
        )
    }

    #[test]
    fn water_filling_evens_the_finish_and_keeps_small_packets_whole() {
        let mut b = Bond::new(config(3, 2400, 1, 1, 2));
        for m in &mut b.members {
            m.joined = true;
            m.tx = TxOptions {
                accm: 0,
                acfc: true,
                pfc: true,
                fcs: FcsKind::Fcs16,
            };
        }
        let now = SimTime::ZERO;
        // Member 2 has 1 s of backlog (300 octets at 2400 bit/s).
        b.members[2].busy_until = now + SimDuration::from_secs(1);
        let (mut order, mut shares) = (vec![0, 1, 2], Vec::new());
        b.water_fill(now, 1501, SeqFormat::Long, &mut order, &mut shares);
        assert_eq!(shares.iter().sum::<usize>(), 1501);
        assert_eq!(order, vec![0, 1, 2]);
        // Equal finish: member 2's share is 300 octets short of the others'.
        assert!(
            (shares[0] as i64 - shares[2] as i64 - 300).abs() <= 2,
            "{shares:?}"
        );
        let (mut order, mut shares) = (vec![0, 1, 2], Vec::new());
        b.water_fill(now, 53, SeqFormat::Long, &mut order, &mut shares);
        assert_eq!((order, shares), (vec![0], vec![53]));
    }
}
