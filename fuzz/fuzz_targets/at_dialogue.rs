//! Arbitrary modem replies into the AT dialogue, with requests and timers interleaved: nothing
//! panics, every request ends in exactly one outcome (an event, or the dialogue idle or online),
//! the dialogue never waits without a deadline, and its line buffer stays bounded.

#![no_main]

use farlink_linkmgr::ppp::at::{parse_line, AtDialogue, AtOutput, ModemProfile};
use farlink_core::time::{SimDuration, SimTime};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut d = AtDialogue::new(ModemProfile::iridium());
    let mut now = SimTime::ZERO;
    let mut last_write = SimTime::ZERO;
    // Each record: an action octet, a length octet, then that many reply octets.
    let mut rest = data;
    while let [action, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (reply, next) = tail.split_at(n);
        rest = next;
        now = now + SimDuration::from_millis(u64::from(*action) * 40);
        match action % 6 {
            0 if d.is_idle() => d.init(now),
            1 if d.is_idle() => d.dial(now),
            2 if d.is_idle() => d.query_signal(now),
            3 => d.hang_up(now, last_write),
            4 => d.on_carrier_lost(now),
            _ => {}
        }
        if let Some(w) = d.next_wakeup() {
            assert!(w <= now + SimDuration::from_secs(200));
            if action & 0x80 != 0 {
                d.on_timer(w);
                now = now.max(w);
            }
        } else {
            assert!(d.is_idle() || d.is_online());
        }
        if !d.is_online() {
            d.on_bytes(now, reply);
        } else {
            last_write = now;
        }
        while let Some(out) = d.poll() {
            if let AtOutput::Write(w) = out {
                assert!(!w.is_empty() && w.len() < 64);
            }
        }
        let _ = parse_line(&String::from_utf8_lossy(reply));
    }
});
