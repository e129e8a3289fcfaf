//! `conformance-check SCENARIO.json TRACE.json`: prints `ok` and exits 0 when the trace meets
//! the scenario's `expect`; else prints one line per failure and exits 1. Exits 2 when a file
//! cannot be read or parsed.

use std::process::ExitCode;

use contenox_conformance::check::{check, Trace};
use contenox_conformance::scenario::Scenario;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [scenario, trace] = args.as_slice() else {
        eprintln!("usage: conformance-check SCENARIO.json TRACE.json");
        return ExitCode::from(2);
    };
    let scenario = match Scenario::load(scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("conformance-check: {e}");
            return ExitCode::from(2);
        }
    };
    let trace = match Trace::load(trace) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("conformance-check: {e}");
            return ExitCode::from(2);
        }
    };
    let fails = check(&scenario, &trace);
    if fails.is_empty() {
        println!("ok");
        ExitCode::SUCCESS
    } else {
        for f in &fails {
            println!("{}: {f}", scenario.name);
        }
        ExitCode::from(1)
    }
}
