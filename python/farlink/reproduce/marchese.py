"""Seed 002's GEO testbed: black-box tuning of TCP and the split satellite transport.

The presets ``marchese-geo`` (the testbed with the reference TCP) and ``marchese-geo-stp`` (the
same path with the connection split at the routers and an STP-like transport on the satellite
hop) carry the seed's values, each cited in the preset file. Nothing here is tuned to the
published times: the reference and split configurations run as shipped; the "best" black-box
configuration, whose values the seed does not give, is the best of a stated grid of initial
windows and buffers; Table 1's unstated file size and window are estimated from its 500 ms row
and checked on its 100 ms row.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from farlink.reproduce import Findings, Row, register

# Seed 002, "The real test-bed and performance comparison": "The overall transmission time is
# 15.2 s for the Reference configuration, 12.57 s for Modified TCP (called Best configuration)
# configuration and 11.69 s for STP."
PUBLISHED_S = {"reference": 15.2, "best": 12.57, "stp": 11.69}
SEEDS = tuple(range(1, 9))
BER = 1e-8
LINK_BPS = 2_048_000
FILE_BYTES = 2_800_100
# Cisco HDLC on the serial interface: 4 bytes of header, 2 of FCS, 1 flag per frame.
HDLC_OVERHEAD_BYTES = 7
# The black-box grid searched for the "Best configuration": seed 002 names the two knobs (IW in
# segments, buffer in kbytes, equal at both ends) but not the values of Figure 1.
BEST_GRID_IW = (1, 2, 4, 8, 16, 32)
BEST_GRID_BUFFER_KIB = (64, 128, 256)
# Seed 002 Table 1: RTT (ms) -> (overall time s, throughput in the final phase bytes/s).
TABLE_1 = {100: (3.1, 215154.0), 500: (12.7, 52278.0)}
NO_TRACES = "trace={}"
HANDSHAKE = "flows[0].tcp.handshake=true"


def packet_error_rate(
    ber: float, ip_bytes: int, overhead_bytes: int = HDLC_OVERHEAD_BYTES
) -> float:
    """Probability that an HDLC frame carrying ``ip_bytes`` has a bit error (so its FCS fails):
    1 - (1 - BER)^(8 (ip_bytes + overhead_bytes))."""
    bits = 8 * (ip_bytes + overhead_bytes)
    return -math.expm1(bits * math.log1p(-ber))


def _cardwell_inputs(preset: str) -> dict[str, float]:
    """Cardwell et al.'s inputs for the preset's flow, read from the core's resolved scenario
    (:func:`farlink.predict.path_inputs`, as ``farlink predict short`` reads them), and the MSS.

    Two readings differ from ``predict short``'s: the round trip is the propagation plus one
    data packet's transmission at the bottleneck (the LANs' and the ACK's transmission, under
    0.3 %, left out), and the window is whole segments of the receive buffer.
    """
    from farlink.predict import path_inputs
    from farlink.scenario import load_scenario, resolve

    resolved = resolve(load_scenario(preset))
    path = path_inputs(resolved)
    flow = resolved["flows"][0]
    if path.size_bytes is None:
        raise ValueError(f"{preset}: the first flow is no bulk transfer")
    mss = path.mss_bytes
    return {
        "size_pkts": math.ceil(path.size_bytes / mss),
        "p": path.p,
        "rtt_s": flow["rtt"]["propagation_s"] + 8 * path.wire_bytes / flow["bottleneck_bps"],
        "t0_s": path.t0_s,
        "wmax_pkts": math.floor(path.wmax_bytes / mss),
        "w1_pkts": flow["tcp"]["initial_window_segments"],
        "mss_bytes": mss,
    }


def _buffer_sets(iw: int, buffer: str) -> list[str]:
    return [
        f"flows[0].tcp.initial_window_segments={iw}",
        f'flows[0].tcp.receive_buffer="{buffer}"',
        f'flows[0].tcp.send_buffer="{buffer}"',
    ]


def _times_s(preset: str, sets: list[str], seeds=SEEDS) -> np.ndarray:
    from farlink.sim import simulate

    out = []
    for seed in seeds:
        flow = simulate(preset, seed=seed, sets=[*sets, NO_TRACES]).summary["flows"][0]
        out.append(flow["transfer_time_s"] if flow["finished"] else np.nan)
    return np.array(out)


def _delivered_curve(preset: str, sets: list[str], seed: int = 1):
    from farlink.sim import simulate

    result = simulate(preset, seed=seed, sets=sets)
    good = result.trace("goodput")
    last = result.connections_of(0)[-1]
    mask = good["flow"] == last
    flow = result.summary["flows"][0]
    # The grid stops at the last sample before the end; the last byte's instant closes it.
    t = np.append(good["time_ns"][mask] / 1e9, flow["finish_s"])
    return t, np.append(good["delivered_bytes"][mask], flow["delivered_bytes"]) / 1e6


def _best_black_box() -> tuple[int, int, np.ndarray]:
    best = None
    for iw in BEST_GRID_IW:
        for kib in BEST_GRID_BUFFER_KIB:
            times = _times_s("marchese-geo", _buffer_sets(iw, f"{kib}KiB"))
            if best is None or np.nanmean(times) < np.nanmean(best[2]):
                best = (iw, kib, times)
    assert best is not None
    return best


@register(
    "marchese-2.8mb",
    published="measured",
    title="2.8 MB over the 2048 kbps GEO testbed: reference TCP, best black-box tuning, split STP",
    source="seed 002, 'The real test-bed and performance comparison', Figures 1 and 2",
    engine="sim",
)
def transfer_2_8mb(out_dir: Path) -> Findings:
    from farlink.models.short import cardwell_components
    from farlink.reports.plots import line_figure

    reference = _times_s("marchese-geo", [])
    # The same with the three-way handshake simulated (SYN, SYN-ACK across the GEO hop).
    reference_handshake = _times_s("marchese-geo", [HANDSHAKE])
    iw, kib, best = _best_black_box()
    stp = _times_s("marchese-geo-stp", [])
    doubled = _times_s("marchese-geo", _buffer_sets(1, "128KiB"))

    # Cardwell, Savage and Anderson for the reference TCP: window-limited (64 KiB = 45 segments
    # of 1448 bytes is half the 90-segment bandwidth-delay product), so the model's RTT rounds
    # apply; it has no link rate, so it says nothing of the tuned and split configurations.
    inputs = _cardwell_inputs("marchese-geo")
    mss = inputs.pop("mss_bytes")
    rtt_eff = inputs["rtt_s"]
    parts = cardwell_components(**inputs)
    csa_total = float(parts.total_s)
    csa_no_handshake = csa_total - float(parts.handshake_s)

    rows = [
        Row.over_seeds(
            "reference TCP (IW 1, 64 KiB buffers), simulated",
            "s",
            15.2,
            reference,
            0.15,
        ),
        Row.over_seeds(
            "reference TCP with the handshake simulated",
            "s",
            15.2,
            reference_handshake,
            0.15,
        ),
        Row(
            "reference TCP, Cardwell et al. without the handshake",
            "s",
            15.2,
            csa_no_handshake,
            0.15,
        ),
        Row("reference TCP, Cardwell et al. with the handshake", "s", 15.2, csa_total, 0.15),
        Row.over_seeds(
            "reference TCP with 128 KiB buffers (64 KiB asked, doubled as Linux's setsockopt does)",
            "s",
            15.2,
            doubled,
        ),
        Row.over_seeds(
            f"best black-box tuning (IW {iw}, {kib} KiB buffers), simulated",
            "s",
            12.57,
            best,
            0.15,
        ),
        Row.over_seeds(
            "split connection, STP-like satellite hop, simulated",
            "s",
            11.69,
            stp,
            0.15,
        ),
        Row("split connection, median of the seeds", "s", 11.69, float(np.median(stp))),
        Row("best black-box tuning, median of the seeds", "s", 12.57, float(np.median(best))),
        Row(
            "gain of the split over the reference",
            "%",
            23.1,
            100 * (1 - float(np.mean(stp)) / float(np.mean(reference))),
        ),
        Row(
            "gain of the split over the best tuning",
            "%",
            7.0,
            100 * (1 - float(np.mean(stp)) / float(np.mean(best))),
        ),
    ]
    payload_floor = FILE_BYTES / mss * 1500 * 8 / LINK_BPS
    notes = [
        f"Simulated: means over seeds {SEEDS[0]}-{SEEDS[-1]} of the presets marchese-geo and "
        "marchese-geo-stp as shipped; the packet error rates come from BER 1e-8 and the HDLC "
        f"frame sizes ({packet_error_rate(BER, 1500):.3e} for data, "
        f"{packet_error_rate(BER, 52):.3e} for ACKs). Per seed: reference "
        f"{np.round(reference, 2).tolist()}, best {np.round(best, 2).tolist()}, split "
        f"{np.round(stp, 2).tolist()} s.",
        "The reference TCP disagrees, and not by a small margin: a 64 KiB window over a 511 ms "
        f"round trip carries at most {65536 / rtt_eff / 1e3:.0f} kB/s, so 2,800,100 bytes "
        f"take at least {FILE_BYTES / (65536 / rtt_eff):.1f} s whatever the loss and slow "
        "start; the published 15.2 s needs an average of 184 kB/s, a window of at least 95 kB. "
        "So the testbed's 'buf = 64' cannot have been the window. A likely cause: Linux doubles "
        "the size given to setsockopt(SO_SNDBUF/SO_RCVBUF) and announces a window of part of "
        "it; the 128 KiB row shows what a doubled buffer gives. Its value is shown, not fitted.",
        "The model of Cardwell et al. (Sikdar's would agree: one loss in "
        f"{1 / packet_error_rate(BER, 1500):.0f} packets hardly touches a "
        f"{math.ceil(FILE_BYTES / mss):,}-segment transfer) gives the reference TCP the same "
        "window-limited time as the simulation, within 7 %, without and with the handshake: "
        "the model adds E[T_h] = one RTT without loss, the simulation (tcp.handshake) adds "
        f"{float(np.mean(reference_handshake - reference)):.3f} s on average over the seeds "
        "(the SYN and SYN-ACK cross the hop like any packet). It has no link rate, so the "
        "tuned and split cases, limited by the 2048 kbps link, are outside it.",
        f"Seed 002 does not give the Best configuration's values; ours is the best mean of IW "
        f"{BEST_GRID_IW} x buffers {BEST_GRID_BUFFER_KIB} KiB. Large windows are limited by the "
        f"link: {FILE_BYTES:,} bytes in {math.ceil(FILE_BYTES / mss)} packets of 1500 bytes need "
        f"{payload_floor:.2f} s at 2048 kbit/s, plus half a round trip; the published 11.69 s "
        "for STP is that floor plus 0.3 s (MSS 1460 without timestamps would save 0.09 s).",
        "The split connection: the hosts' reference TCP on their LANs, relays at both routers, "
        "and on the satellite hop a window opened at the bandwidth-delay product (no slow "
        "start), buffers of the product plus a quarter, Westwood+ over SACK. Without a loss it "
        "runs at the link's rate; a seed with a corrupted packet costs seconds, which the mean "
        "shows: Westwood+'s estimate is computed as specified (one sample per round trip of the "
        "bytes ACKs and SACKs report delivered, into a filter of gain 0.9, about ten round trips "
        "of memory, filled by the first sample, the first round trip's), so a loss a few round "
        "trips into the transfer finds it short of the link's rate (seed 2: ssthresh 80 kB "
        "against a bandwidth-delay product of about 126 kB of payload, in the cwnd trace), and "
        "Reno's linear growth takes the rest of the transfer to regain the difference. The "
        "23.1 % gain "
        "over the reference is larger here because our reference is slower (see above).",
        f"A transfer of {math.ceil(FILE_BYTES / mss)} data packets crosses the satellite hop "
        f"without a corrupted one with probability "
        f"{(1 - packet_error_rate(BER, 1500)) ** math.ceil(FILE_BYTES / mss):.0%}; the seed's "
        "times are single runs, most likely of that kind, which the medians match better than "
        "the means. Where a packet is lost, Westwood+ on the split hop recovers more slowly than "
        "the tuned end-to-end Reno here, so the split's mean is not below the best tuning's.",
        "Not modelled: HDLC's 7 bytes per frame on the serial link (0.5 % of the rate). The "
        "handshake (one RTT, 0.511 s, in every configuration alike) is simulated only in the "
        "row that says so; whether the seed's times include it is not said.",
    ]

    figures = []
    curves = []
    x = np.arange(0.0, 30.0, 0.1)
    for label, preset, sets in (
        ("reference (IW 1, 64 KiB)", "marchese-geo", []),
        (f"best black box (IW {iw}, {kib} KiB)", "marchese-geo", _buffer_sets(iw, f"{kib}KiB")),
        ("split, STP-like satellite hop", "marchese-geo-stp", []),
    ):
        t, mb = _delivered_curve(preset, sets)
        curves.append((label, np.interp(x, t, mb, right=mb[-1])))
    figures.append(
        line_figure(
            out_dir / "marchese-2.8mb.png",
            x=x,
            curves=curves,
            xlabel="time (s)",
            ylabel="bytes delivered at D (MB)",
            title="2,800,100 bytes over 2048 kbit/s, RTT 511 ms (seed 002 testbed), seed 1",
            caption="farlink sim; published totals: reference 15.2 s, best 12.57 s, STP 11.69 s",
            points=[
                (
                    "published finish",
                    np.array(list(PUBLISHED_S.values())),
                    np.full(3, FILE_BYTES / 1e6),
                )
            ],
        )
    )
    return Findings(rows=rows, notes=notes, figures=figures)


def _table_1_run(rtt_ms: int, size_bytes: int, window_bytes: int, curve: bool = False):
    """Transfer time and final-phase throughput of the reference TCP (IW 1, buffers of
    ``window_bytes``) over the testbed at round trip ``rtt_ms``; with ``curve``, also the
    bytes delivered over time."""
    from farlink.sim import simulate

    one_way_ms = rtt_ms / 2 - 0.1  # as the preset: 0.1 ms on each LAN
    result = simulate(
        "marchese-geo",
        sets=[
            f'links[1].delay="{one_way_ms}ms"',
            f"flows[0].app.size_bytes={size_bytes}",
            *_buffer_sets(1, f"{window_bytes}B"),
            'trace={goodput=true, goodput_interval="100ms"}',
        ],
    )
    flow = result.summary["flows"][0]
    good = result.trace("goodput")
    t = good["time_ns"] / 1e9
    finish = flow["transfer_time_s"]
    # "Throughput measured in the final phase": the last second before the last byte.
    before = np.interp(finish - 1.0, t, good["delivered_bytes"])
    if curve:
        return float(finish), float(size_bytes - before), (t, good["delivered_bytes"])
    return float(finish), float(size_bytes - before)


@register(
    "marchese-table-1",
    published="measured",
    title="Transfer time and final-phase throughput at RTT 100 ms and 500 ms",
    source="seed 002, Table 1",
    engine="sim",
)
def table_1(out_dir: Path) -> Findings:
    # Seed 002 gives neither the file, nor the window, nor the rate of Table 1 ("fixed
    # bandwidth"). Taken: the testbed's 2048 kbit/s and reference TCP (IW 1). Estimated from
    # the 500 ms row alone: the window, as final-phase throughput x round trip (a window-limited
    # sender); the file size, as the size whose simulated time is the row's 12.7 s (bisection).
    # The 100 ms row is then a check.
    time_500, thr_500 = TABLE_1[500]
    window = round(thr_500 * (0.5 + 8 * 1500 / LINK_BPS))
    lo, hi = 100_000, 2_000_000
    while hi - lo > 1448:
        mid = (lo + hi) // 2
        if _table_1_run(500, mid, window)[0] < time_500:
            lo = mid
        else:
            hi = mid
    size = lo
    from farlink.reports.plots import line_figure

    rows = []
    curves = []
    x = np.arange(0.0, 14.0, 0.05)
    for rtt_ms, (published_t, published_thr) in TABLE_1.items():
        t, thr, (ct, cd) = _table_1_run(rtt_ms, size, window, curve=True)
        ct, cd = np.append(ct, t), np.append(cd, size)
        curves.append((f"RTT {rtt_ms} ms", np.interp(x, ct, cd / 1e3, right=size / 1e3)))
        fitted = " (fitted)" if rtt_ms == 500 else ""
        rows.append(Row(f"RTT {rtt_ms} ms, overall time{fitted}", "s", published_t, t, 0.15))
        rows.append(
            Row(f"RTT {rtt_ms} ms, final-phase throughput", "bytes/s", published_thr, thr, 0.15)
        )
    notes = [
        f"Estimated from the 500 ms row: window {window} bytes (52,278 bytes/s x 0.506 s), "
        f"file {size:,} bytes (the size whose simulated time is 12.7 s, to a segment). The "
        "100 ms row was not fitted.",
        f"At 100 ms this window allows {window / (0.1 + 8 * 1500 / LINK_BPS):,.0f} bytes/s, "
        "close to what the link carries (2048 kbit/s is 247 kB/s of 1448-byte payloads in "
        "1500-byte packets); the published 215 kB/s is lower, which suggests overhead we do "
        "not model (HDLC framing is 0.5 %) or a smaller window than the 500 ms row implies.",
        "Seed 002 states neither the file, nor the window, nor the bandwidth of Table 1; the "
        "estimates above are ours. These runs skip the handshake (one RTT; tcp.handshake "
        "would add it).",
    ]
    figure = line_figure(
        out_dir / "marchese-table-1.png",
        x=x,
        curves=curves,
        xlabel="time (s)",
        ylabel="bytes delivered (kB)",
        title=f"Reference TCP, IW 1, window {window} B, {size:,} B, 2048 kbit/s (seed 002 Table 1)",
        caption="farlink sim, seed 1; window and file estimated from the 500 ms row; "
        "published totals 3.1 s and 12.7 s",
        points=[
            (
                "published finish",
                np.array([TABLE_1[100][0], TABLE_1[500][0]]),
                np.full(2, size / 1e3),
            )
        ],
    )
    return Findings(rows=rows, notes=notes, figures=[figure])
