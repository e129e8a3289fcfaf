//! `conformance [DIR|FILE.json...]`: run every scenario in the directories, and the scenario
//! files given (default: `$CONTENOX_SCENARIOS`)
//! through the Rust API, print one line per scenario and `N passed, N failed`; exit 1 on any
//! failure. Set `CONTENOX_TRACE_DIR` to keep the traces.

use std::path::PathBuf;
use std::process::ExitCode;

use contenox_conformance::scenario::{scenario_dirs, scenario_files};
use contenox_conformance::suite::run_file;
use futures::StreamExt;

fn main() -> ExitCode {
    let mut dirs: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        dirs = scenario_dirs(&[]);
    }
    if dirs.is_empty() {
        eprintln!("usage: conformance DIR... (or set CONTENOX_SCENARIOS)");
        return ExitCode::from(2);
    }
    let files = match scenario_files(&dirs) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let (passed, failed) = runtime.block_on(async {
        // A few at a time: most scenarios wait on timers, not on the CPU.
        let mut results =
            futures::stream::iter(files.iter().map(|f| async move { (f, run_file(f).await) }))
                .buffered(4);
        let (mut passed, mut failed) = (0, 0);
        while let Some((file, verdict)) = results.next().await {
            let name = file.file_stem().unwrap_or_default().to_string_lossy();
            match verdict {
                Ok(()) => {
                    passed += 1;
                    println!("ok   {name}");
                }
                Err(reasons) => {
                    failed += 1;
                    println!("FAIL {name}");
                    for r in reasons {
                        println!("     {r}");
                    }
                }
            }
        }
        (passed, failed)
    });
    println!("{passed} passed, {failed} failed");
    if failed == 0 && passed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
