//! Running every scenario of some directories and reporting one line each.

use std::path::{Path, PathBuf};

use crate::check::check;
use crate::runner::run_scenario;
use crate::scenario::Scenario;

/// The scenario directories of `$CONTENOX_SCENARIOS` (colon-separated).
pub fn dirs_from_env() -> Vec<PathBuf> {
    std::env::var("CONTENOX_SCENARIOS")
        .unwrap_or_default()
        .split(':')
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Every `*.json` in `dirs`, sorted per directory.
pub fn scenario_files(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for dir in dirs {
        let mut here: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        here.sort();
        files.extend(here);
    }
    Ok(files)
}

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
