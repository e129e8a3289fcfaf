//! Running every scenario of some directories and reporting one line each.

use std::path::Path;

use crate::check::check;
use crate::runner::run_scenario;
use crate::scenario::Scenario;

/// The verdict on one scenario file: `Ok(())` or its failures.
pub async fn run_file(path: &Path) -> Result<(), Vec<String>> {
    let scenario = Scenario::load(path).map_err(|e| vec![e.to_string()])?;
    let trace = run_scenario(&scenario).await.map_err(|e| vec![e])?;
    if let Ok(dir) = std::env::var("CONTENOX_TRACE_DIR") {
        let out = Path::new(&dir).join(format!("{}.rust.json", scenario.name));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(
            out,
            serde_json::to_string_pretty(&trace).unwrap_or_default(),
        );
    }
    let failures = check(&scenario, &trace);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}
