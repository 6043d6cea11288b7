//! Durations measured in ns, kept in HDR histograms and reported as percentiles in µs: the
//! driver's departure-time error and farlink's sender's ACK-to-send latency.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The median, 99th percentile and maximum of a histogram, in µs, and how many it holds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub count: u64,
}

/// A histogram of durations in ns: 1 ns to an hour, three significant digits. Allocated once;
/// recording allocates nothing.
pub(crate) fn ns_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("constant, valid bounds")
}

impl Percentiles {
    /// The median, 99th percentile and maximum of a histogram of ns, in µs.
    pub(crate) fn of_ns(h: &Histogram<u64>) -> Percentiles {
        let us = |ns: u64| ns as f64 / 1e3;
        Percentiles {
            p50: us(h.value_at_quantile(0.5)),
            p99: us(h.value_at_quantile(0.99)),
            max: us(h.max()),
            count: h.len(),
        }
    }
}
