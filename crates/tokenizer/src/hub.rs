//! Hugging Face Hub resolution of a model id to its `tokenizer.json`: the local cache first
//! (the `huggingface_hub` layout, so files fetched by Python tools are reused), then a download
//! from the Hub (or the mirror in `HF_ENDPOINT`), stored back into the cache. [`datasets`]
//! lists and fetches dataset files the same way (the loader chooses which).

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Limited};

use crate::Error;

pub mod datasets;

/// The file fetched from a model repository.
const FILE: &str = "tokenizer.json";
/// Revision asked for.
const REVISION: &str = "main";
/// Largest tokenizer.json accepted (the largest public ones are a few tens of MB).
const MAX_BYTES: usize = 256 << 20;
/// Whole-download limit.
const TIMEOUT: Duration = Duration::from_secs(300);
/// Redirects followed (the Hub redirects renamed repos and large files to its CDN).
const MAX_REDIRECTS: usize = 5;

/// Where the Hub and its cache are, read from the environment the way `huggingface_hub` reads it.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// Base URL (`HF_ENDPOINT`, default `https://huggingface.co`), without trailing slash.
    pub endpoint: String,
    /// The hub cache folder (`HF_HUB_CACHE`, else `HF_HOME/hub`, else
    /// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`).
    pub cache: PathBuf,
    /// Access token (`HF_TOKEN`, else the file `HF_TOKEN_PATH` or `HF_HOME/token`).
    pub token: Option<String>,
    /// `HF_HUB_OFFLINE` is set to a true value: never download.
    pub offline: bool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl HubConfig {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Self {
        let hf_home = env("HF_HOME").map(PathBuf::from).unwrap_or_else(|| {
            env("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(|| PathBuf::from(".cache"))
                .join("huggingface")
        });
        let cache = env("HF_HUB_CACHE")
            .or_else(|| env("HUGGINGFACE_HUB_CACHE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| hf_home.join("hub"));
        let token = env("HF_TOKEN")
            .or_else(|| env("HUGGING_FACE_HUB_TOKEN"))
            .or_else(|| {
                let path = env("HF_TOKEN_PATH")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| hf_home.join("token"));
                std::fs::read_to_string(path)
                    .ok()
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
            });
        let offline = env("HF_HUB_OFFLINE")
            .map(|v| {
                matches!(
                    v.trim().to_ascii_lowercase().as_str(),
                    "1" | "on" | "yes" | "true"
                )
            })
            .unwrap_or(false);
        let endpoint = env("HF_ENDPOINT")
            .unwrap_or_else(|| "https://huggingface.co".to_string())
            .trim_end_matches('/')
            .to_string();
        Self {
            endpoint,
            cache,
            token,
            offline,
        }
    }
}

/// Whether `s` has the shape of a Hub model id: `name` or `owner/name`, each part made of ASCII
/// letters, digits, `-`, `_`, `.` and not `.`/`..`.
pub fn is_model_id(s: &str) -> bool {
    let parts: Vec<&str> = s.split('/').collect();
    !s.is_empty()
        && parts.len() <= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && *p != "."
                && *p != ".."
                && !p.starts_with('.')
                && p.len() <= 96
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
}

fn repo_folder(cache: &Path, id: &str) -> PathBuf {
    cache.join(format!("models--{}", id.replace('/', "--")))
}

/// The cached `tokenizer.json` of model `id`, if any: the snapshot `refs/main` points at, else
/// any snapshot holding one (in name order, for repeatability).
pub fn cached(cache: &Path, id: &str) -> Option<PathBuf> {
    let repo = repo_folder(cache, id);
    if let Ok(commit) = std::fs::read_to_string(repo.join("refs").join(REVISION)) {
        let p = repo.join("snapshots").join(commit.trim()).join(FILE);
        if commit.trim().chars().all(|c| c.is_ascii_alphanumeric()) && p.is_file() {
            return Some(p);
        }
    }
    let mut snapshots: Vec<PathBuf> = std::fs::read_dir(repo.join("snapshots"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join(FILE)))
        .filter(|p| p.is_file())
        .collect();
    snapshots.sort();
    snapshots.into_iter().next()
}

/// Downloads `tokenizer.json` of model `id` and stores it in the cache. Returns the file's
/// bytes (also when storing fails, which only logs a warning).
///
/// Runs on a thread of its own with a private current-thread runtime, so it can be called
/// from synchronous code and from inside an async runtime alike.
pub fn download(config: &HubConfig, id: &str) -> Result<Vec<u8>, Error> {
    let url = format!("{}/{}/resolve/{}/{}", config.endpoint, id, REVISION, FILE);
    let (bytes, commit) =
        blocking(fetch(config, &url, "model")).map_err(|message| Error::Download {
            id: id.to_string(),
            url: url.clone(),
            message,
        })?;
    if let Err(e) = store(&config.cache, id, commit.as_deref(), &bytes) {
        tracing::warn!(model = id, cache = %config.cache.display(), error = %e,
            "could not store the downloaded tokenizer.json in the Hugging Face cache");
    }
    Ok(bytes)
}

/// Runs `fut` to its end on a thread of its own with a private current-thread runtime (so it
/// can be called from synchronous code and from inside an async runtime alike), within
/// [`TIMEOUT`].
fn blocking<T: Send>(
    fut: impl std::future::Future<Output = Result<T, String>> + Send,
) -> Result<T, String> {
    std::thread::scope(|s| {
        s.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            rt.block_on(async {
                match tokio::time::timeout(TIMEOUT, fut).await {
                    Ok(r) => r,
                    Err(_) => Err(format!("no complete answer within {}s", TIMEOUT.as_secs())),
                }
            })
        })
        .join()
        .unwrap_or_else(|_| Err("the download thread panicked".to_string()))
    })
}

/// GETs `url`, following redirects; returns the body and the repo commit (`X-Repo-Commit`).
/// `what` names the repository kind in errors (`model`, `dataset`).
async fn fetch(
    config: &HubConfig,
    url: &str,
    what: &str,
) -> Result<(Vec<u8>, Option<String>), String> {
    let (resp, commit) = open(config, url, what).await?;
    let body = Limited::new(resp.into_body(), MAX_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the body: {e}"))?
        .to_bytes();
    Ok((body.to_vec(), commit))
}

/// GETs `url`, following redirects, up to a `200 OK` answer (its body unread) and the repo
/// commit (`X-Repo-Commit`); any other answer is an error saying what it means.
async fn open(
    config: &HubConfig,
    url: &str,
    what: &str,
) -> Result<(hyper::Response<hyper::body::Incoming>, Option<String>), String> {
    let provider = rustls::crypto::ring::default_provider();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(provider)
        .map_err(|e| format!("TLS setup: {e}"))?
        .https_or_http()
        .enable_http1()
        .build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Empty<Bytes>>(https);

    let mut uri: Uri = url.parse().map_err(|e| format!("bad URL: {e}"))?;
    let first_authority = uri.authority().cloned();
    let mut commit: Option<String> = None;
    for _ in 0..=MAX_REDIRECTS {
        let mut req = Request::get(uri.clone()).header(header::USER_AGENT, "bench");
        // The token goes to the Hub only, never to the CDN a redirect points at.
        if let (Some(token), true) = (&config.token, uri.authority() == first_authority.as_ref()) {
            req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let req = req
            .body(Empty::new())
            .map_err(|e| format!("bad request: {e}"))?;
        let resp = client
            .request(req)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        if commit.is_none() {
            commit = resp
                .headers()
                .get("x-repo-commit")
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric()))
                .map(str::to_string);
        }
        let status = resp.status();
        if status.is_redirection() {
            let location = resp
                .headers()
                .get(header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| format!("HTTP {status} without a Location"))?;
            uri = join(&uri, location)?;
            continue;
        }
        return match status {
            StatusCode::OK => Ok((resp, commit)),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(format!(
                "HTTP {status}: the {what} is gated or private; set HF_TOKEN to a token with access"
            )),
            StatusCode::NOT_FOUND if what == "model" => {
                Err(format!("HTTP {status}: no such model, or it has no {FILE}"))
            }
            StatusCode::NOT_FOUND => Err(format!("HTTP {status}: no such {what} or file")),
            s => Err(format!("HTTP {s}")),
        };
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}

/// Resolves a `Location` header against the URI it came from.
fn join(base: &Uri, location: &str) -> Result<Uri, String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location
            .parse()
            .map_err(|e| format!("bad redirect {location:?}: {e}"));
    }
    let scheme = base.scheme_str().unwrap_or("https");
    let authority = base
        .authority()
        .map(|a| a.as_str())
        .ok_or_else(|| "redirect from a URL without host".to_string())?;
    let path = if location.starts_with('/') {
        location.to_string()
    } else {
        let dir = base.path().rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        format!("{dir}/{location}")
    };
    format!("{scheme}://{authority}{path}")
        .parse()
        .map_err(|e| format!("bad redirect {location:?}: {e}"))
}

/// Stores a downloaded file in the cache layout: `snapshots/<commit>/tokenizer.json` and
/// `refs/main` naming the commit. Written to a temporary name first, then renamed.
fn store(cache: &Path, id: &str, commit: Option<&str>, bytes: &[u8]) -> std::io::Result<()> {
    let repo = repo_folder(cache, id);
    let commit = commit.unwrap_or("unknown");
    let dir = repo.join("snapshots").join(commit);
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!(".{FILE}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, dir.join(FILE))?;
    std::fs::create_dir_all(repo.join("refs"))?;
    std::fs::write(repo.join("refs").join(REVISION), commit)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids() {
        assert!(is_model_id("gpt2"));
        assert!(is_model_id("meta-llama/Llama-3.1-8B-Instruct"));
        assert!(!is_model_id("a/b/c"));
        assert!(!is_model_id("../x"));
        assert!(!is_model_id("x/.."));
        assert!(!is_model_id(""));
        assert!(!is_model_id("has space/x"));
    }

    #[test]
    fn redirects_resolve() {
        let base: Uri = "http://127.0.0.1:9/org/m/resolve/main/tokenizer.json"
            .parse()
            .expect("uri");
        assert_eq!(
            join(&base, "/api/x").expect("join").to_string(),
            "http://127.0.0.1:9/api/x"
        );
        assert_eq!(
            join(&base, "https://cdn.example/y")
                .expect("join")
                .to_string(),
            "https://cdn.example/y"
        );
        assert_eq!(
            join(&base, "other.json").expect("join").to_string(),
            "http://127.0.0.1:9/org/m/resolve/main/other.json"
        );
    }
}
