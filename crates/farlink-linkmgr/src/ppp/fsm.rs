//! The option negotiation automaton of RFC 1661 section 4, one for every control protocol that
//! runs it: its states, the events Open, Close, Down, TO+/TO-, RCR+/RCR-, RCA, RCN, RTR and
//! RTA, the actions they take, the Restart timer and its counters (Max-Configure,
//! Max-Terminate, Max-Failure), and the packet format the protocols share (RFC 1661 section 5).
//!
//! A protocol plugs in its option rules through [`Protocol`]: what its Configure-Request
//! carries, how it judges the peer's request (each option acceptable, to be Nak'd with a
//! suggestion, or rejected), what a Nak or Reject of ours changes, and what This-Layer-Up
//! reports. LCP ([`super::lcp`]) adds Echo, Protocol-Reject and its own Code-Reject rule on
//! top; IPCP ([`super::ipcp`]) uses codes 1 to 7 only (RFC 1332 section 2).

use std::collections::VecDeque;

use farlink_core::time::{SimDuration, SimTime};

pub const CONFIGURE_REQUEST: u8 = 1;
pub const CONFIGURE_ACK: u8 = 2;
pub const CONFIGURE_NAK: u8 = 3;
pub const CONFIGURE_REJECT: u8 = 4;
pub const TERMINATE_REQUEST: u8 = 5;
pub const TERMINATE_ACK: u8 = 6;
pub const CODE_REJECT: u8 = 7;

/// A control packet: code, identifier and data (RFC 1661 section 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    pub code: u8,
    pub id: u8,
    pub data: &'a [u8],
}

/// Reads a packet; octets after its Length are padding and ignored (RFC 1661 section 5).
pub fn parse_packet(info: &[u8]) -> Option<Packet<'_>> {
    let [code, id, hi, lo, ..] = *info else {
        return None;
    };
    let len = usize::from(u16::from_be_bytes([hi, lo]));
    (4..=info.len()).contains(&len).then(|| Packet {
        code,
        id,
        data: &info[4..len],
    })
}

/// Writes a packet.
pub fn encode_packet(code: u8, id: u8, data: &[u8]) -> Vec<u8> {
    let len = (data.len() + 4) as u16;
    let mut v = Vec::with_capacity(data.len() + 4);
    v.extend_from_slice(&[code, id]);
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(data);
    v
}

/// One configuration option as it appears on the wire: type and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opt<'a> {
    pub kind: u8,
    pub value: &'a [u8],
}

/// Splits a Configure packet's options; `None` if a length is malformed (the packet is then
/// silently discarded, RFC 1661 section 5.1).
pub fn parse_options(mut data: &[u8]) -> Option<Vec<Opt<'_>>> {
    let mut v = Vec::new();
    while !data.is_empty() {
        let [kind, len, ..] = *data else { return None };
        let len = usize::from(len);
        if len < 2 || len > data.len() {
            return None;
        }
        v.push(Opt {
            kind,
            value: &data[2..len],
        });
        data = &data[len..];
    }
    Some(v)
}

/// Appends one option (type, length, value).
pub fn push_opt(out: &mut Vec<u8>, kind: u8, value: &[u8]) {
    out.push(kind);
    out.push((value.len() + 2) as u8);
    out.extend_from_slice(value);
}

/// The automaton's states (RFC 1661 section 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Initial,
    Closed,
    Stopped,
    Closing,
    Stopping,
    ReqSent,
    AckRcvd,
    AckSent,
    Opened,
}

/// The Restart timer and the counters it runs down (RFC 1661 section 4.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters {
    pub restart: SimDuration,
    pub max_configure: u32,
    pub max_terminate: u32,
    pub max_failure: u32,
}

impl Counters {
    /// RFC 1661 section 4.6's defaults: Restart 3 s, Max-Configure 10, Max-Terminate 2,
    /// Max-Failure 5.
    pub const RFC_1661: Counters = Counters {
        restart: SimDuration::from_secs(3),
        max_configure: 10,
        max_terminate: 2,
        max_failure: 5,
    };
}

/// A protocol's view of the peer's Configure-Request, option by option, before the automaton
/// weighs Max-Failure: the options it refuses, those it suggests other values for, and what
/// the request means if acknowledged.
pub struct Judgement<P> {
    /// Configure-Reject data: the refused options as received.
    pub reject: Vec<u8>,
    /// Configure-Nak data: our suggestions.
    pub nak: Vec<u8>,
    pub peer: P,
}

/// The parts of a control protocol that are its own: its options and its outputs.
pub trait Protocol {
    /// What the caller polls.
    type Output;
    /// What an acknowledged request of the peer's tells this end.
    type Peer;
    fn send(packet: Vec<u8>) -> Self::Output;
    /// This-Layer-Down.
    fn down() -> Self::Output;
    /// This-Layer-Finished.
    fn finished() -> Self::Output;
    fn counters(&self) -> Counters;
    /// Event Open: our request goes back to what the configuration asks for.
    fn initial_request(&mut self);
    /// Our Configure-Request's options as they stand.
    fn request_options(&self) -> Vec<u8>;
    fn judge(&self, opts: &[Opt<'_>]) -> Judgement<Self::Peer>;
    /// The peer's request was acknowledged.
    fn accept(&mut self, peer: Self::Peer);
    /// The peer sent Configure-Nak or Configure-Reject (`code`) for our current request.
    fn refused(&mut self, code: u8, opts: &[Opt<'_>]);
    /// This-Layer-Up, if there is something to report.
    fn up(&self) -> Option<Self::Output>;
}

/// One control protocol's automaton, given `now`.
#[derive(Debug)]
pub struct Fsm<P: Protocol> {
    pub(super) proto: P,
    state: State,
    restart_count: u32,
    naks_sent: u32,
    timer: Option<SimTime>,
    next_id: u8,
    req_id: u8,
    out: VecDeque<P::Output>,
}

impl<P: Protocol> Fsm<P> {
    pub(super) fn with(proto: P) -> Self {
        Fsm {
            proto,
            state: State::Initial,
            restart_count: 0,
            naks_sent: 0,
            timer: None,
            next_id: 1,
            req_id: 0,
            out: VecDeque::new(),
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn poll(&mut self) -> Option<P::Output> {
        self.out.pop_front()
    }

    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.timer
    }

    pub(super) fn push(&mut self, o: P::Output) {
        self.out.push_back(o);
    }

    /// The lower layer is up and the protocol should open (events Up and Open at once).
    pub fn open(&mut self, now: SimTime) {
        if matches!(self.state, State::Initial | State::Closed | State::Stopped) {
            self.proto.initial_request();
            self.naks_sent = 0;
            self.restart_count = self.proto.counters().max_configure;
            self.send_request(now);
            self.state = State::ReqSent;
        }
    }

    /// The lower layer went down (event Down).
    pub fn lower_down(&mut self) {
        if self.state == State::Opened {
            self.push(P::down());
        }
        self.timer = None;
        self.state = State::Initial;
    }

    /// Ends the protocol politely (event Close): Terminate-Request until acknowledged or the
    /// counter runs out.
    pub fn close(&mut self, now: SimTime) {
        match self.state {
            State::Opened | State::ReqSent | State::AckRcvd | State::AckSent => {
                if self.state == State::Opened {
                    self.push(P::down());
                }
                self.restart_count = self.proto.counters().max_terminate;
                self.send_terminate(now);
                self.state = State::Closing;
            }
            State::Stopped => self.state = State::Closed,
            State::Stopping => self.state = State::Closing,
            _ => {}
        }
    }

    pub(super) fn take_id(&mut self) -> u8 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    /// Code-Reject with the offending packet, cut to `max_len` octets.
    pub(super) fn code_reject(&mut self, info: &[u8], max_len: usize) {
        let id = self.take_id();
        let n = info.len().min(max_len);
        self.push(P::send(encode_packet(CODE_REJECT, id, &info[..n])));
    }

    fn arm_timer(&mut self, now: SimTime) {
        self.restart_count = self.restart_count.saturating_sub(1);
        self.timer = Some(now + self.proto.counters().restart);
    }

    fn send_request(&mut self, now: SimTime) {
        self.req_id = self.take_id();
        let opts = self.proto.request_options();
        self.push(P::send(encode_packet(
            CONFIGURE_REQUEST,
            self.req_id,
            &opts,
        )));
        self.arm_timer(now);
    }

    fn send_terminate(&mut self, now: SimTime) {
        let id = self.take_id();
        self.push(P::send(encode_packet(TERMINATE_REQUEST, id, &[])));
        self.arm_timer(now);
    }

    /// Renegotiation from Opened or after an Ack of ours was overtaken: a new request, back
    /// to Req-Sent.
    fn restart_negotiation(&mut self, now: SimTime) {
        if self.state == State::Opened {
            self.push(P::down());
        }
        self.send_request(now);
        self.state = State::ReqSent;
    }

    /// Closing or Stopping is over (Terminate-Ack, or the counter ran out).
    fn terminated(&mut self) {
        self.state = if self.state == State::Closing {
            State::Closed
        } else {
            State::Stopped
        };
        self.push(P::finished());
    }

    /// The Restart timer (events TO+ and TO-).
    pub fn on_timer(&mut self, now: SimTime) {
        if self.timer.is_none_or(|t| now < t) {
            return;
        }
        self.timer = None;
        let expired = self.restart_count == 0;
        match self.state {
            State::Closing | State::Stopping => {
                if expired {
                    self.terminated();
                } else {
                    self.send_terminate(now);
                }
            }
            State::ReqSent | State::AckRcvd | State::AckSent => {
                if expired {
                    self.state = State::Stopped;
                    self.push(P::finished());
                } else {
                    self.send_request(now);
                    if self.state == State::AckRcvd {
                        self.state = State::ReqSent;
                    }
                }
            }
            _ => {}
        }
    }

    /// Runs the automaton's part of a packet: codes 1 to 6. Returns false for any other code,
    /// which is the protocol's to handle.
    pub(super) fn negotiate(&mut self, now: SimTime, p: &Packet<'_>) -> bool {
        match p.code {
            CONFIGURE_REQUEST => self.on_request(now, p.id, p.data),
            CONFIGURE_ACK => self.on_ack(now, p.id, p.data),
            CONFIGURE_NAK | CONFIGURE_REJECT => self.on_nak_or_reject(now, p),
            TERMINATE_REQUEST => {
                self.push(P::send(encode_packet(TERMINATE_ACK, p.id, &[])));
                match self.state {
                    State::Opened => {
                        self.push(P::down());
                        self.restart_count = 0;
                        self.timer = Some(now + self.proto.counters().restart);
                        self.state = State::Stopping;
                    }
                    State::AckRcvd | State::AckSent => self.state = State::ReqSent,
                    _ => {}
                }
            }
            TERMINATE_ACK => match self.state {
                State::Closing | State::Stopping => {
                    self.timer = None;
                    self.terminated();
                }
                State::AckRcvd => self.state = State::ReqSent,
                State::Opened => self.restart_negotiation(now),
                _ => {}
            },
            _ => return false,
        }
        true
    }

    /// Ack, Nak or Reject for the peer's request, with its data, and what it means. Past
    /// Max-Failure Naks, the options we would suggest values for are refused instead.
    fn verdict(&mut self, data: &[u8], opts: &[Opt<'_>]) -> (u8, Vec<u8>, P::Peer) {
        let j = self.proto.judge(opts);
        if !j.reject.is_empty() {
            return (CONFIGURE_REJECT, j.reject, j.peer);
        }
        if j.nak.is_empty() {
            return (CONFIGURE_ACK, data.to_vec(), j.peer);
        }
        self.naks_sent += 1;
        if self.naks_sent <= self.proto.counters().max_failure {
            return (CONFIGURE_NAK, j.nak, j.peer);
        }
        let naked: Vec<u8> = parse_options(&j.nak)
            .unwrap_or_default()
            .iter()
            .map(|o| o.kind)
            .collect();
        let mut reject = Vec::new();
        for o in opts.iter().filter(|o| naked.contains(&o.kind)) {
            push_opt(&mut reject, o.kind, o.value);
        }
        (CONFIGURE_REJECT, reject, j.peer)
    }

    fn on_request(&mut self, now: SimTime, id: u8, data: &[u8]) {
        let Some(opts) = parse_options(data) else {
            return;
        };
        let (code, reply, peer) = self.verdict(data, &opts);
        let good = code == CONFIGURE_ACK;
        match self.state {
            State::Closing | State::Stopping | State::Initial => return,
            State::Closed => {
                self.push(P::send(encode_packet(TERMINATE_ACK, id, &[])));
                return;
            }
            State::Stopped => {
                self.restart_count = self.proto.counters().max_configure;
                self.send_request(now);
                self.state = State::ReqSent;
            }
            State::Opened => self.restart_negotiation(now),
            _ => {}
        }
        self.push(P::send(encode_packet(code, id, &reply)));
        if good {
            self.proto.accept(peer);
        }
        self.state = match (self.state, good) {
            (State::AckRcvd, true) => {
                self.timer = None;
                self.up();
                State::Opened
            }
            (State::ReqSent | State::AckSent, true) => State::AckSent,
            (State::AckSent, false) => State::ReqSent,
            (s, _) => s,
        };
    }

    fn up(&mut self) {
        if let Some(o) = self.proto.up() {
            self.push(o);
        }
    }

    fn on_ack(&mut self, now: SimTime, id: u8, data: &[u8]) {
        if id != self.req_id || data != self.proto.request_options().as_slice() {
            return; // Not an acknowledgement of our current request: discard.
        }
        match self.state {
            State::ReqSent => {
                self.restart_count = self.proto.counters().max_configure;
                self.timer = Some(now + self.proto.counters().restart);
                self.state = State::AckRcvd;
            }
            State::AckSent => {
                self.restart_count = self.proto.counters().max_configure;
                self.timer = None;
                self.state = State::Opened;
                self.up();
            }
            State::AckRcvd | State::Opened => self.restart_negotiation(now),
            _ => {}
        }
    }

    fn on_nak_or_reject(&mut self, now: SimTime, p: &Packet<'_>) {
        if p.id != self.req_id {
            return;
        }
        let Some(opts) = parse_options(p.data) else {
            return;
        };
        self.proto.refused(p.code, &opts);
        match self.state {
            State::ReqSent | State::AckSent => {
                self.restart_count = self.proto.counters().max_configure;
                self.send_request(now);
            }
            State::AckRcvd | State::Opened => self.restart_negotiation(now),
            _ => {}
        }
    }
}
