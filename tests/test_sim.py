"""The sim engine from Python and the command line: overrides, determinism, outputs, errors."""

import hashlib
import json
import math

import numpy as np
import pytest

from farlink import _core, simulate
from farlink.scenario import ScenarioError, apply_overrides, list_presets, load_scenario, set_path
from farlink.sim import headline
from farlink.units import parse_duration_s
from support import run

HEADLINE_KEYS = {
    "goodput_bps",
    "normalized_goodput",
    "delivered_bytes",
    "transfer_time_s",
    "retransmissions",
    "timeouts",
    "drops",
    "events",
    "sim_time_s",
    "wall_time_s",
}


def digest(result):
    h = hashlib.sha256()
    summary = {k: v for k, v in result.summary.items() if k != "wall_time_s"}
    h.update(json.dumps(summary, sort_keys=True).encode())
    for table in sorted(result.traces):
        for column in sorted(result.traces[table]):
            h.update(result.traces[table][column].tobytes())
    return h.hexdigest()


def test_every_preset_runs_and_conserves():
    for name, description in list_presets():
        assert description
        # A 1500-byte packet takes 5 s to clock onto a 2.4 kbps Iridium modem; flows that join
        # later (stpd-fixed-bottleneck, stpd-moving-bottleneck) get 5 s after the last start.
        flows = load_scenario(name).get("flows", [])
        last_start_s = max(
            (parse_duration_s(f.get("start", "0s"), allow_zero=True) for f in flows), default=0
        )
        seconds = 300 if name.startswith("iridium") else 5 + math.ceil(last_start_s)
        result = simulate(name, duration=f"{seconds}s")
        assert result.summary["sim_time_s"] == pytest.approx(seconds)
        assert result.summary["delivered_bytes"] > 0


def test_same_seed_same_bytes_other_seed_differs():
    first = simulate("stpd-wireless", loss=0.02, duration="20s", seed=3)
    again = simulate("stpd-wireless", loss=0.02, duration="20s", seed=3)
    other = simulate("stpd-wireless", loss=0.02, duration="20s", seed=4)
    assert digest(first) == digest(again)
    assert digest(first) != digest(other)


def test_lossless_path_fills_the_bottleneck():
    # Payload is 948 of every 1000 bytes on the wire (timestamps on), so 0.948 is the ceiling;
    # the slow-start overshoot into the 30-packet buffer costs one timeout early on.
    result = simulate("stpd-wireless", loss=0.0, duration="100s", sets=["trace={}"])
    assert result.summary["normalized_goodput"] > 0.85


def test_goodput_falls_with_loss():
    goodput = [
        simulate("stpd-wireless", loss=p, duration="60s", sets=["trace={}"]).summary[
            "normalized_goodput"
        ]
        for p in (1e-3, 1e-2, 1e-1)
    ]
    assert goodput[0] > goodput[1] > goodput[2]


def test_size_makes_a_bulk_transfer_with_a_transfer_time():
    result = simulate("stpd-wired", size="500KB", duration="60s")
    top = headline(result)
    assert set(top) == HEADLINE_KEYS
    assert top["delivered_bytes"] == 500_000
    assert 500_000 * 8 / 1.5e6 < top["transfer_time_s"] < 60


def test_tcp_override_selects_recovery_and_sack_beats_reno_under_loss():
    reno = simulate("stpd-wireless", tcp="reno", loss=0.03, duration="60s", sets=["trace={}"])
    sack = simulate("stpd-wireless", tcp="sack", loss=0.03, duration="60s", sets=["trace={}"])
    assert reno.scenario["flows"][0]["tcp"]["recovery"] == "reno"
    assert sack.summary["goodput_bps"] > reno.summary["goodput_bps"]


def test_tcp_bic_reduces_the_window_to_819_1024_of_itself():
    # Linux 2.6's BIC (tcp_bic.c, beta = 819/1024) above its low window of 14 segments, in whole
    # segments truncated as the kernel's integers.
    result = simulate(
        "stpd-wireless", tcp="bic", loss=0.01, duration="30s", sets=["trace={cwnd=true}"]
    )
    tcp = result.scenario["flows"][0]["tcp"]
    assert (tcp["cc"], tcp["recovery"]) == ("bic", "sack")
    cwnd = result.trace("cwnd")
    first = int(np.argmax(cwnd["ssthresh_bytes"] < 2**40))
    assert first > 0, "a loss in 30 s at p = 0.01"
    smss = tcp["mss_bytes"] - 12  # timestamps
    before = int(cwnd["cwnd_bytes"][first - 1]) // smss
    assert before > 14
    assert cwnd["ssthresh_bytes"][first] == before * 819 // 1024 * smss


def test_traces_are_columns_of_equal_length():
    result = simulate("stpd-wireless", duration="10s")
    cwnd = result.trace("cwnd")
    assert len({len(c) for c in cwnd.values()}) == 1
    assert np.all(np.diff(cwnd["time_ns"].astype(np.int64)) >= 0)
    with pytest.raises(KeyError, match="no trace 'nope'"):
        result.trace("nope")


def test_parquet_round_trip_with_provenance(tmp_path):
    import pyarrow.parquet as pq

    result = simulate("stpd-wireless", duration="5s")
    written = result.to_parquet(tmp_path)
    table = pq.read_table(tmp_path / "cwnd.parquet")
    assert table.num_rows == len(result.trace("cwnd")["time_ns"])
    meta = table.schema.metadata
    assert json.loads(meta[b"farlink.scenario"])["name"] == "stpd-wireless"
    assert (tmp_path / "summary.json") in written


def test_set_path_and_overrides():
    doc = load_scenario("stpd-wireless")
    edited = apply_overrides(
        doc, loss=0.05, sets=["links[1].queue_pkts=4", "flows.0.tcp.sack=false"]
    )
    assert edited["links"][1]["fwd"]["loss"] == {"model": "bernoulli", "p": 0.05}
    assert edited["links"][1]["queue_pkts"] == 4
    assert edited["flows"][0]["tcp"]["sack"] is False
    assert doc["links"][1]["queue_pkts"] == 30  # the original is untouched
    with pytest.raises(ScenarioError, match="no list element 9"):
        set_path(doc, "links[9].rate", "1Mbps")
    with pytest.raises(ScenarioError, match="expected path=value"):
        apply_overrides(doc, sets=["links[1].rate"])
    with pytest.raises(ScenarioError, match="no lossy_link"):
        apply_overrides({"links": []}, loss=0.1)


def test_core_errors_name_the_field():
    with pytest.raises(_core.ScenarioError) as info:
        simulate("stpd-wireless", sets=["links[1].fwd.loss.p=2"])
    assert info.value.path == "links[1].fwd.loss.p"


def test_cli_simulate_json_and_outputs(capsys, tmp_path):
    code, out, err = run(
        capsys, "simulate", "stpd-wireless", "--loss", "0.01", "--duration", "20s",
        "--out", str(tmp_path), "--pcap", "--json",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert HEADLINE_KEYS <= set(result)
    assert result["drops"]["corruption"] > 0
    assert (tmp_path / "cwnd.parquet").exists()
    capture = (tmp_path / "R-D.pcap").read_bytes()
    assert capture[:4] == bytes.fromhex("4d3cb2a1")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["simulate", "no-such-preset"], "neither a scenario file nor a preset"),
        (["simulate", "stpd-wireless", "--loss", "1.2"], "--loss"),
        (["simulate", "stpd-wireless", "--duration", "soon"], "--duration"),
        (["simulate", "stpd-wireless", "--set", "links[1].fwd.loss.p=2"], "links[1].fwd.loss.p"),
        (["simulate", "stpd-wireless", "--set", "links[7].rate=1Mbps"], "no list element 7"),
        (["simulate", "stpd-wireless", "--tcp", "warp"], "warp"),
    ],
)
def test_cli_simulate_bad_input_is_one_line(capsys, argv, fragment):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1, err
    assert fragment in err


def test_cli_toml_syntax_error_names_the_line(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nseed = = 3\nnodes = []\n')
    code, _, err = run(capsys, "simulate", str(bad))
    assert code == 2
    assert "bad.toml:2:8: " in err


def test_tahoe_with_rare_losses_does_not_lock_into_retransmissions():
    # Regression: Limited Transmit answering the duplicate ACKs of Tahoe's go-back-N once
    # locked the flow at a 3-segment window with thousands of needless retransmissions, because
    # the Limited Transmit segments counted in the FlightSize that sets ssthresh (RFC 5681 3.2
    # step 2 leaves them out); see docs/validation-notes.md.
    from farlink.reproduce.stpd import NS2_LIKE_TCP

    for seed in (3, 4, 5):
        result = simulate(
            "stpd-wireless", tcp="tahoe", loss=1e-4, seed=seed, sets=[*NS2_LIKE_TCP, "trace={}"]
        )
        agg = result.summary
        assert agg["normalized_goodput"] > 0.8, (seed, agg)
        assert agg["retransmissions"] < 300, (seed, agg)
