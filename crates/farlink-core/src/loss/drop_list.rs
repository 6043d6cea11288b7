//! Scripted losses: the packets with given ordinal numbers are lost, every other one passes.
//!
//! Seed 003 section 4.4.2 corrupts "two consecutive packets, namely the 2000th and the 2001st
//! packet" of a GEO satellite hop and nothing else; a random model cannot say that. The list
//! counts the packets (or frames) that reach the receiving end of one link direction, from 1, in
//! the order they arrive: retransmissions count like any other packet, and packets dropped
//! earlier (by the queue) never arrive and are not counted.

use super::{ConfigError, LossModel};
use crate::time::SimTime;

/// Loses exactly the packets whose 1-based arrival numbers are listed.
#[derive(Clone, Debug)]
pub struct DropList {
    /// Strictly increasing arrival numbers, from 1.
    packets: Vec<u64>,
    /// Index into `packets` of the next number to lose.
    next: usize,
    /// Packets decided so far.
    arrived: u64,
}

impl DropList {
    /// A model losing the listed packets. The numbers must be strictly increasing and at least
    /// 1 (the first packet to arrive is packet 1); an empty list loses nothing.
    pub fn new(packets: Vec<u64>) -> Result<Self, ConfigError> {
        if let Some(&first) = packets.first() {
            if first == 0 {
                return Err(ConfigError::new(
                    "packets",
                    "expected packet numbers from 1 (the first packet to arrive is 1), got 0",
                ));
            }
        }
        if let Some(w) = packets.windows(2).find(|w| w[1] <= w[0]) {
            return Err(ConfigError::new(
                "packets",
                format!(
                    "expected strictly increasing packet numbers, got {} after {}",
                    w[1], w[0]
                ),
            ));
        }
        Ok(DropList {
            packets,
            next: 0,
            arrived: 0,
        })
    }

    /// The listed packet numbers.
    pub fn packets(&self) -> &[u64] {
        &self.packets
    }
}

impl LossModel for DropList {
    /// Counts the arrival and loses it if its number is the next one listed. `now` is unused:
    /// the script is in packets, not time.
    fn is_lost(&mut self, _now: SimTime) -> bool {
        self.arrived += 1;
        if self.packets.get(self.next) == Some(&self.arrived) {
            self.next += 1;
            true
        } else {
            false
        }
    }

    /// A finite list loses a vanishing fraction of an endless stream: 0.
    fn analytic_loss_rate(&self) -> f64 {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lost_numbers(m: &mut DropList, n: u64) -> Vec<u64> {
        (1..=n)
            .filter(|&i| m.is_lost(SimTime::from_nanos(i)))
            .collect()
    }

    #[test]
    fn loses_exactly_the_listed_packets() {
        let mut m = DropList::new(vec![1, 2000, 2001, 5000]).unwrap();
        assert_eq!(lost_numbers(&mut m, 10_000), vec![1, 2000, 2001, 5000]);
        // The script is used up: nothing more is lost.
        assert_eq!(lost_numbers(&mut m, 10_000), Vec::<u64>::new());
    }

    #[test]
    fn numbers_beyond_the_run_are_never_reached() {
        let mut m = DropList::new(vec![3, 1_000_000]).unwrap();
        assert_eq!(lost_numbers(&mut m, 100), vec![3]);
    }

    #[test]
    fn empty_list_loses_nothing_and_rate_is_zero() {
        let mut m = DropList::new(Vec::new()).unwrap();
        assert!(lost_numbers(&mut m, 1000).is_empty());
        assert_eq!(m.analytic_loss_rate(), 0.0);
        assert_eq!(m.analytic_mean_burst_len(), None);
    }

    #[test]
    fn rejects_zero_and_unordered_numbers() {
        let e = DropList::new(vec![0, 5]).unwrap_err();
        assert_eq!(e.param, "packets");
        assert!(e.message.contains("from 1"), "{e}");
        let e = DropList::new(vec![5, 5]).unwrap_err();
        assert!(e.message.contains("got 5 after 5"), "{e}");
        assert!(DropList::new(vec![7, 3]).is_err());
    }
}
