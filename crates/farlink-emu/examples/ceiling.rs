//! The throughput references of `make bench-emu`: an unbounded kernel TCP transfer between two
//! namespaces over a bare TUN forwarder (with or without offloads) or a veth pair, printed as one JSON object.
//!
//!     cargo run --release -p farlink-emu --example ceiling -- bare_tun|bare_tun_offload|veth SECONDS [MTU] [CC]

#[cfg(target_os = "linux")]
fn main() {
    use farlink_emu::ceiling::{reference_transfer, Carrier};
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: ceiling bare_tun|bare_tun_offload|veth SECONDS [MTU] [CC]";
    let Some(carrier) = args.first().and_then(|a| Carrier::from_name(a)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let seconds: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let mtu: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1500);
    let cc = args.get(3).map_or("cubic", String::as_str);
    match reference_transfer(
        carrier,
        mtu,
        cc,
        std::time::Duration::from_secs_f64(seconds),
    ) {
        Ok(r) => println!(
            "{}",
            serde_json::to_string(&r).expect("a result serialises")
        ),
        Err(e) => {
            eprintln!("ceiling: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("ceiling: Linux only");
    std::process::exit(2);
}
