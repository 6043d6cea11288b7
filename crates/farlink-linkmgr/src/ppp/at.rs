//! The AT dialogue of a data modem (ITU-T V.250 / Hayes) as a sans-I/O state machine: what to
//! write to the serial port, and what the modem's replies mean, given `now` and the octets read.
//!
//! Read first: V.250 sections 5.2 (command lines), 5.7 (result codes, verbose `V1` and numeric
//! `V0`) and 6.3.1 (`+++` escape with guard times, `S12`); the Iridium 9522/9523 AT references
//! (`+CBST=71,0,1` for a 9600 bit/s V.110 data call, `+CSQ`/`+CSQF` signal 0 to 5, `&K3`
//! hardware flow control) and ModemManager's Iridium plugin, which dials 008816000025.
//!
//! While a call is up ([`AtDialogue::is_online`]) the serial port carries data: the caller hands
//! its octets to the HDLC decoder instead, and reports a loss of carrier (DCD) with
//! [`AtDialogue::on_carrier_lost`]. Every reply line is bounded ([`MAX_LINE`]); a modem that
//! answers nonsense or nothing gets an [`AtEvent::Error`] or [`AtEvent::Timeout`], never a hang.

use std::collections::VecDeque;

use farlink_core::time::{SimDuration, SimTime};

/// The longest reply line kept; longer ones are discarded as garbage.
pub const MAX_LINE: usize = 128;

/// A modem's settings: the `iridium` profile by default, each field overridable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModemProfile {
    pub baud: u32,
    /// Sent in order after reset, each waiting for `OK`.
    pub init: Vec<String>,
    pub number: String,
    /// `AT+CSQ` or `AT+CSQF` (the fast variant, no fresh measurement).
    pub signal_command: String,
    /// How long a command may take to answer.
    pub command_timeout: SimDuration,
    /// How long the signal command may take: longer than a reply delayed by a handover.
    pub signal_timeout: SimDuration,
    /// How often the signal is asked for while the modem is in command mode (seed 000
    /// section 5.1: "SNR measurements every 4 seconds").
    pub signal_interval: SimDuration,
    /// A signal reply at least this late marks a handover (seed 000 section 5.1: the modem
    /// answers "after 4 seconds", during a handover "after 6 (or more) seconds").
    pub handover_reply: SimDuration,
    /// How long a dial may take before `CONNECT` or a failure (Iridium: up to about a minute).
    pub dial_timeout: SimDuration,
    /// Silence before and after `+++` (V.250 `S12`, default 1 s).
    pub guard_time: SimDuration,
}

impl ModemProfile {
    /// The Iridium data modem defaults (9600 baud, `AT&K3`, `AT+CBST=71,0,1`, 008816000025).
    pub fn iridium() -> Self {
        ModemProfile {
            baud: 9600,
            init: ["ATE0V1Q0", "AT&K3", "AT+CBST=71,0,1"]
                .map(String::from)
                .to_vec(),
            number: "008816000025".into(),
            signal_command: "AT+CSQ".into(),
            command_timeout: SimDuration::from_secs(5),
            signal_timeout: SimDuration::from_secs(15),
            signal_interval: SimDuration::from_secs(4),
            handover_reply: SimDuration::from_secs(6),
            dial_timeout: SimDuration::from_secs(90),
            guard_time: SimDuration::from_secs(1),
        }
    }
}

/// A final result code (V.250 5.7.1), from its verbose or numeric form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultCode {
    Ok,
    /// With the rate the modem reports, if any (`CONNECT 9600`).
    Connect(Option<u32>),
    Ring,
    NoCarrier,
    Error,
    NoDialtone,
    Busy,
    NoAnswer,
}

/// Reads a reply line: a result code, a signal report, or `None` (echo, information text).
pub fn parse_line(line: &str) -> Option<Reply> {
    let l = line.trim();
    let code = match l {
        "OK" | "0" => ResultCode::Ok,
        "CONNECT" | "1" => ResultCode::Connect(None),
        "RING" | "2" => ResultCode::Ring,
        "NO CARRIER" | "3" => ResultCode::NoCarrier,
        "ERROR" | "4" => ResultCode::Error,
        "NO DIALTONE" | "NO DIAL TONE" | "6" => ResultCode::NoDialtone,
        "BUSY" | "7" => ResultCode::Busy,
        "NO ANSWER" | "8" => ResultCode::NoAnswer,
        _ => {
            if let Some(rate) = l.strip_prefix("CONNECT ") {
                let digits: String = rate.chars().take_while(char::is_ascii_digit).collect();
                return Some(Reply::Code(ResultCode::Connect(digits.parse().ok())));
            }
            for prefix in ["+CSQF:", "+CSQ:"] {
                if let Some(v) = l.strip_prefix(prefix) {
                    let v = v.trim().split(',').next().unwrap_or("");
                    return v.parse::<u8>().ok().filter(|&s| s <= 5).map(Reply::Signal);
                }
            }
            return None;
        }
    };
    Some(Reply::Code(code))
}

/// What a reply line means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    Code(ResultCode),
    /// Signal strength 0 to 5 (`+CSQ:` / `+CSQF:`).
    Signal(u8),
}

/// Why a dial failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialFailure {
    NoCarrier,
    Busy,
    NoAnswer,
    NoDialtone,
    Error,
    Timeout,
}

/// What the dialogue reports to its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AtEvent {
    /// The init commands were all acknowledged.
    Ready,
    Connected {
        rate_bps: Option<u32>,
    },
    DialFailed(DialFailure),
    /// The call is down after a hang-up on command.
    HungUp,
    /// The call was lost (carrier or `NO CARRIER` while online).
    CarrierLost,
    Signal(u8),
    /// An incoming call is announced (`RING`); a modem set to answer (`S0`) answers it, and
    /// its `CONNECT` comes as [`AtEvent::Connected`].
    Ring,
    /// A command was refused (`ERROR`) or answered with something that is not a result code.
    Error {
        command: String,
        reply: String,
    },
    /// A command got no final result in time.
    Timeout {
        command: String,
    },
}

/// What the caller does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AtOutput {
    /// Write these octets to the serial port.
    Write(Vec<u8>),
    Event(AtEvent),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// Nothing outstanding, in command mode.
    Idle,
    /// Init command `index` sent.
    Init {
        index: usize,
        deadline: SimTime,
    },
    /// `AT+CSQ` sent.
    Signal {
        deadline: SimTime,
        value: Option<u8>,
    },
    Dialling {
        deadline: SimTime,
    },
    Online,
    /// Silence before `+++`.
    EscapeBefore {
        at: SimTime,
    },
    /// `+++` sent; `OK` expected after the guard time.
    EscapeAfter {
        deadline: SimTime,
    },
    /// `ATH` sent.
    Hangup {
        deadline: SimTime,
    },
}

/// The dialogue with one modem.
#[derive(Debug)]
pub struct AtDialogue {
    profile: ModemProfile,
    state: State,
    line: Vec<u8>,
    overlong: bool,
    out: VecDeque<AtOutput>,
}

impl AtDialogue {
    pub fn new(profile: ModemProfile) -> Self {
        AtDialogue {
            profile,
            state: State::Idle,
            line: Vec::with_capacity(MAX_LINE),
            overlong: false,
            out: VecDeque::new(),
        }
    }

    pub fn profile(&self) -> &ModemProfile {
        &self.profile
    }

    /// In data mode: the port's octets are the call's, not the dialogue's.
    pub fn is_online(&self) -> bool {
        matches!(self.state, State::Online | State::EscapeBefore { .. })
    }

    /// Nothing outstanding: a new request may be made.
    pub fn is_idle(&self) -> bool {
        self.state == State::Idle
    }

    pub fn poll(&mut self) -> Option<AtOutput> {
        self.out.pop_front()
    }

    pub fn next_wakeup(&self) -> Option<SimTime> {
        match self.state {
            State::Idle | State::Online => None,
            State::Init { deadline, .. }
            | State::Signal { deadline, .. }
            | State::Dialling { deadline }
            | State::EscapeAfter { deadline }
            | State::Hangup { deadline } => Some(deadline),
            State::EscapeBefore { at } => Some(at),
        }
    }

    fn send(&mut self, cmd: &str) {
        let mut v = cmd.as_bytes().to_vec();
        v.push(b'\r');
        self.out.push_back(AtOutput::Write(v));
    }

    fn event(&mut self, e: AtEvent) {
        self.out.push_back(AtOutput::Event(e));
    }

    /// Sends the profile's init commands (after opening the port or a reset).
    pub fn init(&mut self, now: SimTime) {
        if self.profile.init.is_empty() {
            self.event(AtEvent::Ready);
            return;
        }
        let first = self.profile.init[0].clone();
        self.send(&first);
        self.state = State::Init {
            index: 0,
            deadline: now + self.profile.command_timeout,
        };
    }

    /// Asks for the signal strength.
    pub fn query_signal(&mut self, now: SimTime) {
        let cmd = self.profile.signal_command.clone();
        self.send(&cmd);
        self.state = State::Signal {
            deadline: now + self.profile.signal_timeout,
            value: None,
        };
    }

    /// Dials the profile's number.
    pub fn dial(&mut self, now: SimTime) {
        let cmd = format!("ATD{}", self.profile.number);
        self.send(&cmd);
        self.state = State::Dialling {
            deadline: now + self.profile.dial_timeout,
        };
    }

    /// Abandons a dial in progress (any character aborts it, V.250 6.3.1) or hangs up a call
    /// (`+++` between guard times, then `ATH`). `last_write` is when data last went out.
    pub fn hang_up(&mut self, now: SimTime, last_write: SimTime) {
        match self.state {
            State::Dialling { .. } => {
                self.send("ATH");
                self.state = State::Hangup {
                    deadline: now + self.profile.command_timeout,
                };
            }
            State::Online => {
                let at = (last_write + self.profile.guard_time).max(now);
                self.state = State::EscapeBefore { at };
            }
            _ => {
                self.send("ATH");
                self.state = State::Hangup {
                    deadline: now + self.profile.command_timeout,
                };
            }
        }
    }

    /// The modem dropped DCD: the call is gone.
    pub fn on_carrier_lost(&mut self, _now: SimTime) {
        if self.is_online() {
            self.state = State::Idle;
            self.event(AtEvent::CarrierLost);
        }
    }

    pub fn on_timer(&mut self, now: SimTime) {
        let Some(due) = self.next_wakeup() else {
            return;
        };
        if now < due {
            return;
        }
        match std::mem::replace(&mut self.state, State::Idle) {
            State::EscapeBefore { .. } => {
                self.out.push_back(AtOutput::Write(b"+++".to_vec()));
                self.state = State::EscapeAfter {
                    deadline: now + self.profile.guard_time + self.profile.command_timeout,
                };
            }
            State::Dialling { .. } => {
                // Abort the dial so the modem is back in command mode.
                self.send("ATH");
                self.event(AtEvent::DialFailed(DialFailure::Timeout));
            }
            State::Init { index, .. } => {
                let command = self.profile.init[index].clone();
                self.event(AtEvent::Timeout { command });
            }
            State::Signal { .. } => {
                let command = self.profile.signal_command.clone();
                self.event(AtEvent::Timeout { command });
            }
            State::EscapeAfter { .. } => self.event(AtEvent::Timeout {
                command: "+++".into(),
            }),
            State::Hangup { .. } => self.event(AtEvent::Timeout {
                command: "ATH".into(),
            }),
            s @ (State::Idle | State::Online) => self.state = s,
        }
    }

    /// Octets read from the port while in command mode.
    pub fn on_bytes(&mut self, now: SimTime, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\r' || b == b'\n' {
                if !std::mem::take(&mut self.overlong) && !self.line.is_empty() {
                    let line = String::from_utf8_lossy(&self.line).into_owned();
                    self.on_line(now, &line);
                }
                self.line.clear();
            } else if self.line.len() < MAX_LINE {
                self.line.push(b);
            } else {
                self.overlong = true;
            }
        }
    }

    fn on_line(&mut self, now: SimTime, line: &str) {
        let reply = parse_line(line);
        if reply.is_none() && line.trim_start().to_ascii_uppercase().starts_with("AT") {
            return; // Echo of our own command.
        }
        match (self.state.clone(), reply) {
            // An incoming call is announced whatever is outstanding; it is not an answer.
            (_, Some(Reply::Code(ResultCode::Ring))) => {
                if !matches!(self.state, State::Online | State::Dialling { .. }) {
                    self.event(AtEvent::Ring);
                }
            }
            // A call answered by the modem (auto-answer): data mode. A signal query or an init
            // command it interrupted has no answer coming.
            (
                State::Idle | State::Signal { .. } | State::Init { .. },
                Some(Reply::Code(ResultCode::Connect(rate_bps))),
            ) => {
                self.state = State::Online;
                self.event(AtEvent::Connected { rate_bps });
            }
            (State::Init { index, .. }, Some(Reply::Code(ResultCode::Ok))) => {
                self.init_done(now, index);
            }
            (State::Signal { deadline, .. }, Some(Reply::Signal(v))) => {
                self.state = State::Signal {
                    deadline,
                    value: Some(v),
                };
            }
            (State::Signal { value, .. }, Some(Reply::Code(ResultCode::Ok))) => {
                self.state = State::Idle;
                let e = match value {
                    Some(v) => AtEvent::Signal(v),
                    None => AtEvent::Error {
                        command: self.profile.signal_command.clone(),
                        reply: "OK without a signal report".into(),
                    },
                };
                self.event(e);
            }
            (State::Dialling { .. }, Some(Reply::Code(code))) => self.dial_answered(code),
            (State::Online, Some(Reply::Code(ResultCode::NoCarrier))) => {
                self.state = State::Idle;
                self.event(AtEvent::CarrierLost);
            }
            (State::EscapeAfter { .. }, Some(Reply::Code(ResultCode::Ok))) => {
                self.send("ATH");
                self.state = State::Hangup {
                    deadline: now + self.profile.command_timeout,
                };
            }
            (State::Hangup { .. }, Some(Reply::Code(ResultCode::Ok | ResultCode::NoCarrier))) => {
                self.state = State::Idle;
                self.event(AtEvent::HungUp);
            }
            // The call ended on its own while being hung up: done.
            (
                State::EscapeBefore { .. } | State::EscapeAfter { .. },
                Some(Reply::Code(ResultCode::NoCarrier)),
            ) => {
                self.state = State::Idle;
                self.event(AtEvent::HungUp);
            }
            // Data still arriving before the escape.
            (State::Idle | State::Online | State::EscapeBefore { .. }, _) => {}
            // Data still arriving until the modem has seen the trailing guard time: the peer
            // goes on sending through the escape. A modem that never answers `OK` is caught
            // by the escape's deadline.
            (State::EscapeAfter { .. }, None) => {}
            (state, reply) => self.unexpected(state, reply.is_some(), line),
        }
    }

    /// `OK` to init command `index`: the next one, or the modem is ready.
    fn init_done(&mut self, now: SimTime, index: usize) {
        if index + 1 == self.profile.init.len() {
            self.state = State::Idle;
            self.event(AtEvent::Ready);
        } else {
            let next = self.profile.init[index + 1].clone();
            self.send(&next);
            self.state = State::Init {
                index: index + 1,
                deadline: now + self.profile.command_timeout,
            };
        }
    }

    /// A result code while dialling: the call is up, or the dial failed (`RING` and `OK`
    /// are not answers to a dial).
    fn dial_answered(&mut self, code: ResultCode) {
        let failure = match code {
            ResultCode::Connect(rate_bps) => {
                self.state = State::Online;
                self.event(AtEvent::Connected { rate_bps });
                return;
            }
            ResultCode::Ring | ResultCode::Ok => return,
            ResultCode::NoCarrier => DialFailure::NoCarrier,
            ResultCode::Busy => DialFailure::Busy,
            ResultCode::NoAnswer => DialFailure::NoAnswer,
            ResultCode::NoDialtone => DialFailure::NoDialtone,
            ResultCode::Error => DialFailure::Error,
        };
        self.state = State::Idle;
        self.event(AtEvent::DialFailed(failure));
    }

    /// Anything else while a command is outstanding (`state`): the modem answers nonsense,
    /// unless it is information text (not a result code) during a signal query.
    fn unexpected(&mut self, state: State, is_reply: bool, line: &str) {
        let command = match state {
            State::Init { index, .. } => self.profile.init[index].clone(),
            State::Signal { .. } => self.profile.signal_command.clone(),
            State::EscapeAfter { .. } => "+++".into(),
            State::Hangup { .. } => "ATH".into(),
            _ => String::new(),
        };
        if !is_reply && matches!(state, State::Signal { .. }) {
            return; // Information text other than the report.
        }
        self.state = State::Idle;
        self.event(AtEvent::Error {
            command,
            reply: line.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    fn drain(d: &mut AtDialogue) -> Vec<AtOutput> {
        std::iter::from_fn(|| d.poll()).collect()
    }

    fn w(s: &str) -> AtOutput {
        AtOutput::Write(s.as_bytes().to_vec())
    }

    #[test]
    fn iridium_init_then_dial_then_connect() {
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.init(t(0));
        assert_eq!(drain(&mut d), [w("ATE0V1Q0\r")]);
        d.on_bytes(t(10), b"ATE0V1Q0\r\r\nOK\r\n");
        assert_eq!(drain(&mut d), [w("AT&K3\r")]);
        d.on_bytes(t(20), b"\r\n0\r");
        assert_eq!(drain(&mut d), [w("AT+CBST=71,0,1\r")]);
        d.on_bytes(t(30), b"\r\nOK\r\n");
        assert_eq!(drain(&mut d), [AtOutput::Event(AtEvent::Ready)]);
        d.dial(t(40));
        assert_eq!(drain(&mut d), [w("ATD008816000025\r")]);
        d.on_bytes(t(20_000), b"\r\nCONNE");
        d.on_bytes(t(20_001), b"CT 9600\r\n");
        assert_eq!(
            drain(&mut d),
            [AtOutput::Event(AtEvent::Connected {
                rate_bps: Some(9600)
            })]
        );
        assert!(d.is_online());
    }

    #[test]
    fn dial_failures_verbose_and_numeric() {
        for (reply, f) in [
            ("BUSY", DialFailure::Busy),
            ("7", DialFailure::Busy),
            ("NO ANSWER", DialFailure::NoAnswer),
            ("8", DialFailure::NoAnswer),
            ("NO CARRIER", DialFailure::NoCarrier),
            ("3", DialFailure::NoCarrier),
            ("ERROR", DialFailure::Error),
        ] {
            let mut d = AtDialogue::new(ModemProfile::iridium());
            d.dial(t(0));
            drain(&mut d);
            d.on_bytes(t(1), format!("\r\n{reply}\r\n").as_bytes());
            assert_eq!(
                drain(&mut d),
                [AtOutput::Event(AtEvent::DialFailed(f))],
                "{reply}"
            );
            assert!(d.is_idle());
        }
    }

    #[test]
    fn a_dial_that_never_answers_times_out_and_is_aborted() {
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.dial(t(0));
        drain(&mut d);
        assert_eq!(d.next_wakeup(), Some(t(90_000)));
        d.on_timer(t(89_999));
        assert!(drain(&mut d).is_empty());
        d.on_timer(t(90_000));
        assert_eq!(
            drain(&mut d),
            [
                w("ATH\r"),
                AtOutput::Event(AtEvent::DialFailed(DialFailure::Timeout))
            ]
        );
    }

    #[test]
    fn hang_up_keeps_the_guard_times() {
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.dial(t(0));
        d.on_bytes(t(5), b"CONNECT\r\n");
        drain(&mut d);
        // Data last written at 10 s: "+++" no earlier than 11 s.
        d.hang_up(t(10_200), t(10_000));
        assert!(drain(&mut d).is_empty());
        assert_eq!(d.next_wakeup(), Some(t(11_000)));
        d.on_timer(t(11_000));
        assert_eq!(drain(&mut d), [w("+++")]);
        // The peer's frames go on arriving until the modem has left data mode: not an answer.
        d.on_bytes(t(11_500), b"~\x7d\x23frame~\r\n");
        assert!(drain(&mut d).is_empty());
        d.on_bytes(t(12_100), b"\r\nOK\r\n");
        assert_eq!(drain(&mut d), [w("ATH\r")]);
        d.on_bytes(t(12_200), b"\r\nOK\r\n");
        assert_eq!(drain(&mut d), [AtOutput::Event(AtEvent::HungUp)]);
    }

    #[test]
    fn signal_reports_and_garbage() {
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.query_signal(t(0));
        drain(&mut d);
        d.on_bytes(t(1), b"\r\n+CSQ:4\r\n\r\nOK\r\n");
        assert_eq!(
            drain(&mut d),
            [w("AT+CSQ\r"), AtOutput::Event(AtEvent::Signal(4))][1..]
        );
        assert_eq!(parse_line("+CSQF: 3"), Some(Reply::Signal(3)));
        assert_eq!(parse_line("+CSQ:9"), None);
        d.init(t(2));
        drain(&mut d);
        d.on_bytes(t(3), b"\xff\xfegarbage\r\n");
        assert_eq!(
            drain(&mut d),
            [AtOutput::Event(AtEvent::Error {
                command: "ATE0V1Q0".into(),
                reply: "\u{fffd}\u{fffd}garbage".into()
            })]
        );
        // An endless line is dropped, not kept.
        d.query_signal(t(4));
        d.on_bytes(t(5), &[b'x'; 10_000]);
        d.on_bytes(t(5), b"\r\n+CSQ:2\r\nOK\r\n");
        assert_eq!(
            drain(&mut d).last(),
            Some(&AtOutput::Event(AtEvent::Signal(2)))
        );
    }

    #[test]
    fn no_carrier_while_online_is_a_call_drop() {
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.dial(t(0));
        d.on_bytes(t(1), b"CONNECT 19200\r\n");
        drain(&mut d);
        d.on_bytes(t(2), b"\r\nNO CARRIER\r\n");
        assert_eq!(drain(&mut d), [AtOutput::Event(AtEvent::CarrierLost)]);
        assert!(!d.is_online());
    }

    #[test]
    fn an_answered_call_rings_then_connects_even_during_a_signal_query() {
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.on_bytes(t(0), b"\r\nRING\r\n\r\nCONNECT 9600\r\n");
        assert_eq!(
            drain(&mut d),
            [
                AtOutput::Event(AtEvent::Ring),
                AtOutput::Event(AtEvent::Connected {
                    rate_bps: Some(9600)
                })
            ]
        );
        assert!(d.is_online());
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.query_signal(t(0));
        drain(&mut d);
        assert_eq!(d.next_wakeup(), Some(t(15_000)), "the signal timeout");
        d.on_bytes(t(1), b"\r\nRING\r\n");
        assert_eq!(drain(&mut d), [AtOutput::Event(AtEvent::Ring)]);
        d.on_bytes(t(2), b"\r\nCONNECT\r\n");
        assert_eq!(
            drain(&mut d),
            [AtOutput::Event(AtEvent::Connected { rate_bps: None })]
        );
        // A call answered while the modem is being initialised.
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.init(t(0));
        drain(&mut d);
        d.on_bytes(t(1), b"\r\nRING\r\n\r\nCONNECT 9600\r\n");
        assert_eq!(
            drain(&mut d).last(),
            Some(&AtOutput::Event(AtEvent::Connected {
                rate_bps: Some(9600)
            }))
        );
        assert!(d.is_online());
    }

    #[test]
    fn a_call_that_ends_while_being_hung_up_is_hung_up() {
        let mut d = AtDialogue::new(ModemProfile::iridium());
        d.dial(t(0));
        d.on_bytes(t(1), b"CONNECT 9600\r\n");
        drain(&mut d);
        d.hang_up(t(2), t(2));
        d.on_bytes(t(100), b"data\r\n");
        assert!(drain(&mut d).is_empty(), "data before the escape");
        d.on_bytes(t(200), b"\r\nNO CARRIER\r\n");
        assert_eq!(drain(&mut d), [AtOutput::Event(AtEvent::HungUp)]);
        assert!(d.is_idle());
        assert_eq!(d.next_wakeup(), None, "no +++ after the call is gone");
    }
}
