//! The applications at the two ends of a connection: what the sending one writes (a bulk
//! transfer of N bytes, an unbounded source, telnet keystrokes at exponential gaps, or a relay
//! writing what it moved) and what the receiving one read, and when the connection finished.
//!
//! The engine decides when things happen (its `Start`, `Stop` and `Message` events, a segment
//! reaching the receiver); `App` holds the rules: how many bytes each write is, when the next
//! keystroke comes, when the stream ends and when the last byte was read.

use crate::rng::StreamRng;
use crate::scenario::{AppSpec, FlowSpec};
use crate::tcp::sender::{AppSource, Sender};
use crate::time::{SimDuration, SimTime};

#[derive(Debug)]
pub(crate) struct App {
    spec: AppSpec,
    pub(crate) start: SimTime,
    /// When the application stops writing (a split flow's first connection only: the relays
    /// stop when the connection before them has finished).
    stop: Option<SimTime>,
    /// A connection of a short-flow class (`flows_poisson`).
    short: bool,
    started: bool,
    /// The application may still write.
    writing: bool,
    /// Bytes the application wrote (an unbounded source: what it had sent when it stopped).
    written_bytes: u64,
    /// The telnet application's stream of gaps.
    rng: Option<StreamRng>,
    /// Bytes handed to the receiving application, counted by the engine from the receiver's
    /// increments, and the instant of the last one.
    read_bytes: u64,
    last_read: Option<SimTime>,
    finish: Option<SimTime>,
}

impl App {
    /// The application of one connection of flow `f` (`first`: the flow's own source; any
    /// later connection is written by a relay, from nothing at the start), and the source its
    /// sender is built with.
    pub(crate) fn new(f: &FlowSpec, first: bool, seed: u64) -> (Self, AppSource) {
        let spec = if first {
            f.app.clone()
        } else {
            AppSpec::Bulk { size_bytes: 0 }
        };
        Self::build(f, spec, f.start, first, seed)
    }

    /// The application of one connection of a short-flow class (`flows_poisson`): a bulk
    /// transfer of `size_bytes` from `start`, its arrival.
    pub(crate) fn short_flow(f: &FlowSpec, start: SimTime, size_bytes: u64) -> (Self, AppSource) {
        let (mut app, source) = Self::build(f, AppSpec::Bulk { size_bytes }, start, true, 0);
        // The class's stop ends its arrivals, not a transfer already under way.
        app.stop = None;
        app.short = true;
        (app, source)
    }

    fn build(
        f: &FlowSpec,
        spec: AppSpec,
        start: SimTime,
        first: bool,
        seed: u64,
    ) -> (Self, AppSource) {
        let (source, writing, written_bytes, rng) = match spec {
            // A UDP flow has no connection, and a short-flow class's connections are built by
            // `short_flow`: neither writes into a TCP sender from here.
            AppSpec::Udp(_) | AppSpec::FlowsPoisson(_) => {
                (AppSource::Bulk { total_bytes: 0 }, false, 0, None)
            }
            // Either end of a request/response flow: the engine writes each request and
            // response (`write_bytes`) until the flow stops.
            AppSpec::RequestResponse(_) => (AppSource::Bulk { total_bytes: 0 }, true, 0, None),
            AppSpec::Bulk { size_bytes } => (
                AppSource::Bulk {
                    total_bytes: size_bytes,
                },
                false,
                size_bytes,
                None,
            ),
            AppSpec::Unbounded => (AppSource::Unbounded, true, 0, None),
            AppSpec::Telnet { .. } => (
                AppSource::Bulk { total_bytes: 0 },
                true,
                0,
                Some(StreamRng::derive(seed, &format!("flow:{}:app", f.name))),
            ),
        };
        let app = App {
            spec,
            start,
            stop: f.stop.filter(|_| first),
            short: false,
            started: false,
            // The relay writes until the connection before it has finished.
            writing: writing || !first,
            written_bytes,
            rng,
            read_bytes: 0,
            last_read: None,
            finish: None,
        };
        (app, source)
    }

    /// The application starts; true if it then writes keystrokes (`next_message_at`).
    pub(crate) fn start(&mut self) -> bool {
        self.started = true;
        matches!(self.spec, AppSpec::Telnet { .. })
    }

    /// A connection of a short-flow class (built by `short_flow`).
    pub(crate) fn is_short_flow(&self) -> bool {
        self.short
    }

    pub(crate) fn started(&self) -> bool {
        self.started
    }

    /// The application stops writing; false if it already had. An unbounded source's stream
    /// ends at what it had handed to the sender.
    pub(crate) fn stop(&mut self, sender: &mut Sender) -> bool {
        if !self.writing {
            return false;
        }
        self.writing = false;
        if self.spec == AppSpec::Unbounded {
            sender.end_of_data();
            self.written_bytes = sender.snd_max();
        }
        true
    }

    /// A telnet keystroke: its bytes go to the sender; false if this application writes none.
    pub(crate) fn write_message(&mut self, sender: &mut Sender) -> bool {
        let AppSpec::Telnet { message_bytes, .. } = self.spec else {
            return false;
        };
        if !self.writing {
            return false;
        }
        sender.push_bytes(u64::from(message_bytes));
        self.written_bytes += u64::from(message_bytes);
        true
    }

    /// When the next telnet keystroke comes, after an exponential gap (rounded to the
    /// nanosecond, at least 1) from `now`; none past `end` or from the instant it stops.
    pub(crate) fn next_message_at(&mut self, now: SimTime, end: SimTime) -> Option<SimTime> {
        let (AppSpec::Telnet { mean_interval, .. }, Some(rng)) = (&self.spec, self.rng.as_mut())
        else {
            return None;
        };
        let gap_ns = libm::round(rng.exponential(mean_interval.as_nanos() as f64));
        // `as` saturates; durations are bounded by the scenario, so the sum stays in range.
        let gap = SimDuration::from_nanos((gap_ns as u64).clamp(1, u64::MAX / 4));
        let at = SimTime::from_nanos(now.as_nanos().saturating_add(gap.as_nanos()));
        (at <= end && self.stop.is_none_or(|s| at < s)).then_some(at)
    }

    /// How many bytes a relay writing this stream holds unacknowledged.
    pub(crate) fn held_bytes(&self, sender: &Sender) -> u64 {
        self.written_bytes - sender.snd_una()
    }

    /// A request or a response of `bytes` is written.
    pub(crate) fn write_bytes(&mut self, sender: &mut Sender, bytes: u64) {
        sender.push_bytes(bytes);
        self.written_bytes += bytes;
    }

    /// A relay writes `bytes` it moved from the connection before.
    pub(crate) fn relay_write(&mut self, sender: &mut Sender, bytes: u64) {
        sender.push_bytes(bytes);
        self.written_bytes += bytes;
    }

    /// A relay ends the stream: the connection before it finished and was drained. False if it
    /// had already.
    pub(crate) fn relay_end(&mut self, sender: &mut Sender) -> bool {
        if !self.writing {
            return false;
        }
        self.writing = false;
        sender.end_of_data();
        true
    }

    /// The receiving application read `bytes` more at `now`.
    pub(crate) fn on_read(&mut self, now: SimTime, bytes: u64) {
        self.read_bytes += bytes;
        self.last_read = Some(now);
    }

    /// A connection is finished when its application wrote its last byte and that byte reached
    /// the receiving application; true the one time it becomes so.
    pub(crate) fn try_finish(&mut self, now: SimTime) -> bool {
        if self.finish.is_none() && !self.writing && self.read_bytes >= self.written_bytes {
            self.finish = Some(self.last_read.unwrap_or(now));
            return true;
        }
        false
    }

    pub(crate) fn writing(&self) -> bool {
        self.writing
    }

    pub(crate) fn written_bytes(&self) -> u64 {
        self.written_bytes
    }

    pub(crate) fn read_bytes(&self) -> u64 {
        self.read_bytes
    }

    pub(crate) fn finish(&self) -> Option<SimTime> {
        self.finish
    }

    /// The end of the span the application was active in (see `active_end_with`).
    pub(crate) fn active_end(&self, sim_end: SimTime) -> SimTime {
        self.active_end_with(self.finish, sim_end)
    }

    /// The end of the span this source was active in, if its last byte reached the far end at
    /// `finish` (a split flow's: at the end of its last connection): a bulk source wrote
    /// everything at its start, so its stop (if any) means nothing; an interactive or
    /// unbounded source was active until it stopped. An unfinished one, to `sim_end`.
    pub(crate) fn active_end_with(&self, finish: Option<SimTime>, sim_end: SimTime) -> SimTime {
        match (finish, &self.spec) {
            (Some(t), AppSpec::Bulk { .. }) => t,
            (Some(t), _) => t.max(self.stop.unwrap_or(t)),
            (None, _) => sim_end,
        }
    }

    /// The bytes the application wrote, as reported: none for an unbounded source still writing.
    pub(crate) fn reported_bytes(&self) -> Option<u64> {
        match (&self.spec, self.writing) {
            (AppSpec::Unbounded, true) => None,
            _ => Some(self.written_bytes),
        }
    }
}
