"""The boundary of the Rust core: ``farlink._core.run_scenario``.

What is checked here is only what the binding adds: the result's shape and dtypes, the mapping
of errors to Python exceptions, the GIL being released during a run, determinism through the
boundary, and that the pcap bytes are a capture other tools read. The simulation itself is
tested in Rust (``cargo test -p farlink-core``).
"""

import hashlib
import json
import pickle
import threading
import time
from typing import Any

import numpy as np
import pytest

from farlink import _core

U64, U32, U8, BOOL = np.dtype(np.uint64), np.dtype(np.uint32), np.dtype(np.uint8), np.dtype(bool)
F64 = np.dtype(np.float64)

# Every table and column of the traces, with the dtype the core hands over.
TRACE_DTYPES: dict[str, dict[str, np.dtype[Any]]] = {
    "cwnd": {
        "time_ns": U64,
        "flow": U32,
        "cwnd_bytes": U64,
        "ssthresh_bytes": U64,
        "effective_cwnd_bytes": U64,
    },
    "seq": {"time_ns": U64, "flow": U32, "seq": U64, "len_bytes": U32, "retransmission": BOOL},
    "ack": {"time_ns": U64, "flow": U32, "ack": U64},
    "rtt": {"time_ns": U64, "flow": U32, "rtt_ns": U64, "srtt_ns": U64},
    "rto": {"time_ns": U64, "flow": U32, "rto_ns": U64},
    "queue": {"time_ns": U64, "link": U32, "forward": BOOL, "pkts": U32, "bytes": U64},
    "drops": {
        "time_ns": U64,
        "link": U32,
        "forward": BOOL,
        "flow": U32,
        "ack_packet": BOOL,
        "seq": U64,
        "syn": BOOL,
        "cause": U8,
    },
    "goodput": {"time_ns": U64, "flow": U32, "delivered_bytes": U64},
    "member_state": {"time_ns": U64, "link": U32, "member": U32, "state": U8},
    "capacity": {"time_ns": U64, "link": U32, "members_up": U32, "capacity_bps": U64},
    "queue_delay": {"time_ns": U64, "link": U32, "forward": BOOL, "sojourn_ns": U64},
    "aqm": {
        "time_ns": U64,
        "link": U32,
        "forward": BOOL,
        "queue": U32,
        "event": U8,
        "value": F64,
    },
}

PCAP_MAGIC_NANOS_LE = bytes.fromhex("4d3cb2a1")


def chain(*, loss_p: float = 0.02, traces: bool = True, pcap: bool = True) -> dict[str, Any]:
    """S - R - D, Bernoulli loss on R -> D, a 300 KB bulk transfer S -> D."""
    scenario: dict[str, Any] = {
        "name": "binding-chain",
        "seed": 7,
        "duration": "60s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "1ms"},
            {
                "name": "R-D",
                "a": "R",
                "b": "D",
                "rate": "1Mbps",
                "delay": "40ms",
                "queue_pkts": 20,
                "fwd": {"loss": {"model": "bernoulli", "p": loss_p}},
            },
        ],
        "flows": [
            {"name": "ftp", "from": "S", "to": "D", "app": {"kind": "bulk", "size": "300KB"}}
        ],
    }
    if traces:
        # all = true leaves queue_delay and aqm off: they are asked for by name
        scenario["trace"] = {
            "all": True,
            "queue_delay": True,
            "aqm": True,
            "goodput_interval": "500ms",
        }
    if pcap:
        scenario["pcap"] = ["R-D"]
    return scenario


def run(scenario: dict[str, Any]) -> dict[str, Any]:
    return dict(_core.run_scenario(json.dumps(scenario)))


@pytest.fixture(scope="module")
def chain_result() -> dict[str, Any]:
    return run(chain())


def test_result_has_summary_names_traces_and_pcap(chain_result: dict[str, Any]) -> None:
    r = chain_result
    assert set(r) == {
        "summary",
        "traces",
        "pcap",
        "pcap_files",
        "pcap_addresses",
        "flows",
        "connections",
        "links",
        "nodes",
    }
    assert list(r["pcap_addresses"]) == list(r["pcap"])
    assert r["pcap_files"] == {}  # captures stream to files only with capture_files
    assert r["flows"] == ["ftp"]
    assert r["connections"] == [(0, 0, "S", "D")]
    assert r["links"] == ["S-R", "R-D"]
    assert r["nodes"] == ["S", "R", "D"]

    summary = json.loads(r["summary"])
    assert {
        "schema_version",
        "core_version",
        "scenario_name",
        "seed",
        "sim_time_s",
        "events",
        "all_finished",
        "aggregate",
        "flows",
        "links",
        "lossy_link",
    } <= set(summary)
    assert summary["core_version"] == _core.__version__
    assert summary["scenario_name"] == "binding-chain"
    assert summary["seed"] == 7
    (flow,) = summary["flows"]
    assert flow["finished"] and flow["delivered_bytes"] == 300_000
    assert [link["name"] for link in summary["links"]] == r["links"]
    assert summary["aggregate"]["drops"]["corruption"] > 0, "the loss was applied"


def test_traces_are_numpy_columns_of_native_dtypes(chain_result: dict[str, Any]) -> None:
    traces = chain_result["traces"]
    assert list(traces) == list(TRACE_DTYPES)
    for table, columns in TRACE_DTYPES.items():
        got = traces[table]
        assert list(got) == list(columns), table
        lengths = set()
        for name, dtype in columns.items():
            array = got[name]
            assert isinstance(array, np.ndarray), (table, name)
            assert array.ndim == 1 and array.dtype == dtype, (table, name, array.dtype)
            lengths.add(len(array))
        assert len(lengths) == 1, f"{table}: columns of different lengths {lengths}"
        if table in ("member_state", "capacity"):
            assert lengths.pop() == 0, f"{table}: the chain has no bundle link"
            continue
        if table == "aqm":
            assert lengths.pop() == 0, "the chain's queues are drop-tail: no AQM state"
            continue
        assert lengths.pop() > 0, f"{table} is switched on and should have rows"
    # Values are what the core recorded: times in order, flow ids index "flows".
    seq = traces["seq"]
    assert np.all(np.diff(seq["time_ns"].astype(np.int64)) >= 0)
    assert np.all(seq["flow"] == 0)
    summary = json.loads(chain_result["summary"])
    assert int(seq["retransmission"].sum()) == summary["flows"][0]["retransmissions"]
    goodput = traces["goodput"]["delivered_bytes"]
    assert np.all(np.diff(goodput.astype(np.int64)) >= 0) and goodput[-1] <= 300_000


def test_switched_off_traces_are_present_and_empty() -> None:
    r = run(chain(traces=False, pcap=False))
    assert r["pcap"] == {}
    assert r["pcap_addresses"] == {}
    assert list(r["traces"]) == list(TRACE_DTYPES)
    for table, columns in TRACE_DTYPES.items():
        for name, dtype in columns.items():
            array = r["traces"][table][name]
            assert isinstance(array, np.ndarray)
            assert array.shape == (0,) and array.dtype == dtype, (table, name)


def test_bad_scenario_raises_scenario_error_naming_the_field() -> None:
    with pytest.raises(_core.ScenarioError) as info:
        run(chain(loss_p=2.0))
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == "links[1].fwd.loss.p"
    assert err.message and "2" in err.message
    assert str(err) == f"{err.path}: {err.message}"
    assert type(err).__module__ == "farlink._core"
    # Sweeps raise it in worker processes: it must survive pickling with its attributes.
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is _core.ScenarioError
    assert (again.path, again.message, str(again)) == (err.path, err.message, str(err))


def test_malformed_or_incomplete_json_is_a_scenario_error_too() -> None:
    with pytest.raises(_core.ScenarioError):
        _core.run_scenario("{")
    scenario = chain()
    del scenario["links"][0]["rate"]
    with pytest.raises(_core.ScenarioError) as info:
        run(scenario)
    assert info.value.path.startswith("links[0]")


def test_conservation_error_is_a_runtime_error() -> None:
    assert issubclass(_core.ConservationError, RuntimeError)
    assert _core.ConservationError.__module__ == "farlink._core"


def long_run_scenario() -> dict[str, Any]:
    """About a second of simulation in a release build (a tenth of that in a debug build)."""
    duration = "3000s" if _core.build_info()[1] == "release" else "100s"
    return {
        "duration": duration,
        "nodes": ["S", "D"],
        "links": [
            {
                "a": "S",
                "b": "D",
                "rate": "20Mbps",
                "delay": "10ms",
                "fwd": {"loss": {"model": "bernoulli", "p": 0.001}},
            }
        ],
        "flows": [{"from": "S", "to": "D", "app": {"kind": "unbounded"}}],
    }


def test_gil_is_released_during_a_run() -> None:
    # A thread that wakes every 2 ms and records when. Were the GIL held for the whole run,
    # it could not run at all between the call's start and its end (at most one wake-up at
    # either edge); released, it wakes dozens of times even on a loaded machine.
    stamps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.002)

    scenario = json.dumps(long_run_scenario())
    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        result = _core.run_scenario(scenario)
        end = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    during = [t for t in stamps if start < t < end]
    assert json.loads(result["summary"])["events"] > 0
    assert len(during) >= 10, f"{len(during)} wake-ups during a run of {end - start:.3f} s"


def digests(result: dict[str, Any]) -> dict[str, str]:
    """SHA-256 of every trace column's bytes and of every capture."""
    out = {
        f"{table}.{name}": hashlib.sha256(array.tobytes()).hexdigest()
        for table, columns in result["traces"].items()
        for name, array in columns.items()
    }
    out.update({f"pcap:{k}": hashlib.sha256(v).hexdigest() for k, v in result["pcap"].items()})
    return out


def test_same_json_gives_identical_results(chain_result: dict[str, Any]) -> None:
    again = run(chain())
    assert again["summary"] == chain_result["summary"]
    assert digests(again) == digests(chain_result)
    other_seed = run({**chain(), "seed": 8})
    assert digests(other_seed) != digests(chain_result)


def test_pcap_is_a_nanosecond_capture_of_the_tapped_link(chain_result: dict[str, Any]) -> None:
    captures = chain_result["pcap"]
    assert list(captures) == ["R-D"]
    data = captures["R-D"]
    assert isinstance(data, bytes)
    assert data[:4] == PCAP_MAGIC_NANOS_LE
    assert int.from_bytes(data[20:24], "little") == 101, "LINKTYPE_RAW"


def test_pcap_parses_with_dpkt_as_ipv4_tcp(chain_result: dict[str, Any]) -> None:
    dpkt = pytest.importorskip("dpkt")
    import io

    reader = dpkt.pcap.Reader(io.BytesIO(chain_result["pcap"]["R-D"]))
    packets = list(reader)
    assert len(packets) > 3
    times = [float(ts) for ts, _ in packets]
    assert times == sorted(times)
    sources = set()
    syns = 0
    data_packets = 0
    for _, buf in packets:
        ip = dpkt.ip.IP(buf)
        assert ip.v == 4 and ip.p == dpkt.ip.IP_PROTO_TCP
        assert ip.len == len(buf)
        tcp = ip.data
        assert isinstance(tcp, dpkt.tcp.TCP)
        assert len(buf) == ip.hl * 4 + tcp.off * 4 + len(tcp.data)
        syns += bool(tcp.flags & dpkt.tcp.TH_SYN)
        if tcp.data:
            data_packets += 1
            sources.add(bytes(ip.src))
        if tcp.flags & dpkt.tcp.TH_SYN and not tcp.flags & dpkt.tcp.TH_ACK:
            # The synthetic SYN offers the negotiated options (MSS, SACK, timestamps, ...).
            kinds = {kind for kind, _ in dpkt.tcp.parse_opts(tcp.opts)}
            assert {dpkt.tcp.TCP_OPT_MSS, dpkt.tcp.TCP_OPT_SACKOK} <= kinds
    assert syns == 2, "SYN and SYN-ACK of the one flow"
    assert data_packets >= 300_000 // 1460
    assert len(sources) == 1, "data comes from the sender only"
