"""Real kernel TCP in network namespaces, captured by tcpdump: farlink beside tshark, the kernel
and the drop counters (tests/realcap.py builds the path and says what each truth is).

Skipped, with the reason, only where the capability is missing (not root, no network
namespaces, tools not installed by `make setup`). Each run is a few seconds.
"""

import os
import subprocess

import numpy as np
import pytest

import realcap
from farlink.captures.analysis import analyze_capture
from farlink.captures.dispersion import MODE_WIDTH
from farlink.captures.loss import estimate_loss
from support import WALL_CLOCK

REASON = realcap.missing_capability()
pytestmark = [WALL_CLOCK, pytest.mark.skipif(REASON is not None, reason=REASON or "")]

CASES = {
    # Drops on both sides of the tap; cubic keeps a queue in the tbf between losses.
    "cubic-drops": realcap.Case(
        "cubic-drops", cc="cubic", drop_before=0.01, drop_after=0.01, size_bytes=2_000_000
    ),
    # Heavy drops on both sides: Reno recovers by timeouts too, some of them backed off.
    "reno-rto": realcap.Case(
        "reno-rto", cc="reno", drop_before=0.03, drop_after=0.08, size_bytes=1_500_000
    ),
    # Offloads on: TSO/GSO super-segments at both taps; IPv6.
    "bbr-tso-v6": realcap.Case(
        "bbr-tso-v6", cc="bbr", offloads=True, ipv6=True, drop_after=0.03, size_bytes=2_000_000
    ),
    # Two connections interleaved, captured with `tcpdump -i any` (Linux cooked v2).
    "any-two": realcap.Case(
        "any-two", any_interface=True, flows=2, drop_after=0.01, size_bytes=1_000_000
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("realcap")
    return {name: realcap.run(case, out) for name, case in CASES.items()}


@pytest.fixture(scope="module")
def agree(runs):
    return {name: realcap.agreement(o, simulate_fit=False) for name, o in runs.items()}


def _close(ours: float, truth: float, rel: float, slack: int = 1) -> bool:
    return abs(ours - truth) <= max(rel * truth, slack)


@pytest.mark.parametrize("name", ["cubic-drops", "reno-rto"])
def test_retransmissions_equal_the_kernels_and_tsharks(agree, name):
    a = agree[name]
    assert a["retx_kernel"] > 0
    assert a["retx_farlink_sender"] == a["retx_kernel"] == a["retx_tshark_sender"]
    assert a["retx_farlink_tap"] == a["retx_tshark_tap"]


@pytest.mark.parametrize("name", ["cubic-drops", "reno-rto"])
def test_loss_is_split_where_the_drops_were_made(agree, name):
    a = agree[name]
    assert _close(a["lost_after_tap_farlink"], a["drops_after_made"], 0.1, slack=2)
    # Before the tap the count is a lower bound (farlink.captures.loss): a copy lost there whose
    # resend was lost there too, with no timeout to show it, is not seen.
    made = a["drops_before_made"]
    assert 0.6 * made - 2 <= a["lost_before_tap_farlink"] <= made + 2


# With make validate, as the local shaper's below: reno-rto's count missed the kernel's in one
# of seven runs of this module on one machine; the module's other tests do not depend on it.
@pytest.mark.slow
@pytest.mark.parametrize("name", ["cubic-drops", "reno-rto"])
def test_timeouts_are_the_kernels(agree, name):
    a = agree[name]
    tap, sender, kernel = a["rto_farlink"], a["rto_farlink_sender"], a["rto_kernel"]
    seen = f"farlink {tap} at the tap, {sender} at the sender, the kernel {kernel}"
    if _close(tap, kernel, 0.1):
        return
    # The tap can miss a timeout whose resends were all dropped before it (docs/captures.md,
    # "Timeouts"); then the sender's own capture, which sees every copy, must have it.
    assert tap < kernel, seen
    assert sender > tap and _close(sender, kernel, 0.1), seen


@pytest.mark.parametrize("name", ["cubic-drops", "reno-rto"])
def test_tap_rtt_is_tsharks_where_both_time_one_segment_and_goodput_agrees(agree, name):
    a = agree[name]
    # On the ACKs that both time against the segment ending at the ACK (tshark under Karn's
    # rule, farlink on an ACK without SACK blocks), the samples are the same to the ns.
    # A loaded machine can make tcpdump drop packets; the message says so when it did.
    assert a["rtt_acks_timed_by_both"] > 50, f"tcpdump dropped {a['capture_dropped']} packets"
    assert a["rtt_acks_timed_alike"] >= 0.99 * a["rtt_acks_timed_by_both"]
    # Elsewhere tshark times an ACK after a loss against the first copy or the segment before
    # the hole: its tail is recovery time, farlink's is not.
    assert a["rtt_p95_farlink_s"] <= a["rtt_p95_tshark_s"]
    assert a["goodput_farlink_bps"] == pytest.approx(a["goodput_tshark_bps"], rel=0.01)
    # By tshark's own rule (no Karn), farlink's samples are tshark's: each the same as tshark's
    # for that ACK to the ns, two fewer in all (tshark also times the SYN-ACK and the ACK of
    # the FIN).
    n = a["rtt_samples_farlink_wireshark"]
    assert a["rtt_wireshark_alike"] == n
    assert a["rtt_samples_tshark"] - 2 <= n <= a["rtt_samples_tshark"]


@pytest.mark.parametrize("name", ["cubic-drops", "reno-rto"])
def test_fitted_rate_is_the_tbfs_where_the_flow_did_not_fill_it(runs, agree, name):
    # reno-rto's timeouts leave the tbf idle for most of the transfer; the ACKs released while
    # it was busy are spaced by its rate all the same (farlink.captures.dispersion).
    from farlink.captures.fit import fit_path

    # The capture on the sender's own interface, ahead of the tbf, gives it too: the ACKs
    # crossed it.
    for pcap in (runs[name].tap_pcap, runs[name].sender_pcap):
        fit = fit_path(pcap)
        assert fit.rate_basis.startswith("ACK dispersion"), fit.warnings
        assert fit.rate_bps == pytest.approx(realcap.tbf_ip_rate_bps(runs[name].case), rel=0.03)
        # Not below what crossed, but for the tbf's 80 kB burst, which lets a 2 MB transfer's
        # mean goodput stand up to a few per cent above its sustained rate.
        assert fit.rate_bps * (1 + MODE_WIDTH) >= agree[name]["goodput_farlink_bps"]


@pytest.mark.parametrize("name", ["cubic-drops", "reno-rto", "bbr-tso-v6"])
def test_fitted_bucket_is_the_tbfs(runs, name):
    # The tbf's 80 kB bucket (81.2 kB of IP packets) lets the start of the transfer, and each
    # window after a slow spell, through at line rate; the ACKs show it wherever the tap sits.
    # The estimate is a lower bound: the largest burst less what the rate refilled meanwhile,
    # and less the first packet of the run, whose ACK's sample began before the burst: with
    # offloads on that is a super-segment of up to 64 kB (in eight runs of bbr-tso-v6, 53 to 78
    # kB; without offloads, in validate-captures, 0.92 to 0.98 of the bucket).
    from farlink.captures.fit import fit_path

    bucket = realcap.tbf_ip_burst_bytes(runs[name].case)
    least = bucket - 65536 if runs[name].case.offloads else 0.85 * bucket
    for pcap in (runs[name].tap_pcap, runs[name].sender_pcap):
        fit = fit_path(pcap)
        assert fit.bucket is not None and fit.bucket.burst_bytes is not None, pcap
        assert least <= fit.bucket.burst_bytes <= 1.01 * bucket, pcap
        assert fit.bucket.peak_rate_bps > 2 * fit.rate_bps


def test_sender_rtt_includes_the_queue_before_the_tap(runs, agree):
    a = agree["cubic-drops"]
    # The tbf queue is before the tap: the sender's RTT is milliseconds, the tap's microseconds.
    # Its truth is the tap-to-tap RTT at the sender's own interface, where the queue is inside
    # the round trip; the estimate from TSvals has the resolution of their 1 ms tick.
    _, (at_sender,) = analyze_capture(runs["cubic-drops"].sender_pcap)
    truth = float(np.median(at_sender.rtt["rtt_s"]))
    assert truth > 20 * a["rtt_median_farlink_s"]
    assert a["sender_rtt_median_s"] == pytest.approx(truth, abs=0.0015)


def test_super_segments_count_as_the_kernel_counts(runs, agree):
    o, a = runs["bbr-tso-v6"], agree["bbr-tso-v6"]
    _, conns = analyze_capture(o.sender_pcap)
    (conn,) = conns
    assert ":" in conn.name.split("->")[0].rsplit(":", 1)[0], "IPv6 addresses"
    assert conn.seq["len_bytes"].max() > 2 * conn.mss_bytes, "offloads on: super-segments"
    assert a["retx_farlink_sender"] == a["retx_tshark_sender"]
    # The kernel counts MSS-sized segments; farlink's count from the super-segments' lengths
    # is within a segment or two of it in several hundred.
    assert a["retx_segments_farlink_sender"] == pytest.approx(a["retx_kernel"], rel=0.01)
    assert a["goodput_farlink_bps"] == pytest.approx(a["goodput_tshark_bps"], rel=0.01)


def test_fitted_linux_sender_of_a_super_segment_capture(runs, agree, tmp_path):
    # The tap's capture holds super-segments (offloads on); the fitted flow sends segments of
    # the kernel's MSS, with the options the handshake agreed, and its goodput is not more than
    # 15 % below the capture's (fitted in super-segments it was 20 % and more below). Above,
    # 20 % is allowed: the fitted link has the tbf's bucket, and farlink's BBR runs a few per
    # cent faster than Linux's on a clean path (docs/validation.md: +3.9 % at p = 0): the
    # kernel's 2 MB here took 17.4 to 18.9 Mbit/s in seven of eight runs, the fits 19.1 to 19.5.
    from farlink import simulate
    from farlink.captures.fit import fit_path, scenario_toml

    o, a = runs["bbr-tso-v6"], agree["bbr-tso-v6"]
    fit = fit_path(o.tap_pcap)
    assert fit.largest_segment_bytes > 2 * fit.mss_bytes
    assert fit.handshake is not None and fit.handshake.sack and fit.handshake.timestamps
    scenario = tmp_path / "fitted.toml"
    scenario.write_text(scenario_toml(fit, "fitted", tcp="bbr", profile="linux"))
    result = simulate(scenario, size=f"{o.case.size_bytes}B", duration="60s")
    flow = result.summary["flows"][0]
    assert flow["bytes_sent"] <= flow["segments_sent"] * fit.mss_bytes
    seen = (
        f"fitted {flow['goodput_bps']:.4g} bit/s, capture {a['goodput_farlink_bps']:.4g}; "
        f"timeouts at the tap {a['rto_farlink']}, kernel {a['rto_kernel']}"
    )
    # The kernel's own count too: a timeout whose copies the tap never saw still held it.
    if max(a["rto_farlink"], a["rto_kernel"] or 0) <= 2:
        assert 0.85 <= flow["goodput_bps"] / a["goodput_farlink_bps"] <= 1.2, seen
    else:
        # The kernel's run usually times out once or twice (17 to 19 Mbit/s in ten runs); now
        # and then a chain of backed-off timeouts holds it for a second or more (one run: 7.3
        # Mbit/s), the copies of a lost super-segment lost again (GRO hands iptables 64 kB at
        # once). The fitted link's loss, per packet and independent, makes no such chains, so
        # there only the direction is checked: the MSS-sized fit is not the low one.
        assert flow["goodput_bps"] >= 0.85 * a["goodput_farlink_bps"], seen


def test_cooked_v2_capture_of_two_connections(runs):
    o = runs["any-two"]
    cap, conns = analyze_capture(o.tap_pcap)
    assert cap.linktype == 276
    assert len(conns) == 2
    for info in o.tcp_info:
        conn = next(c for c in conns if f":{info['sport']}->" in c.name)
        ref = realcap.tshark_reference(o.tap_pcap, info["sport"])
        assert conn.retransmissions == ref["retransmissions"]
        assert conn.delivered_bytes == o.case.size_bytes
        assert estimate_loss(conn).lost_before_tap == 0


def test_namespaces_are_removed_and_stale_ones_too(runs):
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{realcap.PREFIX}{os.getpid()}-" not in listed
    stale = f"{realcap.PREFIX}999999999-old-s"  # no such process
    subprocess.run(["ip", "netns", "add", stale], check=True)
    realcap.remove_stale()
    assert stale not in subprocess.run(["ip", "netns"], capture_output=True, text=True).stdout


# A tbf on the sender's own interface (a host with a slow uplink): the sender's capture on s0 is
# below it, the tbf's queue before that tap. Heavy drops, so that Linux falls back on its timer.
LOCAL_SHAPER = [
    realcap.Case(
        f"local-{cc}-{k}",
        cc=cc,
        shaper_at_sender=True,
        drop_before=0.03,
        drop_after=0.08,
        size_bytes=1_500_000,
    )
    for k, cc in enumerate(("reno", "cubic", "reno"))
]


@pytest.fixture(scope="module")
def local_shaper_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("local-shaper")
    return [realcap.run(case, out) for case in LOCAL_SHAPER]


# With make validate: beside make test's emulations, which spin a core each, the sender's
# timers and the tap's stamps drift apart and a capture counted 11 timeouts where the kernel
# counted 5 (one clean-clone run in five); on a quiet machine the counts agree.
@pytest.mark.slow
def test_timeouts_below_a_local_shaper_are_the_kernels(local_shaper_runs):
    # Judged on the sender's clock where the ACKs at the tap are the sender's (farlink.captures.
    # rto, "On the sender's clock"): within 20 % (or 2) of TcpExtTCPTimeouts, capture by capture.
    counts = []
    for o in local_shaper_runs:
        _, conns = analyze_capture(o.sender_pcap)
        conn = max(conns, key=lambda c: c.delivered_bytes)
        assert conn.tap is not None and conn.tap.acks_reach_sender_at_once
        ours = len(conn.timeouts_s) + conn.timeouts_unseen
        counts.append((o.case.name, ours, o.nstat.get("TcpExtTCPTimeouts", 0)))
    seen = "; ".join(f"{name}: farlink {ours}, kernel {kernel}" for name, ours, kernel in counts)
    print(seen)
    for _, ours, kernel in counts:
        assert _close(ours, kernel, 0.2, slack=2), seen
