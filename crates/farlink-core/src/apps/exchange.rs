//! A request/response exchange (`request_response`), sans-I/O: a client writes a request of a
//! drawn size on its connection to the server; once the server has read all of it, the server
//! writes a response of a drawn size on its connection back; once the client has read all of
//! that, the exchange is complete (its response time: from the request's write to the
//! response's last byte read) and the client thinks for an exponential time before the next.
//! One exchange is outstanding at a time, as a client waiting for each answer does.
//!
//! Streams: `flow:<name>:requests`, `flow:<name>:responses` (one draw per exchange each) and
//! `flow:<name>:think`.

use super::draw;
use crate::rng::StreamRng;
use crate::scenario::RequestResponseSpec;
use crate::time::{SimDuration, SimTime};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Thinking, or not started.
    Idle,
    /// The request ends at this byte of the request stream; written at `start`.
    Request { end: u64, start: SimTime },
    /// The response ends at this byte of the response stream.
    Response { end: u64, start: SimTime },
}

/// The exchanges of one request/response flow.
#[derive(Debug)]
pub struct Exchanges {
    spec: RequestResponseSpec,
    requests: StreamRng,
    responses: StreamRng,
    think: StreamRng,
    state: State,
    requested_bytes: u64,
    responded_bytes: u64,
    started: u64,
    /// Response times of the completed exchanges, ns.
    times_ns: Vec<u64>,
    stopped: bool,
}

impl Exchanges {
    pub fn new(spec: RequestResponseSpec, seed: u64, name: &str) -> Self {
        let stream = |what: &str| StreamRng::derive(seed, &format!("flow:{name}:{what}"));
        Exchanges {
            spec,
            requests: stream("requests"),
            responses: stream("responses"),
            think: stream("think"),
            state: State::Idle,
            requested_bytes: 0,
            responded_bytes: 0,
            started: 0,
            times_ns: Vec::new(),
            stopped: false,
        }
    }

    /// The client sends its next request at `now`: the bytes to write on the request
    /// connection; `None` once stopped or while an exchange is outstanding.
    pub fn request(&mut self, now: SimTime) -> Option<u64> {
        if self.stopped || self.state != State::Idle {
            return None;
        }
        let bytes = draw::size_bytes(&mut self.requests, &self.spec.request);
        self.requested_bytes += bytes;
        self.started += 1;
        self.state = State::Request {
            end: self.requested_bytes,
            start: now,
        };
        Some(bytes)
    }

    /// The server has read `read_bytes` of the request stream: the response to write on the
    /// response connection once the outstanding request is all read.
    pub fn on_server_read(&mut self, read_bytes: u64) -> Option<u64> {
        let State::Request { end, start } = self.state else {
            return None;
        };
        if read_bytes < end {
            return None;
        }
        let bytes = draw::size_bytes(&mut self.responses, &self.spec.response);
        self.responded_bytes += bytes;
        self.state = State::Response {
            end: self.responded_bytes,
            start,
        };
        Some(bytes)
    }

    /// The client has read `read_bytes` of the response stream at `now`: once the outstanding
    /// response is all read, the exchange completes and the think time before the next
    /// request is returned (none once stopped).
    pub fn on_client_read(&mut self, now: SimTime, read_bytes: u64) -> Option<SimDuration> {
        let State::Response { end, start } = self.state else {
            return None;
        };
        if read_bytes < end {
            return None;
        }
        self.times_ns.push(now.saturating_since(start).as_nanos());
        self.state = State::Idle;
        if self.stopped {
            return None;
        }
        let mean_ns = self.spec.think_mean.as_nanos() as f64;
        let gap_ns = libm::round(self.think.exponential(mean_ns)) as u64;
        Some(SimDuration::from_nanos(gap_ns.min(u64::MAX / 4)))
    }

    /// The client stops: no request after this one; true if none is outstanding (the server
    /// may then end its stream).
    pub fn stop(&mut self) -> bool {
        self.stopped = true;
        self.idle()
    }

    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// No exchange outstanding.
    pub fn idle(&self) -> bool {
        self.state == State::Idle
    }

    pub fn started(&self) -> u64 {
        self.started
    }

    pub fn response_times_ns(&self) -> &[u64] {
        &self.times_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::SizeDist;

    #[test]
    fn an_exchange_waits_for_the_whole_request_and_the_whole_response() {
        let spec = RequestResponseSpec {
            request: SizeDist::Fixed { bytes: 300 },
            response: SizeDist::Fixed { bytes: 5000 },
            think_mean: SimDuration::from_millis(500),
        };
        let mut ex = Exchanges::new(spec, 1, "rr");
        let t = |ms: u64| SimTime::from_nanos(ms * 1_000_000);
        assert_eq!(ex.request(t(0)), Some(300));
        assert_eq!(ex.request(t(1)), None, "one outstanding at a time");
        assert_eq!(ex.on_server_read(299), None);
        assert_eq!(ex.on_server_read(300), Some(5000));
        assert_eq!(ex.on_client_read(t(100), 4999), None);
        assert!(ex.on_client_read(t(150), 5000).is_some());
        assert_eq!(ex.response_times_ns(), &[150_000_000]);
        // The next request ends at byte 600 of the request stream.
        assert_eq!(ex.request(t(700)), Some(300));
        assert_eq!(ex.on_server_read(599), None);
        assert!(!ex.stop(), "a request is outstanding");
        assert_eq!(ex.on_server_read(600), Some(5000));
        assert_eq!(
            ex.on_client_read(t(900), 10_000),
            None,
            "stopped: no think time"
        );
        assert!(ex.idle() && ex.request(t(1000)).is_none());
        assert_eq!(ex.started(), 2);
    }
}
