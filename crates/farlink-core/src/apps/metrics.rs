//! What the competing-traffic applications report: percentiles, Jain's fairness index and the
//! serialisable per-flow traffic figures that `world::FlowSummary` carries (flattened into
//! it, absent for the TCP applications that have none).

use serde::Serialize;

/// Percentiles of a sample, by nearest rank (the smallest value with at least that fraction
/// of the sample at or below it), and its mean.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
}

impl Percentiles {
    /// Of `values` (sorted here); `None` for an empty sample.
    pub fn of(values: &mut [f64]) -> Option<Percentiles> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let rank = |q: f64| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Percentiles {
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            mean: values.iter().sum::<f64>() / n as f64,
        })
    }

    /// Of nanosecond values, in seconds.
    pub fn of_nanos(values: &[u64]) -> Option<Percentiles> {
        let mut s: Vec<f64> = values.iter().map(|&v| v as f64 / 1e9).collect();
        Percentiles::of(&mut s)
    }
}

/// Jain's fairness index (Jain, Chiu and Hawe 1984): `(sum x)^2 / (n sum x^2)`, 1 when all
/// are equal, 1/n when one takes everything. `None` for fewer than two values or all zero.
pub fn jain_index(values: &[f64]) -> Option<f64> {
    let n = values.len();
    let (sum, sum_sq) = values
        .iter()
        .fold((0.0, 0.0), |(s, q), &x| (s + x, q + x * x));
    (n >= 2 && sum_sq > 0.0).then(|| sum * sum / (n as f64 * sum_sq))
}

/// The traffic figures of a UDP flow or a short-flow class; each key absent where it does
/// not apply (`skip_serializing_if`), so a TCP flow's summary is unchanged.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TrafficSummary {
    /// UDP: datagrams the source sent and the receiver got.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_sent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_received: Option<u64>,
    /// UDP: datagrams dropped on the route over those dropped or received (those still in
    /// flight at the end are neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_rate: Option<f64>,
    /// UDP: one-way delay of each datagram received, sender's write to receiver's read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_way_delay_s: Option<Percentiles>,
    /// UDP: RFC 3550 section 6.4.1's interarrival jitter estimate as it stood after each
    /// datagram received (from the second on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_s: Option<Percentiles>,
    /// Short flows: connections that arrived within the run, and those that finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows_arrived: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows_finished: Option<u64>,
    /// Short flows: completion times of the finished connections (arrival, SYN included, to
    /// the last byte read), overall and by size bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fct_s: Option<FctSummary>,
    /// Short flows: each finished connection's completion time over the unloaded path's for
    /// its size (`short_flows::unloaded_fct_s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<Percentiles>,
    /// Request/response: exchanges begun (requests written) and completed (responses read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exchanges: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exchanges_completed: Option<u64>,
    /// Request/response: from a request's write to its response's last byte read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_time_s: Option<Percentiles>,
}

/// Flow completion times, seconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FctSummary {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
    /// Per size bucket holding at least one arrival, smallest first.
    pub by_size: Vec<SizeBucket>,
}

/// The connections of one size range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeBucket {
    /// Sizes in `[min_bytes, max_bytes)`; `max_bytes` null for the last, open bucket.
    pub min_bytes: u64,
    pub max_bytes: Option<u64>,
    pub flows: u64,
    pub finished: u64,
    /// Completion times of its finished connections; null if none finished.
    pub fct_s: Option<Percentiles>,
    pub slowdown: Option<Percentiles>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let p = Percentiles::of(&mut v).unwrap();
        assert_eq!((p.p50, p.p90, p.p99, p.mean), (50.0, 90.0, 99.0, 50.5));
        assert_eq!(Percentiles::of(&mut []), None);
    }

    #[test]
    fn jain_index_is_one_for_equal_shares_and_one_over_n_for_one_taker() {
        assert_eq!(jain_index(&[3.0, 3.0, 3.0]), Some(1.0));
        assert_eq!(jain_index(&[5.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert_eq!(jain_index(&[5.0]), None);
    }
}
