//! The forms `--data` takes besides bench's own `k=v,...`: guidellm's JSON form, and a book
//! given over a profile's lengths.

/// guidellm's JSON form of `--data` (`{"prompt_tokens": 256, "output_tokens": 128}`) as
/// bench's `k=v` form; anything else is returned as given.
pub fn from_json_form(data: &str) -> Result<String, String> {
    let t = data.trim();
    if !t.starts_with('{') {
        return Ok(data.to_string());
    }
    let v: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(t).map_err(|e| format!("not a JSON object: {e}"))?;
    let mut parts = Vec::with_capacity(v.len());
    for (k, v) in v {
        let v = match v {
            serde_json::Value::String(s) => s,
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            other => return Err(format!("{k}: expected a number or a string, got {other}")),
        };
        parts.push(format!("{k}={v}"));
    }
    Ok(parts.join(","))
}

/// `--data` given on the command line over a profile's `data`: the command line wins, except
/// that a bare `.txt` path over a profile that gives `prompt_tokens` is a book sliced at that
/// length (with the profile's `output_tokens`), as the tgi-book profile means it.
pub fn over_profile(cli: &str, profile: &str) -> String {
    let bare_txt = !cli.contains('=') && cli.trim().ends_with(".txt");
    if !bare_txt || profile.contains("path=") {
        return cli.to_string();
    }
    let keys: Vec<&str> = profile
        .split(',')
        .map(str::trim)
        .filter(|kv| kv.starts_with("prompt_tokens=") || kv.starts_with("output_tokens="))
        .collect();
    if !keys.iter().any(|k| k.starts_with("prompt_tokens=")) {
        return cli.to_string();
    }
    format!("path={},format=book,{}", cli.trim(), keys.join(","))
}
