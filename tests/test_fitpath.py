"""farlink fit: a path estimated from a capture and a drop log, written as a runnable scenario."""

import json

import numpy as np
import pytest

from farlink import simulate
from farlink.captures.fit import fit_path, scenario_toml
from farlink.cli.app import main
from farlink.results.result import write_pcaps
from farlink.scenario import load_scenario, resolve


def _true_loss_rate(result) -> float:
    """Every drop of a data segment (corruption and queue overflow) per segment sent."""
    data_drops = int((~result.trace("drops")["ack_packet"]).sum())
    return data_drops / result.summary["flows"][0]["segments_sent"]


@pytest.mark.parametrize(("tap", "sack"), [("S-R", True), ("R-D", True), ("S-R", False)])
def test_loss_events_land_near_the_truth_and_nearer_than_the_upper_bound(tmp_path, tap, sack):
    # Reno at 2 % on seed 003's wireless path: timeouts and go-back-N resend segments the
    # receiver held, so half the retransmissions are spurious. S-R is upstream of every loss;
    # R-D's tap is behind the queue at R, so the queue's drops never cross it. Without SACK
    # blocks only the cumulative ACKs tell the go-back-N resends apart (rule 2 of lossest).
    sets = [f'pcap=["{tap}"]', f"flows[0].tcp.sack={str(sack).lower()}"]
    result = simulate("stpd-wireless", tcp="reno", loss=0.02, duration="60s", sets=sets)
    write_pcaps(result, tmp_path)
    truth = _true_loss_rate(result)
    fit = fit_path(tmp_path / f"{tap}.pcap")
    assert fit.loss.spurious_retransmissions > 0
    assert fit.loss.loss_rate_path == pytest.approx(truth, rel=0.1)
    assert abs(fit.loss.loss_rate_path - truth) < abs(fit.loss_rate_upper_bound - truth)
    drops = result.summary["flows"][0]["drops"]
    if tap == "R-D":
        # The queue at R is before this tap, the corruption on R-D after it.
        assert fit.loss.unseen_before == pytest.approx(drops["queue_overflow"], abs=2)
        assert fit.loss.lost_before_tap == pytest.approx(drops["queue_overflow"], abs=2)
        after = sum(v for k, v in drops.items() if k != "queue_overflow")
        assert fit.loss.lost_after_tap == pytest.approx(after, rel=0.1)
        # Every hole before the tap came while R's queue was full (farlink.captures.overflow):
        # the fitted link gets the corruption alone, its queue makes the overflows.
        assert fit.overflows is not None
        assert fit.overflows.overflows == pytest.approx(drops["queue_overflow"], abs=2)
        assert fit.scenario_loss_p == pytest.approx(fit.loss_rate, rel=0.1)
    else:
        assert fit.loss.lost_before_tap == 0
        assert fit.loss_rate == pytest.approx(fit.loss.loss_rate_path, rel=1e-12)
        # The queue at R is after this tap: its overflows came while the tap's RTT stood at its
        # ceiling (farlink.captures.overflow), and the fitted link keeps the corruption alone.
        # Corruption that struck while the queue stood full cannot be told from an overflow
        # (5 of 34 with SACK, 9 without, on this seed): the split is near, not exact.
        queue = drops["queue_overflow"]
        assert fit.overflows_after is not None
        assert abs(fit.overflows_after.overflows - queue) <= 0.3 * queue + 2
        random_after = fit.random_loss.lost_after_tap
        assert abs(random_after - drops["corruption"]) <= 0.3 * drops["corruption"] + 2
        assert fit.scenario_loss_p < fit.loss.loss_rate_path


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit")
    result = simulate("stpd-wireless", loss=0.01, duration="60s", sets=['pcap=["S-R"]'])
    write_pcaps(result, out)
    return out / "S-R.pcap", result.summary


def test_fit_recovers_the_base_rtt_and_bounds_the_loss(capture):
    fit = fit_path(capture[0])
    # Base RTT of stpd-wireless: 2 x 80.1 ms of propagation plus serialisation of a data packet
    # at 1.5 and 10 Mbps and of an ACK; the tap on S-R sees it less nothing.
    assert fit.rtt_s["min"] == pytest.approx(0.1665, abs=0.005)
    assert fit.rtt_s["min"] <= fit.rtt_s["median"] <= fit.rtt_s["p95"]
    assert fit.loss_rate <= fit.loss_rate_upper_bound
    assert fit.mss_bytes == 948
    assert 0 < fit.rate_bps <= 1.5e6


def test_fitted_scenario_runs_on_the_packet_engine(capture, tmp_path):
    fit = fit_path(capture[0])
    scenario = tmp_path / "fitted.toml"
    scenario.write_text(scenario_toml(fit, "fitted"))
    doc = load_scenario(scenario)
    # The link gets the random loss: every loss after the tap less the queue's overflows.
    assert doc["links"][0]["fwd"]["loss"]["p"] == pytest.approx(fit.scenario_loss_p, rel=1e-5)
    random = fit.loss.lost_after_tap - fit.overflows_after.overflows
    assert fit.scenario_loss_p == pytest.approx(random / fit.loss.data_segments)
    result = simulate(scenario, duration="20s")
    assert result.summary["delivered_bytes"] > 0


def test_cli_fit_with_a_drop_log(capsys, capture, tmp_path):
    rng = np.random.default_rng(5)
    lines = ["modem,time"]
    for modem in ("Kansas", "Iowa", "Ohio"):
        lines += [f"{modem},{t:.1f}" for t in np.cumsum(rng.exponential(3000, 80))]
    log = tmp_path / "drops.csv"
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "fitted.toml"
    code = main(["fit", str(capture[0]), "--drops", str(log), "--out", str(out), "--json"])
    printed, err = capsys.readouterr()
    assert code == 0, err
    fitted = json.loads(printed)
    low, high = fitted["beta_ci_per_s"]
    assert low <= 1 / 3000 <= high
    assert "call_drop_rate" in out.read_text()
    assert fitted["loss_rate"] <= fitted["loss_rate_upper_bound"]
    assert set(fitted["loss_rate_meanings"]) == {
        "loss_rate",
        "loss_rate_before_tap",
        "scenario_loss_p",
        "loss_rate_upper_bound",
    }


def test_cli_fit_bad_capture_is_one_line(capsys, tmp_path):
    bad = tmp_path / "not.pcap"
    bad.write_text("hello")
    code = main(["fit", str(bad)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("farlink: error: fit:")


def test_fit_takes_the_least_rto_from_the_timeouts_it_sees(tmp_path):
    # 20 % loss on seed 003's wireless path: the simulated Reno times out, its RTO at least
    # RFC 6298's 1 s; the fitted flow's min_rto is the shortest wait the capture shows.
    result = simulate("stpd-wireless", tcp="reno", loss=0.2, duration="60s", sets=['pcap=["S-R"]'])
    write_pcaps(result, tmp_path)
    assert result.summary["flows"][0]["timeouts"] > 0
    fit = fit_path(tmp_path / "S-R.pcap")
    assert 0.98 <= fit.min_rto_s <= 1.5
    scenario = tmp_path / "fitted.toml"
    scenario.write_text(scenario_toml(fit, "fitted"))
    assert load_scenario(scenario)["flows"][0]["tcp"]["min_rto_s"] == pytest.approx(fit.min_rto_s)


@pytest.mark.parametrize("queue_pkts", [60, 120])
def test_fitted_queue_is_the_standing_queue_the_rtt_shows(tmp_path, queue_pkts):
    # Loss-free CUBIC fills R's buffer (1000-byte packets) and keeps it standing; the capture on
    # S-R, upstream of it, sees the queue as RTT above the base. Where the buffer never
    # overflowed (120 packets) the estimate is a lower bound (the 95th percentile, not the
    # peak); where it did (60), its size is the RTT's ceiling where the overflows came.
    sets = ['pcap=["S-R"]', f"links[1].queue_pkts={queue_pkts}"]
    result = simulate("stpd-wireless", tcp="cubic", loss=0.0, duration="60s", sets=sets)
    write_pcaps(result, tmp_path)
    fit = fit_path(tmp_path / "S-R.pcap")
    if result.summary["flows"][0]["drops"]["queue_overflow"]:
        assert fit.queue_basis.startswith("the queue after the tap when full")
        assert fit.queue_bytes == pytest.approx(queue_pkts * 1000, rel=0.05)
    else:
        assert fit.queue_basis.startswith("standing queue")
        assert 0.75 * queue_pkts * 1000 <= fit.queue_bytes <= queue_pkts * 1000
    doc = load_scenario(_write(tmp_path, scenario_toml(fit, "q")))
    assert doc["links"][0]["queue_bytes"] == fit.queue_bytes


def _write(folder, text: str):
    path = folder / "fitted.toml"
    path.write_text(text)
    return path


def test_cli_fit_names_the_senders_controller(capsys, capture, tmp_path):
    out = tmp_path / "cubic.toml"
    assert main(["fit", str(capture[0]), "--out", str(out), "--tcp", "cubic", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["tcp"], report["sender"]) == ("cubic", "rfc")
    doc = load_scenario(out)
    assert doc["flows"][0]["tcp"]["cc"] == "cubic"
    # rfc: farlink's timer, with the shortest wait before a timeout the capture showed
    assert doc["flows"][0]["tcp"]["min_rto_s"] == pytest.approx(report["min_rto_s"], rel=1e-5)
    assert simulate(out, duration="10s").summary["delivered_bytes"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tcp", "nope"], 'farlink: error: --tcp: unknown congestion controller "nope"'),
        (["--sender", "bsd"], "farlink: error: --sender: expected one of rfc, linux, got 'bsd'"),
        (["--profile", "bsd"], "farlink: error: --profile: expected one of rfc, linux, got 'bsd'"),
        (
            ["--profile", "linux", "--sender", "rfc"],
            "farlink: error: --sender rfc and --profile linux: --sender is --profile's older name",
        ),
    ],
)
def test_cli_fit_refuses_an_unknown_sender_in_one_line(capsys, capture, tmp_path, args, message):
    out = tmp_path / "never.toml"
    assert main(["fit", str(capture[0]), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize("option", ["--profile", "--sender"])
def test_cli_fit_with_the_linux_profile_writes_it_in_one_line(capsys, capture, tmp_path, option):
    out = tmp_path / "linux.toml"
    args = ["fit", str(capture[0]), "--out", str(out), option, "linux", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["profile"] == report["sender"] == "linux"
    written = load_scenario(out)["flows"][0]["tcp"]
    assert written["profile"] == "linux"
    # Linux's timer and loss detection come from the profile, not from lines of their own.
    assert not {"rto", "recovery", "min_rto", "min_rto_s"} & set(written)
    tcp = resolve(load_scenario(out))["flows"][0]["tcp"]
    assert (tcp["rto"], tcp["recovery"], tcp["min_rto_s"]) == ("linux", "rack", 0.2)
    assert simulate(out, duration="10s").summary["delivered_bytes"] > 0
