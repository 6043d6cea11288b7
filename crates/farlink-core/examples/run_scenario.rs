//! Runs a scenario file (JSON, the schema of `farlink_core::scenario`) and prints its summary as
//! JSON: the engine without the Python front end, for debugging.
//!
//! ```text
//! cargo run --release -p farlink-core --example run_scenario -- scenario.json
//! ```

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: run_scenario SCENARIO.json");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("run_scenario: {path}: {e}");
            std::process::exit(2);
        }
    };
    let scenario = match farlink_core::parse_scenario_json(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("run_scenario: {path}: {e}");
            std::process::exit(2);
        }
    };
    match farlink_core::run(&scenario) {
        Ok(r) => match serde_json::to_string_pretty(&r.summary) {
            Ok(json) => println!("{json}"),
            Err(e) => {
                eprintln!("run_scenario: {e}");
                std::process::exit(1);
            }
        },
        Err(e) => {
            eprintln!("run_scenario: {e}");
            std::process::exit(1);
        }
    }
}
