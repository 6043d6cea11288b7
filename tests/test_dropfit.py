"""Tests of farlink.calldrops.fit (rate fit, exact interval, χ² test) and farlink.calldrops.log
(log reading).

Seed 000 section 5.3 / Table 5.3: per-link call drops are Poisson, β = 1/50 min (Kansas–Greenland).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from farlink.calldrops.fit import (
    BETA_KANSAS_GREENLAND_PER_S,
    BETA_KANSAS_KANSAS_PER_S,
    VERDICTS,
    DropFit,
    chi2_exponential_test,
    fit_drop_log,
    fit_exponential,
    rate_confidence_interval,
    synthetic_drop_log,
)
from farlink.calldrops.log import (
    TIME_FORMS,
    DropLog,
    DropLogError,
    parse_csv_log,
    parse_time,
    parse_xml_log,
    read_drop_log,
)

BETA = BETA_KANSAS_GREENLAND_PER_S  # 1 / 50 min
N_LOGS = 400


def _binomial_band(p: float, n: int, z: float = 3.5) -> tuple[float, float]:
    sigma = math.sqrt(p * (1 - p) / n)
    return p - z * sigma, p + z * sigma


# --------------------------------------------------------------------------------------------
# helpers writing logs


def _csv_text(log: DropLog, fmt=repr) -> str:
    rows = [(t, m) for m in log.modems for t in log.drop_times_s[m]]
    rows.sort()
    return "modem,time\n" + "".join(f"{m},{fmt(float(t))}\n" for t, m in rows)


def _xml_text(log: DropLog, fmt=repr) -> str:
    out = ['<?xml version="1.0" encoding="utf-8"?>', "<connections>"]
    for index, modem in enumerate(log.modems, start=1):
        out.append(
            f"<connection><modem_name>{modem}</modem_name><modem_index>{index}</modem_index>"
            f"<connection_time>{fmt(0.0)}</connection_time>"
        )
        connects = log.connect_times_s[modem]
        drops = log.drop_times_s[modem]
        for k, up in enumerate(connects):
            out.append(f"<entry><entry_id>{k + 1}</entry_id>")
            out.append(f"<event><state>connected</state><time>{fmt(float(up))}</time></event>")
            if k < drops.size:
                out.append(
                    f"<event><state>dropped</state><time>{fmt(float(drops[k]))}</time></event>"
                )
                out.append(
                    f"<event><state>connecting</state><time>{fmt(float(drops[k]))}</time></event>"
                )
            out.append("</entry>")
        out.append("</connection>")
    out.append("</connections>")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# the fit recovers β from synthetic Poisson logs


@pytest.fixture(scope="module")
def time_censored_fits() -> list[DropFit]:
    """400 independent synthetic logs: 4 modems, ~21 h each (≈ 100 drops per log)."""
    rng = np.random.default_rng(20040716)
    return [fit_drop_log(synthetic_drop_log(BETA, 75_000.0, 4, rng)) for _ in range(N_LOGS)]


def test_table_5_3_rates():
    assert BETA_KANSAS_GREENLAND_PER_S * 50 * 60 == pytest.approx(1.0)
    assert BETA_KANSAS_KANSAS_PER_S * 52 * 60 == pytest.approx(1.0)


def test_time_censored_interval_covers_beta_at_its_level(time_censored_fits):
    covered = np.mean([f.ci_low_per_s <= BETA <= f.ci_high_per_s for f in time_censored_fits])
    low, high = _binomial_band(0.95, N_LOGS)
    assert low <= covered <= high
    assert all(f.censoring == "time" for f in time_censored_fits)


def test_estimate_is_unbiased_on_average(time_censored_fits):
    betas = np.array([f.beta_per_s for f in time_censored_fits])
    # sd of one estimate ≈ β/√100, so the mean of 400 is within ~0.5 % (1σ)
    assert betas.mean() == pytest.approx(BETA, rel=0.02)


def test_chi2_rejects_poisson_logs_about_alpha_of_the_time(time_censored_fits):
    verdicts = [f.verdict for f in time_censored_fits]
    assert set(verdicts) <= set(VERDICTS[:2])
    rejected = np.mean([v == "exponential rejected" for v in verdicts])
    low, high = _binomial_band(0.05, N_LOGS)
    assert max(low, 0.0) <= rejected <= high
    assert all(f.chi2_dof == f.bins - 2 for f in time_censored_fits)
    assert np.mean([f.bins == 15 for f in time_censored_fits]) > 0.9  # ≥ 75 intervals: 15 bins


def test_failure_censored_interval_is_exact():
    rng = np.random.default_rng(7)
    samples = rng.exponential(1 / BETA, size=(N_LOGS, 60))
    fits = [fit_exponential(row) for row in samples]
    assert all(f.censoring == "failure" for f in fits)
    covered = np.mean([f.ci_low_per_s <= BETA <= f.ci_high_per_s for f in fits])
    low, high = _binomial_band(0.95, N_LOGS)
    assert low <= covered <= high
    # vectorised interval agrees with the per-fit one
    lo, hi = rate_confidence_interval(60, samples.sum(axis=1), censoring="failure")
    assert np.allclose(lo, [f.ci_low_per_s for f in fits])
    assert np.allclose(hi, [f.ci_high_per_s for f in fits])


def test_beta_hat_is_n_over_sum_without_exposure():
    x = np.array([600.0, 1800.0, 3000.0, 4200.0])
    fit = fit_exponential(x)
    assert fit.beta_per_s == pytest.approx(4 / x.sum())
    assert fit.mean_interval_s == pytest.approx(x.mean())
    assert fit.exposure_s == pytest.approx(x.sum())
    assert fit.drops == fit.n_intervals == 4


# --------------------------------------------------------------------------------------------
# the exact interval


@pytest.mark.parametrize("d", [0, 1, 5, 394])
def test_time_censored_interval_matches_gamma_form(d):
    t, conf = 12_345.0, 0.9
    low, high = rate_confidence_interval(d, t, conf, "time")
    expected_low = stats.gamma.ppf(0.05, d) / t if d else 0.0
    assert low == pytest.approx(expected_low, abs=1e-15)
    assert high == pytest.approx(stats.gamma.ppf(0.95, d + 1) / t)


def test_failure_censored_interval_matches_gamma_form():
    low, high = rate_confidence_interval(394, 394 * 3000.0, 0.95, "failure")
    assert low == pytest.approx(stats.gamma.ppf(0.025, 394) / (394 * 3000.0))
    assert high == pytest.approx(stats.gamma.ppf(0.975, 394) / (394 * 3000.0))
    assert low < 1 / 3000 < high


def test_interval_rejects_nonsense():
    with pytest.raises(ValueError, match="confidence"):
        rate_confidence_interval(3, 100.0, 1.5)
    with pytest.raises(ValueError, match="censoring"):
        rate_confidence_interval(3, 100.0, 0.95, "type-1")
    with pytest.raises(ValueError, match="at least one drop"):
        rate_confidence_interval(0, 100.0, 0.95, "failure")
    with pytest.raises(ValueError, match="exposure"):
        rate_confidence_interval(3, 0.0)


def test_no_drops_gives_zero_rate_with_finite_upper_bound():
    fit = fit_exponential([], exposure_s=10 * 3600.0)
    assert fit.beta_per_s == 0.0 and fit.ci_low_per_s == 0.0
    assert fit.ci_high_per_s == pytest.approx(stats.chi2.ppf(0.975, 2) / (2 * 36_000.0))
    assert fit.verdict == "insufficient data"
    assert fit.mean_interval_s == math.inf
    d = fit.to_dict()
    assert d["chi2_stat"] is None and d["chi2_p_value"] is None and d["mean_interval_s"] is None
    json.dumps(d, allow_nan=False)


def test_fit_rejects_inconsistent_input():
    with pytest.raises(ValueError, match="non-negative"):
        fit_exponential([1.0, -2.0])
    with pytest.raises(ValueError, match="at least the sum"):
        fit_exponential([100.0, 200.0], exposure_s=250.0)
    with pytest.raises(ValueError, match="drops"):
        fit_exponential([100.0, 200.0], exposure_s=400.0, drops=1)
    with pytest.raises(ValueError, match="exposure"):
        fit_exponential([])


# --------------------------------------------------------------------------------------------
# the χ² goodness-of-fit test


def test_chi2_matches_independent_computation():
    rng = np.random.default_rng(3)
    x = rng.exponential(2500.0, size=90)  # 90 // 5 = 18 → 15 bins
    beta = 1 / x.mean()
    gof = chi2_exponential_test(x, beta)
    edges = stats.expon.ppf(np.linspace(0, 1, 16), scale=1 / beta)
    edges[-1] = x.max() + 1.0
    observed, _ = np.histogram(x, bins=edges)
    ref = stats.chisquare(observed, ddof=1)  # k - 1 - ddof = 13 degrees of freedom
    assert gof.bins == 15 and gof.dof == 13
    assert gof.stat == pytest.approx(ref.statistic)
    assert gof.p_value == pytest.approx(ref.pvalue)


@pytest.mark.parametrize(
    ("n", "bins", "dof"), [(100, 15, 13), (75, 15, 13), (74, 14, 12), (40, 8, 6), (15, 3, 1)]
)
def test_bins_are_reduced_to_keep_five_expected(n, bins, dof):
    x = np.random.default_rng(n).exponential(3000.0, size=n)
    fit = fit_exponential(x)
    assert (fit.bins, fit.chi2_dof) == (bins, dof)
    assert fit.verdict in VERDICTS[:2]


def test_too_few_intervals_is_insufficient_data():
    fit = fit_exponential(np.full(14, 3000.0))
    assert fit.verdict == "insufficient data"
    assert fit.bins == 2 and fit.chi2_dof == 0
    assert math.isnan(fit.chi2_stat) and math.isnan(fit.chi2_p_value)


def test_chi2_rejects_constant_intervals():
    fit = fit_exponential(np.full(60, 3000.0))
    assert fit.verdict == "exponential rejected"
    assert fit.chi2_p_value < 1e-12


def test_chi2_rejects_uniform_intervals():
    x = np.random.default_rng(11).uniform(0.0, 6000.0, size=300)  # mean 50 min, not exponential
    fit = fit_exponential(x)
    assert fit.verdict == "exponential rejected"
    assert fit.chi2_p_value < 1e-6


def test_chi2_rejects_weibull_intervals():
    x = 3000.0 * np.random.default_rng(12).weibull(2.0, size=300)
    assert fit_exponential(x).verdict == "exponential rejected"


def test_chi2_does_not_reject_a_clean_exponential_sample():
    x = stats.expon.ppf((np.arange(150) + 0.5) / 150, scale=3000.0)  # exact quantiles
    fit = fit_exponential(x)
    assert fit.verdict == "exponential not rejected"
    assert fit.chi2_p_value > 0.9


# --------------------------------------------------------------------------------------------
# synthetic logs


def test_synthetic_log_is_deterministic_and_needs_a_generator():
    a = synthetic_drop_log(BETA, 20_000.0, 3, np.random.default_rng(5))
    b = synthetic_drop_log(BETA, 20_000.0, 3, np.random.default_rng(5))
    assert np.array_equal(a.intervals_s, b.intervals_s) and a.exposure_s == b.exposure_s
    with pytest.raises(TypeError, match="Generator"):
        synthetic_drop_log(BETA, 20_000.0, 3, np.random.RandomState(5))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="beta"):
        synthetic_drop_log(0.0, 20_000.0, 3, np.random.default_rng(5))


def test_synthetic_log_bookkeeping_with_redial():
    log = synthetic_drop_log(
        BETA, 50_000.0, ["Kansas", "Nebraska"], np.random.default_rng(9), redial_s=300.0
    )
    assert log.modems == ("Kansas", "Nebraska")
    assert log.drops == log.intervals_s.size == sum(v.size for v in log.drop_times_s.values())
    for modem in log.modems:
        drops, ups = log.drop_times_s[modem], log.connect_times_s[modem]
        assert np.all(drops <= 50_000.0) and np.all(ups < 50_000.0)
        assert ups.size in (drops.size, drops.size + 1)
        assert np.all(ups[1 : drops.size + 1] == pytest.approx(drops[: ups.size - 1] + 300.0))
    # up-time exposure never exceeds wall-clock time, and redial time is excluded
    assert log.intervals_s.sum() <= log.exposure_s <= 2 * 50_000.0 - 300.0 * (log.drops - 1)


def test_redial_time_biases_the_csv_rate_but_not_the_exposure_rate():
    redial = 600.0
    log = synthetic_drop_log(BETA, 2_000_000.0, 8, np.random.default_rng(13), redial_s=redial)
    exposure_fit = fit_drop_log(log)
    csv_fit = fit_drop_log(parse_csv_log(_csv_text(log)))
    assert exposure_fit.ci_low_per_s <= BETA <= exposure_fit.ci_high_per_s
    wall_clock_rate = 1 / (1 / BETA + redial)  # drops per second of wall-clock time
    assert csv_fit.ci_low_per_s <= wall_clock_rate <= csv_fit.ci_high_per_s
    assert csv_fit.ci_high_per_s < BETA


# --------------------------------------------------------------------------------------------
# CSV logs


def test_csv_round_trip_in_seconds(tmp_path):
    log = synthetic_drop_log(BETA, 40_000.0, 3, np.random.default_rng(21))
    path = tmp_path / "drops.csv"
    path.write_text("# call drops, seconds\n\n" + _csv_text(log))
    read = read_drop_log(path)
    assert read.source == str(path) and read.censoring == "failure"
    assert sorted(read.modems) == sorted(log.modems)  # in order of first drop
    expected = np.concatenate([np.diff(log.drop_times_s[m]) for m in log.modems])
    assert np.allclose(np.sort(read.intervals_s), np.sort(expected), rtol=1e-12)
    assert read.drops == expected.size
    assert read.exposure_s == pytest.approx(expected.sum())
    fit = fit_drop_log(read)
    assert fit.censoring == "failure"
    assert fit.beta_per_s == pytest.approx(expected.size / expected.sum())


def test_csv_round_trip_in_iso_date_times(tmp_path):
    log = synthetic_drop_log(BETA, 40_000.0, 2, np.random.default_rng(22))
    start = datetime(2004, 7, 16, 13, 51, tzinfo=UTC)

    def iso(t: float) -> str:
        return (start + timedelta(seconds=round(t))).replace(tzinfo=None).isoformat()

    path = tmp_path / "drops.csv"
    path.write_text(_csv_text(log, iso))
    read = read_drop_log(path)
    expected = np.concatenate([np.diff(np.round(log.drop_times_s[m])) for m in log.modems])
    assert np.allclose(np.sort(read.intervals_s), np.sort(expected))


def test_csv_pools_intervals_per_modem_in_table_5_2_form(tmp_path):
    path = tmp_path / "table52.txt"
    path.write_text(
        "Modem ID\tDrop Time\n"
        "Kansas\t7/16/2004 13:51\n"
        "Nebraska\t7/16/2004 14:01\n"
        "Kansas\t7/16/2004 14:41\n"
        "Nebraska\t7/16/2004 15:37\n"
        "# a comment between rows\n"
        "Kansas\t7/16/2004 3:41 PM\n"
        "Iowa\t7/16/2004 15:50\n"
    )
    log = read_drop_log(path)
    assert log.modems == ("Kansas", "Nebraska", "Iowa")
    # Kansas: 50 and 60 min; Nebraska: 96 min; Iowa: a single drop, no interval
    assert sorted(log.intervals_s / 60) == [50.0, 60.0, 96.0]
    assert log.drops == 3 and log.exposure_s == 206 * 60.0
    assert log.drop_times_s["Iowa"].size == 1


def test_csv_extra_columns_and_bom(tmp_path):
    path = tmp_path / "drops.csv"
    path.write_bytes(b"\xef\xbb\xbfsite,Time,Modem\nGL,0,A\nGL,3000,A\nGL,9000,A\n")
    log = read_drop_log(path)
    assert list(log.intervals_s) == [3000.0, 6000.0]


def test_parse_time_forms():
    assert parse_time("3120.5") == 3120.5
    iso = parse_time("2004-07-16T13:51:00")
    assert parse_time("7/16/2004 13:51") == iso
    assert parse_time("7/16/2004 1:51:00 PM") == iso
    assert parse_time("2004-07-16T15:51:00+02:00") == iso
    with pytest.raises(ValueError):
        parse_time("16.7.2004 13:51")


# --------------------------------------------------------------------------------------------
# XML connection databases (seed 000 Figure 7.4)

HAND_XML = """<?xml version="1.0" encoding="utf-16"?>
<connections xmlns="urn:kumics">
  <connection>
    <modem_name>Kansas</modem_name><modem_index>1</modem_index>
    <connection_time>2004-07-16T13:00:00</connection_time>
    <entry><entry_id>1</entry_id>
      <event><state>Connecting</state><time>2004-07-16T13:00:00</time></event>
      <event><state>Connected</state><time>2004-07-16T13:01:00</time></event>
      <event><state>Dropped</state><time>2004-07-16T13:51:00</time></event>
    </entry>
    <entry><entry_id>2</entry_id>
      <event><state>connecting</state><time>2004-07-16T13:52:00</time></event>
      <event><state>failed</state><time>2004-07-16T13:53:00</time></event>
      <event><state>connecting</state><time>2004-07-16T13:54:00</time></event>
      <event><state>connected</state><time>2004-07-16T13:55:00</time></event>
      <event><state>connected</state><time>2004-07-16T14:00:00</time></event>
      <event><state>dropped</state><time>2004-07-16T14:25:00</time></event>
      <event><state>connecting</state><time>2004-07-16T14:26:00</time></event>
      <event><state>connected</state><time>2004-07-16T14:30:00</time></event>
    </entry>
  </connection>
  <connection>
    <modem-name>Nebraska</modem-name><modem-index>2</modem-index>
    <connection_time>2004-07-16T13:00:00</connection_time>
    <entry><entry_id>1</entry_id>
      <event><state>connected</state><time>7/16/2004 1:02:00 PM</time></event>
      <event><state>DROPPED</state><time>7/16/2004 3:00:00 PM</time></event>
    </entry>
  </connection>
  <connection>
    <modem_name>Kansas</modem_name><modem_index>1</modem_index>
    <connection_time>2004-07-17T00:00:00</connection_time>
    <entry><entry_id>1</entry_id>
      <event><state>connected</state><time>2004-07-17T00:01:00</time></event>
    </entry>
  </connection>
  <connection>
    <modem_name>Nebraska</modem_name><modem_index>2</modem_index>
    <connection_time>2004-07-17T00:00:00</connection_time>
    <entry><entry_id>1</entry_id>
      <event><state>connected</state><time>2004-07-17T00:00:30</time></event>
      <event><state>dropped</state><time>2004-07-17T00:20:30</time></event>
      <event><state>blocked</state><time>2004-07-17T00:21:00</time></event>
    </entry>
  </connection>
</connections>
"""


def test_xml_censored_exposure_per_connection(tmp_path):
    path = tmp_path / "kumics.xml"
    path.write_bytes(HAND_XML.encode("utf-16"))
    log = read_drop_log(path)
    assert log.modems == ("Kansas", "Nebraska")
    assert log.censoring == "time"
    # complete up-intervals: Kansas 50, 30; Nebraska 118, 20 (minutes)
    assert sorted(log.intervals_s / 60) == [20.0, 30.0, 50.0, 118.0]
    assert log.drops == 4
    # censored: Kansas up from 14:30 to the end of its connection (15:00, Nebraska's last
    # event), and from 00:01 to 00:21 (the second connection's last event); redial excluded
    assert log.exposure_s == pytest.approx((50 + 30 + 118 + 20 + 30 + 20) * 60.0)
    assert log.connect_times_s["Kansas"].size == 4  # 13:01, 13:55 (not 14:00), 14:30, 00:01
    assert log.drop_times_s["Nebraska"].size == 2
    fit = fit_drop_log(log)
    assert fit.censoring == "time"
    assert fit.beta_per_s == pytest.approx(4 / log.exposure_s)


def test_xml_end_time_extends_the_censored_up_time():
    log = parse_xml_log(HAND_XML, end_time="2004-07-17T01:00:00")
    # both connections now end at 01:00 the next day: Kansas up from 14:30 and from 00:01
    censored = (10 * 60 + 30) + 59
    assert log.exposure_s == pytest.approx((50 + 30 + 118 + 20 + censored) * 60.0)
    with pytest.raises(DropLogError, match="earlier than the last event"):
        parse_xml_log(HAND_XML, end_time="2004-07-16T12:00:00")


def test_xml_single_connection_root():
    text = (
        "<connection><modem_name>Iowa</modem_name><modem_index>3</modem_index>"
        "<connection_time/>"
        "<entry><entry_id>1</entry_id>"
        "<event><state>connected</state><time>100</time></event>"
        "<event><state>dropped</state><time>3100</time></event>"
        "<event><state>connecting</state><time>3100</time></event>"
        "<event><state>connected</state><time>3400</time></event>"
        "<event><state>failed</state><time>3900</time></event>"
        "</entry></connection>"
    )
    log = parse_xml_log(text, "one.xml")
    assert log.modems == ("Iowa",)
    assert list(log.intervals_s) == [3000.0]
    assert log.exposure_s == 3500.0  # the up-time ended by 'failed' counts, without a drop


def test_xml_round_trip_of_a_synthetic_log(tmp_path):
    log = synthetic_drop_log(BETA, 60_000.0, 4, np.random.default_rng(31), redial_s=240.0)
    path = tmp_path / "synthetic.xml"
    path.write_text(_xml_text(log))
    read = read_drop_log(path, end_time=60_000.0)
    assert read.modems == log.modems
    assert np.allclose(read.intervals_s, log.intervals_s, rtol=1e-9)
    assert read.exposure_s == pytest.approx(log.exposure_s, rel=1e-12)
    assert read.drops == log.drops
    a, b = fit_drop_log(read), fit_drop_log(log)
    assert a.beta_per_s == pytest.approx(b.beta_per_s, rel=1e-12)
    assert a.verdict == b.verdict


def test_format_is_sniffed_without_suffix(tmp_path):
    path = tmp_path / "log"
    path.write_text(HAND_XML.replace('encoding="utf-16"', 'encoding="utf-8"'))
    assert read_drop_log(path).drops == 4
    path.write_text("modem,time\nA,0\nA,60\n")
    assert read_drop_log(path).drops == 1


# --------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("", "no header"),
        ("# only a comment\n\n", "no header"),
        ("id,when\nA,0\n", "line 1: header"),
        ("# log\n\nfoo,bar\n", "line 3: header"),
        ("modem,time\n", "no data rows"),
        ("modem,time\nKansas,7/16/2004 13:51\nNebraska,not a time\n", "line 3: cannot parse"),
        ("modem,time\nA,nan\n", "line 2: time 'nan' is not finite"),
        ("modem,time\nA,100\nB,50\nA,90\n", "line 4: time '90' of modem 'A' goes backwards"),
        ("modem,time\nA,100\nA,2004-07-16T13:51:00\n", "line 3: time .* is a date-time"),
        ("modem,time\nA\n", "line 2: expected 2 columns"),
        ("modem,time\n,100\n", "line 2: empty modem name"),
    ],
)
def test_bad_csv_names_file_and_line(tmp_path, text, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DropLogError, match=where) as info:
        read_drop_log(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_bad_csv_time_message_gives_the_accepted_forms(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("modem,time\nA,16.7.2004\n")
    with pytest.raises(DropLogError) as info:
        read_drop_log(path)
    assert TIME_FORMS in str(info.value)


def _connection(events: str, name: str = "<modem_name>A</modem_name>") -> str:
    return (
        f"<connection>{name}<modem_index>1</modem_index><connection_time>0</connection_time>"
        f"<entry><entry_id>1</entry_id>{events}</entry></connection>"
    )


def _event(state: str, time: str) -> str:
    return f"<event><state>{state}</state><time>{time}</time></event>"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("<connection><modem_name>A</modem_name>\n<entry>\n</connection>", "line 3, column"),
        ("<connections>\n  <connection>\n", "line 3, column 0: malformed XML"),
        (
            '<?xml version="1.0"?><!DOCTYPE c [<!ENTITY x "xx">]><connection/>',
            "DOCTYPE",
        ),
        ("<connections><other/></connections>", "no <connection> element"),
        (_connection(_event("connected", "0"), name=""), r"<connection> #1: no modem name"),
        (
            _connection(_event("connected", "0"), name="<modem_name>A</modem_name>").replace(
                "<modem_index>1", "<modem_index>one"
            ),
            "modem_index",
        ),
        (
            _connection("<event><state>connected</state></event>"),
            r"<entry> #1 \(entry_id 1\) <event> #1: an <event> needs",
        ),
        (
            _connection(_event("connected", "0") + _event("dropped", "yesterday")),
            r"<event> #2: cannot parse time 'yesterday'",
        ),
        (
            _connection(_event("connected", "100") + _event("dropped", "50")),
            r"<connection> #1 \(modem 'A'\) <entry> #1 \(entry_id 1\) <event> #2: time '50' goes",
        ),
        (
            _connection(_event("connecting", "0") + _event("dropped", "50")),
            r"<event> #2: state 'dropped' while the modem is not up",
        ),
    ],
)
def test_bad_xml_names_file_and_element(tmp_path, text, where):
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(DropLogError, match=where) as info:
        read_drop_log(path)
    assert str(path) in str(info.value)


def test_unreadable_files(tmp_path):
    missing = tmp_path / "missing.csv"
    with pytest.raises(DropLogError, match="cannot read the file") as info:
        read_drop_log(missing)
    assert str(missing) in str(info.value)
    with pytest.raises(DropLogError, match="cannot read the file"):
        read_drop_log(tmp_path)
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"modem,time\n\xff\xfe\x00\n")
    with pytest.raises(DropLogError, match="not UTF-8"):
        read_drop_log(binary)


# --------------------------------------------------------------------------------------------
# properties

interval_lists = st.lists(
    st.floats(min_value=1e-3, max_value=1e6, allow_nan=False), min_size=1, max_size=80
)


@settings(max_examples=60, deadline=None)
@given(
    x=interval_lists,
    scale=st.floats(min_value=1e-3, max_value=1e3),
    extra=st.floats(min_value=0.0, max_value=1e6),
    censored=st.booleans(),
)
def test_beta_scales_inversely_with_time(x, scale, extra, censored):
    x = np.asarray(x)
    exposure = x.sum() + extra if censored else None
    base = fit_exponential(x, exposure_s=exposure)
    scaled = fit_exponential(x * scale, exposure_s=None if exposure is None else exposure * scale)
    assert scaled.beta_per_s == pytest.approx(base.beta_per_s / scale, rel=1e-9)
    assert scaled.ci_low_per_s == pytest.approx(base.ci_low_per_s / scale, rel=1e-9)
    assert scaled.ci_high_per_s == pytest.approx(base.ci_high_per_s / scale, rel=1e-9)
    assert (scaled.bins, scaled.chi2_dof) == (base.bins, base.chi2_dof)


@settings(max_examples=40, deadline=None)
@given(
    gaps=st.lists(
        st.lists(st.integers(min_value=0, max_value=100_000), min_size=1, max_size=30),
        min_size=1,
        max_size=4,
    ),
    scale=st.integers(min_value=2, max_value=1000),
)
def test_rescaling_a_csv_log_rescales_beta(gaps, scale):
    def log_text(factor: int) -> str:
        rows = ["modem,time"]
        for m, modem_gaps in enumerate(gaps):
            t = 0
            for gap in [0, *modem_gaps]:
                t += gap
                rows.append(f"modem{m},{t * factor}")
        return "\n".join(rows)

    base, scaled = parse_csv_log(log_text(1)), parse_csv_log(log_text(scale))
    assume(base.exposure_s > 0)
    assert scaled.exposure_s == base.exposure_s * scale
    assert fit_drop_log(scaled).beta_per_s == pytest.approx(
        fit_drop_log(base).beta_per_s / scale, rel=1e-12
    )


@settings(max_examples=100, deadline=None)
@given(
    # Intervals of a real log are whole milliseconds at least; subnormal ones overflow n/T.
    x=st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1e5)), max_size=60),
    extra_time=st.one_of(st.just(0.0), st.floats(min_value=1e-3, max_value=1e6)),
    extra_drops=st.integers(min_value=0, max_value=2000),
    confidence=st.floats(min_value=0.5, max_value=0.999),
    given_exposure=st.booleans(),
)
def test_interval_contains_the_estimate(x, extra_time, extra_drops, confidence, given_exposure):
    x = np.asarray(x, dtype=float)
    if given_exposure:
        assume(x.sum() + extra_time > 0)
        fit = fit_exponential(
            x, exposure_s=x.sum() + extra_time, drops=x.size + extra_drops, confidence=confidence
        )
    else:
        assume(x.sum() > 0)
        fit = fit_exponential(x, confidence=confidence)
    assert 0.0 <= fit.ci_low_per_s <= fit.beta_per_s <= fit.ci_high_per_s
    assert fit.verdict in VERDICTS
