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

use super::fsm::{
    parse_packet, push_opt, Counters, Fsm, Judgement, Opt, Protocol, CODE_REJECT, CONFIGURE_NAK,
    CONFIGURE_REJECT,
};
use farlink_core::time::SimTime;

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
    /// The Restart timer and its counters. IPCP is rarely closed on its own (the bundle's
    /// members hang up instead); RFC 1661's two Terminate-Requests are enough.
    pub counters: Counters,
}

impl IpcpConfig {
    /// RFC 1661's counters and timer ([`Counters::RFC_1661`]) for addresses `local` and `peer`.
    pub fn new(local: [u8; 4], peer: Option<[u8; 4]>) -> Self {
        IpcpConfig {
            local,
            peer,
            counters: Counters::RFC_1661,
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

/// IPCP's own part of the automaton: the IP-Address option.
#[derive(Debug)]
pub struct IpcpRules {
    cfg: IpcpConfig,
    /// Our request's address (`None` once the peer rejected the option).
    ours: Option<[u8; 4]>,
    /// The peer's address from its last acceptable request.
    theirs: Option<[u8; 4]>,
}

/// The IPCP of one bundle. The lower layer is the bundle: [`Ipcp::open`] when it is up,
/// [`Ipcp::lower_down`] when its last member left.
pub type Ipcp = Fsm<IpcpRules>;

fn push_address(out: &mut Vec<u8>, addr: [u8; 4]) {
    push_opt(out, OPT_IP_ADDRESS, &addr);
}

impl Protocol for IpcpRules {
    type Output = IpcpOutput;
    /// The peer's address, if its request named one.
    type Peer = Option<[u8; 4]>;

    fn send(packet: Vec<u8>) -> IpcpOutput {
        IpcpOutput::Send(packet)
    }

    fn down() -> IpcpOutput {
        IpcpOutput::Down
    }

    fn finished() -> IpcpOutput {
        IpcpOutput::Finished
    }

    fn counters(&self) -> Counters {
        self.cfg.counters
    }

    fn initial_request(&mut self) {
        self.ours = Some(self.cfg.local);
        self.theirs = None;
    }

    fn request_options(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(6);
        if let Some(a) = self.ours {
            push_address(&mut v, a);
        }
        v
    }

    fn judge(&self, opts: &[Opt<'_>]) -> Judgement<Option<[u8; 4]>> {
        let mut reject = Vec::new();
        let mut nak = Vec::new();
        let mut theirs = None;
        for o in opts {
            match (o.kind, o.value) {
                (OPT_IP_ADDRESS, &[a, b, c, d]) => {
                    let addr = [a, b, c, d];
                    let ours = self.ours.unwrap_or(self.cfg.local);
                    if addr == [0; 4] || addr == ours {
                        // The peer asks for an address, or claims ours: offer the one we hold.
                        match self.cfg.peer {
                            Some(p) if p != ours => push_address(&mut nak, p),
                            _ => push_opt(&mut reject, o.kind, o.value),
                        }
                    } else {
                        theirs = Some(addr);
                    }
                }
                _ => push_opt(&mut reject, o.kind, o.value),
            }
        }
        Judgement {
            reject,
            nak,
            peer: theirs,
        }
    }

    fn accept(&mut self, peer: Option<[u8; 4]>) {
        // A peer that sends no IP-Address leaves its address to us (RFC 1332 3.3).
        self.theirs = peer.or(self.cfg.peer).or(Some([0; 4]));
    }

    fn refused(&mut self, code: u8, opts: &[Opt<'_>]) {
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
    }

    fn up(&self) -> Option<IpcpOutput> {
        let local = self.ours.unwrap_or(self.cfg.local);
        let peer = self.theirs.unwrap_or([0; 4]);
        Some(IpcpOutput::Up { local, peer })
    }
}

impl Fsm<IpcpRules> {
    pub fn new(cfg: IpcpConfig) -> Self {
        Fsm::with(IpcpRules {
            ours: Some(cfg.local),
            cfg,
            theirs: None,
        })
    }

    /// An IPCP packet (the information field of a 0x8021 frame or reassembled packet).
    pub fn on_packet(&mut self, now: SimTime, info: &[u8]) {
        let Some(p) = parse_packet(info) else {
            return;
        };
        match p.code {
            _ if self.negotiate(now, &p) => {}
            CODE_REJECT => {}
            // Codes 8 to 11 are LCP's alone (RFC 1332 section 2): Code-Reject.
            _ => self.code_reject(info, 1496),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppp::fsm::{encode_packet, State as LcpState, CONFIGURE_ACK};
    use farlink_core::time::SimDuration;

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
