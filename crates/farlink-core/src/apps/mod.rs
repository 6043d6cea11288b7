//! What flows carry: the applications at the ends of a flow, each sans-I/O (handed `now`,
//! saying when it next wants to act), driven by the engine in `world/`.
//!
//! - `stream`: the application at each end of a TCP connection: a bulk transfer of N bytes,
//!   an unbounded source, telnet keystrokes at exponential gaps, a relay's writes.

pub(crate) mod stream;
