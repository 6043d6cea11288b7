//! The three-way handshake (RFC 9293 section 3.5): what each end puts in its SYN, and what it
//! agrees from the SYN it receives.
//!
//! Read first: RFC 9293 sections 3.5 and 3.7.1 (the MSS option; 536 bytes without it),
//! RFC 7323 sections 2.2, 2.3 and 3.2 (window scale and timestamps are used only when both
//! SYNs carry them; the window field of a SYN is never scaled), RFC 2018 section 2
//! (SACK-permitted), RFC 6298 sections 2 and 5.7 (the SYN's timer, and RTO = 3 s once data
//! starts after a retransmitted SYN), RFC 5681 section 3.1 (initial window of one segment
//! after a lost SYN or SYN-ACK).
//!
//! The states live in the endpoints: `Sender::connect` starts in SYN-SENT and becomes
//! ESTABLISHED on the SYN-ACK; `Receiver::listen` starts in LISTEN, answers the SYN from
//! SYN-RECEIVED and becomes ESTABLISHED on the first segment that acknowledges its SYN-ACK (a
//! data segment or a pure ACK). This module holds what both share: the SYN options each end
//! offers and the two halves of the negotiation, which agree with
//! [`Negotiated::without_handshake`] whenever both SYNs arrive.
//!
//! Sequence numbers stay counted from the first data byte (0) in both directions: a SYN has
//! `seq` 0 and occupies the ISN just below the first data byte (the pcap writer maps it so,
//! `crate::pcap::wire_seq`), and the SYN-ACK, like every later segment, acknowledges 0.

use super::segment::{encode_window, timestamp_clock, Flags, Options, Segment, Timestamps};
use super::{window_shift_for, Negotiated, TcpOptions, MAX_WINDOW_SHIFT};
use crate::time::{SimDuration, SimTime};

/// RFC 6298 (5.7): "If the timer expires awaiting the ACK of a SYN segment and the TCP
/// implementation is using an RTO less than 3 seconds, the RTO MUST be re-initialized to 3
/// seconds when data transmission begins (i.e., after the three-way handshake completes)."
pub const RTO_AFTER_SYN_LOSS: SimDuration = SimDuration::from_secs(3);

/// RFC 9293 3.7.1: without an MSS option a host "MUST ... assume an MSS of 536".
pub const DEFAULT_MSS_WITHOUT_OPTION: u32 = 536;

/// The options of a SYN (or SYN-ACK) offering `offer`, with `window_shift` as the shift count
/// of the window scale option (sent only if `offer.window_scaling`).
fn syn_options(offer: &TcpOptions, window_shift: u8, timestamps: Option<Timestamps>) -> Options {
    Options {
        // The scenario bounds the MSS to 65495, so it always fits the 16-bit option.
        mss_bytes: Some(u16::try_from(offer.mss_bytes).unwrap_or(u16::MAX)),
        window_shift: offer.window_scaling.then_some(window_shift),
        sack_permitted: offer.sack,
        timestamps,
        ..Options::default()
    }
}

/// The data sender's SYN at `now`. The sender receives no data, so it offers scaling with a
/// shift of 0 and announces the largest unscaled window, as its data segments do.
pub fn syn(offer: &TcpOptions, now: SimTime) -> Segment {
    Segment {
        ecn: Default::default(),
        ace: 0,
        seq: 0,
        ack: 0,
        flags: Flags::SYN,
        payload_bytes: 0,
        window_field: u16::MAX,
        options: syn_options(
            offer,
            0,
            offer.timestamps.then(|| Timestamps {
                tsval: timestamp_clock(now),
                tsecr: 0,
            }),
        ),
    }
}

/// What the data receiver agrees from the SYN it received, offering `own` with a receive
/// buffer of `receive_buffer_bytes`: the MSS is the smaller of both (536 if the SYN had no
/// MSS option), SACK and timestamps need both ends, and the receiver picks the smallest shift
/// that announces its buffer when both offered window scaling.
pub fn negotiate_at_listener(
    own: &TcpOptions,
    receive_buffer_bytes: u64,
    syn: &Segment,
) -> Negotiated {
    let o = &syn.options;
    let peer_mss = o.mss_bytes.map_or(DEFAULT_MSS_WITHOUT_OPTION, u32::from);
    let scaling = own.window_scaling && o.window_shift.is_some();
    Negotiated {
        mss_bytes: own.mss_bytes.min(peer_mss),
        sack: own.sack && o.sack_permitted,
        timestamps: own.timestamps && o.timestamps.is_some(),
        window_shift: if scaling {
            window_shift_for(receive_buffer_bytes)
        } else {
            0
        },
        initial_peer_window_bytes: receive_buffer_bytes.min(u64::from(u16::MAX)),
    }
}

/// The data receiver's SYN-ACK at `now` answering `syn`, with what it agreed: each option only
/// if the SYN offered it too (RFC 7323 2.2 and 3.2, RFC 2018 section 2); the window field is
/// the receive buffer unscaled (RFC 7323 2.2).
pub fn syn_ack(
    own: &TcpOptions,
    receive_buffer_bytes: u64,
    agreed: &Negotiated,
    syn: &Segment,
    now: SimTime,
) -> Segment {
    let offer = TcpOptions {
        mss_bytes: own.mss_bytes,
        sack: agreed.sack,
        timestamps: agreed.timestamps,
        window_scaling: own.window_scaling && syn.options.window_shift.is_some(),
    };
    let timestamps = match (agreed.timestamps, syn.options.timestamps) {
        (true, Some(ts)) => Some(Timestamps {
            tsval: timestamp_clock(now),
            tsecr: ts.tsval,
        }),
        _ => None,
    };
    Segment {
        ecn: Default::default(),
        ace: 0,
        seq: 0,
        ack: 0,
        flags: Flags::SYN | Flags::ACK,
        payload_bytes: 0,
        window_field: encode_window(receive_buffer_bytes, 0),
        options: syn_options(&offer, agreed.window_shift, timestamps),
    }
}

/// What the data sender agrees from the SYN-ACK it received, having offered `own`. The shift
/// is the receiver's (RFC 7323 2.3: above 14 it is taken as 14), the initial window the
/// SYN-ACK's unscaled field.
pub fn negotiate_at_connector(own: &TcpOptions, syn_ack: &Segment) -> Negotiated {
    let o = &syn_ack.options;
    let peer_mss = o.mss_bytes.map_or(DEFAULT_MSS_WITHOUT_OPTION, u32::from);
    let window_shift = match (own.window_scaling, o.window_shift) {
        (true, Some(shift)) => shift.min(MAX_WINDOW_SHIFT),
        _ => 0,
    };
    Negotiated {
        mss_bytes: own.mss_bytes.min(peer_mss),
        sack: own.sack && o.sack_permitted,
        timestamps: own.timestamps && o.timestamps.is_some(),
        window_shift,
        initial_peer_window_bytes: u64::from(syn_ack.window_field),
    }
}

/// Whether `seg` is a SYN-ACK acknowledging our SYN (every segment acknowledges 0, the byte
/// after the SYN).
pub fn is_syn_ack(seg: &Segment) -> bool {
    seg.flags.contains(Flags::SYN | Flags::ACK) && seg.ack == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    fn exchange(client: &TcpOptions, server: &TcpOptions, buffer: u64) -> (Negotiated, Negotiated) {
        let s = syn(client, at(0));
        let agreed = negotiate_at_listener(server, buffer, &s);
        let sa = syn_ack(server, buffer, &agreed, &s, at(10));
        (agreed, negotiate_at_connector(client, &sa))
    }

    #[test]
    fn both_ends_agree_with_the_skipped_handshake() {
        let all = TcpOptions::default();
        let none = TcpOptions {
            mss_bytes: 536,
            sack: false,
            timestamps: false,
            window_scaling: false,
        };
        for (c, s) in [(all, all), (all, none), (none, all), (none, none)] {
            for buffer in [1460, 65_535, 65_536, 131_072, 1 << 30] {
                let (listener, connector) = exchange(&c, &s, buffer);
                assert_eq!(listener, connector, "{c:?} {s:?} {buffer}");
                assert_eq!(listener, Negotiated::without_handshake(&c, &s, buffer));
            }
        }
    }

    #[test]
    fn an_option_one_side_does_not_offer_is_not_used() {
        let client = TcpOptions::default();
        let server = TcpOptions {
            sack: false,
            timestamps: false,
            ..TcpOptions::default()
        };
        let s = syn(&client, at(0));
        assert!(s.options.sack_permitted && s.options.timestamps.is_some());
        let agreed = negotiate_at_listener(&server, 1 << 20, &s);
        assert!(!agreed.sack && !agreed.timestamps);
        assert_eq!(agreed.window_shift, 5);
        let sa = syn_ack(&server, 1 << 20, &agreed, &s, at(10));
        assert!(!sa.options.sack_permitted && sa.options.timestamps.is_none());
        assert_eq!(sa.options.window_shift, Some(5));
        assert_eq!(sa.window_field, u16::MAX, "a SYN's window is never scaled");
        let n = negotiate_at_connector(&client, &sa);
        assert!(!n.sack && !n.timestamps);
        assert_eq!(n.smss_bytes(), 1460, "no timestamps: the full MSS");
        // The SYN-ACK echoes the SYN's timestamp when both use them.
        let sa = syn_ack(
            &client,
            1 << 20,
            &negotiate_at_listener(&client, 1 << 20, &s),
            &s,
            at(10),
        );
        assert_eq!(sa.options.timestamps.map(|t| t.tsecr), Some(0));
        assert_eq!(sa.options.timestamps.map(|t| t.tsval), Some(10));
    }

    #[test]
    fn a_syn_without_mss_option_means_536_and_without_window_scale_no_scaling() {
        let own = TcpOptions::default();
        let bare = Segment {
            flags: Flags::SYN,
            ..Segment::default()
        };
        let n = negotiate_at_listener(&own, 1 << 20, &bare);
        assert_eq!(n.mss_bytes, DEFAULT_MSS_WITHOUT_OPTION);
        assert_eq!(n.window_shift, 0);
        assert_eq!(n.initial_peer_window_bytes, 65_535);
        let sa = syn_ack(&own, 1 << 20, &n, &bare, at(0));
        assert_eq!(
            sa.options.window_shift, None,
            "no scale option unless the SYN had one"
        );
    }

    #[test]
    fn a_shift_above_14_is_taken_as_14() {
        let mut sa = syn_ack(
            &TcpOptions::default(),
            1 << 20,
            &Negotiated::without_handshake(&TcpOptions::default(), &TcpOptions::default(), 1 << 20),
            &syn(&TcpOptions::default(), at(0)),
            at(0),
        );
        sa.options.window_shift = Some(20);
        assert_eq!(
            negotiate_at_connector(&TcpOptions::default(), &sa).window_shift,
            MAX_WINDOW_SHIFT
        );
        assert!(is_syn_ack(&sa));
    }
}

/// Both endpoints through the handshake, segments carried by hand, losses chosen.
#[cfg(test)]
mod endpoint_tests {
    use super::*;
    use crate::tcp::receiver::{Receiver, ReceiverConfig};
    use crate::tcp::rtt::RttConfig;
    use crate::tcp::sender::{AppSource, Sender, SenderConfig};
    use crate::tcp::State;

    fn at(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    fn pair(client: TcpOptions, server: TcpOptions) -> (Sender, Receiver) {
        let s = Sender::connect(&SenderConfig {
            options: client,
            app: AppSource::Bulk {
                total_bytes: 100_000,
            },
            ..SenderConfig::default()
        });
        let r = Receiver::listen(
            &ReceiverConfig {
                options: server,
                receive_buffer_bytes: 1 << 20,
                ..ReceiverConfig::default()
            },
            RttConfig::default(),
        );
        (s, r)
    }

    fn drain(s: &mut Sender, now: SimTime) -> Vec<Segment> {
        std::iter::from_fn(|| s.poll_transmit(now).map(|t| t.segment)).collect()
    }

    #[test]
    fn a_clean_handshake_gives_the_first_rtt_sample_and_data_completes_it() {
        let (mut s, mut r) = pair(TcpOptions::default(), TcpOptions::default());
        assert_eq!((s.state(), r.state()), (State::SynSent, State::Listen));
        let syn = drain(&mut s, at(0));
        assert_eq!(syn.len(), 1, "only the SYN before the SYN-ACK");
        assert!(syn[0].flags.contains(Flags::SYN));
        assert_eq!(
            syn[0].wire_bytes(),
            40 + 24,
            "MSS, WS, SACK-permitted, timestamps"
        );
        assert_eq!(s.next_timeout(), Some(at(1000)), "RFC 6298 (2.1): 1 s");
        let sa = r.on_segment(at(250), &syn[0]).unwrap();
        assert_eq!(r.state(), State::SynReceived);
        assert!(is_syn_ack(&sa));
        s.on_ack(at(500), &sa);
        assert_eq!(s.state(), State::Established);
        assert_eq!(s.established_at(), Some(at(500)));
        assert_eq!(s.rtt().srtt(), Some(SimDuration::from_millis(500)));
        assert_eq!(
            s.rtt().rto(),
            SimDuration::from_millis(1500),
            "500 + 4 * 250"
        );
        assert_eq!(*s.negotiated(), *r.negotiated());
        let data = drain(&mut s, at(500));
        assert_eq!(data.len(), 10, "IW10, the first segment carrying the ACK");
        assert_eq!(s.stats().handshake_acks_sent, 0);
        assert!(data.iter().all(|d| d.payload_bytes == 1448));
        r.on_segment(at(750), &data[0]);
        assert_eq!(r.state(), State::Established);
        assert_eq!(
            r.delivered_bytes(),
            1448,
            "the data that completed it is taken"
        );
        assert_eq!(r.next_timeout(), Some(at(950)), "now the delayed-ACK timer");
    }

    #[test]
    fn a_lost_syn_is_retransmitted_with_backoff_and_then_rto_is_3s_and_iw_one_segment() {
        let (mut s, mut r) = pair(TcpOptions::default(), TcpOptions::default());
        drain(&mut s, at(0)); // lost
        s.on_timeout(at(999));
        assert!(drain(&mut s, at(999)).is_empty(), "not yet");
        s.on_timeout(at(1000));
        let second = drain(&mut s, at(1000));
        assert_eq!(second.len(), 1);
        assert_eq!(s.next_timeout(), Some(at(3000)), "backed off to 2 s");
        s.on_timeout(at(3000)); // lost again
        let third = drain(&mut s, at(3000));
        assert_eq!(s.next_timeout(), Some(at(7000)), "then 4 s");
        assert_eq!((s.stats().syn_sent, s.stats().syn_retransmissions), (3, 2));
        assert_eq!(s.stats().timeouts, 0, "SYN timeouts are not data timeouts");
        let sa = r.on_segment(at(3250), &third[0]).unwrap();
        s.on_ack(at(3500), &sa);
        assert_eq!(s.state(), State::Established);
        assert_eq!(
            s.rtt().srtt(),
            None,
            "Karn: no sample from a retransmitted SYN"
        );
        assert_eq!(s.rtt().rto(), RTO_AFTER_SYN_LOSS, "RFC 6298 (5.7)");
        assert_eq!(s.rtt().backoffs(), 0);
        assert_eq!(
            drain(&mut s, at(3500)).len(),
            1,
            "RFC 5681 3.1: IW of one segment"
        );
        assert_eq!(
            s.next_timeout(),
            Some(at(6500)),
            "the data timer runs on 3 s"
        );
    }

    #[test]
    fn the_minimum_and_maximum_rto_bound_the_syn_timer() {
        let mut s = Sender::connect(&SenderConfig {
            rtt: RttConfig {
                initial_rto: SimDuration::from_secs(1),
                min_rto: SimDuration::from_secs(2),
                max_rto: SimDuration::from_secs(5),
                ..RttConfig::default()
            },
            ..SenderConfig::default()
        });
        drain(&mut s, at(0));
        assert_eq!(
            s.next_timeout(),
            Some(at(2000)),
            "initial RTO raised to the minimum"
        );
        s.on_timeout(at(2000));
        drain(&mut s, at(2000));
        assert_eq!(s.next_timeout(), Some(at(6000)));
        s.on_timeout(at(6000));
        drain(&mut s, at(6000));
        assert_eq!(s.next_timeout(), Some(at(11_000)), "capped at the maximum");
    }

    #[test]
    fn a_lost_syn_ack_is_retransmitted_by_the_receiver_and_answered_on_a_repeated_syn() {
        let (mut s, mut r) = pair(TcpOptions::default(), TcpOptions::default());
        let syn = drain(&mut s, at(0));
        let _lost = r.on_segment(at(250), &syn[0]).unwrap();
        assert_eq!(
            r.next_timeout(),
            Some(at(1250)),
            "the SYN-ACK's own timer, 1 s"
        );
        assert!(r.on_timeout(at(1249)).is_none());
        let again = r.on_timeout(at(1250)).expect("retransmitted");
        assert!(is_syn_ack(&again));
        assert_eq!(r.next_timeout(), Some(at(3250)), "backed off to 2 s");
        // The sender's SYN timer fired too: its SYN again is answered at once.
        s.on_timeout(at(1000));
        let syn2 = drain(&mut s, at(1000));
        let answer = r.on_segment(at(1250), &syn2[0]).expect("answered");
        assert!(is_syn_ack(&answer));
        assert_eq!(r.stats().syn_acks_sent, 3);
        assert_eq!(r.stats().syn_ack_retransmissions, 2);
        s.on_ack(at(1500), &answer);
        assert_eq!(s.rtt().rto(), RTO_AFTER_SYN_LOSS);
        // A later copy of the SYN-ACK: the sender owes an ACK again.
        let first = drain(&mut s, at(1500));
        assert_eq!(first.len(), 1);
        s.on_ack(at(1750), &again);
        assert_eq!(s.state(), State::Established);
        assert_eq!(
            s.snd_wnd_bytes(),
            u64::from(u16::MAX),
            "a SYN's window is no update"
        );
        // No data may leave (the window of one segment is full): a pure ACK answers.
        let ack = drain(&mut s, at(1750));
        assert_eq!(ack.len(), 1);
        assert_eq!((ack[0].payload_bytes, ack[0].seq), (0, s.snd_max()));
        assert_eq!(s.stats().handshake_acks_sent, 1);
        // The receiver in SYN-RECEIVED takes the data: established.
        r.on_segment(at(1750), &first[0]);
        assert_eq!(r.state(), State::Established);
        assert_eq!(r.next_timeout().map(|t| t > at(1750)), Some(true));
        assert!(
            r.on_segment(at(2000), &ack[0]).is_none(),
            "no ACK of an ACK"
        );
    }

    #[test]
    fn a_pure_ack_completes_the_handshake_when_there_is_no_data() {
        let mut s = Sender::connect(&SenderConfig {
            app: AppSource::Bulk { total_bytes: 0 },
            ..SenderConfig::default()
        });
        let mut r = Receiver::listen(&ReceiverConfig::default(), RttConfig::default());
        let syn = drain(&mut s, at(0));
        let sa = r.on_segment(at(100), &syn[0]).unwrap();
        s.on_ack(at(200), &sa);
        let ack = drain(&mut s, at(200));
        assert_eq!(ack.len(), 1);
        assert_eq!(ack[0].payload_bytes, 0);
        assert!(r.on_segment(at(300), &ack[0]).is_none());
        assert_eq!(r.state(), State::Established);
        assert_eq!(r.next_timeout(), None, "the SYN-ACK timer stopped");
        s.push_bytes(500);
        assert_eq!(drain(&mut s, at(400))[0].payload_bytes, 500);
    }

    #[test]
    fn options_one_side_does_not_offer_are_off_on_both_ends() {
        let client = TcpOptions::default();
        let server = TcpOptions {
            sack: false,
            timestamps: false,
            ..TcpOptions::default()
        };
        let (mut s, mut r) = pair(client, server);
        let syn = drain(&mut s, at(0));
        let sa = r.on_segment(at(10), &syn[0]).unwrap();
        s.on_ack(at(20), &sa);
        let n = *s.negotiated();
        assert_eq!(n, *r.negotiated());
        assert!(!n.sack && !n.timestamps);
        assert_eq!(s.smss_bytes(), 1460, "no timestamps: 12 bytes more payload");
        assert_eq!(
            s.recovery().algorithm(),
            crate::tcp::recovery::LossRecovery::NewReno,
            "SACK recovery needs SACK-permitted from both"
        );
        let data = drain(&mut s, at(20));
        assert!(data.iter().all(|d| d.options.timestamps.is_none()));
        let ack = r.on_segment(at(30), &data[1]).unwrap();
        assert!(ack.options.timestamps.is_none());
        // The other way round: the data sender does not offer them.
        let (mut s, mut r) = pair(server, client);
        let syn = drain(&mut s, at(0));
        assert!(!syn[0].options.sack_permitted && syn[0].options.timestamps.is_none());
        let sa = r.on_segment(at(10), &syn[0]).unwrap();
        assert!(!sa.options.sack_permitted && sa.options.timestamps.is_none());
        s.on_ack(at(20), &sa);
        assert_eq!(*s.negotiated(), *r.negotiated());
        assert_eq!(s.negotiated().window_shift, 5, "scaling offered by both");
    }
}
