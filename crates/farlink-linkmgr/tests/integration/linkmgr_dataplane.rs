//! The link manager's data plane end to end: kernel TCP across a multilink bundle of paced
//! member links between two namespaces (`farlink_linkmgr::testbed`). These need
//! CAP_NET_ADMIN and /dev/net/tun (CI runs as root); without them each test says why and
//! passes without running.
//!
//! The default-suite cases run the members at 115200 bit/s (48 times Iridium's 2400) so that
//! a quarter of a megabyte crosses in seconds. They run traffic in real time, so `cargo test`
//! leaves them out (`#[ignore]`) and `make test` runs them with the link manager's tests
//! (`--ignored --skip bench_`); the measurement at 8 × 2400 bit/s is behind `make
//! bench-linkmgr` (`bench_eight_iridium_members`), and its figures are in docs/linkmgr.md.

use std::time::Duration;

use farlink_emu::EmuError;
use farlink_linkmgr::testbed::{self, DropPlan, Notice, TestbedOptions, TestbedReport};

/// One testbed at a time: each takes a share of two small CPUs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `opts`; `None` (and why, printed) where the host cannot.
fn run(opts: &TestbedOptions) -> Option<TestbedReport> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    match testbed::run(opts) {
        Ok(r) => Some(r),
        Err(EmuError::Unsupported(why)) => {
            eprintln!("skipped: {why}");
            None
        }
        Err(e) => panic!("testbed: {e}"),
    }
}

fn print(label: &str, r: &TestbedReport) {
    let reasm = &r.ground.bond.reassembly;
    eprintln!(
        "{label}: {} × {} bit/s, {} bytes in {:.2} s (bundle up in {:.2} s): goodput {:.0} bit/s \
         = {:.1} % of the members' rates; lines busy {:.1} % (net of framing); file's share of \
         the wire {:.1} %; receiver: {} lost, {} timer expiries (timeout {:.2} s), {} discarded \
         fragments; sender: {} octets lost with dropped calls",
        r.members,
        r.rate_bps,
        r.file_bytes,
        r.transfer_s,
        r.bundle_up_s,
        r.goodput_bps,
        100.0 * r.goodput_ratio(),
        100.0 * r.wire_utilisation(),
        100.0 * r.payload_share(),
        reasm.lost_pkts,
        reasm.timeouts,
        r.stale_timeout_s,
        reasm.discarded_fragments,
        r.air.members.iter().map(|m| m.lost_octets).sum::<u64>(),
    );
}

const FAST_BPS: u64 = 115_200;

#[test]
#[ignore = "real time: make test runs it with the link manager's tests (--ignored)"]
fn kernel_tcp_crosses_a_bundle_of_four_members_intact() {
    let Some(r) = run(&TestbedOptions {
        members: 4,
        rate_bps: FAST_BPS,
        file_bytes: 256 * 1024,
        drop: None,
        limit: Duration::from_secs(60),
    }) else {
        return;
    };
    print("4 members, no drop", &r);
    assert!(r.bytes_ok, "the receiver's bytes differ from the file");
    // Every member carried its share of the data direction.
    for (m, s) in r.air.members.iter().enumerate() {
        assert!(s.fragments > 20, "member {m}: {} fragments", s.fragments);
    }
    assert_eq!(r.ground.bond.reassembly.timeouts, 0);
    // Behaviour, not speed (the machine may be loaded): the lines were used at all.
    assert!(r.wire_utilisation() > 0.2, "{:.3}", r.wire_utilisation());
}

#[test]
#[ignore = "real time: make test runs it with the link manager's tests (--ignored)"]
fn a_call_drop_mid_transfer_loses_what_the_member_held_and_the_transfer_completes() {
    let Some(r) = run(&TestbedOptions {
        members: 4,
        rate_bps: FAST_BPS,
        file_bytes: 256 * 1024,
        drop: Some(DropPlan {
            member: 1,
            after_bytes: 64 * 1024,
            notice: Notice::SenderOnly,
            redial_after: Some(Duration::from_secs(1)),
        }),
        limit: Duration::from_secs(60),
    }) else {
        return;
    };
    print("4 members, member 1 dropped", &r);
    assert!(r.bytes_ok, "the receiver's bytes differ from the file");
    // The call went down while data was on it: the sender lost octets or the receiver a
    // frame in the middle.
    let lost: u64 = r.air.members[1].lost_octets;
    let cut = r.ground.members[1].cut_frames + r.air.members[1].cut_frames;
    assert!(
        lost > 0 || cut > 0,
        "nothing was in flight on the dropped member"
    );
    // The member came back: two calls each end.
    assert_eq!(r.air.members[1].calls, 2);
    assert_eq!(r.ground.members[1].calls, 2);
}

/// `make bench-linkmgr`: 8 members at Iridium's 2400 bit/s, no drop, then a call drop
/// mid-fragment noticed at both ends, then one only the sender notices.
#[test]
#[ignore = "minutes at 2400 bit/s: make bench-linkmgr"]
fn bench_eight_iridium_members() {
    let base = TestbedOptions {
        members: 8,
        rate_bps: 2400,
        file_bytes: 150_000,
        drop: None,
        limit: Duration::from_secs(600),
    };
    let Some(clean) = run(&base) else { return };
    print("8 × 2400 bit/s, no drop", &clean);
    assert!(clean.bytes_ok);
    for (label, notice) in [
        ("drop noticed at both ends", Notice::Both),
        ("drop noticed by the sender only", Notice::SenderOnly),
    ] {
        let Some(r) = run(&TestbedOptions {
            drop: Some(DropPlan {
                member: 3,
                after_bytes: 50_000,
                notice,
                redial_after: None,
            }),
            ..base.clone()
        }) else {
            return;
        };
        print(&format!("8 × 2400 bit/s, {label}"), &r);
        assert!(r.bytes_ok);
        // Without the member from the drop on, the rest of the file crosses at (N-1)/N of
        // the rate: what the drop costs beyond that is the loss and its detection.
        let before = 50_000.0 / base.file_bytes as f64;
        let n = base.members as f64;
        let capacity_only = clean.transfer_s * (before + (1.0 - before) * n / (n - 1.0));
        eprintln!(
            "  cost of the drop: {:+.2} s against the run without; {:.2} s expected from the \
             member's capacity alone; {:+.2} s beyond it",
            r.transfer_s - clean.transfer_s,
            capacity_only - clean.transfer_s,
            r.transfer_s - capacity_only
        );
    }
}
