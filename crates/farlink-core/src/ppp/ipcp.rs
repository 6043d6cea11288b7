//! IPCP (RFC 1332): the network control protocol that brings IPv4 up over a PPP link or
//! bundle, with the one option a point-to-point TUN needs, IP-Address.
//!
//! Read first: RFC 1332 sections 2 (IPCP uses LCP's packet exchange, codes 1 to 7 only,
//! protocol 0x8021; IP datagrams go as protocol 0x0021 only once IPCP is Opened) and 3.3
//! (IP-Address: type 3, length 6; 0.0.0.0 asks the peer to supply one, which it does in a
//! Configure-Nak); RFC 1661 section 4 for the automaton, which this follows for the states a
//! network control protocol over a bundle goes through (the lower layer is the bundle: up
//! when its first member joins, down when its last leaves).
//!
//! Every other IPCP option (Van Jacobson compression, the DNS addresses of RFC 1877, the
//! deprecated IP-Addresses) is refused with Configure-Reject; a standard peer then goes on
//! without it.

use std::collections::VecDeque;

use super::lcp::{
    encode_packet, parse_options, parse_packet, LcpState, CODE_REJECT, CONFIGURE_ACK,
    CONFIGURE_NAK, CONFIGURE_REJECT, CONFIGURE_REQUEST, TERMINATE_ACK, TERMINATE_REQUEST,
};
use crate::time::{SimDuration, SimTime};

/// IPCP's protocol number.
pub const PROTO_IPCP: u16 = 0x8021;
/// IPv4 datagrams.
pub const PROTO_IP: u16 = 0x0021;
/// IP-Address (RFC 1332 section 3.3).
pub const OPT_IP_ADDRESS: u8 = 3;

/// What this end asks for and offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpcpConfig {
    /// Our address; 0.0.0.0 asks the peer to assign one.
    pub local: [u8; 4],
    /// The address we assign to a peer that asks with 0.0.0.0 (`None`: we have none to give,
    /// and refuse the request's option so that the peer stops asking).
    pub peer: Option<[u8; 4]>,
    pub restart: SimDuration,
    pub max_configure: u32,
    pub max_failure: u32,
}

impl IpcpConfig {
    /// RFC 1661's counters and timer (3 s, 10, 5) for addresses `local` and `peer`.
    pub fn new(local: [u8; 4], peer: Option<[u8; 4]>) -> Self {
        IpcpConfig {
            local,
            peer,
            restart: SimDuration::from_secs(3),
            max_configure: 10,
            max_failure: 5,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpcpOutput {
    /// Send this IPCP packet (protocol 0x8021) over the bundle.
    Send(Vec<u8>),
    /// This-Layer-Up: IPv4 may flow, between these addresses.
    Up { local: [u8; 4], peer: [u8; 4] },
    /// This-Layer-Down.
    Down,
    /// The peer never answered (Max-Configure) or the link was terminated.
    Finished,
}

/// The IPCP of one bundle.
#[derive(Debug)]
pub struct Ipcp {
    cfg: IpcpConfig,
    state: LcpState,
    /// Our request's address (`None` once the peer rejected the option).
    ours: Option<[u8; 4]>,
    /// The peer's address from its last acceptable request.
    theirs: Option<[u8; 4]>,
    restart_count: u32,
    naks_sent: u32,
    timer: Option<SimTime>,
    next_id: u8,
    req_id: u8,
    out: VecDeque<IpcpOutput>,
}

fn push_address(out: &mut Vec<u8>, addr: [u8; 4]) {
    out.extend_from_slice(&[OPT_IP_ADDRESS, 6]);
    out.extend_from_slice(&addr);
}

impl Ipcp {
    pub fn new(cfg: IpcpConfig) -> Self {
        Ipcp {
            ours: Some(cfg.local),
            cfg,
            state: LcpState::Initial,
            theirs: None,
            restart_count: 0,
            naks_sent: 0,
            timer: None,
            next_id: 1,
            req_id: 0,
            out: VecDeque::new(),
        }
    }

    pub fn state(&self) -> LcpState {
        self.state
    }

    pub fn poll(&mut self) -> Option<IpcpOutput> {
        self.out.pop_front()
    }

    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.timer
    }

    /// The bundle is up (RFC 1661 events Up and Open at once).
    pub fn open(&mut self, now: SimTime) {
        if matches!(
            self.state,
            LcpState::Initial | LcpState::Closed | LcpState::Stopped
        ) {
            self.ours = Some(self.cfg.local);
            self.theirs = None;
            self.naks_sent = 0;
            self.restart_count = self.cfg.max_configure;
            self.send_request(now);
            self.state = LcpState::ReqSent;
        }
    }

    /// The bundle went down (its last member left).
    pub fn lower_down(&mut self) {
        if self.state == LcpState::Opened {
            self.out.push_back(IpcpOutput::Down);
        }
        self.timer = None;
        self.state = LcpState::Initial;
    }

    fn take_id(&mut self) -> u8 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    fn request_options(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(6);
        if let Some(a) = self.ours {
            push_address(&mut v, a);
        }
        v
    }

    fn send_request(&mut self, now: SimTime) {
        self.req_id = self.take_id();
        let opts = self.request_options();
        self.out.push_back(IpcpOutput::Send(encode_packet(
            CONFIGURE_REQUEST,
            self.req_id,
            &opts,
        )));
        self.restart_count = self.restart_count.saturating_sub(1);
        self.timer = Some(now + self.cfg.restart);
    }

    pub fn on_timer(&mut self, now: SimTime) {
        if self.timer.is_none_or(|t| now < t) {
            return;
        }
        self.timer = None;
        let expired = self.restart_count == 0;
        match self.state {
            LcpState::ReqSent | LcpState::AckRcvd | LcpState::AckSent => {
                if expired {
                    self.state = LcpState::Stopped;
                    self.out.push_back(IpcpOutput::Finished);
                } else {
                    self.send_request(now);
                    if self.state == LcpState::AckRcvd {
                        self.state = LcpState::ReqSent;
                    }
                }
            }
            LcpState::Stopping => {
                self.state = LcpState::Stopped;
                self.out.push_back(IpcpOutput::Finished);
            }
            _ => {}
        }
    }

    /// An IPCP packet (the information field of a 0x8021 frame or reassembled packet).
    pub fn on_packet(&mut self, now: SimTime, info: &[u8]) {
        let Some(p) = parse_packet(info) else {
            return;
        };
        match p.code {
            CONFIGURE_REQUEST => self.on_request(now, p.id, p.data),
            CONFIGURE_ACK => self.on_ack(now, p.id, p.data),
            CONFIGURE_NAK | CONFIGURE_REJECT => self.on_nak_or_reject(now, p.code, p.id, p.data),
            TERMINATE_REQUEST => {
                self.out
                    .push_back(IpcpOutput::Send(encode_packet(TERMINATE_ACK, p.id, &[])));
                match self.state {
                    LcpState::Opened => {
                        self.out.push_back(IpcpOutput::Down);
                        self.restart_count = 0;
                        self.timer = Some(now + self.cfg.restart);
                        self.state = LcpState::Stopping;
                    }
                    LcpState::AckRcvd | LcpState::AckSent => self.state = LcpState::ReqSent,
                    _ => {}
                }
            }
            TERMINATE_ACK => match self.state {
                LcpState::AckRcvd => self.state = LcpState::ReqSent,
                LcpState::Opened => {
                    self.out.push_back(IpcpOutput::Down);
                    self.send_request(now);
                    self.state = LcpState::ReqSent;
                }
                _ => {}
            },
            CODE_REJECT => {}
            _ => {
                // Codes 8 to 11 are LCP's alone (RFC 1332 section 2): Code-Reject.
                let id = self.take_id();
                let n = info.len().min(1496);
                self.out
                    .push_back(IpcpOutput::Send(encode_packet(CODE_REJECT, id, &info[..n])));
            }
        }
    }

    /// Ack, Nak or Reject for the peer's request, and the peer's address if acceptable.
    fn judge(&mut self, data: &[u8]) -> Option<(u8, Vec<u8>, Option<[u8; 4]>)> {
        let opts = parse_options(data)?;
        let mut reject = Vec::new();
        let mut nak = Vec::new();
        let mut theirs = None;
        for o in &opts {
            match (o.kind, o.value) {
                (OPT_IP_ADDRESS, &[a, b, c, d]) => {
                    let addr = [a, b, c, d];
                    let ours = self.ours.unwrap_or(self.cfg.local);
                    if addr == [0; 4] || addr == ours {
                        // The peer asks for an address, or claims ours: offer the one we hold.
                        match self.cfg.peer {
                            Some(p) if p != ours => push_address(&mut nak, p),
                            _ => {
                                reject.extend_from_slice(&[o.kind, 6]);
                                reject.extend_from_slice(o.value);
                            }
                        }
                    } else {
                        theirs = Some(addr);
                    }
                }
                _ => {
                    reject.push(o.kind);
                    reject.push((o.value.len() + 2) as u8);
                    reject.extend_from_slice(o.value);
                }
            }
        }
        if !reject.is_empty() {
            return Some((CONFIGURE_REJECT, reject, theirs));
        }
        if !nak.is_empty() {
            self.naks_sent += 1;
            if self.naks_sent > self.cfg.max_failure {
                // Max-Failure: refuse the option instead of suggesting again.
                let mut rej = Vec::new();
                for o in opts.iter().filter(|o| o.kind == OPT_IP_ADDRESS) {
                    rej.extend_from_slice(&[o.kind, (o.value.len() + 2) as u8]);
                    rej.extend_from_slice(o.value);
                }
                return Some((CONFIGURE_REJECT, rej, theirs));
            }
            return Some((CONFIGURE_NAK, nak, theirs));
        }
        Some((CONFIGURE_ACK, data.to_vec(), theirs))
    }

    fn on_request(&mut self, now: SimTime, id: u8, data: &[u8]) {
        let Some((code, reply, theirs)) = self.judge(data) else {
            return;
        };
        let good = code == CONFIGURE_ACK;
        match self.state {
            LcpState::Closing | LcpState::Stopping | LcpState::Initial => return,
            LcpState::Closed => {
                self.out
                    .push_back(IpcpOutput::Send(encode_packet(TERMINATE_ACK, id, &[])));
                return;
            }
            LcpState::Stopped => {
                self.restart_count = self.cfg.max_configure;
                self.send_request(now);
                self.state = LcpState::ReqSent;
            }
            LcpState::Opened => {
                self.out.push_back(IpcpOutput::Down);
                self.send_request(now);
                self.state = LcpState::ReqSent;
            }
            _ => {}
        }
        self.out
            .push_back(IpcpOutput::Send(encode_packet(code, id, &reply)));
        if good {
            // A peer that sends no IP-Address leaves its address to us (RFC 1332 3.3).
            self.theirs = theirs.or(self.cfg.peer).or(Some([0; 4]));
        }
        self.state = match (self.state, good) {
            (LcpState::AckRcvd, true) => {
                self.timer = None;
                self.up();
                LcpState::Opened
            }
            (LcpState::ReqSent | LcpState::AckSent, true) => LcpState::AckSent,
            (LcpState::AckSent, false) => LcpState::ReqSent,
            (s, _) => s,
        };
    }

    fn up(&mut self) {
        let local = self.ours.unwrap_or(self.cfg.local);
        let peer = self.theirs.unwrap_or([0; 4]);
        self.out.push_back(IpcpOutput::Up { local, peer });
    }

    fn on_ack(&mut self, now: SimTime, id: u8, data: &[u8]) {
        if id != self.req_id || data != self.request_options().as_slice() {
            return;
        }
        match self.state {
            LcpState::ReqSent => {
                self.restart_count = self.cfg.max_configure;
                self.timer = Some(now + self.cfg.restart);
                self.state = LcpState::AckRcvd;
            }
            LcpState::AckSent => {
                self.restart_count = self.cfg.max_configure;
                self.timer = None;
                self.state = LcpState::Opened;
                self.up();
            }
            LcpState::AckRcvd | LcpState::Opened => {
                if self.state == LcpState::Opened {
                    self.out.push_back(IpcpOutput::Down);
                }
                self.send_request(now);
                self.state = LcpState::ReqSent;
            }
            _ => {}
        }
    }

    fn on_nak_or_reject(&mut self, now: SimTime, code: u8, id: u8, data: &[u8]) {
        if id != self.req_id {
            return;
        }
        let Some(opts) = parse_options(data) else {
            return;
        };
        for o in opts {
            match (code, o.kind, o.value) {
                (CONFIGURE_REJECT, OPT_IP_ADDRESS, _) => self.ours = None,
                // The peer assigns us an address: take it (RFC 1332 3.3).
                (CONFIGURE_NAK, OPT_IP_ADDRESS, &[a, b, c, d]) if [a, b, c, d] != [0; 4] => {
                    self.ours = Some([a, b, c, d]);
                }
                _ => {}
            }
        }
        match self.state {
            LcpState::ReqSent | LcpState::AckSent => {
                self.restart_count = self.cfg.max_configure;
                self.send_request(now);
            }
            LcpState::AckRcvd | LcpState::Opened => {
                if self.state == LcpState::Opened {
                    self.out.push_back(IpcpOutput::Down);
                }
                self.send_request(now);
                self.state = LcpState::ReqSent;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    fn exchange(a: &mut Ipcp, b: &mut Ipcp) -> (Option<IpcpOutput>, Option<IpcpOutput>) {
        let (mut up_a, mut up_b) = (None, None);
        for _ in 0..50 {
            let mut moved = false;
            while let Some(o) = a.poll() {
                moved = true;
                match o {
                    IpcpOutput::Send(p) => b.on_packet(t(1), &p),
                    up @ IpcpOutput::Up { .. } => up_a = Some(up),
                    _ => {}
                }
            }
            while let Some(o) = b.poll() {
                moved = true;
                match o {
                    IpcpOutput::Send(p) => a.on_packet(t(1), &p),
                    up @ IpcpOutput::Up { .. } => up_b = Some(up),
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
    fn two_ends_with_addresses_open() {
        let mut a = Ipcp::new(IpcpConfig::new([10, 0, 0, 1], Some([10, 0, 0, 2])));
        let mut b = Ipcp::new(IpcpConfig::new([10, 0, 0, 2], Some([10, 0, 0, 1])));
        a.open(t(0));
        b.open(t(0));
        let (ua, ub) = exchange(&mut a, &mut b);
        assert_eq!(
            ua,
            Some(IpcpOutput::Up {
                local: [10, 0, 0, 1],
                peer: [10, 0, 0, 2]
            })
        );
        assert_eq!(
            ub,
            Some(IpcpOutput::Up {
                local: [10, 0, 0, 2],
                peer: [10, 0, 0, 1]
            })
        );
    }

    #[test]
    fn a_peer_asking_for_an_address_is_given_one_and_dns_is_rejected() {
        let mut a = Ipcp::new(IpcpConfig::new([10, 0, 0, 1], Some([10, 0, 0, 2])));
        a.open(t(0));
        a.poll();
        // A pppd-like request: IP-Address 0.0.0.0 and the primary DNS option (129).
        let req = encode_packet(1, 7, &[3, 6, 0, 0, 0, 0, 129, 6, 0, 0, 0, 0]);
        a.on_packet(t(1), &req);
        let Some(IpcpOutput::Send(rej)) = a.poll() else {
            panic!()
        };
        assert_eq!(
            rej,
            encode_packet(CONFIGURE_REJECT, 7, &[129, 6, 0, 0, 0, 0])
        );
        a.on_packet(t(2), &encode_packet(1, 8, &[3, 6, 0, 0, 0, 0]));
        let Some(IpcpOutput::Send(nak)) = a.poll() else {
            panic!()
        };
        assert_eq!(nak, encode_packet(CONFIGURE_NAK, 8, &[3, 6, 10, 0, 0, 2]));
        a.on_packet(t(3), &encode_packet(1, 9, &[3, 6, 10, 0, 0, 2]));
        let Some(IpcpOutput::Send(ack)) = a.poll() else {
            panic!()
        };
        assert_eq!(ack[0], CONFIGURE_ACK);
        assert_eq!(a.state(), LcpState::AckSent);
    }

    #[test]
    fn an_address_assigned_by_the_peer_is_taken() {
        let mut a = Ipcp::new(IpcpConfig::new([0; 4], None));
        let mut b = Ipcp::new(IpcpConfig::new([10, 0, 0, 2], Some([10, 0, 0, 9])));
        a.open(t(0));
        b.open(t(0));
        let (ua, _) = exchange(&mut a, &mut b);
        assert_eq!(
            ua,
            Some(IpcpOutput::Up {
                local: [10, 0, 0, 9],
                peer: [10, 0, 0, 2]
            })
        );
    }

    #[test]
    fn a_silent_peer_exhausts_max_configure() {
        let mut a = Ipcp::new(IpcpConfig::new([10, 0, 0, 1], None));
        a.open(t(0));
        let mut sent = 0;
        loop {
            match a.poll() {
                Some(IpcpOutput::Send(_)) => sent += 1,
                Some(IpcpOutput::Finished) => break,
                Some(o) => panic!("{o:?}"),
                None => {
                    let w = a.next_wakeup().expect("timer running");
                    a.on_timer(w);
                }
            }
        }
        assert_eq!((sent, a.state()), (10, LcpState::Stopped));
    }
}
