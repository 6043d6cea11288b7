//! LCP (RFC 1661) with the multilink options of RFC 1990, as a sans-I/O state machine: option
//! negotiation (Configure-Request/Ack/Nak/Reject), Terminate, Echo, Code-Reject, and the
//! Restart timer and counters, given `now`.
//!
//! Read first: RFC 1661 sections 4 (the option negotiation automaton: states, events, actions
//! and the transition table), 5 (packet formats) and 6 (MRU, ACCM, Magic-Number, PFC, ACFC);
//! RFC 1662 section 7.1 (ACCM); RFC 1990 section 5.1 (MRRU, Short Sequence Number Header
//! Format, Endpoint Discriminator).
//!
//! The lower layer is the modem's call: [`Lcp::open`] when it is up (`Up` and `Open` at once),
//! [`Lcp::lower_down`] when it is lost, [`Lcp::close`] to end the link politely. Outputs,
//! taken with [`Lcp::poll`]: packets to send (the information field of a frame of protocol
//! 0xC021), `Up` with what was negotiated (this-layer-up), `Down`, `Finished`.
//! Authentication and the other options are refused (Configure-Reject): a link manager
//! between its own two ends needs none, and a standard peer falls back without them.

pub use super::fsm::{
    encode_packet, parse_options, parse_packet, Opt, Packet, State as LcpState, CODE_REJECT,
    CONFIGURE_ACK, CONFIGURE_NAK, CONFIGURE_REJECT, CONFIGURE_REQUEST, TERMINATE_ACK,
    TERMINATE_REQUEST,
};
use super::fsm::{push_opt, Counters, Fsm, Judgement, Protocol};
use farlink_core::time::SimTime;

pub const PROTOCOL_REJECT: u8 = 8;
pub const ECHO_REQUEST: u8 = 9;
pub const ECHO_REPLY: u8 = 10;
pub const DISCARD_REQUEST: u8 = 11;

pub const OPT_MRU: u8 = 1;
pub const OPT_ACCM: u8 = 2;
pub const OPT_MAGIC: u8 = 5;
pub const OPT_PFC: u8 = 7;
pub const OPT_ACFC: u8 = 8;
pub const OPT_MRRU: u8 = 17;
pub const OPT_SSNHF: u8 = 18;
pub const OPT_ENDPOINT: u8 = 19;

/// What this end asks for and accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LcpConfig {
    pub mru: u16,
    /// Control characters we need escaped when receiving (0: none; a modem with XON/XOFF
    /// flow control needs 0x000A0000).
    pub accm: u32,
    /// Nonzero; drawn by the caller (from a named random stream in simulation).
    pub magic: u32,
    pub pfc: bool,
    pub acfc: bool,
    /// Multilink: the largest reconstructed packet we accept; `None` for a plain link.
    pub mrru: Option<u16>,
    pub short_seq: bool,
    /// Endpoint Discriminator class and address (RFC 1990 5.1.3).
    pub endpoint: Option<(u8, Vec<u8>)>,
    /// The Restart timer and its counters.
    pub counters: Counters,
}

impl LcpConfig {
    /// RFC 1661's counters and timer ([`Counters::RFC_1661`]) for a multilink member with MRRU
    /// 1500.
    pub fn multilink(magic: u32) -> Self {
        LcpConfig {
            mru: 1500,
            accm: 0,
            magic,
            pfc: true,
            acfc: true,
            mrru: Some(1500),
            short_seq: false,
            endpoint: None,
            counters: Counters::RFC_1661,
        }
    }
}

/// What the two ends agreed, as each direction uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The peer's MRU: the largest information field we may send.
    pub peer_mru: u16,
    /// Escape these when sending.
    pub tx_accm: u32,
    /// Remove these when receiving.
    pub rx_accm: u32,
    pub tx_pfc: bool,
    pub tx_acfc: bool,
    /// Multilink agreed: the peer's MRRU (the largest packet we may fragment).
    pub peer_mrru: Option<u16>,
    /// The peer asked for short sequence numbers on what we send.
    pub tx_short_seq: bool,
    /// We receive short sequence numbers.
    pub rx_short_seq: bool,
    /// The peer's Endpoint Discriminator: which bundle this link belongs to.
    pub peer_endpoint: Option<(u8, Vec<u8>)>,
    pub peer_magic: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LcpOutput {
    /// Send this LCP packet (protocol 0xC021, never compressed).
    Send(Vec<u8>),
    /// This-Layer-Up: the link is open with these options.
    Up(Negotiated),
    /// This-Layer-Down.
    Down,
    /// This-Layer-Finished: the lower layer may be released (hang up).
    Finished,
    /// The peer answered an Echo-Request of ours.
    EchoReply { id: u8 },
    /// The peer refused a protocol we sent.
    ProtocolRejected(u16),
}

/// Our request's options as they stand after the peer's Naks and Rejects.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Ours {
    mru: Option<u16>,
    accm: Option<u32>,
    magic: Option<u32>,
    pfc: bool,
    acfc: bool,
    mrru: Option<u16>,
    short_seq: bool,
    endpoint: Option<(u8, Vec<u8>)>,
}

/// LCP's own part of the automaton: its options.
#[derive(Debug)]
pub struct LcpRules {
    cfg: LcpConfig,
    ours: Ours,
    /// What the peer's last acceptable request asked for.
    theirs: Option<Negotiated>,
}

/// One link's LCP.
pub type Lcp = Fsm<LcpRules>;

impl Ours {
    fn initial(cfg: &LcpConfig) -> Self {
        Ours {
            mru: Some(cfg.mru),
            accm: Some(cfg.accm),
            magic: (cfg.magic != 0).then_some(cfg.magic),
            pfc: cfg.pfc,
            acfc: cfg.acfc,
            mrru: cfg.mrru,
            short_seq: cfg.short_seq && cfg.mrru.is_some(),
            endpoint: cfg.endpoint.clone(),
        }
    }
}

impl Protocol for LcpRules {
    type Output = LcpOutput;
    type Peer = Negotiated;

    fn send(packet: Vec<u8>) -> LcpOutput {
        LcpOutput::Send(packet)
    }

    fn down() -> LcpOutput {
        LcpOutput::Down
    }

    fn finished() -> LcpOutput {
        LcpOutput::Finished
    }

    fn counters(&self) -> Counters {
        self.cfg.counters
    }

    fn initial_request(&mut self) {
        self.ours = Ours::initial(&self.cfg);
    }

    fn request_options(&self) -> Vec<u8> {
        let o = &self.ours;
        let mut v = Vec::new();
        if let Some(mru) = o.mru {
            push_opt(&mut v, OPT_MRU, &mru.to_be_bytes());
        }
        if let Some(accm) = o.accm {
            push_opt(&mut v, OPT_ACCM, &accm.to_be_bytes());
        }
        if let Some(m) = o.magic {
            push_opt(&mut v, OPT_MAGIC, &m.to_be_bytes());
        }
        if o.pfc {
            push_opt(&mut v, OPT_PFC, &[]);
        }
        if o.acfc {
            push_opt(&mut v, OPT_ACFC, &[]);
        }
        if let Some(mrru) = o.mrru {
            push_opt(&mut v, OPT_MRRU, &mrru.to_be_bytes());
        }
        if o.short_seq {
            push_opt(&mut v, OPT_SSNHF, &[]);
        }
        if let Some((class, addr)) = &o.endpoint {
            let mut val = vec![*class];
            val.extend_from_slice(addr);
            push_opt(&mut v, OPT_ENDPOINT, &val);
        }
        v
    }

    fn judge(&self, opts: &[Opt<'_>]) -> Judgement<Negotiated> {
        let mut reject = Vec::new();
        let mut nak = Vec::new();
        let mut n = Negotiated {
            peer_mru: 1500,
            tx_accm: 0xffff_ffff,
            rx_accm: self.ours.accm.unwrap_or(0xffff_ffff),
            tx_pfc: false,
            tx_acfc: false,
            peer_mrru: None,
            tx_short_seq: false,
            rx_short_seq: self.ours.short_seq,
            peer_endpoint: None,
            peer_magic: 0,
        };
        let mp = self.cfg.mrru.is_some();
        for o in opts {
            match (o.kind, o.value) {
                (OPT_MRU, &[hi, lo]) => {
                    let mru = u16::from_be_bytes([hi, lo]);
                    if mru < 64 {
                        push_opt(&mut nak, OPT_MRU, &64u16.to_be_bytes());
                    } else {
                        n.peer_mru = mru;
                    }
                }
                (OPT_ACCM, &[a, b, c, d]) => n.tx_accm = u32::from_be_bytes([a, b, c, d]),
                (OPT_MAGIC, &[a, b, c, d]) => {
                    let m = u32::from_be_bytes([a, b, c, d]);
                    if m != 0 && Some(m) == self.ours.magic {
                        // Looped back (or a collision): suggest another (RFC 1661 6.4).
                        push_opt(
                            &mut nak,
                            OPT_MAGIC,
                            &m.rotate_left(13).wrapping_add(1).to_be_bytes(),
                        );
                    } else {
                        n.peer_magic = m;
                    }
                }
                (OPT_PFC, &[]) => n.tx_pfc = true,
                (OPT_ACFC, &[]) => n.tx_acfc = true,
                (OPT_MRRU, &[hi, lo]) if mp => n.peer_mrru = Some(u16::from_be_bytes([hi, lo])),
                (OPT_SSNHF, &[]) if mp => n.tx_short_seq = true,
                (OPT_ENDPOINT, [class, addr @ ..]) if mp && *class <= 5 => {
                    n.peer_endpoint = Some((*class, addr.to_vec()));
                }
                _ => push_opt(&mut reject, o.kind, o.value),
            }
        }
        Judgement {
            reject,
            nak,
            peer: n,
        }
    }

    fn accept(&mut self, peer: Negotiated) {
        self.theirs = Some(peer);
    }

    fn refused(&mut self, code: u8, opts: &[Opt<'_>]) {
        for o in opts {
            if code == CONFIGURE_REJECT {
                match o.kind {
                    OPT_MRU => self.ours.mru = None,
                    OPT_ACCM => self.ours.accm = None,
                    OPT_MAGIC => self.ours.magic = None,
                    OPT_PFC => self.ours.pfc = false,
                    OPT_ACFC => self.ours.acfc = false,
                    OPT_MRRU => {
                        // No multilink: the header format and discriminator go with it.
                        self.ours.mrru = None;
                        self.ours.short_seq = false;
                        self.ours.endpoint = None;
                    }
                    OPT_SSNHF => self.ours.short_seq = false,
                    OPT_ENDPOINT => self.ours.endpoint = None,
                    _ => {}
                }
                continue;
            }
            match (o.kind, o.value) {
                (OPT_MRU, &[hi, lo]) => self.ours.mru = Some(u16::from_be_bytes([hi, lo]).max(64)),
                (OPT_ACCM, &[a, b, c, d]) => {
                    let theirs = u32::from_be_bytes([a, b, c, d]);
                    self.ours.accm = Some(self.ours.accm.unwrap_or(0) | theirs);
                }
                (OPT_MAGIC, &[a, b, c, d]) => {
                    let m = u32::from_be_bytes([a, b, c, d]);
                    let mine = self.ours.magic.unwrap_or(1);
                    self.ours.magic = Some(if m != 0 && m != mine {
                        m
                    } else {
                        mine.rotate_left(7) ^ 0x5a5a_5a5a
                    });
                }
                (OPT_MRRU, &[hi, lo]) if self.ours.mrru.is_some() => {
                    self.ours.mrru = Some(u16::from_be_bytes([hi, lo]));
                }
                _ => {}
            }
        }
    }

    fn up(&self) -> Option<LcpOutput> {
        let mut n = self.theirs.clone()?;
        n.rx_accm = self.ours.accm.unwrap_or(0xffff_ffff);
        n.rx_short_seq = self.ours.short_seq;
        // Multilink only if both ends asked for it (RFC 1990 5.1.1).
        if self.ours.mrru.is_none() {
            n.peer_mrru = None;
        }
        if n.peer_mrru.is_none() {
            n.tx_short_seq = false;
            n.rx_short_seq = false;
        }
        Some(LcpOutput::Up(n))
    }
}

impl Fsm<LcpRules> {
    pub fn new(cfg: LcpConfig) -> Self {
        Fsm::with(LcpRules {
            ours: Ours::initial(&cfg),
            cfg,
            theirs: None,
        })
    }

    fn magic_bytes(&self) -> [u8; 4] {
        self.proto.ours.magic.unwrap_or(0).to_be_bytes()
    }

    /// Sends an Echo-Request (a keepalive; the reply comes as [`LcpOutput::EchoReply`]).
    pub fn send_echo(&mut self) -> Option<u8> {
        if self.state() != LcpState::Opened {
            return None;
        }
        let id = self.take_id();
        let magic = self.magic_bytes();
        self.push(LcpOutput::Send(encode_packet(ECHO_REQUEST, id, &magic)));
        Some(id)
    }

    /// An LCP packet (the information field of a 0xC021 frame) arrived.
    pub fn on_packet(&mut self, now: SimTime, info: &[u8]) {
        let Some(p) = parse_packet(info) else {
            return;
        };
        if self.negotiate(now, &p) {
            return;
        }
        let opened = self.state() == LcpState::Opened;
        match p.code {
            ECHO_REQUEST if opened => {
                let mut data = self.magic_bytes().to_vec();
                data.extend_from_slice(p.data.get(4..).unwrap_or(&[]));
                self.push(LcpOutput::Send(encode_packet(ECHO_REPLY, p.id, &data)));
            }
            ECHO_REPLY if opened => self.push(LcpOutput::EchoReply { id: p.id }),
            PROTOCOL_REJECT => {
                if let [hi, lo, ..] = *p.data {
                    let proto = u16::from_be_bytes([hi, lo]);
                    self.push(LcpOutput::ProtocolRejected(proto));
                }
            }
            ECHO_REQUEST | ECHO_REPLY | DISCARD_REQUEST | CODE_REJECT => {}
            // Unknown code: Code-Reject with the packet, cut to our MRU.
            _ => self.code_reject(info, usize::from(self.proto.cfg.mru) - 4),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use farlink_core::time::SimDuration;

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    /// Runs two ends until neither has anything to send; returns each end's `Up`.
    fn exchange(
        a: &mut Lcp,
        b: &mut Lcp,
        now: SimTime,
    ) -> (Option<Negotiated>, Option<Negotiated>) {
        let (mut up_a, mut up_b) = (None, None);
        for _ in 0..50 {
            let mut moved = false;
            while let Some(o) = a.poll() {
                moved = true;
                match o {
                    LcpOutput::Send(p) => b.on_packet(now, &p),
                    LcpOutput::Up(n) => up_a = Some(n),
                    _ => {}
                }
            }
            while let Some(o) = b.poll() {
                moved = true;
                match o {
                    LcpOutput::Send(p) => a.on_packet(now, &p),
                    LcpOutput::Up(n) => up_b = Some(n),
                    _ => {}
                }
            }
            if !moved {
                break;
            }
        }
        (up_a, up_b)
    }

    #[test]
    fn two_multilink_ends_open_with_every_option() {
        let mut ca = LcpConfig::multilink(0x1111_1111);
        ca.short_seq = true;
        ca.endpoint = Some((3, vec![2, 0, 0, 0xc0, 0xff, 0xee]));
        let mut a = Lcp::new(ca);
        let mut b = Lcp::new(LcpConfig::multilink(0x2222_2222));
        a.open(t(0));
        b.open(t(0));
        let (na, nb) = exchange(&mut a, &mut b, t(1));
        assert_eq!((a.state(), b.state()), (LcpState::Opened, LcpState::Opened));
        let (na, nb) = (na.unwrap(), nb.unwrap());
        assert_eq!(na.peer_mrru, Some(1500));
        assert!(na.rx_short_seq && !na.tx_short_seq);
        assert!(nb.tx_short_seq && !nb.rx_short_seq);
        assert_eq!(nb.peer_endpoint, Some((3, vec![2, 0, 0, 0xc0, 0xff, 0xee])));
        assert_eq!((na.tx_accm, na.peer_magic), (0, 0x2222_2222));
        assert!(na.tx_pfc && na.tx_acfc);
    }

    #[test]
    fn a_peer_without_multilink_rejects_it_and_the_link_opens_plain() {
        let mut a = Lcp::new(LcpConfig::multilink(7));
        let mut plain = LcpConfig::multilink(9);
        plain.mrru = None;
        let mut b = Lcp::new(plain);
        a.open(t(0));
        b.open(t(0));
        let (na, _) = exchange(&mut a, &mut b, t(1));
        assert_eq!(a.state(), LcpState::Opened);
        assert_eq!(na.unwrap().peer_mrru, None);
    }

    #[test]
    fn a_silent_peer_exhausts_max_configure() {
        let mut a = Lcp::new(LcpConfig::multilink(7));
        a.open(t(0));
        let mut sent = 0;
        let mut now = t(0);
        loop {
            while let Some(o) = a.poll() {
                match o {
                    LcpOutput::Send(_) => sent += 1,
                    LcpOutput::Finished => {
                        assert_eq!(sent, 10);
                        assert_eq!(a.state(), LcpState::Stopped);
                        assert_eq!(now, t(30_000));
                        return;
                    }
                    other => panic!("{other:?}"),
                }
            }
            now = a.next_wakeup().expect("timer running");
            a.on_timer(now);
        }
    }

    #[test]
    fn looped_back_magic_is_naked_and_echo_answers() {
        let mut a = Lcp::new(LcpConfig::multilink(5));
        a.open(t(0));
        let Some(LcpOutput::Send(req)) = a.poll() else {
            panic!()
        };
        // Our own request looped back to us.
        a.on_packet(t(1), &req);
        let Some(LcpOutput::Send(reply)) = a.poll() else {
            panic!()
        };
        assert_eq!(reply[0], CONFIGURE_NAK);
        let mut b = Lcp::new(LcpConfig::multilink(6));
        let mut a = Lcp::new(LcpConfig::multilink(5));
        a.open(t(0));
        b.open(t(0));
        exchange(&mut a, &mut b, t(1));
        let id = a.send_echo().unwrap();
        let Some(LcpOutput::Send(echo)) = a.poll() else {
            panic!()
        };
        b.on_packet(t(2), &echo);
        let Some(LcpOutput::Send(rep)) = b.poll() else {
            panic!()
        };
        a.on_packet(t(3), &rep);
        assert_eq!(a.poll(), Some(LcpOutput::EchoReply { id }));
    }

    #[test]
    fn close_sends_terminate_until_acknowledged() {
        let mut a = Lcp::new(LcpConfig::multilink(5));
        let mut b = Lcp::new(LcpConfig::multilink(6));
        a.open(t(0));
        b.open(t(0));
        exchange(&mut a, &mut b, t(1));
        a.close(t(2));
        assert_eq!(a.poll(), Some(LcpOutput::Down));
        let Some(LcpOutput::Send(term)) = a.poll() else {
            panic!()
        };
        b.on_packet(t(3), &term);
        assert_eq!(
            b.poll()
                .map(|o| matches!(o, LcpOutput::Send(ref p) if p[0] == TERMINATE_ACK)),
            Some(true)
        );
        assert_eq!(b.poll(), Some(LcpOutput::Down));
        assert_eq!(b.state(), LcpState::Stopping);
        a.on_packet(t(4), &encode_packet(TERMINATE_ACK, term[1], &[]));
        assert_eq!(a.poll(), Some(LcpOutput::Finished));
        assert_eq!(a.state(), LcpState::Closed);
    }

    #[test]
    fn malformed_packets_are_discarded_and_unknown_codes_rejected() {
        let mut a = Lcp::new(LcpConfig::multilink(5));
        a.open(t(0));
        a.poll();
        a.on_packet(t(1), &[1, 1, 0, 8, 1, 9, 0, 0]); // option length past the end
        a.on_packet(t(1), &[1, 1, 0, 3]);
        assert_eq!(a.poll(), None);
        a.on_packet(t(1), &[99, 4, 0, 4]);
        assert!(
            matches!(a.poll(), Some(LcpOutput::Send(p)) if p[0] == CODE_REJECT && p[4..] == [99, 4, 0, 4])
        );
    }
}
