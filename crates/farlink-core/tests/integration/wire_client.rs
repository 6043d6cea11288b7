//! farlink's sender on the wire (`tcp::wire_client`) against a small scripted listener that
//! speaks real TCP/IPv4 bytes, in virtual time: the handshake with options, the transfer with
//! losses (SACK, D-SACK), the close on both sides, the bytes checked by digest, and how the
//! connection ends on a RST, an ICMP port unreachable, a closed window.

use std::collections::VecDeque;

use farlink_core::pcap::Endpoints;
use farlink_core::tcp::cc::CcConfig;
use farlink_core::tcp::payload::{Digest, PayloadStream};
use farlink_core::tcp::recovery::LossRecovery;
use farlink_core::tcp::sender::{AppSource, SenderConfig};
use farlink_core::tcp::wire::{
    encode_tcp, encode_unreachable, parse, unwrap_seq, wire_ack, Packet, TcpHeader, WireOptions,
    WireSackBlock,
};
use farlink_core::tcp::wire_client::{WireClient, WireClientConfig, WireError};
use farlink_core::tcp::{State, TcpOptions};
use farlink_core::time::{SimDuration, SimTime};

const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [10, 0, 0, 2];
const SEED: u64 = 99;

/// What the listener does.
#[derive(Clone, Copy)]
enum Mode {
    Listen,
    /// Nothing listens: a RST answers the SYN.
    Closed,
    /// The host answers with ICMP port unreachable.
    Unreachable,
}

/// A listener: in-order delivery, SACK blocks for what arrived out of order (most recent
/// first), a D-SACK for a duplicate, its FIN once the client's FIN arrives.
struct Listener {
    mode: Mode,
    isn: u32,
    peer_isn: Option<u32>,
    /// Next expected byte, counted from the client's first data byte.
    rcv_nxt: u64,
    ooo: Vec<(u64, u64)>,
    digest: Digest,
    received: u64,
    window_field: u16,
    shift: u8,
    fin_received: bool,
    fin_acked: bool,
    dsack: Option<(u64, u64)>,
    stream: PayloadStream,
}

impl Listener {
    fn new(mode: Mode) -> Self {
        Listener {
            mode,
            isn: 0xffff_ff00,
            peer_isn: None,
            rcv_nxt: 0,
            ooo: Vec::new(),
            digest: Digest::new(),
            received: 0,
            window_field: 4096,
            shift: 7,
            fin_received: false,
            fin_acked: false,
            dsack: None,
            stream: PayloadStream::new(SEED),
        }
    }

    fn packet(&self, flags: u8, seq_off: u32, options: WireOptions) -> Vec<u8> {
        let ack = match self.peer_isn {
            Some(p) => wire_ack(p, self.rcv_nxt + u64::from(self.fin_received)),
            None => 0,
        };
        let hdr = TcpHeader {
            src_port: 5001,
            dst_port: 40000,
            seq: self.isn.wrapping_add(seq_off),
            ack,
            flags,
            window: self.window_field,
            options,
        };
        let mut buf = vec![0u8; 200];
        let n = encode_tcp(&mut buf, SERVER, CLIENT, 0, &hdr, &[]).unwrap();
        buf.truncate(n);
        buf
    }

    fn on_packet(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let Ok(Packet::Tcp { tcp, payload, .. }) = parse(bytes) else {
            panic!("the client sent something unparsable");
        };
        let f = tcp.flags;
        if f & 0x02 != 0 {
            match self.mode {
                Mode::Closed => {
                    let mut p = self.packet(0x14, 0, WireOptions::default());
                    // RST|ACK acknowledging the SYN: seq 0, ack ISN + 1.
                    let hdr = TcpHeader {
                        src_port: 5001,
                        dst_port: 40000,
                        seq: 0,
                        ack: tcp.seq.wrapping_add(1),
                        flags: 0x14,
                        window: 0,
                        options: WireOptions::default(),
                    };
                    let n = encode_tcp(&mut p, SERVER, CLIENT, 0, &hdr, &[]).unwrap();
                    p.truncate(n);
                    return vec![p];
                }
                Mode::Unreachable => {
                    let mut p = vec![0u8; 200];
                    let n = encode_unreachable(&mut p, SERVER, CLIENT, 3, bytes).unwrap();
                    p.truncate(n);
                    return vec![p];
                }
                Mode::Listen => {}
            }
            assert_eq!(tcp.options.mss_bytes, Some(1460));
            assert!(tcp.options.sack_permitted && tcp.options.timestamps.is_some());
            self.peer_isn = Some(tcp.seq);
            let mut o = WireOptions::default();
            o.mss_bytes = Some(1000);
            o.window_shift = Some(self.shift);
            o.sack_permitted = true;
            o.timestamps = tcp
                .options
                .timestamps
                .map(|t| farlink_core::tcp::segment::Timestamps {
                    tsval: 1,
                    tsecr: t.tsval,
                });
            // The SYN-ACK's window is never scaled: announce the largest.
            let window = self.window_field;
            self.window_field = u16::MAX;
            let syn_ack = self.packet(0x12, 0, o);
            self.window_field = window;
            return vec![syn_ack];
        }
        let peer_isn = self.peer_isn.expect("data before the SYN");
        let seq = unwrap_seq(self.rcv_nxt, peer_isn, tcp.seq).expect("sequence number");
        let len = payload.len() as u64;
        if len > 0 {
            let mut expect = vec![0u8; payload.len()];
            self.stream.fill(seq, &mut expect);
            assert_eq!(payload, &expect[..], "payload bytes at {seq}");
            if seq + len <= self.rcv_nxt {
                self.dsack = Some((seq, seq + len));
            } else if seq <= self.rcv_nxt {
                let from = (self.rcv_nxt - seq) as usize;
                self.digest.update(&payload[from..]);
                self.received += len - from as u64;
                self.rcv_nxt = seq + len;
                // Pull in what was held out of order.
                self.ooo.sort();
                while let Some(&(l, r)) = self.ooo.first() {
                    if l > self.rcv_nxt {
                        break;
                    }
                    if r > self.rcv_nxt {
                        let mut b = vec![0u8; (r - self.rcv_nxt) as usize];
                        self.stream.fill(self.rcv_nxt, &mut b);
                        self.digest.update(&b);
                        self.received += r - self.rcv_nxt;
                        self.rcv_nxt = r;
                    }
                    self.ooo.remove(0);
                }
            } else if !self.ooo.iter().any(|&(l, r)| l <= seq && seq + len <= r) {
                self.ooo.retain(|&(l, r)| !(l == seq + len || r == seq));
                self.ooo.insert(0, (seq, seq + len));
            }
        }
        if f & 0x01 != 0 && seq + len == self.rcv_nxt && !self.fin_received {
            self.fin_received = true;
            let mut out = vec![self.ack()];
            // Close at once: FIN|ACK.
            out.push(self.packet(0x11, 1, self.ts_options()));
            return out;
        }
        if self.fin_received && f & 0x10 != 0 {
            let ack = tcp.ack.wrapping_sub(self.isn);
            if ack == 2 {
                self.fin_acked = true;
            }
            return Vec::new();
        }
        if len == 0 {
            // A window probe or a pure ACK: answer a probe (seq below RCV.NXT).
            return if seq < self.rcv_nxt {
                vec![self.ack()]
            } else {
                Vec::new()
            };
        }
        vec![self.ack()]
    }

    fn ts_options(&self) -> WireOptions {
        let mut o = WireOptions::default();
        o.timestamps = Some(farlink_core::tcp::segment::Timestamps { tsval: 5, tsecr: 5 });
        o
    }

    fn ack(&mut self) -> Vec<u8> {
        let mut o = self.ts_options();
        let peer_isn = self.peer_isn.unwrap();
        if let Some((l, r)) = self.dsack.take() {
            o.push_sack(WireSackBlock {
                left: wire_ack(peer_isn, l),
                right: wire_ack(peer_isn, r),
            });
        }
        for &(l, r) in self.ooo.iter().take(3) {
            if o.sack().len() == 3 {
                break;
            }
            o.push_sack(WireSackBlock {
                left: wire_ack(peer_isn, l),
                right: wire_ack(peer_isn, r),
            });
        }
        self.packet(0x10, 1 + u32::from(self.fin_received), o)
    }
}

fn config(size: u64, recovery: LossRecovery, cc: &str) -> WireClientConfig {
    WireClientConfig {
        sender: SenderConfig {
            options: TcpOptions::default(),
            recovery,
            congestion_control: CcConfig::from_name(cc).unwrap(),
            app: AppSource::Bulk { total_bytes: size },
            ..SenderConfig::default()
        },
        endpoints: Endpoints {
            src_ip: CLIENT,
            dst_ip: SERVER,
            src_port: 40000,
            dst_port: 5001,
        },
        isn: u32::MAX - 3000,
        payload_seed: SEED,
        start: SimTime::ZERO,
        stop: None,
    }
}

/// Runs the pair in virtual time with a one-way delay of 20 ms; `drop_data(n)` drops the
/// client's `n`-th data packet. Returns the client and the listener at the end.
fn run(
    cfg: &WireClientConfig,
    mut listener: Listener,
    drop_data: impl Fn(u64) -> bool,
    mut tweak: impl FnMut(SimTime, &mut Listener),
) -> (WireClient, Listener) {
    let delay = SimDuration::from_millis(20);
    let mut client = WireClient::new(cfg);
    let mut to_server: VecDeque<(SimTime, Vec<u8>)> = VecDeque::new();
    let mut to_client: VecDeque<(SimTime, Vec<u8>)> = VecDeque::new();
    let mut now = SimTime::ZERO;
    let mut data_pkts = 0u64;
    let mut buf = vec![0u8; 2048];
    for _ in 0..2_000_000 {
        tweak(now, &mut listener);
        client.on_timeout(now);
        while let Some(n) = client.poll_transmit(now, &mut buf) {
            let pkt = buf[..n].to_vec();
            if n > 64 {
                data_pkts += 1;
                if drop_data(data_pkts) {
                    continue;
                }
            }
            to_server.push_back((now + delay, pkt));
        }
        if client.is_finished() && to_server.is_empty() {
            break;
        }
        let next = [
            to_server.front().map(|p| p.0),
            to_client.front().map(|p| p.0),
            client.next_wakeup(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next else { break };
        now = now.max(next);
        while to_server.front().is_some_and(|p| p.0 <= now) {
            let (_, p) = to_server.pop_front().unwrap();
            for answer in listener.on_packet(&p) {
                to_client.push_back((now + delay, answer));
            }
        }
        while to_client.front().is_some_and(|p| p.0 <= now) {
            let (_, p) = to_client.pop_front().unwrap();
            client.on_packet(now, &p);
        }
    }
    (client, listener)
}

#[test]
fn a_transfer_completes_and_closes_with_every_byte_checked() {
    let size = 300_000;
    let cfg = config(size, LossRecovery::Sack, "stpd");
    let (client, listener) = run(&cfg, Listener::new(Mode::Listen), |_| false, |_, _| {});
    assert_eq!(client.error(), None);
    assert_eq!(client.state(), State::TimeWait);
    assert!(client.is_finished());
    assert_eq!(listener.received, size);
    assert_eq!(
        listener.digest.value(),
        PayloadStream::new(SEED).digest_of_prefix(size)
    );
    assert!(listener.fin_received && listener.fin_acked);
    // The SYN-ACK's MSS (1000) and shift (7) were honoured.
    let n = client.sender().negotiated();
    assert_eq!(n.mss_bytes, 1000);
    assert_eq!(n.window_shift, 7);
    assert_eq!(client.sender().smss_bytes(), 988);
    assert_eq!(client.sender().stats().retransmitted_segments, 0);
}

#[test]
fn losses_are_recovered_by_every_recovery_and_the_bytes_still_match() {
    let size = 200_000;
    for recovery in [
        LossRecovery::Tahoe,
        LossRecovery::Reno,
        LossRecovery::NewReno,
        LossRecovery::Sack,
    ] {
        let cfg = config(size, recovery, "reno");
        let (client, listener) = run(
            &cfg,
            Listener::new(Mode::Listen),
            |n| n % 37 == 0,
            |_, _| {},
        );
        assert_eq!(client.error(), None, "{recovery}");
        assert_eq!(listener.received, size, "{recovery}");
        assert_eq!(
            listener.digest.value(),
            PayloadStream::new(SEED).digest_of_prefix(size),
            "{recovery}"
        );
        assert!(client.sender().stats().retransmitted_segments > 0);
        assert!(client.is_finished(), "{recovery}");
    }
}

#[test]
fn a_rst_answering_the_syn_is_connection_refused() {
    let cfg = config(10_000, LossRecovery::Sack, "reno");
    let (client, _) = run(&cfg, Listener::new(Mode::Closed), |_| false, |_, _| {});
    assert!(matches!(client.error(), Some(WireError::Refused { .. })));
    assert_eq!(
        client.error().unwrap().to_string(),
        "connection refused by 10.0.0.2:5001: RST in answer to the SYN (nothing listens there)"
    );
    assert!(client.is_finished());
}

#[test]
fn an_icmp_port_unreachable_ends_the_connection() {
    let cfg = config(10_000, LossRecovery::Sack, "reno");
    let (client, _) = run(&cfg, Listener::new(Mode::Unreachable), |_| false, |_, _| {});
    let err = client.error().expect("an error").to_string();
    assert!(err.contains("port unreachable"), "{err}");
    assert!(client.is_finished());
}

#[test]
fn a_closed_window_is_probed_until_it_opens() {
    let size = 1_000_000;
    let cfg = config(size, LossRecovery::Sack, "vegas");
    let (client, listener) = run(
        &cfg,
        Listener::new(Mode::Listen),
        |_| false,
        |now, l| {
            // Closed from 0.15 s to 2.5 s.
            let ms = now.as_nanos() / 1_000_000;
            l.window_field = if (150..2500).contains(&ms) { 0 } else { 4096 };
        },
    );
    assert_eq!(client.error(), None);
    assert_eq!(listener.received, size);
    assert!(client.sender().stats().window_probes > 0);
}

#[test]
fn duplicates_are_reported_as_dsack_and_left_out_of_the_scoreboard() {
    // The listener reports a duplicate of the first segment once (as it would for a
    // spurious retransmission).
    let size = 60_000;
    let cfg = config(size, LossRecovery::Sack, "reno");
    let mut dropped_once = false;
    let (client, listener) = run(
        &cfg,
        Listener::new(Mode::Listen),
        |_| false,
        |_, l| {
            if !dropped_once && l.rcv_nxt > 2000 {
                l.dsack = Some((0, 1000));
                dropped_once = true;
            }
        },
    );
    assert_eq!(client.error(), None);
    assert_eq!(listener.received, size);
    assert!(client.stats().dsack_blocks >= 1);
}
