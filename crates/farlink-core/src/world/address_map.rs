//! The address map written beside each capture (`<capture>.addresses.json`): which node each
//! IP address stands for, which flow each connection (4-tuple) is, and where the tap sits, so
//! that a capture read on its own can be labelled with the scenario's names.
//!
//! Addresses, ports and the sender/receiver direction are those [`super::capture`] writes;
//! this module only names them.

use std::collections::BTreeMap;
use std::io;

use serde::Serialize;

use super::capture::{connection_endpoints, node_addresses, tapped};
use super::RunResult;
use crate::trace::TapInfo;

/// The version of the address map's format.
pub const ADDRESS_MAP_SCHEMA_VERSION: u32 = 1;

/// One capture's address map.
#[derive(Clone, Debug, Serialize)]
pub struct AddressMap {
    pub schema_version: u32,
    /// The capture's file name, `<tap>.pcap`.
    pub capture: String,
    /// Where the tap sits.
    pub tap: TapInfo,
    /// Every node's address, dotted quad → node name.
    pub addresses: BTreeMap<String, String>,
    /// Every connection of the run, whether the tap saw it or not (`packets` says).
    pub flows: Vec<MappedFlow>,
}

/// One connection on the wire: data goes `sender` → `receiver`, ACKs the other way.
#[derive(Clone, Debug, Serialize)]
pub struct MappedFlow {
    /// The flow's name; `name#k` for connection k of a split flow.
    pub name: String,
    /// Index in the scenario's `flows`, and the connection's place in it (0 unless split).
    pub flow: u32,
    pub segment: u32,
    pub sender: End,
    pub receiver: End,
    /// The direction of its data, `"<from> -> <to>"` by node.
    pub direction: String,
    /// Packets of the connection in this capture (handshakes not counted).
    pub packets: u64,
}

/// One end of a connection.
#[derive(Clone, Debug, Serialize)]
pub struct End {
    pub node: String,
    pub address: String,
    pub port: u16,
}

fn dotted([a, b, c, d]: [u8; 4]) -> String {
    format!("{a}.{b}.{c}.{d}")
}

/// The address map of tap `tap` (its index in the scenario's `pcap`); fails like
/// [`super::write_pcap`].
pub fn address_map(result: &RunResult, tap: u32) -> io::Result<AddressMap> {
    let mut packets = vec![0u64; result.flows.len()];
    for r in result.taps.iter().filter(|r| r.tap == tap) {
        if let Some(n) = packets.get_mut(r.flow as usize) {
            *n += 1;
        }
    }
    address_map_counted(result, tap, &packets)
}

/// [`address_map`] of a tap whose records streamed away ([`super::CaptureStream`]), from the
/// packets it saw of each connection.
pub fn address_map_counted(
    result: &RunResult,
    tap: u32,
    packets: &[u64],
) -> io::Result<AddressMap> {
    let info = tapped(result, tap)?;
    let addresses = node_addresses(result)?;
    let flows = result
        .flows
        .iter()
        .map(|f| {
            let e = connection_endpoints(f, &addresses)?;
            Ok(MappedFlow {
                name: f.name.clone(),
                flow: f.flow,
                segment: f.segment,
                sender: End {
                    node: f.from.clone(),
                    address: dotted(e.src_ip),
                    port: e.src_port,
                },
                receiver: End {
                    node: f.to.clone(),
                    address: dotted(e.dst_ip),
                    port: e.dst_port,
                },
                direction: format!("{} -> {}", f.from, f.to),
                packets: packets.get(f.id as usize).copied().unwrap_or(0),
            })
        })
        .collect::<io::Result<Vec<_>>>()?;
    Ok(AddressMap {
        schema_version: ADDRESS_MAP_SCHEMA_VERSION,
        capture: format!("{}.pcap", info.name),
        tap: info.clone(),
        addresses: addresses
            .iter()
            .map(|(node, ip)| (dotted(ip), node.to_owned()))
            .collect(),
        flows,
    })
}

/// [`address_map`] as pretty JSON, as written beside the capture.
pub fn address_map_json(result: &RunResult, tap: u32) -> io::Result<String> {
    let map = address_map(result, tap)?;
    serde_json::to_string_pretty(&map).map_err(io::Error::other)
}
