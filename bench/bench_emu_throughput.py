"""Throughput of the emulator: kernel CUBIC through a long fat emulated path, and the driver's
lossless ceiling beside a bare TUN forwarder and a veth pair, measured in the same run.

1. CUBIC: one link S-D of 100 Mbit/s, 50 ms each way (100 ms round trip), a drop-tail queue of
   one bandwidth-delay product (833 packets of 1500 bytes), no loss, MTU 1500, socket buffers of
   16 MiB asked (the kernel caps them at net.core.rmem_max / wmem_max, printed), an unbounded
   transfer for 30 s. Printed: payload goodput over the rate, and over the most payload a
   1500-byte packet can carry with timestamps (1448 bytes).
2. The ceiling: the same transfer (CUBIC, MTU 1500, 10 s) through the driver with a link of
   no delay and a rate far above what it moves (100 Gbit/s), per packet and with offloads
   (``--offload``: super-segments read and cut into MSS-sized packets for the link, delivered
   packets written coalesced); through a bare TUN forwarder (a thread reading a packet from one
   TUN and writing it to the other, nothing else: ``crates/farlink-emu/examples/ceiling.rs``),
   without and with the vnet header (then it moves the kernel's super-segments whole); and
   through a veth pair (the kernel alone, with its segmentation offloads). Printed as Gbit/s of
   payload and as ratios to the bare forwarders and veth of the same run.

Needs CAP_NET_ADMIN and /dev/net/tun (root). The machine's load moves every figure: compare the
ratios, which come from runs seconds apart.

    make bench-emu      # or: .venv/bin/python bench/bench_emu_throughput.py [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

from farlink.emulate import emulate

ROOT = Path(__file__).resolve().parents[1]
RATE_BPS = 100e6
RTT_S = 0.1
MTU = 1500
BDP_PKTS = round(RATE_BPS * RTT_S / 8 / MTU)
PAYLOAD_PER_PACKET = MTU - 40 - 12  # IPv4 + TCP headers, timestamps option


def cubic_scenario(duration_s: float, timestamps: bool = True) -> dict:
    return {
        "name": "bench-emu-cubic-100mbps-100ms",
        "seed": 1,
        "duration": f"{duration_s}s",
        "nodes": ["S", "D"],
        "links": [
            {"name": "S-D", "a": "S", "b": "D", "rate": "100Mbps", "delay": "50ms",
             "queue_pkts": BDP_PKTS},
        ],
        "flows": [
            {"name": "bulk", "from": "S", "to": "D",
             "tcp": {"mss_bytes": MTU - 40, "cc": "cubic", "receive_buffer": "16MiB",
                     "send_buffer": "16MiB", "timestamps": timestamps},
             "app": {"kind": "unbounded"}},
        ],
    }  # fmt: skip


def ceiling_scenario(duration_s: float) -> dict:
    return {
        "name": "bench-emu-ceiling",
        "seed": 1,
        "duration": f"{duration_s}s",
        "nodes": ["S", "D"],
        "links": [
            {"name": "S-D", "a": "S", "b": "D", "rate": "100Gbps", "delay": "0ms",
             "queue_pkts": 1000},
        ],
        "flows": [
            {"name": "bulk", "from": "S", "to": "D",
             "tcp": {"mss_bytes": MTU - 40, "cc": "cubic", "receive_buffer": "16MiB",
                     "send_buffer": "16MiB"},
             "app": {"kind": "unbounded"}},
        ],
    }  # fmt: skip


def driver_run(doc: dict, *, offload: bool = False) -> dict:
    s = emulate(doc, offload=offload).summary
    (flow,) = s["flows"]
    emu = s["emulator"]
    return {
        "goodput_bps": flow["goodput_bps"],
        "normalized_goodput": flow["normalized_goodput"],
        "retransmissions": flow["retransmissions"],
        "timeouts": flow["timeouts"],
        "drops": {k: v for k, v in flow["drops"].items() if v},
        "packets_written": emu["packets_written"],
        "packets_per_s": emu["packets_written"] / s["sim_time_s"],
        "cpu_fraction": emu["cpu_fraction"],
        "departure_error_us": emu["departure_error_us"],
        "io_path": emu["io_path"],
        "offload": emu.get("offload"),
    }


def reference_run(carrier: str, duration_s: float) -> dict:
    out = subprocess.run(
        ["cargo", "run", "--quiet", "--release", "-p", "farlink-emu", "--example", "ceiling",
         "--", carrier, str(duration_s), str(MTU), "cubic"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout)


def socket_caps() -> dict:
    caps = {}
    for key in ("rmem_max", "wmem_max"):
        caps[key] = int(Path(f"/proc/sys/net/core/{key}").read_text())
    return caps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of the CUBIC run")
    parser.add_argument("--ceiling-duration", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--no-timestamps",
        action="store_true",
        help="the CUBIC run without the timestamp option (1460 bytes of payload a packet)",
    )
    args = parser.parse_args()
    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "-p", "farlink-emu", "--example", "ceiling"],
        cwd=ROOT, check=True,
    )  # fmt: skip
    cubic = driver_run(cubic_scenario(args.duration, timestamps=not args.no_timestamps))
    driver = driver_run(ceiling_scenario(args.ceiling_duration))
    driver_offload = driver_run(ceiling_scenario(args.ceiling_duration), offload=True)
    bare = reference_run("bare_tun", args.ceiling_duration)
    bare_offload = reference_run("bare_tun_offload", args.ceiling_duration)
    veth = reference_run("veth", args.ceiling_duration)
    rows = {"caps": socket_caps(), "cubic": cubic, "driver": driver,
            "driver_offload": driver_offload, "bare_tun": bare, "bare_tun_offload": bare_offload,
            "veth": veth}  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    payload_per_packet = PAYLOAD_PER_PACKET + (12 if args.no_timestamps else 0)
    payload_share = payload_per_packet / MTU
    print(f"kernel CUBIC, 100 Mbit/s, 100 ms RTT, queue {BDP_PKTS} packets (one BDP), no loss, "
          f"{args.duration:g} s; buffers asked 16 MiB, capped at rmem_max "
          f"{rows['caps']['rmem_max']} / wmem_max {rows['caps']['wmem_max']}")  # fmt: skip
    print(f"  payload goodput / rate            {cubic['normalized_goodput']:.3f}")
    print(f"  over the payload ceiling ({payload_per_packet}/{MTU}) "
          f"{cubic['normalized_goodput'] / payload_share:.3f}")  # fmt: skip
    print(f"  retransmissions {cubic['retransmissions']}, timeouts {cubic['timeouts']}, "
          f"drops {cubic['drops'] or 'none'}, driver cpu {cubic['cpu_fraction']:.1%}")  # fmt: skip
    print(f"lossless ceiling, CUBIC, MTU {MTU}, delay 0, {args.ceiling_duration:g} s each:")
    print("  (kpkt/s: packets through the link, or for a bare forwarder the reads it moved)")
    print(f"{'carrier':>34} {'Gbit/s':>8} {'kpkt/s':>8} {'cpu':>6} {'/ bare TUN':>11} "
          f"{'/ bare vnet':>12} {'/ veth':>8}")  # fmt: skip
    for name, gbps, kpps, cpu in (
        ("farlink driver, per packet", driver["goodput_bps"] / 1e9,
         driver["packets_per_s"] / 1e3, driver["cpu_fraction"]),
        ("farlink driver, --offload", driver_offload["goodput_bps"] / 1e9,
         driver_offload["packets_per_s"] / 1e3, driver_offload["cpu_fraction"]),
        ("bare TUN forwarder", bare["goodput_bps"] / 1e9,
         bare["packets_forwarded"] / bare["transfer_time_s"] / 1e3,
         bare["forwarder_cpu_fraction"]),
        ("bare TUN forwarder, vnet header", bare_offload["goodput_bps"] / 1e9,
         bare_offload["packets_forwarded"] / bare_offload["transfer_time_s"] / 1e3,
         bare_offload["forwarder_cpu_fraction"]),
        ("veth pair", veth["goodput_bps"] / 1e9, float("nan"), float("nan")),
    ):  # fmt: skip
        print(f"{name:>34} {gbps:>8.3f} {kpps:>8.1f} {cpu:>6.1%} "
              f"{gbps * 1e9 / bare['goodput_bps']:>11.3f} "
              f"{gbps * 1e9 / bare_offload['goodput_bps']:>12.3f} "
              f"{gbps * 1e9 / veth['goodput_bps']:>8.4f}")  # fmt: skip
    off = driver_offload["offload"]
    print(f"  --offload: {off['reads']} reads ({off['super_segments_read']} super-segments), "
          f"{off['writes']} writes ({off['super_segments_written']} coalesced, carrying "
          f"{off['packets_coalesced']} packets)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
