//! The figures of `simulate`'s flow summary that the kernel keeps in its own terms: entries into
//! fast recovery (per namespace, attributed to a flow where it sends alone there) and the time
//! held back by each cause (from the kernel's chronographs); `null` where the kernel cannot say
//! (docs/emulator.md, "What the result holds").

use std::collections::BTreeMap;

use farlink_core::world::limit_fields;

use crate::bulk::SenderOutcome;
use crate::netns::Netns;
use crate::nstat;
use crate::tcpinfo::TcpInfo;

/// Per flow, entries into fast recovery where they are that flow's alone; and all flows'.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recoveries {
    pub(crate) per_flow: Vec<Option<u64>>,
    pub(crate) total: Option<u64>,
}

/// Reads the recoveries of each namespace with a kernel sender. `sender_ns` yields the
/// namespace of each flow's sender; `farlink[k]`: flow `k` is farlink's sender, which counts its
/// own in `senders[k]`.
pub(crate) fn recoveries(
    namespaces: &[Netns],
    farlink: &[bool],
    sender_ns: impl Iterator<Item = usize>,
    senders: &[SenderOutcome],
) -> Recoveries {
    let kernel_sender_ns: Vec<Option<usize>> = sender_ns
        .zip(farlink)
        .map(|(ns, &ours)| (!ours).then_some(ns))
        .collect();
    let kernel_sender_ns = kernel_sender_ns.as_slice();
    let counted: Vec<Option<u64>> = namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            kernel_sender_ns
                .contains(&Some(i))
                .then(|| nstat::recoveries(ns).ok().flatten())
                .flatten()
        })
        .collect();
    let own: Vec<Option<u64>> = senders.iter().map(|s| s.fast_retransmits).collect();
    attribute(&counted, kernel_sender_ns, &own)
}

/// Each flow's recoveries from its namespace's count `counted[ns]` where it sends alone there
/// (else `None`), or its sender's own count `own[k]`; and the total of both kinds.
fn attribute(
    counted: &[Option<u64>],
    kernel_sender_ns: &[Option<usize>],
    own: &[Option<u64>],
) -> Recoveries {
    let per_flow = kernel_sender_ns
        .iter()
        .enumerate()
        .map(|(k, ns)| match ns {
            Some(i) if kernel_sender_ns.iter().filter(|&n| n == ns).count() == 1 => {
                counted.get(*i).copied().flatten()
            }
            Some(_) => None,
            None => own.get(k).copied().flatten(),
        })
        .collect();
    let mut used: Vec<usize> = kernel_sender_ns.iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    let kernel: Option<u64> = used
        .iter()
        .map(|&i| counted.get(i).copied().flatten())
        .sum();
    let farlink: Option<u64> = kernel_sender_ns
        .iter()
        .zip(own)
        .filter(|(ns, _)| ns.is_none())
        .map(|(_, n)| *n)
        .sum();
    Recoveries {
        per_flow,
        total: kernel.zip(farlink).map(|(a, b)| a + b),
    }
}

/// `limited_s` and `limited_by` from the kernel's chronographs over `active_ns` (from the
/// first write to the finish, or the end of the run).
pub(crate) fn limits(
    info: &TcpInfo,
    active_ns: u64,
) -> (Option<BTreeMap<String, Option<f64>>>, Option<String>) {
    let Some(c) = info.chrono_us else {
        return (None, None);
    };
    let ns = |us: u64| us.saturating_mul(1000);
    let busy = ns(c.busy_us);
    let rwnd = ns(c.rwnd_limited_us);
    let sndbuf = ns(c.sndbuf_limited_us);
    // In `Limit::ALL`'s order; `link` counted as nothing so that it is never the most.
    let nanos = [
        active_ns.saturating_sub(busy),
        rwnd,
        sndbuf,
        busy.saturating_sub(rwnd + sndbuf),
        0,
    ];
    let (seconds, most) = limit_fields(nanos);
    let seconds = seconds
        .into_iter()
        .map(|(k, v)| {
            let v = v.filter(|_| k != "link");
            (k, v)
        })
        .collect();
    (Some(seconds), most)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpinfo::Chrono;

    #[test]
    fn the_chronographs_split_the_active_time_among_the_causes() {
        let info = TcpInfo {
            chrono_us: Some(Chrono {
                busy_us: 8_000_000,
                rwnd_limited_us: 1_000_000,
                sndbuf_limited_us: 500_000,
            }),
            ..Default::default()
        };
        let (s, by) = limits(&info, 10_000_000_000);
        let s = s.unwrap();
        assert_eq!(s["application"], Some(2.0));
        assert_eq!(s["receive_window"], Some(1.0));
        assert_eq!(s["send_buffer"], Some(0.5));
        assert_eq!(s["congestion_window"], Some(6.5));
        assert_eq!(s["link"], None);
        assert_eq!(by.as_deref(), Some("congestion_window"));
        assert_eq!(limits(&TcpInfo::default(), 1), (None, None));
    }

    #[test]
    fn a_namespace_shared_by_two_senders_counts_for_neither_but_for_the_total() {
        // Flows 0 and 1 send from namespace 0, flow 2 from namespace 1, flow 3 is farlink's.
        let r = attribute(
            &[Some(5), Some(2)],
            &[Some(0), Some(0), Some(1), None],
            &[None, None, None, Some(3)],
        );
        assert_eq!(r.per_flow, vec![None, None, Some(2), Some(3)]);
        assert_eq!(r.total, Some(10));
        // A namespace whose counters could not be read leaves the total unknown.
        let r = attribute(&[None], &[Some(0)], &[None]);
        assert_eq!((r.per_flow, r.total), (vec![None], None));
    }
}
