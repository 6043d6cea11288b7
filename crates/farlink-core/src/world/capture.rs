//! A run's taps as a pcap capture: one file per tap of the scenario's `pcap`, in time order,
//! with a synthetic handshake per flow so that Wireshark and tcptrace see the options agreed.
//!
//! This module only joins a [`RunResult`] to the writer of [`crate::pcap`]; the wire format,
//! the addresses, ports and initial sequence numbers are all that module's. What is decided
//! here:
//!
//! * **Addresses**: [`NodeAddresses`] over the run's node names; a flow's sender → receiver
//!   direction is [`flow_endpoints`] from its `from` node to its `to` node. A data segment is
//!   written sender → receiver and an ACK receiver → sender, whichever direction of the link
//!   (`a -> b` or `b -> a`) carried it: a flow whose data goes `b -> a` has its data on the
//!   link's reverse direction, still with the flow's sender as IP source.
//! * **Initial sequence numbers**: [`default_isn`] of each direction's endpoints, the sender's
//!   from the sender → receiver endpoints and the receiver's from the reversed ones.
//! * **Handshakes**: a flow whose handshake was simulated (`tcp.handshake`) has its real SYN,
//!   SYN-ACK and ACK among the taps, written like any packet (the writer maps a SYN's
//!   sequence number to the ISN). Any other flow that has at least one packet among the
//!   tap's records gets a synthetic SYN, SYN-ACK and ACK at its start, each end offering the
//!   flow's options and receive buffer ([`SynOffer::from_tcp_options`]). A flow whose route
//!   does not pass the tap, or whose packets never reached it before the run ended, gets
//!   none: its handshake did not pass the tap either. A flow's first packet leaves its
//!   sender at its start, so it reaches the tap no earlier, and the handshake comes before
//!   it; a handshake and a packet at the same instant are written handshake first.
//! * **Time order**: a link's departures are in time order already; a link end's or a
//!   node's records, which interleave directions, are put in time order by a stable sort;
//!   handshakes are merged in by start time (ties by flow id), so the records' timestamps
//!   never go back.

use std::io::{self, Write};

use crate::pcap::{
    default_isn, flow_endpoints, Endpoints, NodeAddresses, PcapWriter, SynOffer, NODE_ADDRESS_SLOTS,
};
use crate::world::{FlowInfo, RunResult};

/// What a flow needs on the wire: its endpoints (sender → receiver) and both ISNs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wire {
    pub(crate) endpoints: Endpoints,
    pub(crate) isn_sender: u32,
    pub(crate) isn_receiver: u32,
}

pub(crate) fn wire(flow: &FlowInfo, addresses: &NodeAddresses) -> io::Result<Wire> {
    let address = |node: &str| {
        addresses.get(node).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("flow \"{}\": node \"{node}\" is not in the run", flow.name),
            )
        })
    };
    let endpoints = flow_endpoints(flow.id, address(&flow.from)?, address(&flow.to)?);
    Ok(Wire {
        endpoints,
        isn_sender: default_isn(&endpoints),
        isn_receiver: default_isn(&endpoints.reversed()),
    })
}

/// The run's node addresses, or an error when they do not fit.
pub(crate) fn node_addresses(result: &RunResult) -> io::Result<NodeAddresses> {
    addresses_of(&result.nodes)
}

/// The addresses of `nodes`, or an error when they do not fit.
pub(crate) fn addresses_of(nodes: &[String]) -> io::Result<NodeAddresses> {
    if nodes.len() > NODE_ADDRESS_SLOTS as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} nodes do not fit the {NODE_ADDRESS_SLOTS} addresses of 10.0.0.0/16",
                nodes.len()
            ),
        ));
    }
    Ok(NodeAddresses::new(nodes))
}

/// Each connection's endpoints (sender -> receiver) and ISNs, by its index in `result.flows`.
fn wires(result: &RunResult, addresses: &NodeAddresses) -> io::Result<Vec<Wire>> {
    result.flows.iter().map(|f| wire(f, addresses)).collect()
}

/// The connection's endpoints as the capture writes its data: sender -> receiver.
pub(crate) fn connection_endpoints(
    flow: &FlowInfo,
    addresses: &NodeAddresses,
) -> io::Result<Endpoints> {
    wire(flow, addresses).map(|w| w.endpoints)
}

/// Checks that `tap` (its index in the scenario's `pcap`) was listed.
pub(crate) fn tapped(result: &RunResult, tap: u32) -> io::Result<&crate::trace::TapInfo> {
    result.tap_sites.get(tap as usize).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "there is no tap {tap} (the scenario's pcap lists {})",
                result.tap_sites.len()
            ),
        )
    })
}

/// Writes the packets seen by tap `tap` (its index in the scenario's `pcap`) as a pcap
/// capture into `out`, and returns `out`: the global header, then a handshake per flow seen
/// by the tap and every [`crate::trace::TapRecord`] of the tap, both directions, in time
/// order. See the module documentation for addresses, ISNs and handshakes.
///
/// Fails with [`io::ErrorKind::InvalidInput`], never panics, when there is no such tap, the
/// run has more nodes than there are addresses ([`NODE_ADDRESS_SLOTS`]), or the result is
/// inconsistent (a tap of an unknown flow); otherwise only when `out` fails. A tap that sees
/// nothing gives a capture of the header alone.
pub fn write_pcap<W: Write>(result: &RunResult, tap: u32, out: W) -> io::Result<W> {
    let name = &tapped(result, tap)?.name;
    let addresses = node_addresses(result)?;
    let wires = wires(result, &addresses)?;
    let unknown_flow = |flow: u32| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a packet of tap {name} belongs to flow {flow}, which is not in the run"),
        )
    };
    // A node's or a link end's records interleave directions that the engine logs at
    // different moments; a stable sort puts them in time order and leaves a link tap's
    // records, which are in order already, as they are.
    let mut records: Vec<&crate::trace::TapRecord> =
        result.taps.iter().filter(|t| t.tap == tap).collect();
    records.sort_by_key(|t| t.at);

    // The flows seen by the tap, in the order their handshakes are written.
    let mut seen = vec![false; result.flows.len()];
    for tap in &records {
        *seen
            .get_mut(tap.flow as usize)
            .ok_or_else(|| unknown_flow(tap.flow))? = true;
    }
    let mut handshakes: Vec<&FlowInfo> = result
        .flows
        .iter()
        .filter(|f| !f.handshake && seen.get(f.id as usize).copied().unwrap_or(false))
        .collect();
    handshakes.sort_by_key(|f| (f.start, f.id));
    let mut handshakes = handshakes.into_iter().peekable();

    let mut w = PcapWriter::new(out)?;
    let handshake = |w: &mut PcapWriter<W>, f: &FlowInfo| {
        let x = wires.get(f.id as usize).ok_or_else(|| unknown_flow(f.id))?;
        let offer = SynOffer::from_tcp_options(&f.options, f.receive_buffer_bytes);
        w.write_handshake(
            f.start,
            &x.endpoints,
            x.isn_sender,
            x.isn_receiver,
            &offer,
            &offer,
        )
    };
    for tap in records {
        while let Some(f) = handshakes.next_if(|f| f.start <= tap.at) {
            handshake(&mut w, f)?;
        }
        let x = wires
            .get(tap.flow as usize)
            .ok_or_else(|| unknown_flow(tap.flow))?;
        if tap.data {
            w.write_segment(tap.at, &x.endpoints, &tap.seg, x.isn_sender, x.isn_receiver)?;
        } else {
            let back = x.endpoints.reversed();
            w.write_segment(tap.at, &back, &tap.seg, x.isn_receiver, x.isn_sender)?;
        }
    }
    // Only reached by a flow whose taps all precede its start, which the engine never
    // produces; kept so that every flow seen gets its handshake.
    for f in handshakes {
        handshake(&mut w, f)?;
    }
    w.flush()?;
    Ok(w.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::{
        preferred_node_address, DATA_RECEIVER_PORT, DEFAULT_TIME_ORIGIN_UNIX_SECS,
        GLOBAL_HEADER_BYTES, PCAP_MAGIC_NANOS,
    };
    use crate::scenario::parse_scenario_json;
    use crate::world::run;
    use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice};

    /// S - R - D with loss on R -> D and pcap on R-D; flow "up" goes S -> D (data forward on
    /// R-D), flow "down" D -> S starting later (data on R-D's reverse direction), flow "local"
    /// S -> R never crosses R-D.
    const SCENARIO: &str = r#"{
        "duration": "8s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "1ms"},
            {"name": "R-D", "a": "R", "b": "D", "rate": "1Mbps", "delay": "40ms",
             "queue_pkts": 20, "fwd": {"loss": {"model": "bernoulli", "p": 0.05}}}
        ],
        "flows": [
            {"name": "up", "from": "S", "to": "D", "app": {"kind": "bulk", "size": "200KB"}},
            {"name": "local", "from": "S", "to": "R", "app": {"kind": "bulk", "size": "20KB"}},
            {"name": "down", "from": "D", "to": "S", "start": "0.5s",
             "tcp": {"timestamps": false, "window_scaling": false},
             "app": {"kind": "bulk", "size": "50KB"}}
        ],
        "pcap": ["R-D"]
    }"#;

    struct Record {
        at_ns: u64,
        orig_len: u32,
        packet: Vec<u8>,
    }

    /// Reads the records of a nanosecond pcap of raw IPv4 written by [`PcapWriter`].
    fn read_records(bytes: &[u8]) -> Vec<Record> {
        let le32 = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!(le32(0), PCAP_MAGIC_NANOS);
        assert_eq!(le32(20), 101, "LINKTYPE_RAW");
        let mut records = Vec::new();
        let mut at = 24;
        while at < bytes.len() {
            let caplen = le32(at + 8) as usize;
            records.push(Record {
                at_ns: u64::from(le32(at)) * 1_000_000_000 + u64::from(le32(at + 4)),
                orig_len: le32(at + 12),
                packet: bytes[at + 16..at + 16 + caplen].to_vec(),
            });
            at += 16 + caplen;
        }
        assert_eq!(at, bytes.len(), "no truncated record");
        records
    }

    #[test]
    fn capture_holds_every_tap_and_one_handshake_per_flow_on_the_link() {
        use etherparse::TcpOptionElement;

        let sc = parse_scenario_json(SCENARIO).unwrap();
        let r = run(&sc).unwrap();
        assert!(r.summary.all_finished);
        assert!(r.summary.links[1].fwd.drops["corruption"] > 0);
        let taps: Vec<_> = r.taps.iter().filter(|t| t.link == 1).collect();
        assert_eq!(taps.len(), r.taps.len());
        // Flows 0 and 2 cross R-D, flow 1 does not.
        let mut flows_seen: Vec<u32> = taps.iter().map(|t| t.flow).collect();
        flows_seen.sort_unstable();
        flows_seen.dedup();
        assert_eq!(flows_seen, [0, 2]);
        // Flow "down" crosses R-D from D to R: its data is on the link's reverse direction.
        assert!(taps.iter().all(|t| t.forward == (t.data == (t.flow == 0))));

        let bytes = write_pcap(&r, 0, Vec::new()).unwrap();
        let records = read_records(&bytes);
        assert_eq!(records.len(), taps.len() + 3 * 2);
        assert!(records.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));

        let s = preferred_node_address("S");
        let d = preferred_node_address("D");
        assert_eq!(NodeAddresses::new(&r.nodes).get("S"), Some(s));
        let origin_ns = u64::from(DEFAULT_TIME_ORIGIN_UNIX_SECS) * 1_000_000_000;
        let mut per_flow = [0usize; 3];
        let mut taps = taps.into_iter();
        for rec in &records {
            assert_eq!(rec.orig_len as usize, rec.packet.len());
            let ip = Ipv4HeaderSlice::from_slice(&rec.packet).expect("IPv4 header");
            assert_eq!(usize::from(ip.total_len()), rec.packet.len());
            let tcp = TcpHeaderSlice::from_slice(&rec.packet[20..]).expect("TCP header");
            let payload = &rec.packet[20 + tcp.slice().len()..];
            assert_eq!(
                tcp.checksum(),
                tcp.calc_checksum_ipv4(&ip, payload).unwrap()
            );
            let at = rec.at_ns - origin_ns;
            let (src, dst) = (ip.source(), ip.destination());
            let (sender_port, receiver_port) = if tcp.destination_port() == DATA_RECEIVER_PORT {
                (tcp.source_port(), tcp.destination_port())
            } else {
                (tcp.destination_port(), tcp.source_port())
            };
            assert_eq!(receiver_port, DATA_RECEIVER_PORT);
            let flow = usize::from(sender_port - 49_152);
            // Flow 0 is S -> D, flow 2 is D -> S.
            let (sender, receiver) = if flow == 0 { (s, d) } else { (d, s) };
            let from_sender = (src, dst) == (sender, receiver);
            assert!(from_sender || (src, dst) == (receiver, sender));
            let k = per_flow[flow];
            per_flow[flow] += 1;
            if k < 3 {
                // SYN, SYN-ACK, ACK at the flow's start, the SYN carrying its options.
                assert_eq!(at, r.flows[flow].start.as_nanos());
                assert_eq!(
                    (tcp.syn(), tcp.ack()),
                    [(true, false), (true, true), (false, true)][k]
                );
                assert_eq!(from_sender, k != 1);
                assert!(payload.is_empty());
                let scaled = tcp
                    .options_iterator()
                    .any(|o| matches!(o, Ok(TcpOptionElement::WindowScale(_))));
                assert_eq!(
                    scaled,
                    k < 2 && flow == 0,
                    "window scaling offered by flow 0 only"
                );
                continue;
            }
            let tap = taps.next().expect("a tap for every other record");
            assert_eq!(tap.flow as usize, flow);
            assert_eq!(tap.at.as_nanos(), at);
            assert!(!tcp.syn());
            assert_eq!(payload.len(), tap.seg.payload_bytes as usize);
            assert_eq!(
                from_sender, tap.data,
                "data from the sender, ACKs from the receiver"
            );
        }
        assert!(taps.next().is_none());
        assert_eq!(
            per_flow[1], 0,
            "no packet of a flow that does not cross the link"
        );
    }

    #[test]
    fn identical_runs_give_identical_captures_and_a_tap_not_listed_is_refused() {
        let sc = parse_scenario_json(SCENARIO).unwrap();
        let one = write_pcap(&run(&sc).unwrap(), 0, Vec::new()).unwrap();
        let r = run(&sc).unwrap();
        assert_eq!(one, write_pcap(&r, 0, Vec::new()).unwrap());
        let err = write_pcap(&r, 1, Vec::new()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn more_nodes_than_addresses_is_an_error_not_a_panic() {
        let sc = parse_scenario_json(SCENARIO).unwrap();
        let mut r = run(&sc).unwrap();
        r.nodes
            .extend((0..NODE_ADDRESS_SLOTS).map(|i| format!("extra{i}")));
        let err = write_pcap(&r, 0, Vec::new()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("10.0.0.0/16"), "{err}");
        let err = crate::world::address_map(&r, 0).unwrap_err();
        assert!(err.to_string().contains("10.0.0.0/16"), "{err}");
    }

    #[test]
    fn a_tapped_link_nothing_crosses_gives_the_header_alone() {
        // Only flow "local", which stays on S-R.
        let mut sc: serde_json::Value = serde_json::from_str(SCENARIO).unwrap();
        sc["flows"] = serde_json::json!([sc["flows"][1].clone()]);
        let r = run(&parse_scenario_json(&sc.to_string()).unwrap()).unwrap();
        assert!(r.taps.is_empty());
        let bytes = write_pcap(&r, 0, Vec::new()).unwrap();
        assert_eq!(bytes.len(), GLOBAL_HEADER_BYTES);
    }
}
