//! A tap's capture written as the run goes, in bounded memory, byte for byte the file
//! [`super::write_pcap`] writes from a whole run.
//!
//! Two things in that file depend on what comes later, so the stream is written in two
//! passes, neither holding more than a chunk:
//!
//! * **Time order.** A node's or a link end's records interleave directions and are put in
//!   time order by a stable sort. [`CaptureStream::encode`] sorts each chunk the engine hands
//!   over and appends it to a *spool* as one sorted run, or to the last run when it follows it
//!   in time (the common case: one run in all); the front end merges the runs by time, ties to
//!   the earlier run, which is the stable sort of the whole.
//! * **Handshakes and IP identifications.** A flow seen by the tap gets a synthetic handshake
//!   at its start, known to be due only once its first packet reaches the tap, and every
//!   direction numbers its packets in file order. [`CaptureAssembler`] puts the merged records
//!   and the handshakes together and sets each packet's IP identification (and header
//!   checksum) in the order of the file.
//!
//! The spool is a sequence of entries: the record's time (nanoseconds, `u64` little-endian),
//! its length (`u32` little-endian), then the pcap record. The core writes no file: the front
//! end owns the spool and the capture file ([`crate::world::TraceSink::capture`]).

use std::collections::BTreeMap;
use std::io;

use crate::pcap::{set_ipv4_id, PcapWriter, SynOffer, GLOBAL_HEADER_BYTES, RECORD_HEADER_BYTES};
use crate::time::SimTime;
use crate::trace::TapRecord;
use crate::world::capture::{addresses_of, wire, Wire};
use crate::world::FlowInfo;

/// Bytes before each record in the spool: its time and its length.
pub const SPOOL_ENTRY_HEADER_BYTES: usize = 12;

/// Reads a spool entry's header: the record's time and length.
pub fn spool_entry(header: &[u8; SPOOL_ENTRY_HEADER_BYTES]) -> (SimTime, usize) {
    let at = u64::from_le_bytes(header[0..8].try_into().unwrap_or_default());
    let len = u32::from_le_bytes(header[8..12].try_into().unwrap_or_default());
    (SimTime::from_nanos(at), len as usize)
}

/// One tap's records on their way to the spool.
#[derive(Debug)]
pub struct CaptureStream {
    tap: u32,
    flows: Vec<FlowInfo>,
    wires: Vec<Wire>,
    /// Packets of each connection the tap saw so far.
    packets: Vec<u64>,
    /// The time of the last record encoded (the end of the spool's last run).
    last: Option<SimTime>,
}

impl CaptureStream {
    /// The stream of tap `tap` (its index in the scenario's `pcap`) of a run over `nodes`
    /// with these connections; fails like [`super::write_pcap`] when the addresses do not fit.
    pub fn new(tap: u32, flows: Vec<FlowInfo>, nodes: &[String]) -> io::Result<CaptureStream> {
        let addresses = addresses_of(nodes)?;
        let wires = flows
            .iter()
            .map(|f| wire(f, &addresses))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(CaptureStream {
            tap,
            packets: vec![0; flows.len()],
            flows,
            wires,
            last: None,
        })
    }

    /// Takes the connections as they are at the end of the run.
    pub(crate) fn refresh(&mut self, flows: Vec<FlowInfo>) {
        self.flows = flows;
    }

    pub fn tap(&self) -> u32 {
        self.tap
    }

    /// Packets the tap saw of each connection (for its address map).
    pub fn packets(&self) -> &[u64] {
        &self.packets
    }

    /// Appends to `spool` this tap's records among `records`, stable-sorted by time, as
    /// entries; returns whether they begin a new sorted run (one of them is earlier than the
    /// last record of the spool) rather than continue the last one.
    pub fn encode(&mut self, records: &[TapRecord], spool: &mut Vec<u8>) -> io::Result<bool> {
        let mut mine: Vec<&TapRecord> = records.iter().filter(|r| r.tap == self.tap).collect();
        mine.sort_by_key(|r| r.at);
        let Some(first) = mine.first() else {
            return Ok(false);
        };
        let new_run = self.last.is_some_and(|last| first.at < last);
        let mut w = PcapWriter::new(Vec::new())?;
        for r in &mine {
            let x = self.wires.get(r.flow as usize).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "a packet of tap {} belongs to flow {}, not in the run",
                        self.tap, r.flow
                    ),
                )
            })?;
            self.packets[r.flow as usize] += 1;
            if r.data {
                w.write_segment(r.at, &x.endpoints, &r.seg, x.isn_sender, x.isn_receiver)?;
            } else {
                let back = x.endpoints.reversed();
                w.write_segment(r.at, &back, &r.seg, x.isn_receiver, x.isn_sender)?;
            }
        }
        let bytes = w.into_inner();
        let mut at = GLOBAL_HEADER_BYTES;
        for r in &mine {
            let len = record_len(&bytes[at..]);
            spool.extend_from_slice(&r.at.as_nanos().to_le_bytes());
            spool.extend_from_slice(&(len as u32).to_le_bytes());
            spool.extend_from_slice(&bytes[at..at + len]);
            at += len;
        }
        let end = mine.last().map(|r| r.at);
        self.last = self.last.max(end);
        Ok(new_run)
    }

    /// What puts the spool's merged records and the handshakes together.
    pub fn assembler(&self) -> io::Result<CaptureAssembler> {
        let mut seen: Vec<&FlowInfo> = self
            .flows
            .iter()
            .filter(|f| !f.handshake && self.packets.get(f.id as usize).is_some_and(|&n| n > 0))
            .collect();
        seen.sort_by_key(|f| (f.start, f.id));
        let handshakes = seen
            .into_iter()
            .map(|f| {
                let x = &self.wires[f.id as usize];
                let offer = SynOffer::from_tcp_options(&f.options, f.receive_buffer_bytes);
                let mut w = PcapWriter::new(Vec::new())?;
                w.write_handshake(
                    f.start,
                    &x.endpoints,
                    x.isn_sender,
                    x.isn_receiver,
                    &offer,
                    &offer,
                )?;
                Ok((f.start, w.into_inner().split_off(GLOBAL_HEADER_BYTES)))
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(CaptureAssembler {
            handshakes,
            next: 0,
            ip_ids: BTreeMap::new(),
        })
    }
}

/// The length of the pcap record at the start of `bytes`.
fn record_len(bytes: &[u8]) -> usize {
    let caplen = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    RECORD_HEADER_BYTES + caplen as usize
}

/// Puts a capture together from its merged spool and its handshakes (see the module).
#[derive(Debug)]
pub struct CaptureAssembler {
    /// Each seen flow's handshake (three records), by start then flow id.
    handshakes: Vec<(SimTime, Vec<u8>)>,
    next: usize,
    /// The next IP identification of each direction (addresses and ports).
    ip_ids: BTreeMap<[u8; 12], u16>,
}

impl CaptureAssembler {
    /// The capture's global header.
    pub fn header(&self) -> io::Result<Vec<u8>> {
        Ok(PcapWriter::new(Vec::new())?.into_inner())
    }

    /// Appends to `out` the handshakes due before a record at `at`, then `record` (a pcap
    /// record from the spool), each packet numbered in file order.
    pub fn record(&mut self, at: SimTime, record: &mut [u8], out: &mut Vec<u8>) {
        while self.next < self.handshakes.len() && self.handshakes[self.next].0 <= at {
            self.handshake(out);
        }
        self.number(record);
        out.extend_from_slice(record);
    }

    /// Appends the handshakes not yet written (none, unless a flow's packets all preceded its
    /// start, which the engine never produces).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        while self.next < self.handshakes.len() {
            self.handshake(out);
        }
    }

    fn handshake(&mut self, out: &mut Vec<u8>) {
        let mut records = std::mem::take(&mut self.handshakes[self.next].1);
        self.next += 1;
        let mut at = 0;
        while at < records.len() {
            let len = record_len(&records[at..]);
            self.number(&mut records[at..at + len]);
            at += len;
        }
        out.extend_from_slice(&records);
    }

    /// Sets a record's IP identification to the next of its direction.
    fn number(&mut self, record: &mut [u8]) {
        let ip = &mut record[RECORD_HEADER_BYTES..];
        let mut key = [0u8; 12];
        key[..8].copy_from_slice(&ip[12..20]);
        key[8..].copy_from_slice(&ip[20..24]);
        let id = self.ip_ids.entry(key).or_insert(0);
        set_ipv4_id(ip, *id);
        *id = id.wrapping_add(1);
    }
}

/// Writes the capture into `out`: the global header, then the entries of `runs` (each a
/// sorted run of the spool, in spool order) merged by time, ties to the earlier run, with the
/// handshakes of `assembler`. Memory: one record per run and one buffer.
pub fn assemble<R: io::Read, W: io::Write>(
    mut assembler: CaptureAssembler,
    runs: Vec<R>,
    mut out: W,
) -> io::Result<W> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// The next entry of a run: its time and record, or `None` at the run's end.
    fn next_entry(r: &mut impl io::Read) -> io::Result<Option<(SimTime, Vec<u8>)>> {
        let mut header = [0u8; SPOOL_ENTRY_HEADER_BYTES];
        match r.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let (at, len) = spool_entry(&header);
        let mut record = vec![0u8; len];
        r.read_exact(&mut record)?;
        Ok(Some((at, record)))
    }

    out.write_all(&assembler.header()?)?;
    let mut runs = runs;
    let mut heads: Vec<Option<Vec<u8>>> = Vec::with_capacity(runs.len());
    let mut order = BinaryHeap::new();
    for (i, r) in runs.iter_mut().enumerate() {
        let head = next_entry(r)?;
        if let Some((at, _)) = &head {
            order.push(Reverse((*at, i)));
        }
        heads.push(head.map(|(_, record)| record));
    }
    let mut buf = Vec::new();
    while let Some(Reverse((at, i))) = order.pop() {
        if let Some(mut record) = heads[i].take() {
            assembler.record(at, &mut record, &mut buf);
        }
        if let Some((next_at, record)) = next_entry(&mut runs[i])? {
            order.push(Reverse((next_at, i)));
            heads[i] = Some(record);
        }
        if buf.len() >= 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    assembler.finish(&mut buf);
    out.write_all(&buf)?;
    out.flush()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_scenario_json;
    use crate::trace::Traces;
    use crate::world::TraceSink;
    use crate::world::{run, run_with, write_pcap, Budget, RunControl};

    /// Spools in memory, as a front end spools into files.
    #[derive(Default)]
    struct Spools {
        /// Per tap: the spool and where each run starts.
        spools: BTreeMap<u32, (Vec<u8>, Vec<usize>)>,
        done: Vec<CaptureStream>,
    }

    impl TraceSink for Spools {
        fn rows(&mut self, _: Traces) -> bool {
            true
        }
        fn takes_captures(&self) -> bool {
            true
        }
        fn capture(&mut self, tap: u32, new_run: bool, entries: &[u8]) -> bool {
            let (spool, runs) = self.spools.entry(tap).or_default();
            if new_run || runs.is_empty() {
                runs.push(spool.len());
            }
            spool.extend_from_slice(entries);
            true
        }
        fn capture_done(&mut self, stream: CaptureStream) -> bool {
            self.done.push(stream);
            true
        }
    }

    impl Spools {
        fn capture(&mut self, tap: u32) -> Vec<u8> {
            let i = self.done.iter().position(|s| s.tap() == tap).unwrap();
            let assembler = self.done[i].assembler().unwrap();
            let (spool, starts) = self.spools.get(&tap).cloned().unwrap_or_default();
            let mut ends: Vec<usize> = starts.iter().skip(1).copied().collect();
            ends.push(spool.len());
            let runs: Vec<&[u8]> = starts
                .iter()
                .zip(&ends)
                .map(|(&a, &b)| &spool[a..b])
                .collect();
            assemble(assembler, runs, Vec::new()).unwrap()
        }
    }

    /// A bundle (whose departures are logged at fragment times), link, link-end and node taps
    /// (whose records interleave directions), a flow starting late and one with a simulated
    /// handshake.
    const SCENARIO: &str = r#"{
        "duration": "30s", "seed": 9,
        "nodes": ["S", "R", "M", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "2Mbps", "delay": "5ms"},
            {"name": "R-M", "a": "R", "b": "M", "bundle": {"members": 4, "rate": "256kbps",
             "delay": "300ms"}},
            {"name": "M-D", "a": "M", "b": "D", "rate": "1Mbps", "delay": "20ms",
             "fwd": {"loss": {"model": "bernoulli", "p": 0.02}}}
        ],
        "flows": [
            {"name": "up", "from": "S", "to": "D", "app": {"kind": "unbounded"}},
            {"name": "late", "from": "D", "to": "S", "start": "2s",
             "app": {"kind": "unbounded"}},
            {"name": "local", "from": "M", "to": "D", "start": "1s",
             "tcp": {"handshake": true}, "app": {"kind": "bulk", "size": "80KB"}}
        ],
        "pcap": ["R-M", {"link": "M-D", "at": "b"}, {"node": "M"}, {"node": "R"}]
    }"#;

    #[test]
    fn a_streamed_capture_is_byte_for_byte_the_one_written_whole() {
        let sc = parse_scenario_json(SCENARIO).unwrap();
        let whole = run(&sc).unwrap();
        assert!(
            whole.taps.len() > 3 * crate::trace::CHUNK_TAP_RECORDS,
            "several chunks: {} records, {:?}",
            whole.taps.len(),
            whole.summary.partial
        );
        let mut sink = Spools::default();
        let streamed = run_with(
            &sc,
            RunControl {
                budget: Some(Budget::default()),
                progress: None,
                sink: Some(&mut sink),
            },
        )
        .unwrap();
        assert_eq!(streamed.summary, whole.summary);
        assert!(streamed.taps.is_empty());
        for tap in 0..sc.pcap().len() as u32 {
            let want = write_pcap(&whole, tap, Vec::new()).unwrap();
            let got = sink.capture(tap);
            assert!(want.len() > 10_000, "tap {tap} saw packets");
            assert!(
                got == want,
                "tap {tap}: {} bytes, not {}",
                got.len(),
                want.len()
            );
            let counted = crate::world::address_map::address_map_counted(
                &whole,
                tap,
                sink.done.iter().find(|s| s.tap() == tap).unwrap().packets(),
            )
            .unwrap();
            let want = crate::world::address_map(&whole, tap).unwrap();
            assert_eq!(
                serde_json::to_string(&counted).unwrap(),
                serde_json::to_string(&want).unwrap()
            );
        }
    }

    #[test]
    fn runs_out_of_order_merge_as_the_stable_sort_does() {
        // Three runs whose times interleave, ties across runs included.
        let sc = parse_scenario_json(SCENARIO).unwrap();
        let whole = run(&sc).unwrap();
        let flows = {
            let mut w = crate::world::World::build(&sc).unwrap();
            w.run().unwrap();
            w.flow_infos()
        };
        let records: Vec<TapRecord> = whole.taps.iter().filter(|t| t.tap == 0).copied().collect();
        let mut stream = CaptureStream::new(0, flows, sc.nodes()).unwrap();
        let (a, b) = records.split_at(records.len() / 2);
        let (b, c) = b.split_at(b.len() / 2);
        let mut spools = Vec::new();
        let mut new_runs = Vec::new();
        // Later records first: each chunk begins a new run.
        for chunk in [c, b, a] {
            let mut spool = Vec::new();
            new_runs.push(stream.encode(chunk, &mut spool).unwrap());
            spools.push(spool);
        }
        assert_eq!(new_runs, [false, true, true]);
        let runs: Vec<&[u8]> = spools.iter().map(Vec::as_slice).collect();
        let got = assemble(stream.assembler().unwrap(), runs, Vec::new()).unwrap();
        assert!(got == write_pcap(&whole, 0, Vec::new()).unwrap());
    }
}
