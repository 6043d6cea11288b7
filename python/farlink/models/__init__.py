"""The ``model`` engine: closed-form TCP models, vectorised over NumPy arrays.

Each function cites the equation it implements. Throughputs are in packets per second, times in
seconds, sizes in bytes, windows in packets unless the name says otherwise.
"""

from farlink.models.calldrop import (
    CalldropPrediction,
    bundle_drop_rate_per_s,
    calldrop_prediction,
    calldrop_throughput,
    calldrop_transfer_time_s,
    segments_in_file,
)
from farlink.models.iridium import (
    LINUX_TXQUEUE_PKTS,
    clocking_time_s,
    go_back_n_service_time_s,
    loaded_rtt_s,
    packets_lost_per_call_drop,
)
from farlink.models.pftk import (
    expected_rounds_per_tdp,
    expected_timeout_sequence_s,
    expected_unconstrained_window,
    mathis_throughput,
    pftk_approx_throughput,
    pftk_full_throughput,
    pftk_no_timeout_throughput,
    timeout_backoff_factor,
    timeout_probability,
)
from farlink.models.short import (
    CardwellLatency,
    SikdarLatency,
    cardwell_components,
    cardwell_latency_s,
    handshake_latency_s,
    sikdar_components,
    sikdar_latency_s,
    sikdar_lossless_rounds,
    sikdar_window,
    slow_start_growth_factor,
)

__all__ = [
    "LINUX_TXQUEUE_PKTS",
    "CalldropPrediction",
    "CardwellLatency",
    "SikdarLatency",
    "bundle_drop_rate_per_s",
    "calldrop_prediction",
    "calldrop_throughput",
    "calldrop_transfer_time_s",
    "cardwell_components",
    "cardwell_latency_s",
    "clocking_time_s",
    "expected_rounds_per_tdp",
    "expected_timeout_sequence_s",
    "expected_unconstrained_window",
    "go_back_n_service_time_s",
    "handshake_latency_s",
    "loaded_rtt_s",
    "mathis_throughput",
    "packets_lost_per_call_drop",
    "pftk_approx_throughput",
    "pftk_full_throughput",
    "pftk_no_timeout_throughput",
    "segments_in_file",
    "sikdar_components",
    "sikdar_latency_s",
    "sikdar_lossless_rounds",
    "sikdar_window",
    "slow_start_growth_factor",
    "timeout_backoff_factor",
    "timeout_probability",
]
