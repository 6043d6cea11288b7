//! Prints the transition probabilities of the Markov fading channel (seed 004) for the frame
//! error rates and normalised Doppler frequencies of seed 004's figures; the table in
//! `docs/fading-channel.md` is this program's output.
//!
//! `cargo run -p farlink-core --example fading_table`

use farlink_core::loss::fading_transitions;

fn main() {
    println!("| P_e | f_d T | rho = J0(2 pi f_d T) | F | theta | p (good to bad) | q (bad to bad) | mean burst (frames) |");
    println!("|---|---|---|---|---|---|---|---|");
    for pe in [0.01, 0.1, 0.3] {
        for fd_t in [0.01, 0.1, 1.0] {
            let tr = fading_transitions(pe, fd_t).expect("parameters in range");
            println!(
                "| {pe} | {fd_t} | {:.6} | {:.4} | {:.4} | {:.6} | {:.6} | {:.3} |",
                tr.rho,
                tr.fading_margin,
                tr.theta,
                tr.p_good_to_bad,
                tr.p_bad_to_bad,
                tr.mean_burst_frames()
            );
        }
    }
}
