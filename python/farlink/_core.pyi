"""Type stubs of the Rust extension ``farlink._core``."""

import os
from collections.abc import Callable
from typing import Any, TypedDict

import numpy.typing as npt

__all__ = [
    "AQM_EVENT_NAMES",
    "DERIVED_FIELDS",
    "LINUX_MODELS",
    "MEMBER_STATE_NAMES",
    "TCP_PROFILES",
    "BudgetError",
    "ConservationError",
    "EmulatorError",
    "LinkMgrError",
    "ScenarioError",
    "__version__",
    "build_info",
    "emulate",
    "emulate_interrupt_signal",
    "estimate_scenario",
    "linkmgr_config",
    "linkmgr_control",
    "linkmgr_modem_sim",
    "linkmgr_run",
    "resolve_scenario",
    "run_scenario",
    "send",
    "short_flow_plan",
    "toml_line",
]

__version__: str
DERIVED_FIELDS: tuple[str, ...]
"""The fields of a resolved scenario the core derives rather than reads (``resolved.rs``'s
``DERIVED_FIELDS``), the bookkeeping ones (``resolved_schema_version``, ``scenario_schema``,
``defaults``, ``from_profile``) included."""
LINUX_MODELS: tuple[tuple[str, str], ...]
"""The controllers that model a Linux module's own arithmetic, as (module, controller) pairs
(the core's ``CcConfig::LINUX_MODELS``)."""

class TcpProfile(TypedDict):
    """One TCP profile as :data:`TCP_PROFILES` holds it."""

    fields: tuple[tuple[str, str | int | bool, str, str, str], ...]
    """The ``[flows.tcp]`` fields it sets, each ``(key, value, resolved key, part, source)``:
    ``key`` and ``value`` as a scenario writes them (``"initial_rto"``, ``"1s"``), its name in
    the resolved scenario (``"initial_rto_s"``), ``part`` ``"connection"`` or ``"sender"``, and
    the kernel source the value follows."""
    models: tuple[tuple[str, str], ...]
    """(module, controller): the controller that runs for a module's name under it."""
    growth: dict[str, str]
    """The window growth it gives a controller where the scenario gives none, by controller."""
    recovery: str | None
    """The loss recovery a controller named on the command line runs over (None: its own)."""

TCP_PROFILES: dict[str, TcpProfile]
"""The TCP profiles by name (``[flows.tcp] profile``; the core's ``scenario/profile.rs``):
``"rfc"``, farlink's defaults, which sets nothing, and ``"linux"``."""
MEMBER_STATE_NAMES: tuple[str, ...]
"""The ``member_state`` trace's state names, indexed by its ``state`` code (the core's
``MemberState::NAMES``)."""

AQM_EVENT_NAMES: tuple[str, ...]
"""The ``aqm`` trace's event names, indexed by its ``event`` code (the core's
``AqmEvent::NAMES``)."""

def build_info() -> tuple[str, str]:
    """The core's version and its build profile (``"release"`` or ``"debug"``)."""

class ScenarioError(ValueError):
    """A scenario that cannot be read, edited or run; exported as ``farlink.ScenarioError``.

    Raised by :func:`run_scenario` and its siblings for anything the core refuses (malformed
    JSON, an unknown or missing field, a value out of range, a unit it does not read): then
    ``str(err)`` is ``"path: message"`` (just ``message`` when ``path`` is empty). Raised by
    :mod:`farlink.scenario` too, for a file that cannot be read, TOML syntax or a bad
    ``--set``: then ``path`` and ``message`` are None and ``str(err)`` names the place.
    """

    path: str | None
    """Where: the JSON path of the offending value, e.g. ``links[1].fwd.loss.p`` or
    ``flows[0].app.size``; empty for the document as a whole (e.g. a missing top-level
    field); None when the fault is not a field of the document."""
    message: str | None
    """What was expected there; None when ``path`` is."""

class BudgetError(ValueError):
    """A run refused before it started: its estimate is over the run budget.

    ``str(err)`` gives the estimate, the budget and what to change.
    """

    events: float
    """Estimated events of the run."""
    trace_rows: float
    """Estimated trace rows."""
    memory_bytes: float
    """Estimated memory, traces and captures included."""
    disk_bytes: float
    """Estimated disk for trace rows streamed to a ``trace_sink``; 0 without one."""
    max_disk_bytes: int
    """The disk budget (bytes)."""
    max_events: int
    """The budget's bound on events."""
    max_memory_bytes: int
    """The budget's bound on memory."""

class ConservationError(RuntimeError):
    """A simulation lost track of a packet or a byte (conservation check failed).

    This is a bug in the engine, never the scenario's fault; ``str(err)`` says what did not
    add up.
    """

class RunOutput(TypedDict):
    """What :func:`run_scenario` returns."""

    summary: str
    """The run's summary as JSON text (``json.loads`` it): ``schema_version``,
    ``core_version``, ``scenario_name``, ``seed``, ``sim_time_s``, ``events``,
    ``all_finished``, ``aggregate``, ``flows`` (one object per flow), ``links`` (one object per
    link, ``fwd`` and ``rev`` directions, ``bundle`` for a bundle link) and ``lossy_link``.
    Fields are documented in ``crates/farlink-core/src/world/summary.rs``; rates are bit/s,
    times seconds, sizes bytes."""
    traces: dict[str, dict[str, npt.NDArray[Any]]]
    """Every trace table, always all ten, whether switched on or not (a table switched off
    has zero-length arrays): ``{table: {column: 1-D array}}``, all columns of a table of equal
    length, rows in simulated-time order. Tables, columns and dtypes:

    - ``cwnd``: ``time_ns`` u64, ``flow`` u32, ``cwnd_bytes`` u64, ``ssthresh_bytes`` u64
      (``2**64 - 1`` until the first reduction), ``effective_cwnd_bytes`` u64;
    - ``seq``: ``time_ns`` u64, ``flow`` u32, ``seq`` u64, ``len_bytes`` u32,
      ``retransmission`` bool;
    - ``ack``: ``time_ns`` u64, ``flow`` u32, ``ack`` u64;
    - ``rtt``: ``time_ns`` u64, ``flow`` u32, ``rtt_ns`` u64, ``srtt_ns`` u64;
    - ``rto``: ``time_ns`` u64, ``flow`` u32, ``rto_ns`` u64;
    - ``queue``: ``time_ns`` u64, ``link`` u32, ``forward`` bool, ``pkts`` u32, ``bytes`` u64;
    - ``drops``: ``time_ns`` u64, ``link`` u32, ``forward`` bool, ``flow`` u32,
      ``ack_packet`` bool, ``seq`` u64, ``syn`` bool (a SYN or SYN-ACK of a simulated
      handshake), ``cause`` u8 (0 ``queue_overflow``, 1 ``corruption``,
      2 ``arq_give_up``, 3 ``call_drop``, 4 ``reassembly_timeout``);
    - ``goodput``: ``time_ns`` u64, ``flow`` u32, ``delivered_bytes`` u64;
    - ``member_state``: ``time_ns`` u64, ``link`` u32, ``member`` u32, ``state`` u8 (an
      index into :data:`MEMBER_STATE_NAMES`), one row per state change of a bundle member;
    - ``capacity``: ``time_ns`` u64, ``link`` u32, ``members_up`` u32, ``capacity_bps`` u64,
      whenever the members a bundle may use change.
    - ``queue_delay``: ``time_ns`` u64, ``link`` u32, ``forward`` bool, ``sojourn_ns`` u64, one
      row per packet leaving a link direction's queue (its wait there): a plain link's queue,
      a bundle's MLPPP queue, a radio hop's queue before RLP frames the packet.
    - ``aqm``: ``time_ns`` u64, ``link`` u32, ``forward`` bool, ``queue`` u32, ``event`` u8 (an
      index into :data:`AQM_EVENT_NAMES`), ``value`` f64, one row per change of a queue
      discipline's control state.

    ``flow`` indexes ``flows``, ``link`` indexes ``links``; ``forward`` is the link's
    ``a -> b`` direction. Semantics in ``crates/farlink-core/src/trace.rs``."""
    pcap: dict[str, bytes]
    """One capture per tap listed under the scenario's ``pcap`` (empty when none), keyed by
    the tap's name (a link's name, ``LINK@a``/``LINK@b`` for a link end, ``node-NODE`` for a
    node): a classic pcap file, little-endian, nanosecond timestamps (magic ``0xa1b23c4d``,
    first bytes ``4d 3c b2 a1``), link type 101 (raw IPv4). It holds every packet the tap
    sees (for a link, those leaving its queues in both directions), in time order, plus a
    synthetic SYN, SYN-ACK, ACK at the start of each flow seen by the tap; payload bytes are
    zeros. Timestamps are simulated time after 2000-01-01T00:00:00Z."""
    pcap_files: dict[str, str]
    """The captures written to files as the run went (``capture_files``): tap name to path."""
    pcap_addresses: dict[str, str]
    """Per capture (same keys as ``pcap``), its address map as JSON text: nodes by address,
    flows by 4-tuple, where the tap sits (docs/captures.md)."""
    flows: list[str]
    """TCP connection names, in id order (the ``flow`` column's values index this list): the
    flows' names, and ``name#k`` for connection k of a flow split at relays."""
    connections: list[tuple[int, int, str, str]]
    """Per connection, in id order: the index of its flow in the scenario, its place among
    the flow's connections (0 unless split), its sender node and its receiver node."""
    links: list[str]
    """Link names, in the scenario's order (the ``link`` column's values index this list)."""
    nodes: list[str]
    """Node names, in the scenario's order."""

class Estimate(TypedDict):
    """What :func:`estimate_scenario` returns."""

    events: float
    trace_rows: float
    memory_bytes: float
    disk_bytes: float
    default_max_events: int
    default_max_memory_bytes: int
    default_max_disk_bytes: int

def estimate_scenario(
    scenario_json: str, *, streamed: bool = False, stream_pcap: bool = False
) -> Estimate:
    """Validates a scenario and estimates what a run of it costs (events, trace rows, memory,
    and with ``streamed``, for a run given a ``trace_sink``, the disk its rows take, and its
    captures' with ``stream_pcap`` too, for ``capture_files``) without running it; also gives
    the default budget. Raises ``ScenarioError`` like :func:`run_scenario`."""

def run_scenario(
    scenario_json: str,
    *,
    max_events: int | None = None,
    max_memory_bytes: int | None = None,
    max_disk_bytes: int | None = None,
    progress: Callable[[float, float, int], object] | None = None,
    trace_sink: Callable[[dict[str, dict[str, npt.NDArray[Any]]]], object] | None = None,
    capture_files: Callable[[str], str | os.PathLike[str]] | None = None,
) -> RunOutput:
    """Validates and runs one scenario in the simulation core.

    ``scenario_json`` is the scenario as JSON text, in the core's schema
    (``docs/scenarios.md``): units already spelled out (``"1.5Mbps"``, ``"80ms"``) or carried
    by field names (``rate_bps``, ``delay_s``). The run is deterministic: the same text gives
    the same summary, the same trace arrays and the same pcap bytes on every machine.

    The GIL is released for the whole run (parsing, simulating, writing the summary and the
    captures), so other Python threads keep running; the arrays are handed over afterwards
    without copying. A panic inside the core never crosses into Python.

    The run is held to a budget, ``max_events`` and ``max_memory_bytes`` (default 10**9 events
    and 2 GiB): refused with ``BudgetError`` if the core's estimate is over it, stopped where
    it is if it outgrows it while running. About every 0.1 s of wall time the run takes the
    GIL for a moment: Python's signal handlers run (a ``KeyboardInterrupt`` stops the run) and
    ``progress(simulated_s, duration_s, events)`` is called (an exception it raises stops the
    run and is raised here). A stopped run returns what it has; its summary's ``partial``
    says why and when (absent for a run that ran its course).

    With ``trace_sink``, trace rows are not kept: the core calls ``trace_sink(tables)`` (every
    table, ``{table: {column: array}}``, those with nothing to hand over empty) whenever a
    table holds 65,536 rows, and once at the end with the rest, so the run's memory for traces
    stays bounded; ``traces`` in the result are then empty. The budget then counts the rows as
    disk, ``max_disk_bytes`` (default 16 GiB). An exception ``trace_sink`` raises stops the run
    and is raised here. With ``capture_files`` too (called before the run with each tap's name,
    returning the path of its capture), the captures are written to those files as the run
    goes, through a spool beside each (``PATH.spool``, removed at the end), byte for byte what
    ``pcap`` would hold; ``pcap_files`` then maps each tap to its file and ``pcap`` is empty.

    Raises:
        ScenarioError: the scenario is invalid; ``err.path`` names the field.
        BudgetError: the run's estimate is over its budget; nothing was run.
        ConservationError: the engine lost track of a packet or a byte (an engine bug).
        RuntimeError: the core panicked (an engine bug; the message is the panic's).
    """

def short_flow_plan(scenario_json: str, flow: int) -> list[tuple[float, int]]:
    """The arrivals of short-flow class ``flow`` (``app.kind = "flows_poisson"``) as the
    simulator runs them: ``(instant_s, size_bytes)`` per connection, in order (docs/traffic.md).

    Raises:
        ScenarioError: the scenario is invalid, or flow ``flow`` is no short-flow class.
    """

def resolve_scenario(scenario_json: str) -> str:
    """Validates one scenario and returns it resolved, as JSON text (``json.loads`` it).

    The resolved scenario has every default filled (``defaults`` lists the paths that took
    one), link names, each flow's route, each link direction's rate, delay, queue and
    analytic loss rate, each flow's TCP settings, base RTT and bottleneck rate;
    ``resolved_schema_version`` is its format's version. Documented in ``docs/scenarios.md``.

    Raises:
        ScenarioError: the scenario is invalid; ``err.path`` names the field (as
            :func:`run_scenario` raises it).
        RuntimeError: the core panicked (an engine bug).
    """

def toml_line(text: str, path: str) -> int | None:
    """The 1-based line of scenario path ``path`` (``links[1].fwd.loss.p``) in TOML ``text``.

    The line of the path's deepest part that the text gives (its key, an array-of-tables
    header, a value in an inline table or array); None when the text is not TOML or holds no
    part of the path.
    """

class EmulatorError(RuntimeError):
    """The emulator could not run, in one line; ``kind`` says why."""

    kind: str
    """``usage`` (a bad option, e.g. a congestion controller the kernel lacks), ``unsupported``
    (no CAP_NET_ADMIN, no /dev/net/tun, not Linux), ``system`` (a system call or ``ip``
    failed) or ``internal`` (a bug)."""

def emulate_interrupt_signal() -> int | None:
    """The signal (2 SIGINT, 15 SIGTERM) that ended the last emulation interrupted in this
    process, or None; ``farlink emulate`` exits 128 plus it."""
    ...

def emulate(scenario_json: str, options_json: str) -> str:
    """Run a scenario (JSON text) on the emulator with options (JSON: ``tcp``, ``spin_us``,
    ``record_deliveries``); the result as JSON text (see ``farlink.emulate``).

    Raises:
        ScenarioError: the scenario is invalid, or asks what the emulator cannot do yet.
        EmulatorError: the emulator could not run (``kind`` says why).
    """

def send(scenario_json: str, options_json: str) -> str:
    """farlink's sender to a listener: ``flows[0]`` of the scenario (JSON text) with options
    (JSON: ``host``, ``port``, ``netns``, ``handshake_timeout_s``); the report as JSON text
    (see ``farlink.send``).

    Raises:
        ScenarioError: the flow's TCP settings are invalid.
        EmulatorError: it could not run (``kind`` says why).
    """

class LinkMgrError(ValueError):
    """The link manager could not run or stopped, in one line; ``kind`` says why."""

    kind: str
    """``config`` (the configuration file or an option is wrong; str() places it as
    ``FILE:LINE: path: message``) or ``system`` (the event log, a port, a system call)."""

def linkmgr_run(config_path: str) -> None:
    """Run the link-management daemon on a configuration file (TOML, ``docs/linkmgr.md``) until
    SIGTERM or SIGINT, with the GIL released.

    Raises:
        LinkMgrError: a bad configuration (``kind`` ``config``) or a failure while running.
    """

def linkmgr_control(target: str, request: str, modem: str) -> str:
    """Send ``request`` (``hold`` or ``release``) for member ``modem`` (a name, or its number in
    the log) to the daemon whose configuration, or control socket, is ``target``; its answer
    (``ok ...``).

    Raises:
        LinkMgrError (``kind`` ``config``): a bad request, a configuration without a control
            socket, no daemon listening, or the daemon's ``error: ...`` answer.
    """

def linkmgr_config(config_path: str) -> str:
    """A daemon's configuration read and checked, as JSON (relative paths resolved).

    Raises:
        LinkMgrError (``kind`` ``config``): a bad configuration, placed.
    """

def linkmgr_modem_sim(
    scenario_json: str,
    modems: int,
    dir: str,
    time_scale: float,
    seed: int | None,
    signal_reply_s: float,
) -> None:
    """Run ``modems`` simulated Iridium modem pairs, taking the member rate, delay, call-drop
    rate, dial time and dial failures of the first bundle of a resolved scenario (JSON), on
    ptys linked as ``dir/air<k>`` and ``dir/ground<k>``, until SIGTERM or SIGINT; prints each
    link's path once they exist. ``time_scale`` divides dial times and call durations;
    ``seed`` (None: the scenario's) names the random streams; ``signal_reply_s`` is how long a
    signal query takes to answer.

    Raises:
        LinkMgrError: a bad option (``kind`` ``config``) or a failure while running.
    """
