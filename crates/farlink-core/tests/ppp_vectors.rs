//! The PPP codecs against frames built independently with scapy and the RFCs' formats
//! (`tests/data/ppp_vectors.json` at the repository root, written by `tools/ppp_vectors.py`).

use farlink_core::ppp::hdlc::{self, Decoder, FcsKind, RxOptions, TxOptions};
use farlink_core::ppp::mp::{self, MpHeader, SeqFormat};
use serde_json::Value;

const VECTORS: &str = include_str!("../../../tests/data/ppp_vectors.json");

fn hex(v: &Value) -> Vec<u8> {
    let s = v.as_str().expect("hex string");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn doc() -> Value {
    serde_json::from_str(VECTORS).expect("vectors parse")
}

fn fcs_kind(case: &Value) -> FcsKind {
    match case["fcs"].as_u64() {
        Some(16) => FcsKind::Fcs16,
        Some(32) => FcsKind::Fcs32,
        other => panic!("fcs {other:?}"),
    }
}

#[test]
fn encoder_writes_the_reference_frames() {
    let d = doc();
    let cases = d["hdlc"].as_array().unwrap();
    assert_eq!(cases.len(), 64);
    for case in cases {
        let opts = TxOptions {
            accm: case["accm"].as_u64().unwrap() as u32,
            acfc: case["acfc"].as_bool().unwrap(),
            pfc: case["pfc"].as_bool().unwrap(),
            fcs: fcs_kind(case),
        };
        let mut out = Vec::new();
        let protocol = case["protocol"].as_u64().unwrap() as u16;
        hdlc::encode_frame(
            &opts,
            protocol,
            &hex(&case["info_hex"]),
            &mut Vec::new(),
            &mut out,
        );
        assert_eq!(out, hex(&case["wire_hex"]), "{}", case["name"]);
    }
}

#[test]
fn decoder_reads_the_reference_frames_in_one_stream() {
    let d = doc();
    for fcs in [FcsKind::Fcs16, FcsKind::Fcs32] {
        let cases: Vec<&Value> = d["hdlc"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| fcs_kind(c) == fcs)
            .collect();
        let stream: Vec<u8> = cases.iter().flat_map(|c| hex(&c["wire_hex"])).collect();
        // The receive ACCM is empty: every sender here escaped at least what it had to.
        let mut dec = Decoder::new(RxOptions {
            accm: 0,
            fcs,
            mru: 1500,
        });
        let mut got = Vec::new();
        for chunk in stream.chunks(97) {
            dec.push(chunk, |r| {
                let f = hdlc::parse_content(r.expect("good frame")).expect("good header");
                got.push((f.protocol, f.info.to_vec()));
            });
        }
        assert_eq!(got.len(), cases.len());
        for (c, (protocol, info)) in cases.iter().zip(got) {
            assert_eq!(
                u64::from(protocol),
                c["protocol"].as_u64().unwrap(),
                "{}",
                c["name"]
            );
            assert_eq!(info, hex(&c["info_hex"]), "{}", c["name"]);
        }
    }
}

#[test]
fn mp_headers_match_rfc_1990() {
    let d = doc();
    for case in d["mp"].as_array().unwrap() {
        let fmt = match case["format"].as_str().unwrap() {
            "long" => SeqFormat::Long,
            _ => SeqFormat::Short,
        };
        let h = MpHeader {
            begin: case["begin"].as_bool().unwrap(),
            end: case["end"].as_bool().unwrap(),
            seq: case["seq"].as_u64().unwrap() as u32,
        };
        let payload = hex(&case["payload_hex"]);
        let mut info = Vec::new();
        mp::encode_header(h, fmt, &mut info);
        info.extend_from_slice(&payload);
        assert_eq!(info, hex(&case["info_hex"]));
        let (h2, p2) = mp::decode_header(&info, fmt).unwrap();
        assert_eq!((h2, p2), (h, &payload[..]));
        // The whole frame, with ACFC and PFC and no escaped control characters.
        let opts = TxOptions {
            accm: 0,
            acfc: true,
            pfc: true,
            fcs: FcsKind::Fcs16,
        };
        let mut wire = Vec::new();
        hdlc::encode_frame(&opts, mp::PROTO_MP, &info, &mut Vec::new(), &mut wire);
        assert_eq!(wire, hex(&case["wire_hex"]));
    }
}
