//! Dataset repositories on the Hub: the files of a revision, as the Hub's API lists them, and
//! one file downloaded into the cache in `huggingface_hub`'s layout, so that a later run and
//! the Python tools find it: `datasets--ORG--NAME/snapshots/<commit>/<file>` and
//! `refs/<revision>` naming the commit.

use std::io::Write;
use std::path::{Path, PathBuf};

use http_body_util::BodyExt;

use super::{blocking, fetch, open, HubConfig};
use crate::Error;

/// The `datasets--ORG--NAME` folder of dataset `id` under `cache`.
pub fn folder(cache: &Path, id: &str) -> PathBuf {
    cache.join(format!("datasets--{}", id.replace('/', "--")))
}

/// A revision as it goes in a URL path (`refs/convert/parquet` -> `refs%2Fconvert%2Fparquet`).
fn quoted(revision: &str) -> String {
    revision.replace('/', "%2F")
}

#[derive(serde::Deserialize)]
struct Info {
    sha: Option<String>,
    #[serde(default)]
    siblings: Vec<Sibling>,
}

#[derive(serde::Deserialize)]
struct Sibling {
    rfilename: String,
}

/// Whether `f` is a safe relative file name to store under a snapshot: no absolute path, no
/// `.`/`..` or empty component, no backslash.
fn safe(f: &str) -> bool {
    !f.is_empty()
        && !f.starts_with('/')
        && !f.contains('\\')
        && f.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

/// The commit and the files of dataset `id` at `revision` (`main`, `refs/convert/parquet`):
/// the Hub API's `GET {endpoint}/api/datasets/{id}/revision/{revision}` (`sha`,
/// `siblings[].rfilename`). Names that could leave the snapshot folder are left out.
pub fn files(config: &HubConfig, id: &str, revision: &str) -> Result<(String, Vec<String>), Error> {
    let url = format!(
        "{}/api/datasets/{id}/revision/{}",
        config.endpoint,
        quoted(revision)
    );
    let fail = |message: String| Error::DatasetDownload {
        id: id.to_string(),
        url: url.clone(),
        message,
    };
    let (body, _) = blocking(fetch(config, &url, "dataset")).map_err(fail)?;
    let info: Info = serde_json::from_slice(&body).map_err(|e| {
        fail(format!(
            "the Hub's answer is not a repository description: {e}"
        ))
    })?;
    let sha = info
        .sha
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()))
        .ok_or_else(|| fail("the Hub's answer names no commit (sha)".into()))?;
    let files = info
        .siblings
        .into_iter()
        .map(|s| s.rfilename)
        .filter(|f| safe(f))
        .collect();
    Ok((sha, files))
}

/// Downloads `file` of dataset `id` at commit `sha` (`{endpoint}/datasets/{id}/resolve/{sha}/
/// {file}`, redirects followed) into `snapshots/<sha>/<file>`, streamed to a temporary file and
/// renamed, and points `refs/<revision>` at `sha`. Returns the stored file.
pub fn download(
    config: &HubConfig,
    id: &str,
    revision: &str,
    sha: &str,
    file: &str,
) -> Result<PathBuf, Error> {
    let url = format!("{}/datasets/{id}/resolve/{sha}/{file}", config.endpoint);
    let fail = |message: String| Error::DatasetDownload {
        id: id.to_string(),
        url: url.clone(),
        message,
    };
    if !safe(file) || !sha.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(fail("not a file name of the dataset".into()));
    }
    let repo = folder(&config.cache, id);
    let dest = repo.join("snapshots").join(sha).join(file);
    let dir = dest.parent().unwrap_or(&repo).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("creating {}: {e}", dir.display())))?;
    let tmp = dir.join(format!(".bench-{}.tmp", std::process::id()));
    let stream = async {
        let (resp, _) = open(config, &url, "dataset").await?;
        let mut out = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let mut body = resp.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("reading the body: {e}"))?;
            if let Some(data) = frame.data_ref() {
                out.write_all(data)
                    .map_err(|e| format!("{}: {e}", tmp.display()))?;
            }
        }
        out.sync_all()
            .map_err(|e| format!("{}: {e}", tmp.display()))
    };
    if let Err(e) = blocking(stream) {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    std::fs::rename(&tmp, &dest).map_err(|e| fail(format!("{}: {e}", dest.display())))?;
    let refs = repo.join("refs").join(revision);
    let stored = refs
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&refs, sha));
    stored.map_err(|e| fail(format!("{}: {e}", refs.display())))?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_snapshot_are_refused() {
        for ok in [
            "main/train-00000-of-00001.parquet",
            "data/x.parquet",
            "a.parquet",
        ] {
            assert!(safe(ok), "{ok}");
        }
        for bad in [
            "../x.parquet",
            "/etc/passwd",
            "a/../../b",
            "a//b",
            "a\\b",
            "",
            "./a",
        ] {
            assert!(!safe(bad), "{bad}");
        }
        assert_eq!(quoted("refs/convert/parquet"), "refs%2Fconvert%2Fparquet");
    }
}
