//! The plan's files: plan.json, plan.csv and plan.html in its directory and the user's
//! `--output` files, each written whole after every configuration; a plan file read back for
//! `bench report` and `--resume`.

use std::path::{Path, PathBuf};

use bench_runner::UsageError;

use crate::fleet::PlanReport;

/// The files every plan writes in its directory.
pub const OWN_FILES: [&str; 3] = ["plan.json", "plan.csv", "plan.html"];

/// Why the plan's files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A file could not be written.
    #[error(transparent)]
    Write(#[from] bench_report::Error),
    /// The plan could not be put in the file's format.
    #[error("{0}")]
    Format(String),
}

/// The user's `--output` files, for the plan (by extension: json, yaml, csv, html).
pub fn outputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, UsageError> {
    for p in paths {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !matches!(ext, "json" | "yaml" | "yml" | "csv" | "html") {
            return Err(UsageError::new(format!(
                "--output {}: a plan is written as .json, .yaml, .csv or .html",
                p.display()
            )));
        }
    }
    Ok(paths.to_vec())
}

/// The plan's text in the format `path`'s extension names.
pub fn text(report: &PlanReport, path: &Path) -> Result<String, FileError> {
    let failed = FileError::Format;
    Ok(
        match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
            "yaml" | "yml" => serde_yaml::to_string(report).map_err(|e| failed(e.to_string()))?,
            "csv" => crate::view::render_plan_csv(report),
            "html" => crate::view::render_plan_html(report),
            _ => serde_json::to_string_pretty(report).map_err(|e| failed(e.to_string()))? + "\n",
        },
    )
}

/// Writes `report` to each of `paths` in the format its extension names, each replaced
/// atomically.
pub fn write(report: &PlanReport, paths: &[PathBuf]) -> Result<(), FileError> {
    for path in paths {
        bench_report::write_atomic(path, text(report, path)?.as_bytes())?;
    }
    Ok(())
}

/// The plan's own files in `dir` and the user's `outputs`.
pub fn all(dir: &Path, outputs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = OWN_FILES.map(|f| dir.join(f)).into();
    files.extend(outputs.iter().cloned());
    files
}

/// The plan in `path` (JSON or YAML), `None` when the file holds no plan (a run, say).
pub fn read(path: &Path) -> Option<PlanReport> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_yaml::Value = serde_yaml::from_str(&text).ok()?;
    value.get("plan_schema_version")?;
    serde_yaml::from_value(value).ok()
}
