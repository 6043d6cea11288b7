//! A namespace's TCP counters (`/proc/net/netstat`, what `nstat` prints): the kernel keeps
//! them per network namespace, not per socket, so they are a flow's only where the flow's
//! sender is the only one sending in its namespace.

use std::collections::BTreeMap;

use crate::error::EmuError;
use crate::netns::Netns;

/// The `TcpExt` counters of the calling thread's namespace (`/proc/thread-self`: `/proc/self`
/// is the process's, whose main thread is in the host's namespace).
fn tcp_ext() -> std::io::Result<BTreeMap<String, u64>> {
    let text = std::fs::read_to_string("/proc/thread-self/net/netstat")?;
    Ok(parse_tcp_ext(&text))
}

/// The `TcpExt:` name line and the value line after it, as a map.
fn parse_tcp_ext(text: &str) -> BTreeMap<String, u64> {
    parse_group(text, "TcpExt:")
}

/// The name line of group `prefix` (`TcpExt:`, `IpExt:`) and the value line after it.
fn parse_group(text: &str, prefix: &str) -> BTreeMap<String, u64> {
    let mut rows = text.lines().filter(|l| l.starts_with(prefix));
    let (Some(names), Some(values)) = (rows.next(), rows.next()) else {
        return BTreeMap::new();
    };
    names
        .split_whitespace()
        .skip(1)
        .zip(values.split_whitespace().skip(1))
        .filter_map(|(n, v)| Some((n.to_owned(), v.parse().ok()?)))
        .collect()
}

/// Entries into fast recovery of the namespace's connections so far: `TCPSackRecovery` plus
/// `TCPRenoRecovery`, each counted once per recovery by `tcp_enter_recovery` (`simulate`'s
/// `fast_retransmits`; `TCPFastRetrans` counts retransmitted segments instead). `None` if the
/// kernel does not say.
pub(crate) fn recoveries(ns: &Netns) -> Result<Option<u64>, EmuError> {
    let counters = ns
        .run(tcp_ext)?
        .map_err(|e| EmuError::sys("/proc/net/netstat", e))?;
    Ok(recoveries_of(&counters))
}

/// IPv4 packets the namespace received marked CE (`IpExt` `InCEPkts`, counted by
/// `ip_rcv_core` from the header's ECN field); `None` if the kernel does not say.
pub(crate) fn ce_received(ns: &Netns) -> Result<Option<u64>, EmuError> {
    let text = ns
        .run(|| std::fs::read_to_string("/proc/thread-self/net/netstat"))?
        .map_err(|e| EmuError::sys("/proc/net/netstat", e))?;
    Ok(parse_group(&text, "IpExt:").get("InCEPkts").copied())
}

fn recoveries_of(counters: &BTreeMap<String, u64>) -> Option<u64> {
    let sack = counters.get("TCPSackRecovery")?;
    let reno = counters.get("TCPRenoRecovery")?;
    Some(sack + reno)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recoveries_are_the_sum_of_the_sack_and_reno_entries() {
        let text = "TcpExt: SyncookiesSent TCPRenoRecovery TCPSackRecovery TCPFastRetrans\n\
                    TcpExt: 0 2 5 31\n\
                    IpExt: InNoRoutes\nIpExt: 0\n";
        let c = parse_tcp_ext(text);
        assert_eq!(c.get("TCPFastRetrans"), Some(&31));
        assert_eq!(recoveries_of(&c), Some(7));
        assert_eq!(recoveries_of(&parse_tcp_ext("IpExt: A\nIpExt: 1\n")), None);
        let ip = parse_group(text, "IpExt:");
        assert_eq!(ip.get("InNoRoutes"), Some(&0));
    }
}
