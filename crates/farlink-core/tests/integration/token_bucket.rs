//! A link direction's token bucket in a scenario: `burst` and `peak_rate` in both spellings,
//! on a link and in one direction, their errors, the resolved scenario with and without, and
//! what it does to a TCP transfer.

use crate::support;

use farlink_core::link::TokenBucket;
use farlink_core::scenario::resolve_scenario_json;
use farlink_core::time::BitRate;
use farlink_core::{parse_scenario_json, Scenario, ScenarioError};
use serde_json::{json, Value};

/// S - D over one 20 Mbit/s link with a bulk flow; tests edit `links[0]`.
fn base(link: Value) -> Value {
    let mut l = json!({"name": "S-D", "a": "S", "b": "D", "rate": "20Mbps", "delay": "10ms"});
    for (k, v) in link.as_object().unwrap() {
        l[k] = v.clone();
    }
    json!({
        "duration": "10s",
        "nodes": ["S", "D"],
        "links": [l],
        "flows": [{"from": "S", "to": "D", "app": {"kind": "bulk", "size": "1MB"}}]
    })
}

fn parse(link: Value) -> Result<Scenario, ScenarioError> {
    parse_scenario_json(&base(link).to_string())
}

fn bucket(burst_bytes: u64, peak_bps: Option<u64>) -> Option<TokenBucket> {
    Some(TokenBucket {
        burst_bytes,
        peak: peak_bps.map(BitRate::from_bps),
    })
}

/// The error for `link`, as `path: message`.
#[track_caller]
fn error(link: Value) -> String {
    match parse(link) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn burst_and_peak_in_either_spelling_on_the_link_or_in_one_direction() {
    let s = parse(json!({"burst": "80kB", "peak_rate": "1Gbps"})).unwrap();
    let l = &s.links()[0];
    assert_eq!(l.fwd.bucket, bucket(80_000, Some(1_000_000_000)));
    assert_eq!(l.rev.bucket, l.fwd.bucket);
    assert_eq!(l.fwd.rate.bps(), 20_000_000, "rate is the token rate");

    let s = parse(json!({"burst_bytes": 80_000, "peak_rate_bps": 1e9})).unwrap();
    assert_eq!(s.links()[0].fwd.bucket, bucket(80_000, Some(1_000_000_000)));

    // In one direction only; no peak: packets holding their tokens leave in no time.
    let s = parse(json!({"fwd": {"burst": "64KiB"}})).unwrap();
    assert_eq!(s.links()[0].fwd.bucket, bucket(65_536, None));
    assert_eq!(s.links()[0].rev.bucket, None);

    // A direction overrides the link's depth and inherits its peak.
    let s = parse(json!({"burst": "80kB", "peak_rate": "100Mbps",
                         "rev": {"burst_bytes": 3000}}))
    .unwrap();
    assert_eq!(s.links()[0].fwd.bucket, bucket(80_000, Some(100_000_000)));
    assert_eq!(s.links()[0].rev.bucket, bucket(3_000, Some(100_000_000)));

    // A bucket deeper than u32 bytes; a peak equal to the rate.
    let s = parse(json!({"burst": "10GB", "peak_rate": "20Mbps"})).unwrap();
    assert_eq!(
        s.links()[0].fwd.bucket,
        bucket(10_000_000_000, Some(20_000_000))
    );

    assert_eq!(parse(json!({})).unwrap().links()[0].fwd.bucket, None);
}

#[test]
fn bucket_errors_name_their_place() {
    assert_eq!(
        error(json!({"burst": "80kB", "burst_bytes": 80_000})),
        "links[0].burst_bytes: give either burst or burst_bytes, not both"
    );
    assert_eq!(
        error(json!({"fwd": {"burst": "1MB", "peak_rate": "1Gbps", "peak_rate_bps": 1e9}})),
        "links[0].fwd.peak_rate_bps: give either peak_rate or peak_rate_bps, not both"
    );
    assert_eq!(
        error(json!({"fwd": {"peak_rate": "1Gbps"}})),
        "links[0].fwd.peak_rate: a peak rate needs a token bucket: give burst (\"80kB\") or \
         burst_bytes on the link or in fwd"
    );
    // The link's peak reaches both directions; the reverse one has no bucket.
    assert_eq!(
        error(json!({"peak_rate_bps": 1e9, "fwd": {"burst": "80kB"}})),
        "links[0].peak_rate_bps: a peak rate needs a token bucket: give burst (\"80kB\") or \
         burst_bytes on the link or in rev"
    );
    assert_eq!(
        error(json!({"burst_bytes": 0})),
        "links[0].burst_bytes: expected a bucket of at least 1 byte, got 0"
    );
    assert_eq!(
        error(json!({"rev": {"burst": "0B"}})),
        "links[0].rev.burst: expected a bucket of at least 1 byte, got 0"
    );
    assert_eq!(
        error(json!({"burst": "80kB", "peak_rate": "10Mbps"})),
        "links[0].peak_rate: expected a peak rate of at least the token rate (20000000 bit/s, \
         the rate of fwd), got 10000000 bit/s"
    );
    assert!(error(json!({"burst": 80_000})).starts_with("links[0].burst: "));
    assert!(error(json!({"peak_rate": "fast", "burst": "1kB"})).starts_with("links[0].peak_rate: "));
    assert!(error(json!({"burst_bytes": -3})).starts_with("links[0].burst_bytes: "));
}

#[test]
fn bundles_and_radio_hops_take_no_bucket() {
    let bundle = json!({"members": 2, "rate": "2400bps", "delay": "0.5s"});
    let mut doc = base(json!({"bundle": bundle, "rev": {"burst": "3kB"}}));
    let link = doc["links"][0].as_object_mut().unwrap();
    link.remove("rate");
    link.remove("delay");
    assert_eq!(
        parse_scenario_json(&doc.to_string())
            .unwrap_err()
            .to_string(),
        "links[0].rev.burst: a token bucket (burst, peak_rate) shapes a plain link; a bundle's \
         members have serializers of their own"
    );
    assert_eq!(
        error(json!({"rate": "9600bps", "rlp": {}, "peak_rate": "1Mbps"})),
        "links[0].peak_rate: a token bucket (burst, peak_rate) shapes a plain link; a radio hop \
         sends in frame slots of its own"
    );
}

fn resolve(link: Value) -> Value {
    serde_json::to_value(resolve_scenario_json(&base(link).to_string()).unwrap()).unwrap()
}

#[test]
fn resolved_scenario_shows_a_bucket_only_where_there_is_one() {
    let r = resolve(json!({"fwd": {"burst": "80kB", "peak_rate": "1Gbps"}}));
    let (fwd, rev) = (&r["links"][0]["fwd"], &r["links"][0]["rev"]);
    assert_eq!(fwd["burst_bytes"], 80_000);
    assert_eq!(fwd["peak_rate_bps"], 1_000_000_000_u64);
    assert_eq!(fwd["rate_bps"], 20_000_000);
    for key in ["burst_bytes", "peak_rate_bps"] {
        assert!(rev.get(key).is_none(), "{key} in {rev}");
    }
    let defaults = r["defaults"].to_string();
    assert!(
        !defaults.contains("burst") && !defaults.contains("peak"),
        "{defaults}"
    );
    // The bottleneck is the token rate; the idle path's round trip crosses at the peak:
    // 10 ms each way, 1040 bytes at 1 Gbit/s and a 52-byte ACK at 20 Mbit/s.
    let flow = &r["flows"][0];
    assert_eq!(flow["bottleneck_bps"], 20_000_000);
    let data_s = flow["rtt"]["data_transmission_s"].as_f64().unwrap();
    let expected = f64::from(flow["tcp"]["data_packet_bytes"].as_u64().unwrap() as u32) * 8.0 / 1e9;
    assert!((data_s - expected).abs() < 1e-15, "{data_s} vs {expected}");

    // Without a peak, no time on the shaped hop; inherited from the link: both directions.
    let r = resolve(json!({"burst_bytes": 5000}));
    assert_eq!(r["links"][0]["rev"]["burst_bytes"], 5000);
    assert!(r["links"][0]["rev"].get("peak_rate_bps").is_none());
    assert!(
        !r["defaults"].to_string().contains("burst"),
        "given on the link"
    );
    assert_eq!(r["flows"][0]["rtt"]["data_transmission_s"], 0.0);
    assert_eq!(r["flows"][0]["rtt"]["ack_transmission_s"], 0.0);

    // No bucket: neither key, anywhere.
    let r = resolve(json!({}));
    let text = r.to_string();
    assert!(
        !text.contains("burst") && !text.contains("peak_rate"),
        "{text}"
    );
}

/// Goodput (bit/s) and transfer time of `size` bytes of bulk TCP from S to D over a 20 Mbit/s
/// link of 1 ms each way, shaped by `link` (the capture's tbf: 20 Mbit/s, an 80 kB bucket).
fn transfer(size_bytes: u64, link: Value) -> (f64, f64) {
    let mut v = base(link);
    v["links"][0]["delay"] = json!("1ms");
    v["duration"] = json!("60s");
    v["flows"][0]["app"] = json!({"kind": "bulk", "size_bytes": size_bytes});
    v["flows"][0]["tcp"] = json!({"receive_buffer": "1MiB"});
    let r = support::run_json(&v);
    let f = &r.summary.flows[0];
    assert!(f.finished && f.delivered_bytes == size_bytes);
    (f.goodput_bps, f.transfer_time_s.unwrap())
}

#[test]
fn bucket_carries_a_short_transfer_faster_than_its_rate_and_a_long_one_at_it() {
    let tbf = json!({"burst": "80kB", "peak_rate": "1Gbps"});
    // 60 kB fit the bucket: they cross at the peak, limited by slow start's round trips only,
    // far above R (and above what the plain 20 Mbit/s link carries).
    let (shaped, shaped_s) = transfer(60_000, tbf.clone());
    let (plain, plain_s) = transfer(60_000, json!({}));
    println!("60 kB: {shaped:.0} bit/s in {shaped_s} s with the bucket, {plain:.0} bit/s in {plain_s} s without");
    assert!(shaped > 2.0 * 20e6, "{shaped}");
    assert!(plain < 20e6, "{plain}");
    // 20 MB: the bucket's 80 kB are 0.4 % of it; the long run is the token rate, and never
    // more than R t + B.
    let (long, long_s) = transfer(20_000_000, tbf);
    let (long_plain, _) = transfer(20_000_000, json!({}));
    println!("20 MB: {long:.0} bit/s in {long_s} s with the bucket, {long_plain:.0} without");
    assert!(long > 0.9 * 20e6, "{long}");
    assert!(
        (long / long_plain - 1.0).abs() < 0.01,
        "{long} vs {long_plain}"
    );
}
