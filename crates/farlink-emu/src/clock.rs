//! The emulator's clock: CLOCK_MONOTONIC in ns, read by the driver, the workload and the
//! measurements alike.

use nix::sys::time::TimeSpec;
use nix::time::clock_gettime;

/// CLOCK_MONOTONIC in ns: the driver's clock, and the workload's.
pub fn monotonic_ns() -> u64 {
    let t = clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap_or(TimeSpec::new(0, 0));
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}
