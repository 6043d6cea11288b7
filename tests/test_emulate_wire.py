"""farlink's own TCP sender on the wire (docs/wire.md): the simulator's sender, through the
emulator's links, to the unmodified kernel receiver in its namespace, every byte checked. These
make network namespaces and TUN devices (CI runs as root); without CAP_NET_ADMIN or
/dev/net/tun they are skipped, saying which."""

import pytest

from farlink.cli.app import main
from farlink.emulate import emulate
from support import REAL_TIME, needs_namespaces

pytestmark = [REAL_TIME, needs_namespaces("emulator")]


@pytest.mark.parametrize(("tcp", "loss"), [("stpd", 0.0), ("stpd", 0.01), ("tahoe", 0.01)])
def test_a_transfer_reaches_the_kernel_receiver_verified(tcp, loss):
    # 400 kB: about 420 segments, four or so lost at p = 1e-2 (make validate-wire sends 10 MB).
    result = emulate("stpd-wireless", tcp=tcp, loss=loss, size="400KB", duration="120s")
    (flow,) = result.summary["flows"]
    assert flow["error"] is None, flow
    assert flow["sender"] == "farlink"
    assert flow["finished"] and flow["verified"] is True, flow
    assert flow["delivered_bytes"] == 400_000
    assert flow["kernel_settings"]["applied"]["sender"].startswith("farlink's user-space TCP")
    wire = flow["wire"]
    assert wire["malformed"] == 0 and wire["fin_transmissions"] >= 1, wire
    # Every ACK that released segments was timed, to its first and to its last segment.
    first, burst = wire["timing"]["ack_to_first_send_us"], wire["timing"]["ack_to_burst_end_us"]
    assert 0 < first["count"] == burst["count"] <= wire["packets_received"], wire
    assert 0 < first["p50"] <= first["p99"] <= first["max"] <= burst["max"], wire
    assert burst["p50"] >= first["p50"] and wire["timing"]["busy_s"] > 0, wire
    if loss > 0:
        # Losses were recovered by farlink's own recovery, not by the kernel's.
        assert flow["retransmissions"] > 0
        assert flow["drops"]["corruption"] > 0
    # The trace has the same columns as the kernel sender's TCP_INFO.
    trace = result.trace("tcp_info")
    assert len(trace["cwnd_bytes"]) > 10 and trace["acked_bytes"][-1] > 0


def test_reno_is_the_kernel_s_and_farlink_s_on_request():
    kernel = emulate("stpd-wireless", tcp="reno", loss=0.01, size="300KB", duration="120s")
    ours = emulate(
        "stpd-wireless", tcp="reno", sender="farlink", loss=0.01, size="300KB", duration="120s"
    )
    (k,) = kernel.summary["flows"]
    (f,) = ours.summary["flows"]
    assert (k["sender"], f["sender"]) == ("kernel", "farlink")
    assert k["verified"] is True and f["verified"] is True, (k, f)
    assert "wire" not in k and f["wire"]["packets_sent"] > 0


def test_a_closed_port_ends_the_transfer_with_connection_refused():
    result = emulate("stpd-wireless", tcp="stpd", size="100KB", duration="30s", listen=False)
    (flow,) = result.summary["flows"]
    assert not flow["finished"] and flow["verified"] is False
    assert "connection refused by 10.0." in flow["error"], flow["error"]
    assert "RST in answer to the SYN" in flow["error"]
    # It ended at once, not at the end of the 30 s.
    assert result.summary["sim_time_s"] < 10


def test_a_bad_sender_and_a_recovery_for_the_kernel_are_one_line(capsys):
    assert main(["emulate", "stpd-wireless", "--sender", "both", "--size", "10KB"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("farlink: error: --sender:") and "\n" not in err
    args = ["emulate", "stpd-wireless", "--tcp", "tahoe", "--sender", "kernel", "--size", "10KB"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "loss recovery" in err and "\n" not in err
