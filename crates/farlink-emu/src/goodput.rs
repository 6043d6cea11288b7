//! The bytes a receiving application has read, over time: the emulator's `goodput` trace.
//!
//! A sink notes every read it makes ([`ReadRecord::read`]); the record keeps one row per
//! bucket of time (the last read in it, with the bytes read in all by then), so that a row's
//! instant is a real read's within the bucket's width and a long run stays bounded: when the
//! rows reach [`MAX_ROWS`] the bucket doubles and the rows are merged into it. The report turns
//! each flow's record into the simulator's `goodput` columns (`time_ns`, `flow`,
//! `delivered_bytes`), from which `farlink.bonding` reads the stall after each call drop the
//! same way for both engines (docs/multipath.md).

use farlink_core::trace::GoodputTrace;

/// The first bucket: 10 ms, as often as `TCP_INFO` is sampled (`bulk::SAMPLE_INTERVAL`); a
/// stall read from the record is off by at most this.
pub(crate) const BUCKET_NS: u64 = 10_000_000;

/// Rows kept before the bucket doubles: 2^17 rows of 16 bytes (2 MiB) cover 22 minutes of
/// reads at 10 ms, a real-speed Iridium transfer of a megabyte at 20 ms.
pub(crate) const MAX_ROWS: usize = 1 << 17;

/// What one sink read, bucket by bucket (module notes).
#[derive(Clone, Debug)]
pub(crate) struct ReadRecord {
    bucket_ns: u64,
    max_rows: usize,
    /// (monotonic ns of the bucket's last read, bytes read in all by then), in time order.
    rows: Vec<(u64, u64)>,
}

impl Default for ReadRecord {
    fn default() -> Self {
        ReadRecord::with_bounds(BUCKET_NS, MAX_ROWS)
    }
}

impl ReadRecord {
    /// A record with buckets of `bucket_ns` at first and at most `max_rows` rows (at least 2).
    pub(crate) fn with_bounds(bucket_ns: u64, max_rows: usize) -> Self {
        ReadRecord {
            bucket_ns: bucket_ns.max(1),
            max_rows: max_rows.max(2),
            rows: Vec::new(),
        }
    }

    /// A read at monotonic `at_ns` after which the application had read `total_bytes` in all.
    pub(crate) fn read(&mut self, at_ns: u64, total_bytes: u64) {
        if !self.in_last_bucket(at_ns) {
            while self.rows.len() >= self.max_rows {
                self.coarsen();
            }
        }
        if self.in_last_bucket(at_ns) {
            if let Some(last) = self.rows.last_mut() {
                *last = (at_ns, total_bytes);
            }
        } else {
            self.rows.push((at_ns, total_bytes));
        }
    }

    /// The rows: (monotonic ns of a read, bytes read in all by then).
    pub(crate) fn rows(&self) -> &[(u64, u64)] {
        &self.rows
    }

    /// The width of a bucket now.
    #[cfg(test)]
    fn bucket_ns(&self) -> u64 {
        self.bucket_ns
    }

    fn in_last_bucket(&self, at_ns: u64) -> bool {
        self.rows
            .last()
            .is_some_and(|&(t, _)| t / self.bucket_ns == at_ns / self.bucket_ns)
    }

    /// Doubles the bucket, keeping the last row of each new bucket.
    fn coarsen(&mut self) {
        self.bucket_ns = self.bucket_ns.saturating_mul(2);
        let b = self.bucket_ns;
        let mut kept = 0;
        for i in 0..self.rows.len() {
            let row = self.rows[i];
            if kept > 0 && self.rows[kept - 1].0 / b == row.0 / b {
                self.rows[kept - 1] = row;
            } else {
                self.rows[kept] = row;
                kept += 1;
            }
        }
        self.rows.truncate(kept);
    }
}

/// Flow `flow`'s record appended to `trace`, its instants counted from the run's start
/// (monotonic `t0_ns`).
pub(crate) fn append(trace: &mut GoodputTrace, flow: u32, record: &ReadRecord, t0_ns: u64) {
    for &(at_ns, total) in record.rows() {
        trace.time_ns.push(at_ns.saturating_sub(t0_ns));
        trace.flow.push(flow);
        trace.delivered_bytes.push(total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn one_row_per_bucket_holds_its_last_read() {
        let mut r = ReadRecord::with_bounds(10 * MS, 100);
        for (at, total) in [
            (1, 100),
            (4, 250),
            (9, 300),
            (12, 400),
            (35, 500),
            (39, 900),
        ] {
            r.read(at * MS, total);
        }
        assert_eq!(r.rows(), &[(9 * MS, 300), (12 * MS, 400), (39 * MS, 900)]);
    }

    #[test]
    fn a_stall_shows_as_the_gap_between_rows_within_a_bucket() {
        // Reads every 2 ms, none from 101 ms to 1,503 ms: the gap between the rows around it
        // is the stall, within the 10 ms bucket.
        let mut r = ReadRecord::default();
        let mut total = 0;
        let reads = (0..=50).map(|k| 2 * k).chain((0..50).map(|k| 1503 + 2 * k));
        for at in reads {
            total += 1448;
            r.read(at * MS, total);
        }
        let gap = r.rows().windows(2).map(|w| w[1].0 - w[0].0).max().unwrap();
        assert!((1403 * MS..1413 * MS).contains(&gap), "{gap}");
        assert_eq!(r.rows().last(), Some(&(1601 * MS, total)));
    }

    #[test]
    fn a_full_record_doubles_its_bucket_and_stays_bounded() {
        let mut r = ReadRecord::with_bounds(10 * MS, 8);
        // One read every 10 ms for 1 s: 100 buckets of the first width.
        for k in 0..100u64 {
            r.read(k * 10 * MS + MS, (k + 1) * 1000);
        }
        assert!(r.rows().len() <= 8, "{}", r.rows().len());
        assert_eq!(r.bucket_ns(), 160 * MS);
        // The rows are still real reads in time order, the last read kept.
        assert!(r
            .rows()
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(r
            .rows()
            .iter()
            .all(|&(t, b)| (t - MS) / (10 * MS) + 1 == b / 1000));
        assert_eq!(r.rows().last(), Some(&(991 * MS, 100_000)));
    }

    #[test]
    fn the_trace_counts_from_the_runs_start() {
        let mut r = ReadRecord::default();
        r.read(5_000 * MS, 10);
        r.read(5_500 * MS, 30);
        let mut trace = GoodputTrace::default();
        append(&mut trace, 3, &r, 4_000 * MS);
        assert_eq!(trace.time_ns, vec![1_000 * MS, 1_500 * MS]);
        assert_eq!(trace.flow, vec![3, 3]);
        assert_eq!(trace.delivered_bytes, vec![10, 30]);
    }
}
