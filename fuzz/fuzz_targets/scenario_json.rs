//! Arbitrary bytes as a scenario document: `parse_scenario_json` must refuse or accept without
//! panicking, every refusal must name a well-formed path, and every accepted scenario must run
//! (duration cut short so that one input stays cheap) to a result that passes the engine's own
//! conservation checks and writes as pcap.

#![no_main]

use std::io;

use farlink_core::pcap::NODE_ADDRESS_SLOTS;
use farlink_core::scenario::{AppSpec, Scenario, ScenarioError};
use farlink_core::world::write_pcap;
use farlink_core::{parse_scenario_json, run};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The work one input may cost the engine, in events as [`cost`] bounds them (packets on a
/// link, timers, trace samples). The bound is loose (every link busy with 40-byte packets in
/// both directions), so a run costs at most a few milliseconds, and the presets still run for
/// a few simulated seconds: long enough for losses, recovery and timeouts.
const EVENT_BUDGET: f64 = 500_000.0;
/// Headers of the smallest packet the engine sends (a bare ACK): a link of `rate_bps`
/// carries at most `rate_bps / (8 * 40)` packets per second.
const MIN_PACKET_BYTES: f64 = 40.0;
/// Bytes of options that come out of the MSS of every data segment with timestamps.
const TIMESTAMP_OPTION_BYTES: u32 = 12;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_scenario_json(&text) {
        Err(e) => check_error(&e),
        Ok(scenario) => run_short(&text, &scenario),
    }
});

/// A refusal names where (a path such as `links[1].fwd.loss.p`, or nothing for the document
/// as a whole) and what.
fn check_error(e: &ScenarioError) {
    assert!(
        !e.message.is_empty(),
        "error without a message at {:?}",
        e.path
    );
    assert!(
        well_formed_path(&e.path),
        "malformed path {:?}: {}",
        e.path,
        e.message
    );
}

/// The grammar of `--set` paths: `field([N])*` joined by `.`, the first field possibly
/// absent (an index into a document written as an array); a field is non-empty, not all
/// digits, without `.`, `[`, `]`, white space or control characters. Empty for the document.
fn well_formed_path(path: &str) -> bool {
    if path.is_empty() {
        return true;
    }
    path.split('.').enumerate().all(|(i, segment)| {
        let (field, mut rest) = segment.split_at(segment.find('[').unwrap_or(segment.len()));
        let field_ok = !field.is_empty()
            && !field.bytes().all(|b| b.is_ascii_digit())
            && !field
                .chars()
                .any(|c| c == ']' || c.is_whitespace() || c.is_control());
        if !(field_ok || (i == 0 && field.is_empty() && !rest.is_empty())) {
            return false;
        }
        while !rest.is_empty() {
            let Some(inner) = rest.strip_prefix('[') else {
                return false;
            };
            let Some(close) = inner.find(']') else {
                return false;
            };
            let index = &inner[..close];
            if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            rest = &inner[close + 1..];
        }
        true
    })
}

/// Events per simulated second the scenario may cost at most, and a cost independent of the
/// duration (the largest windows the senders may put in flight at once).
fn cost(s: &Scenario) -> (f64, f64) {
    let mut per_second = 0.0;
    for l in s.links() {
        for d in [&l.fwd, &l.rev] {
            per_second += d.rate.as_bps_f64() / (8.0 * MIN_PACKET_BYTES);
        }
    }
    let mut fixed = 0.0;
    for f in s.flows() {
        let per_ns = |d: farlink_core::time::SimDuration| 1e9 / d.as_nanos().max(1) as f64;
        per_second += per_ns(f.tcp.rtt.min_rto);
        if let AppSpec::Telnet { mean_interval, .. } = f.app {
            per_second += per_ns(mean_interval);
        }
        if s.trace().goodput {
            per_second += per_ns(s.trace().goodput_interval);
        }
        let ts = if f.tcp.options.timestamps {
            TIMESTAMP_OPTION_BYTES
        } else {
            0
        };
        let smss = f.tcp.options.mss_bytes.saturating_sub(ts).max(1);
        fixed += (f.tcp.receive_buffer_bytes / u64::from(smss)) as f64 + 1.0;
    }
    // A packet crosses several links and each crossing is a few events.
    (4.0 * per_second, 4.0 * fixed)
}

/// Runs the scenario, or the same document with its duration cut to fit [`EVENT_BUDGET`].
fn run_short(text: &str, scenario: &Scenario) {
    let (per_second, fixed) = cost(scenario);
    if fixed > EVENT_BUDGET / 2.0 {
        return;
    }
    let allowed_s = (EVENT_BUDGET - fixed) / per_second.max(1e-9);
    if scenario.duration().as_secs_f64() <= allowed_s {
        run_checked(scenario);
        return;
    }
    // Same document, shorter run: `duration_s` replaces whichever spelling was given. The
    // scenario may now be refused (a flow starting after the new end): that is fine.
    let Ok(Value::Object(mut doc)) = serde_json::from_str::<Value>(text) else {
        return;
    };
    doc.remove("duration");
    doc.insert("duration_s".to_owned(), Value::from(allowed_s));
    match parse_scenario_json(&Value::Object(doc).to_string()) {
        Ok(short) => run_checked(&short),
        Err(e) => check_error(&e),
    }
}

fn run_checked(scenario: &Scenario) {
    let result = match run(scenario) {
        Ok(r) => r,
        Err(e) => panic!("a validated scenario failed to run: {e}"),
    };
    // Refused only for more nodes than addresses; anything else is a bug.
    let too_many_nodes = result.nodes.len() > NODE_ADDRESS_SLOTS as usize;
    for tap in &result.tap_links {
        match write_pcap(&result, tap.link, io::sink()) {
            Ok(_) => {}
            Err(e) if too_many_nodes && e.kind() == io::ErrorKind::InvalidInput => {}
            Err(e) => panic!("pcap of link {}: {e}", tap.link),
        }
    }
}
