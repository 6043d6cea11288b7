"""The dashboard's figures in Prometheus' text exposition format, for ``/metrics``.

Every name starts with ``farlink_``; per-member series carry the label ``modem`` (the member's
name) and there is one series per member for each of them (the state as a label of
``farlink_modem_state``, whose value is 1). Bundle-wide figures have no label. The text is made
by prometheus_client from a collector over a :class:`~farlink.linkmgr.tracker.Tracker`, so its
escaping and layout are the reference implementation's.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from farlink.linkmgr.tracker import Tracker
from farlink.linkmgr.view import throughput_bps

__all__ = ["CONTENT_TYPE", "metrics_text"]

CONTENT_TYPE = CONTENT_TYPE_LATEST


class _Collector:
    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker

    def collect(self) -> Iterator[Metric]:
        tr = self.tracker
        per_member = [
            ("modem_up", "1 while the member is connected.", lambda m: float(m.up)),
            ("modem_signal_bars", "Last signal sample (0 to 5 bars).", lambda m: m.signal_bars),
            ("modem_primary", "1 for the current primary member.", lambda m: m.index == tr.primary),
            (
                "modem_uptime_ratio",
                "Fraction of the log's time the member was connected.",
                lambda m: tr.up_s(m) / tr.duration_s if tr.duration_s > 0 else 0.0,
            ),
        ]
        for name, text, get in per_member:
            family = GaugeMetricFamily(f"farlink_{name}", text, labels=["modem"])
            for m in tr.members:
                value = get(m)
                if value is not None:
                    family.add_metric([m.name], float(value))
            yield family
        state = GaugeMetricFamily(
            "farlink_modem_state",
            "The member's state (seed 000 Figure 7.2).",
            labels=["modem", "state"],
        )
        for m in tr.members:
            state.add_metric([m.name, m.state], 1.0)
        yield state
        counters = [
            ("modem_drops", "Call drops of the member.", lambda m: m.drops),
            ("modem_dials", "Dials of the member.", lambda m: m.dials),
            ("modem_tx_bytes", "Bytes the member sent.", lambda m: m.tx_bytes),
            ("modem_rx_bytes", "Bytes the member received.", lambda m: m.rx_bytes),
        ]
        for name, text, get in counters:
            family = CounterMetricFamily(f"farlink_{name}", text, labels=["modem"])
            for m in tr.members:
                family.add_metric([m.name], float(get(m)))
            yield family
        yield from self._bundle()

    def _bundle(self) -> Iterator[Metric]:
        tr = self.tracker
        duration = tr.duration_s
        tx, rx = tr.bundle_bytes()
        tx_bps, rx_bps = throughput_bps(tr)
        gauges = [
            ("bundle_members", "Members of the bundle.", len(tr.members)),
            ("bundle_members_up", "Members connected now.", sum(m.up for m in tr.members)),
            (
                "bundle_uptime_all_ratio",
                "Fraction of the log's time with every member connected (seed 001).",
                tr.all_up_s / duration if duration > 0 else 0.0,
            ),
            (
                "bundle_uptime_any_ratio",
                "Fraction of the log's time with at least one member connected (seed 001).",
                tr.any_up_s / duration if duration > 0 else 0.0,
            ),
            ("bundle_tx_bps", "Bundle send rate over the last samples, bit/s.", tx_bps),
            ("bundle_rx_bps", "Bundle receive rate over the last samples, bit/s.", rx_bps),
            ("log_duration_seconds", "Time from the log's first to its last event.", duration),
            ("log_last_event_id", "Id of the last event read.", tr.last_id),
        ]
        for name, text, value in gauges:
            yield GaugeMetricFamily(f"farlink_{name}", text, value=float(value))
        for name, text, value in [
            ("bundle_tx_bytes", "Bytes the bundle sent.", tx),
            ("bundle_rx_bytes", "Bytes the bundle received.", rx),
            ("bundle_primary_drops", "Call drops of the primary member.", tr.primary_drops),
            ("log_errors", "Error events in the log.", tr.errors),
        ]:
            yield CounterMetricFamily(f"farlink_{name}", text, value=float(value))


def metrics_text(tracker: Tracker) -> bytes:
    """The exposition text of what ``tracker`` has seen."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(tracker))
    return generate_latest(registry)
