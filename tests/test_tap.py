"""Where the tap was (farlink.captures.tap), the timeouts judged on the sender's clock at a tap
below a local queue (farlink.captures.rto), and what a fit does with a tap at the receiver."""

import json

import numpy as np
import pytest

from farlink.captures.read import Packet
from farlink.captures.rto import infer_timeouts, sender_times
from farlink.captures.tap import tap_position
from support import assert_one_error, run

S, R = ("10.0.0.1", 40000), ("10.0.0.2", 5001)
SYN, ACK = 0x02, 0x10


def _pkt(t: float, frm, seq: int, ack: int, flags: int, payload: int = 0, **kw) -> Packet:
    to = R if frm == S else S
    return Packet(t, frm[0], to[0], frm[1], to[1], seq, ack, flags, payload, **kw)


def _handshake(syn_ack_after_s: float, third_after_s: float) -> tuple[list, list]:
    """The data's sender opens: SYN at 0, SYN-ACK seen ``syn_ack_after_s`` later, the third
    segment ``third_after_s`` after that."""
    t1 = syn_ack_after_s
    data = [_pkt(0.0, S, 0, 0, SYN), _pkt(t1 + third_after_s, S, 1, 1, ACK)]
    other = [_pkt(t1, R, 0, 1, SYN | ACK)]
    return data, other


@pytest.mark.parametrize(
    ("syn_ack_s", "third_s", "where"),
    [
        (0.160, 0.000_01, "sender"),  # the whole round trip beyond the tap
        (0.000_01, 0.160, "receiver"),  # the whole round trip before it
        (0.060, 0.100, "mid-path"),
        (0.000_2, 0.000_3, None),  # veth pairs in one machine: a host's turn-around
    ],
)
def test_the_handshake_places_the_tap(syn_ack_s, third_s, where):
    data, other = _handshake(syn_ack_s, third_s)
    tap = tap_position(data, other, None)
    assert tap.location == where
    assert tap.downstream_rtt_s == pytest.approx(syn_ack_s)
    assert tap.upstream_rtt_s == pytest.approx(third_s)


def test_a_download_places_the_tap_from_the_receivers_syn():
    # The receiver opened (the data flows to the side that sent the SYN): its SYN went
    # upstream to the data's sender, whose SYN-ACK came back 160 ms later.
    data = [_pkt(0.160, S, 0, 1, SYN | ACK)]
    other = [_pkt(0.0, R, 0, 0, SYN), _pkt(0.160_02, R, 1, 1, ACK)]
    tap = tap_position(data, other, None)
    assert (tap.location, tap.upstream_rtt_s) == ("receiver", pytest.approx(0.160))


def test_timestamps_echoed_by_the_sender_measure_the_far_side():
    # No handshake: the receiver's TSval 7 first crosses at 1.0 s, the sender's first segment
    # echoing it 0.2 s later; the data's ACKs come back 2 ms after the data.
    other = [_pkt(1.0, R, 1, 1000, ACK, tsval=7, tsecr=100), _pkt(1.01, R, 1, 2000, ACK, tsval=7)]
    data = [_pkt(1.2, S, 2000, 1, ACK, 1000, tsval=300, tsecr=7)]
    tap = tap_position(data, other, 0.002)
    assert tap.upstream_rtt_s == pytest.approx(0.2)
    assert tap.location == "receiver"
    assert not tap.acks_reach_sender_at_once


def _below_a_local_queue():
    """A sender behind a local queue draining one 1000-byte segment per 50 ms, on a path of
    100 ms: segments 0-14 sent at once; 0 is lost after the tap; 1-14 come back as SACKs; the
    fast retransmit of 0 (at the third duplicate ACK, 0.25 s) waits 0.5 s in the local queue
    and is lost too; new data 15-25 follows one per duplicate ACK; the RTO resends 0 at 1.25 s
    (1 s after its previous copy, by the sender's clock), which waits only 0.1 s."""
    sent_t, tap_t, seq = [], [], []
    queue_free_t = 0.0

    def send(t: float, segment: int) -> None:
        nonlocal queue_free_t
        leave = max(t, queue_free_t)
        queue_free_t = leave + 0.05
        sent_t.append(t)
        tap_t.append(leave)
        seq.append(segment * 1000)

    for k in range(15):
        send(0.0, k)
    send(0.25, 0)  # fast retransmit, lost
    for j, k in enumerate(range(15, 26)):
        send(0.30 + 0.05 * j, k)
    send(1.25, 0)  # the RTO's resend
    tap_t, sent_t, seq = np.array(tap_t), np.array(sent_t), np.array(seq, dtype=np.int64)
    order = np.argsort(tap_t, kind="stable")
    tap_t, sent_t, seq = tap_t[order], sent_t[order], seq[order]
    lens = np.full(len(seq), 1000, dtype=np.int64)
    retx = np.zeros(len(seq), dtype=bool)
    retx[seq == 0] = True
    retx[np.flatnonzero(seq == 0)[0]] = False
    # Every segment but the copies of 0 is SACKed 100 ms after it crossed the tap; the last
    # copy of 0 is acknowledged with everything.
    ack_t, ack, sack = [], [], []
    high = 0
    for t, s, r in zip(tap_t, seq, retx, strict=True):
        if s == 0 and (not r or t < 1.3):
            continue
        if s == 0:
            ack_t.append(t + 0.1)
            ack.append(26_000)
            sack.append(())
            continue
        high = max(high, s + 1000)
        ack_t.append(t + 0.1)
        ack.append(0)
        sack.append(((1000, high),))
    order = np.argsort(ack_t, kind="stable")
    return (
        tap_t,
        sent_t,
        seq,
        lens,
        retx,
        np.array(ack_t)[order],
        np.array(ack, dtype=np.int64)[order],
        [sack[i] for i in order],
    )


def test_a_timeout_below_a_local_queue_is_seen_on_the_senders_clock():
    tap_t, sent_t, seq, lens, retx, ack_t, ack, sack = _below_a_local_queue()
    longest_rtt_s = 0.6  # 100 ms of path and up to 0.5 s in the local queue
    # On the tap's clock the RTO's resend comes 0.6 s after the previous copy (which waited
    # longer in the queue) while SACKs keep arriving: no silence, no late repeat.
    on_tap = infer_timeouts(tap_t, seq, lens, retx, ack_t, ack, sack, longest_rtt_s=longest_rtt_s)
    assert on_tap.count == 0
    # The TSvals (a 1 kHz clock) say when TCP sent each segment: 1 s after the previous copy.
    tsval = np.floor(sent_t * 1000)
    waits = tap_t - tsval / 1000
    waits -= waits.min()
    when = sender_times(tap_t, waits, 1000.0)
    assert np.all(when <= tap_t)
    order = np.argsort(when, kind="stable")
    found = infer_timeouts(
        when[order],
        seq[order],
        lens[order],
        retx[order],
        ack_t,
        ack,
        sack,
        longest_rtt_s=longest_rtt_s,
    )
    assert found.count == 1
    resend = order[found.segments[0]]
    assert (seq[resend], tap_t[resend]) == (0, pytest.approx(1.35))


@pytest.fixture(scope="module")
def node_taps(tmp_path_factory):
    """stpd-wireless (2 x 80 ms, 1 % loss) captured on the sender's and the receiver's hosts,
    with and without TCP timestamps."""
    from farlink import simulate
    from farlink.results.result import write_pcaps

    folders = {}
    for stamps in (True, False):
        out = tmp_path_factory.mktemp(f"tap-{stamps}")
        sets = [
            'pcap=[{node = "S"}, {node = "D"}]',
            "flows[0].tcp.handshake=true",
            f"flows[0].tcp.timestamps={str(stamps).lower()}",
        ]
        write_pcaps(simulate("stpd-wireless", loss=0.01, duration="30s", sets=sets), out)
        folders[stamps] = out
    return folders


def test_fit_of_either_end_gives_the_paths_delay(capsys, node_taps, tmp_path):
    reports = {}
    for node in ("S", "D"):
        out = tmp_path / f"{node}.toml"
        code, printed, err = run(
            capsys, "fit", node_taps[True] / f"node-{node}.pcap", "--out", out, "--json"
        )
        assert code == 0, err
        reports[node] = json.loads(printed)
    assert reports["S"]["tap_location"] == "sender"
    assert reports["D"]["tap_location"] == "receiver"
    # 80.1 ms each way, and a data packet's 5.3 ms at 1.5 Mbit/s in the sender's round trip;
    # never the receiver's own turn-around (0 in the simulator) as the path's.
    for node in ("S", "D"):
        assert reports[node]["delay_s"] == pytest.approx(0.0801, abs=0.004), node


def test_fit_refuses_a_receiver_side_tap_without_the_senders_clock(capsys, node_taps, tmp_path):
    # Without timestamps the receiver's capture cannot show the queues on the path: the fit
    # asks for --rtt in one line and writes nothing; with --rtt it fits.
    capture = node_taps[False] / "node-D.pcap"
    out = tmp_path / "never.toml"
    code, _, err = run(capsys, "fit", capture, "--out", out)
    assert_one_error(code, err, "the tap is at the receiver", "--rtt")
    assert not out.exists()
    code, printed, err = run(capsys, "fit", capture, "--out", out, "--rtt", "161ms", "--json")
    assert code == 0, err
    report = json.loads(printed)
    assert report["rtt_s"]["min"] == pytest.approx(0.161)
    assert report["tap_location"] == "receiver"


def test_a_resent_syn_is_timed_by_the_copy_the_syn_ack_echoes():
    # Over a path of 1.4 s the SYN's 1 s initial RTO fires: the SYN-ACK answers the first copy,
    # which its TSecr names; without timestamps which copy it answered is not known (Karn).
    def opening(stamps: bool) -> tuple[list, list]:
        ts = (lambda v: {"tsval": v, "tsecr": 0}) if stamps else (lambda v: {})
        data = [_pkt(0.0, S, 0, 0, SYN, **ts(100)), _pkt(1.0, S, 0, 0, SYN, **ts(1100))]
        echo = {"tsval": 9, "tsecr": 100} if stamps else {}
        other = [_pkt(1.4, R, 0, 1, SYN | ACK, **echo)]
        data.append(_pkt(1.400_01, S, 1, 1, ACK, **({"tsval": 1400, "tsecr": 9} if stamps else {})))
        return data, other

    tap = tap_position(*opening(True), None)
    assert tap.downstream_rtt_s == pytest.approx(1.4)
    assert tap.location == "sender"
    tap = tap_position(*opening(False), None)
    assert tap.downstream_rtt_s is None and tap.location is None
