//! The target group: server URL or simulator, API, credentials, headers, TLS, timeouts.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use bench_core::Balance;
use bench_worker::{BackendKind, Timeouts};

use super::args::TargetArgs;
use super::file::FileSettings;
use super::{usage, Sources, TargetSettings};

/// vLLM's, SGLang's and guidellm's backend names for what bench calls `openai-completions`.
const COMPLETIONS_ALIASES: [&str; 6] = [
    "vllm",
    "openai",
    "sglang",
    "lmdeploy",
    "llama.cpp",
    "openai_http",
];

/// Parses `--backend`, accepting the peers' names.
pub fn parse_backend(s: &str) -> Result<BackendKind, String> {
    let t = s.trim();
    if COMPLETIONS_ALIASES
        .iter()
        .any(|a| a.eq_ignore_ascii_case(t))
    {
        return Ok(BackendKind::OpenAiCompletions);
    }
    t.parse::<BackendKind>().map_err(|e| e.to_string())
}

/// `Name: value` (curl's form) or `Name=value` (vLLM's form).
pub fn parse_header(h: &str) -> Result<(String, String), String> {
    let colon = h.find(':');
    let eq = h.find('=');
    let at = match (colon, eq) {
        (Some(c), Some(e)) => c.min(e),
        (Some(c), None) => c,
        (None, Some(e)) => e,
        (None, None) => {
            let name: String = h.chars().take(40).collect();
            return Err(format!("`{name}` is not `Name: value` (or Name=value)"));
        }
    };
    let (name, value) = (h[..at].trim(), h[at + 1..].trim());
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("`{name}` is not a header name"));
    }
    Ok((name.to_string(), value.to_string()))
}

fn seconds(flag: &str, v: Option<f64>, default: Duration) -> anyhow::Result<Duration> {
    match v {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(usage(format!(
            "--{flag}: expected a positive number of seconds, got {s}"
        ))),
    }
}

/// Resolves the target group; `env` looks up environment variables (`OPENAI_API_KEY`).
#[cfg(test)]
pub(crate) fn resolve(
    src: &Sources<'_>,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<TargetSettings> {
    resolve_for(src, env, false)
}

/// [`resolve`]; with `launched` (a plan that starts each configuration's server), no target
/// is needed: each server's URL is set once it listens.
pub(crate) fn resolve_for(
    src: &Sources<'_>,
    env: impl Fn(&str) -> Option<String>,
    launched: bool,
) -> anyhow::Result<TargetSettings> {
    let (c, f) = (&src.cli.target, src.file);
    let (mock, targets) = server(src, launched)?;
    let balance = balance(src)?;
    let balance = (targets.len() > 1).then(|| balance.unwrap_or_default());
    let backend = match c.backend.as_ref().or(f.backend.as_ref()) {
        Some(b) => parse_backend(b).map_err(|e| {
            usage(format!(
                "{}: {e}",
                src.origin("backend", c.backend.is_some())
            ))
        })?,
        None => BackendKind::default(),
    };
    let (model, model_mix) = super::models::resolve(src)?;
    let headers = headers(c, f)?;
    let timeouts = timeouts(c, f)?;
    let cacert = c.cacert.clone().or(f.cacert.clone());
    if let Some(p) = &cacert {
        if !p.is_file() {
            return Err(usage(format!("--cacert {}: no such file", p.display())));
        }
    }
    // Each API's own variable: Anthropic's SDKs read ANTHROPIC_API_KEY, OpenAI's OPENAI_API_KEY.
    let key_var = match backend {
        BackendKind::AnthropicMessages => "ANTHROPIC_API_KEY",
        _ => "OPENAI_API_KEY",
    };
    let api_key = c
        .api_key
        .clone()
        .or_else(|| env(key_var))
        .filter(|k| !k.trim().is_empty());
    Ok(TargetSettings {
        targets,
        balance,
        mock,
        mock_config: if mock {
            c.mock_config.clone().or(f.mock_config.clone())
        } else {
            None
        },
        backend,
        endpoint: c.endpoint.clone().or(f.endpoint.clone()),
        model,
        model_mix,
        api_key,
        header_names: headers.iter().map(|(k, _)| k.clone()).collect(),
        headers,
        session_header: session_header(
            src.origin("session-header", c.session_header.is_some()),
            c.session_header.clone().or(f.session_header.clone()),
        )?,
        replica_header: session_header(
            src.origin("replica-header", c.replica_header.is_some()),
            c.replica_header.clone().or(f.replica_header.clone()),
        )?,
        http2: c.http2 || f.http2.unwrap_or(false),
        insecure: c.insecure || f.insecure.unwrap_or(false),
        cacert,
        timeouts,
        source_addresses: source_addresses(
            src.origin("source-address", !c.source_addresses.is_empty()),
            if c.source_addresses.is_empty() {
                f.source_address.as_deref().unwrap_or_default()
            } else {
                &c.source_addresses
            },
        )?,
    })
}

/// Most addresses one range may name.
const MAX_SOURCE_ADDRESSES: u32 = 1024;

/// Parses the source addresses (`origin` names the flag or key in errors) and checks that
/// each is an address of this machine.
fn source_addresses(origin: String, given: &[String]) -> anyhow::Result<Vec<IpAddr>> {
    let mut out = Vec::new();
    for item in given.iter().flat_map(|g| g.split(',')).map(str::trim) {
        let bad = |why: String| usage(format!("{origin}: `{item}` {why}"));
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<Ipv4Addr>(), b.trim().parse::<Ipv4Addr>());
                let (Ok(a), Ok(b)) = (a, b) else {
                    return Err(bad("is not an IPv4 range (like 127.0.0.1-127.0.0.4)".into()));
                };
                let (a, b) = (u32::from(a), u32::from(b));
                if b < a || b - a >= MAX_SOURCE_ADDRESSES {
                    return Err(bad(format!(
                        "is not a range of 1 to {MAX_SOURCE_ADDRESSES} addresses"
                    )));
                }
                out.extend((a..=b).map(|n| IpAddr::V4(Ipv4Addr::from(n))));
            }
            None => out.push(
                item.parse::<IpAddr>()
                    .map_err(|_| bad("is not an IP address".into()))?,
            ),
        }
    }
    for a in &out {
        // Binding a UDP socket is the cheapest check that the address is this machine's.
        std::net::UdpSocket::bind((*a, 0)).map_err(|e| {
            usage(format!(
                "{origin}: {a} is not an address of this machine ({e})"
            ))
        })?;
    }
    Ok(out)
}

/// Whether the run benchmarks the simulator, and the server URLs when not (one of them is
/// required, not both; neither when the servers are `launched` by a plan).
fn server(src: &Sources<'_>, launched: bool) -> anyhow::Result<(bool, Vec<String>)> {
    let (c, f) = (&src.cli.target, src.file);
    let mock = c.mock || f.mock.unwrap_or(false);
    if mock && (!c.target.is_empty() || launched) {
        return Err(usage("--mock and --target exclude each other"));
    }
    let given = match (&f.target, c.target.is_empty()) {
        _ if mock => return Ok((true, Vec::new())),
        (_, false) => c.target.clone(),
        // A plan's launched servers listen where the command line says, else on a free port.
        (Some(t), true) if !launched => t.given(),
        (_, true) => Vec::new(),
    };
    let targets = target_list(&src.origin("target", !c.target.is_empty()), &given)?;
    if targets.is_empty() && !launched {
        return Err(usage(
            "no server to benchmark: give --target URL (or --mock for the built-in simulator)",
        ));
    }
    Ok((false, targets))
}

/// The URLs of `given` (each split at commas), in order, each checked by the worker's rule;
/// `origin` names the flag or key in errors, which never show a URL's credentials.
fn target_list(origin: &str, given: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for url in given.iter().flat_map(|g| g.split(',')).map(str::trim) {
        if url.is_empty() {
            return Err(usage(format!(
                "{origin}: URL {} of the list is empty; separate URLs with single commas",
                out.len() + 1
            )));
        }
        bench_worker::check_target(url).map_err(|e| usage(format!("{origin}: {e}")))?;
        out.push(url.to_string());
    }
    Ok(out)
}

/// `--balance` (or the profile's `balance:`), when given.
fn balance(src: &Sources<'_>) -> anyhow::Result<Option<Balance>> {
    let (c, f) = (&src.cli.target, src.file);
    let Some(name) = c.balance.as_ref().or(f.balance.as_ref()) else {
        return Ok(None);
    };
    let origin = src.origin("balance", c.balance.is_some());
    name.parse::<Balance>()
        .map(Some)
        .map_err(|e| usage(format!("{origin}: {e}")))
}

/// A session or replica header name (`origin` names the flag or profile key), checked.
fn session_header(origin: String, name: Option<String>) -> anyhow::Result<Option<String>> {
    match name.map(|n| n.trim().to_owned()) {
        // An HTTP token (RFC 9110's tchar).
        Some(n)
            if n.is_empty()
                || !n
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) =>
        {
            Err(usage(format!("{origin}: `{n}` is not a valid header name")))
        }
        n => Ok(n),
    }
}

/// The extra headers (the command line's replace the file's), parsed.
fn headers(c: &TargetArgs, f: &FileSettings) -> anyhow::Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    let given = if c.headers.is_empty() {
        f.header.clone().unwrap_or_default()
    } else {
        c.headers.clone()
    };
    for h in &given {
        headers.push(parse_header(h).map_err(|e| usage(format!("--header: {e}")))?);
    }
    Ok(headers)
}

/// The four timeouts: flag, else file, else the default.
fn timeouts(c: &TargetArgs, f: &FileSettings) -> anyhow::Result<Timeouts> {
    let d = Timeouts::default();
    Ok(Timeouts {
        connect: seconds(
            "connect-timeout",
            c.connect_timeout.or(f.connect_timeout),
            d.connect,
        )?,
        first_byte: seconds(
            "first-byte-timeout",
            c.first_byte_timeout.or(f.first_byte_timeout),
            d.first_byte,
        )?,
        idle: seconds("idle-timeout", c.idle_timeout.or(f.idle_timeout), d.idle)?,
        total: seconds(
            "request-timeout",
            c.request_timeout.or(f.request_timeout),
            d.total,
        )?,
    })
}
