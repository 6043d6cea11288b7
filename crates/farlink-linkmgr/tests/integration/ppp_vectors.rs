//! The PPP codecs against frames built independently with scapy and the RFCs' formats
//! (`tests/data/ppp_vectors.json` at the repository root, written by `tools/ppp_vectors.py`).

use farlink_core::time::SimTime;
use farlink_linkmgr::ppp::hdlc::{self, Decoder, FcsKind, RxOptions, TxOptions};
use farlink_linkmgr::ppp::lcp::{self, Lcp, LcpConfig, LcpOutput};
use farlink_linkmgr::ppp::mp::{self, MpHeader, SeqFormat};
use serde_json::Value;

const VECTORS: &str = include_str!("../../../../tests/data/ppp_vectors.json");

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

fn lcp_vector(name: &str) -> Vec<u8> {
    let d = doc();
    let case = d["lcp"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no LCP vector {name}"));
    hex(&case["packet_hex"])
}

fn scapy_like_config() -> LcpConfig {
    let mut c = LcpConfig::multilink(0x1a2b_3c4d);
    c.accm = 0x000a_0000;
    c.pfc = false;
    c.acfc = false;
    c.mrru = Some(1600);
    c.short_seq = true;
    c.endpoint = Some((3, vec![0x02, 0x00, 0x00, 0xc0, 0xff, 0xee]));
    c
}

#[test]
fn lcp_configure_request_matches_scapy() {
    let mut lcp = Lcp::new(scapy_like_config());
    lcp.open(SimTime::ZERO);
    let Some(LcpOutput::Send(req)) = lcp.poll() else {
        panic!("no request")
    };
    assert_eq!(req, lcp_vector("configure_request_mp"));
}

#[test]
fn lcp_answers_scapy_packets() {
    // The peer's request (scapy's) is acknowledged verbatim, as scapy builds the Ack.
    let mut lcp = Lcp::new(LcpConfig::multilink(0x0bad_f00d));
    lcp.open(SimTime::ZERO);
    let _ = lcp.poll();
    lcp.on_packet(SimTime::ZERO, &lcp_vector("configure_request_mp"));
    let Some(LcpOutput::Send(ack)) = lcp.poll() else {
        panic!("no answer")
    };
    assert_eq!(ack, lcp_vector("configure_ack_mp"));
    // A Nak of our MRU (scapy's, id 2 answers nothing of ours) is ignored; one for our id is
    // taken and the request sent again with the suggested MRU.
    lcp.on_packet(SimTime::ZERO, &lcp_vector("configure_nak_mru"));
    assert_eq!(lcp.poll(), None);
    let mut nak = lcp_vector("configure_nak_mru");
    nak[1] = 1;
    lcp.on_packet(SimTime::ZERO, &nak);
    let Some(LcpOutput::Send(again)) = lcp.poll() else {
        panic!("no new request")
    };
    let p = lcp::parse_packet(&again).unwrap();
    let opts = lcp::parse_options(p.data).unwrap();
    assert_eq!(opts[0].kind, lcp::OPT_MRU);
    assert_eq!(opts[0].value, &1200u16.to_be_bytes());
    // Echo and Terminate packets parse as RFC 1661 section 5 lays them out.
    for name in [
        "terminate_request",
        "terminate_ack",
        "echo_request",
        "echo_reply",
    ] {
        let v = lcp_vector(name);
        let p = lcp::parse_packet(&v).unwrap();
        assert_eq!(p.data.len() + 4, v.len(), "{name}");
    }
}

fn ipcp_case(d: &Value, name: &str) -> Vec<u8> {
    let case = d["ipcp"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no IPCP vector {name}"));
    hex(&case["packet_hex"])
}

#[test]
fn ipcp_requests_and_answers_as_scapy_builds_them() {
    use farlink_linkmgr::ppp::ipcp::{Ipcp, IpcpConfig, IpcpOutput};
    let d = doc();
    let mut ipcp = Ipcp::new(IpcpConfig::new([10, 9, 0, 1], Some([10, 9, 0, 2])));
    ipcp.open(SimTime::ZERO);
    assert_eq!(
        ipcp.poll(),
        Some(IpcpOutput::Send(ipcp_case(&d, "configure_request")))
    );
    ipcp.on_packet(SimTime::ZERO, &ipcp_case(&d, "request_address_and_dns"));
    assert_eq!(
        ipcp.poll(),
        Some(IpcpOutput::Send(ipcp_case(&d, "reject_dns")))
    );
    ipcp.on_packet(SimTime::ZERO, &ipcp_case(&d, "request_address"));
    assert_eq!(
        ipcp.poll(),
        Some(IpcpOutput::Send(ipcp_case(&d, "nak_address")))
    );
    // Our request acknowledged by the peer (scapy's Configure-Ack): half of the way open.
    ipcp.on_packet(SimTime::ZERO, &ipcp_case(&d, "configure_ack"));
    assert_eq!(ipcp.poll(), None);
}
