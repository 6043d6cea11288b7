//! The wall-clock loops' wait (the daemon's and the simulated modems'): how long one turn may
//! sleep in `poll` before its next wakeup.

use farlink_core::time::SimTime;

/// How long a loop turn may wait in `poll` for its next wakeup `wake`: whole milliseconds,
/// rounded up so that it never wakes before it is due, at most `max_wait_ms`.
pub(crate) fn poll_timeout_ms(now: SimTime, wake: SimTime, max_wait_ms: u64) -> u64 {
    wake.saturating_since(now)
        .as_nanos()
        .div_ceil(1_000_000)
        .min(max_wait_ms)
}
