//! A simulated data modem as the host sees it (the DCE side of the AT dialogue of [`super::at`]):
//! it reads command lines, answers with result codes, places and ends calls, and in data mode
//! clocks the host's octets onto the call at the air rate. Sans-I/O and without randomness: the
//! environment decides each dial's outcome and each call drop (from the simulator's named
//! streams) and carries the octets to the peer with their delay and loss.
//!
//! Read first: ITU-T V.250 sections 5.2 to 5.4 (command line syntax, basic commands concatenated
//! after one `AT`), 5.7 (result codes, `V`, `Q`, `E`) and 6.3.1 (the `+++` escape: a guard time
//! of silence, three escape characters, a guard time of silence).
//!
//! Accepted: `AT`, `E`, `V`, `Q`, `Z`, `&F`, `&K<n>`, `H`, `O`, `D<number>` (ending the line),
//! `+CBST=...`, `+CSQ`, `+CSQF`. Anything else is `ERROR`, as a modem says.

use std::collections::VecDeque;

use farlink_core::time::{SimDuration, SimTime};

/// What the simulated modem is and does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DceConfig {
    /// Rate at which the call carries octets (Iridium: 2400 bit/s).
    pub rate_bps: u64,
    /// The rate `CONNECT` reports (the DTE rate, 9600 for an Iridium 9522).
    pub connect_rate_bps: u32,
    /// V.250 `S12`.
    pub guard_time: SimDuration,
    /// Longest command line; a longer one is answered `ERROR`.
    pub max_line: usize,
}

impl DceConfig {
    pub fn iridium() -> Self {
        DceConfig {
            rate_bps: 2400,
            connect_rate_bps: 9600,
            guard_time: SimDuration::from_secs(1),
            max_line: 128,
        }
    }
}

/// How a dial ended, as the environment decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialOutcome {
    Connected,
    NoCarrier,
    Busy,
    NoAnswer,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DceOutput {
    /// Octets for the host (written to the port).
    ToHost(Vec<u8>),
    /// Place a call to `number`; answer with [`Dce::on_dial_outcome`].
    Dial { number: String },
    /// The call was ended from this side.
    HangUp,
    /// Octets sent on the call, the last of them on the air at `at` (the environment adds the
    /// propagation delay and the ARQ's losses).
    ToPeer { at: SimTime, data: Vec<u8> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Command,
    Dialling,
    /// Data mode; `pluses` escape characters held back since `plus_at`.
    Online,
    /// Escaped from data mode, the call still up (`ATO` returns, `ATH` ends it).
    OnlineCommand,
}

/// One simulated modem.
#[derive(Debug)]
pub struct Dce {
    cfg: DceConfig,
    mode: Mode,
    echo: bool,
    verbose: bool,
    quiet: bool,
    /// Signal strength 0 to 5 that `+CSQ` reports (set by the environment).
    signal: u8,
    line: Vec<u8>,
    overlong: bool,
    /// When the last data octet came from the host (for the guard before `+++`).
    last_data: SimTime,
    pluses: u8,
    plus_at: SimTime,
    /// When the air is free for the next octet.
    air_free: SimTime,
    out: VecDeque<DceOutput>,
}

impl Dce {
    pub fn new(cfg: DceConfig) -> Self {
        Dce {
            cfg,
            mode: Mode::Command,
            echo: true,
            verbose: true,
            quiet: false,
            signal: 5,
            line: Vec::with_capacity(cfg.max_line),
            overlong: false,
            last_data: SimTime::ZERO,
            pluses: 0,
            plus_at: SimTime::ZERO,
            air_free: SimTime::ZERO,
            out: VecDeque::new(),
        }
    }

    pub fn poll(&mut self) -> Option<DceOutput> {
        self.out.pop_front()
    }

    /// A call is up (data mode or escaped from it).
    pub fn call_up(&self) -> bool {
        matches!(self.mode, Mode::Online | Mode::OnlineCommand)
    }

    pub fn set_signal(&mut self, bars: u8) {
        self.signal = bars.min(5);
    }

    /// When held-back escape characters become an escape (their trailing guard time).
    pub fn next_wakeup(&self) -> Option<SimTime> {
        (self.mode == Mode::Online && self.pluses == 3).then(|| self.plus_at + self.cfg.guard_time)
    }

    fn emit_to_host(&mut self, bytes: &[u8]) {
        self.out.push_back(DceOutput::ToHost(bytes.to_vec()));
    }

    fn result(&mut self, verbose: &str, numeric: u8) {
        if self.quiet {
            return;
        }
        let text = if self.verbose {
            format!("\r\n{verbose}\r\n")
        } else {
            format!("{numeric}\r")
        };
        self.emit_to_host(text.as_bytes());
    }

    fn info(&mut self, text: &str) {
        let t = if self.verbose {
            format!("\r\n{text}\r\n")
        } else {
            format!("{text}\r\n")
        };
        self.emit_to_host(t.as_bytes());
    }

    fn send_data(&mut self, now: SimTime, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let bits = data.len() as u64 * 8;
        let ns = bits.saturating_mul(1_000_000_000) / self.cfg.rate_bps.max(1);
        let at = self.air_free.max(now) + SimDuration::from_nanos(ns);
        self.air_free = at;
        self.out.push_back(DceOutput::ToPeer {
            at,
            data: data.to_vec(),
        });
    }

    /// Octets from the host.
    pub fn on_host_bytes(&mut self, now: SimTime, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if self.mode == Mode::Online {
                i += self.online_bytes(now, &bytes[i..]);
                continue;
            }
            let b = bytes[i];
            i += 1;
            if self.mode == Mode::Dialling {
                // Any character aborts a dial (V.250 6.3.1).
                self.mode = Mode::Command;
                self.out.push_back(DceOutput::HangUp);
                self.result("NO CARRIER", 3);
                continue;
            }
            if self.echo {
                self.emit_to_host(&[b]);
            }
            match b {
                b'\r' => {
                    let line = std::mem::take(&mut self.line);
                    if std::mem::take(&mut self.overlong) {
                        self.result("ERROR", 4);
                    } else {
                        self.execute(&String::from_utf8_lossy(&line));
                    }
                    self.line = line;
                    self.line.clear();
                }
                b'\n' => {}
                _ if self.line.len() < self.cfg.max_line => self.line.push(b),
                _ => self.overlong = true,
            }
        }
    }

    /// Data mode: returns how many octets it consumed (all, or up to a mode change).
    fn online_bytes(&mut self, now: SimTime, bytes: &[u8]) -> usize {
        for (k, &b) in bytes.iter().enumerate() {
            // Octets before it in this chunk broke the silence.
            let silent_before = k == 0 && now >= self.last_data + self.cfg.guard_time;
            if b == b'+' && (self.pluses > 0 || silent_before) && self.pluses < 3 {
                if self.pluses == 0 {
                    self.send_data(now, &bytes[..k]);
                    self.pluses = 1;
                    self.plus_at = now;
                    return k + 1;
                }
                self.pluses += 1;
                self.plus_at = now;
                continue;
            }
            // Not an escape after all: the held pluses were data.
            let held = usize::from(self.pluses);
            self.pluses = 0;
            let mut data = vec![b'+'; held];
            data.extend_from_slice(&bytes[k..]);
            self.send_data(now, &data);
            self.last_data = now;
            return bytes.len();
        }
        bytes.len()
    }

    pub fn on_timer(&mut self, now: SimTime) {
        if self.next_wakeup().is_some_and(|t| now >= t) {
            self.pluses = 0;
            self.mode = Mode::OnlineCommand;
            self.result("OK", 0);
        }
    }

    fn execute(&mut self, line: &str) {
        let l = line.trim();
        let upper = l.to_ascii_uppercase();
        let Some(mut rest) = upper.strip_prefix("AT") else {
            if !l.is_empty() {
                self.result("ERROR", 4);
            }
            return;
        };
        while !rest.is_empty() {
            let c = rest.as_bytes()[0];
            // A basic command's numeric argument, if any.
            let digits = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
            let arg: u32 = rest[1..1 + digits].parse().unwrap_or(0);
            match c {
                b'E' => self.echo = arg != 0,
                b'V' => self.verbose = arg != 0,
                b'Q' => self.quiet = arg != 0,
                b'Z' => {
                    self.echo = true;
                    self.verbose = true;
                    self.quiet = false;
                }
                b'H' => {
                    if self.call_up() {
                        self.mode = Mode::Command;
                        self.out.push_back(DceOutput::HangUp);
                    }
                }
                b'O' => {
                    if self.mode == Mode::OnlineCommand {
                        self.mode = Mode::Online;
                        self.result("CONNECT", 1);
                        return;
                    }
                    self.result("NO CARRIER", 3);
                    return;
                }
                b'D' => {
                    if self.call_up() {
                        self.result("ERROR", 4);
                        return;
                    }
                    let offset = upper.len() - rest.len() + 1;
                    let number: String = l[offset..]
                        .chars()
                        .filter(|ch| ch.is_ascii_digit() || "+*#".contains(*ch))
                        .collect();
                    self.mode = Mode::Dialling;
                    self.out.push_back(DceOutput::Dial { number });
                    return;
                }
                b'&' => {
                    let Some(&sub) = rest.as_bytes().get(1) else {
                        self.result("ERROR", 4);
                        return;
                    };
                    let d = rest[2..].bytes().take_while(u8::is_ascii_digit).count();
                    if !matches!(sub, b'F' | b'K' | b'D' | b'C') {
                        self.result("ERROR", 4);
                        return;
                    }
                    rest = &rest[2 + d..];
                    continue;
                }
                b'+' => {
                    // Extended commands run to the end of the line (no `;` chaining here).
                    let ext = rest.to_string();
                    match ext.as_str() {
                        "+CSQ" => self.info(&format!("+CSQ:{}", self.signal)),
                        "+CSQF" => self.info(&format!("+CSQF:{}", self.signal)),
                        s if s.starts_with("+CBST=") => {}
                        _ => {
                            self.result("ERROR", 4);
                            return;
                        }
                    }
                    break;
                }
                b' ' => {}
                _ => {
                    self.result("ERROR", 4);
                    return;
                }
            }
            rest = &rest[1 + digits..];
        }
        self.result("OK", 0);
    }

    /// A call comes in from the network. Idle in command mode, the modem rings and answers at
    /// once (auto-answer, `S0=1`, as a ground station's modems are set), `RING` then
    /// `CONNECT`; returns whether it answered (`false`: busy with a call or a dial).
    pub fn on_incoming_call(&mut self, now: SimTime) -> bool {
        if self.mode != Mode::Command {
            return false;
        }
        self.result("RING", 2);
        self.mode = Mode::Dialling;
        self.on_dial_outcome(now, DialOutcome::Connected);
        true
    }

    /// The environment's answer to a [`DceOutput::Dial`].
    pub fn on_dial_outcome(&mut self, now: SimTime, outcome: DialOutcome) {
        if self.mode != Mode::Dialling {
            return;
        }
        match outcome {
            DialOutcome::Connected => {
                self.mode = Mode::Online;
                self.last_data = now;
                self.air_free = now;
                let rate = self.cfg.connect_rate_bps;
                if !self.quiet {
                    let text = if self.verbose {
                        format!("\r\nCONNECT {rate}\r\n")
                    } else {
                        "1\r".to_string()
                    };
                    self.emit_to_host(text.as_bytes());
                }
            }
            DialOutcome::NoCarrier => self.fail("NO CARRIER", 3),
            DialOutcome::Busy => self.fail("BUSY", 7),
            DialOutcome::NoAnswer => self.fail("NO ANSWER", 8),
        }
    }

    fn fail(&mut self, text: &str, code: u8) {
        self.mode = Mode::Command;
        self.result(text, code);
    }

    /// The call was lost (a call drop drawn by the environment).
    pub fn on_call_lost(&mut self, _now: SimTime) {
        if self.call_up() {
            self.mode = Mode::Command;
            self.pluses = 0;
            self.result("NO CARRIER", 3);
        }
    }

    /// Octets that arrived over the call from the peer.
    pub fn on_peer_bytes(&mut self, _now: SimTime, data: &[u8]) {
        if self.mode == Mode::Online {
            self.emit_to_host(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppp::at::{AtDialogue, AtEvent, AtOutput, ModemProfile};

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    /// Runs the host's dialogue against the simulated modem until both are quiet; the modem's
    /// dials get `outcome`. Returns the dialogue's events.
    fn converse(
        host: &mut AtDialogue,
        dce: &mut Dce,
        now: SimTime,
        outcome: DialOutcome,
    ) -> Vec<AtEvent> {
        let mut events = Vec::new();
        for _ in 0..100 {
            let mut moved = false;
            while let Some(o) = host.poll() {
                moved = true;
                match o {
                    AtOutput::Write(w) => dce.on_host_bytes(now, &w),
                    AtOutput::Event(e) => events.push(e),
                }
            }
            while let Some(o) = dce.poll() {
                moved = true;
                match o {
                    DceOutput::ToHost(b) => {
                        if !host.is_online() {
                            host.on_bytes(now, &b)
                        }
                    }
                    DceOutput::Dial { number } => {
                        assert_eq!(number, "008816000025");
                        dce.on_dial_outcome(now, outcome);
                    }
                    DceOutput::HangUp | DceOutput::ToPeer { .. } => {}
                }
            }
            if !moved {
                break;
            }
        }
        events
    }

    #[test]
    fn the_host_dialogue_initialises_dials_and_hangs_up_the_simulated_modem() {
        let mut host = AtDialogue::new(ModemProfile::iridium());
        let mut dce = Dce::new(DceConfig::iridium());
        host.init(t(0));
        assert_eq!(
            converse(&mut host, &mut dce, t(0), DialOutcome::Connected),
            [AtEvent::Ready]
        );
        host.query_signal(t(1));
        dce.set_signal(3);
        assert_eq!(
            converse(&mut host, &mut dce, t(1), DialOutcome::Connected),
            [AtEvent::Signal(3)]
        );
        host.dial(t(2));
        assert_eq!(
            converse(&mut host, &mut dce, t(2), DialOutcome::Connected),
            [AtEvent::Connected {
                rate_bps: Some(9600)
            }]
        );
        // 240 octets of data take 0.8 s at 2400 bit/s.
        dce.on_host_bytes(t(3000), &[0x7e; 240]);
        assert_eq!(
            dce.poll(),
            Some(DceOutput::ToPeer {
                at: t(3800),
                data: vec![0x7e; 240]
            })
        );
        host.hang_up(t(3000), t(3000));
        host.on_timer(t(4000));
        let mut events = converse(&mut host, &mut dce, t(4000), DialOutcome::Connected);
        dce.on_timer(t(5000));
        events.extend(converse(
            &mut host,
            &mut dce,
            t(5000),
            DialOutcome::Connected,
        ));
        assert_eq!(events, [AtEvent::HungUp]);
        assert!(!dce.call_up());
    }

    #[test]
    fn failed_dials_and_a_call_drop() {
        for (outcome, failure) in [
            (DialOutcome::Busy, crate::ppp::at::DialFailure::Busy),
            (DialOutcome::NoAnswer, crate::ppp::at::DialFailure::NoAnswer),
            (
                DialOutcome::NoCarrier,
                crate::ppp::at::DialFailure::NoCarrier,
            ),
        ] {
            let mut host = AtDialogue::new(ModemProfile::iridium());
            let mut dce = Dce::new(DceConfig::iridium());
            host.dial(t(0));
            assert_eq!(
                converse(&mut host, &mut dce, t(0), outcome),
                [AtEvent::DialFailed(failure)]
            );
        }
        let mut host = AtDialogue::new(ModemProfile::iridium());
        let mut dce = Dce::new(DceConfig::iridium());
        host.dial(t(0));
        converse(&mut host, &mut dce, t(0), DialOutcome::Connected);
        dce.on_call_lost(t(10));
        let Some(DceOutput::ToHost(b)) = dce.poll() else {
            panic!()
        };
        host.on_bytes(t(10), &b);
        assert_eq!(host.poll(), Some(AtOutput::Event(AtEvent::CarrierLost)));
    }

    #[test]
    fn pluses_inside_data_are_data() {
        let mut dce = Dce::new(DceConfig::iridium());
        dce.on_host_bytes(t(0), b"ATD123\r");
        while dce.poll().is_some() {}
        dce.on_dial_outcome(t(0), DialOutcome::Connected);
        while dce.poll().is_some() {}
        // Too soon after the call came up: data.
        dce.on_host_bytes(t(100), b"+++");
        let Some(DceOutput::ToPeer { data, .. }) = dce.poll() else {
            panic!()
        };
        assert_eq!(data, b"+++");
        // After a guard of silence, but followed by data within the guard: data.
        dce.on_host_bytes(t(2000), b"++");
        dce.on_host_bytes(t(2100), b"x");
        let Some(DceOutput::ToPeer { data, .. }) = dce.poll() else {
            panic!()
        };
        assert_eq!(data, b"++x");
        assert!(dce.call_up() && dce.next_wakeup().is_none());
        // Unknown commands are refused, numerically with V0.
        let mut d2 = Dce::new(DceConfig::iridium());
        d2.on_host_bytes(t(0), b"ATE0V0\rATX\r");
        let outs: Vec<_> = std::iter::from_fn(|| d2.poll()).collect();
        assert_eq!(outs.last(), Some(&DceOutput::ToHost(b"4\r".to_vec())));
    }

    #[test]
    fn an_incoming_call_rings_and_is_answered_unless_busy() {
        let mut dce = Dce::new(DceConfig::iridium());
        assert!(dce.on_incoming_call(t(0)));
        let outs: Vec<_> = std::iter::from_fn(|| dce.poll()).collect();
        assert_eq!(
            outs,
            [
                DceOutput::ToHost(b"\r\nRING\r\n".to_vec()),
                DceOutput::ToHost(b"\r\nCONNECT 9600\r\n".to_vec())
            ]
        );
        assert!(dce.call_up());
        assert!(!dce.on_incoming_call(t(1)), "busy with the call");
    }
}
