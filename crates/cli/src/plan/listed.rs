//! `--serve-params FILE.json`, vLLM's spelling of the configurations (`vllm bench sweep serve
//! --serve-params`): a JSON list of objects, or an object whose values are objects named by
//! their keys, one configuration each, in the file's order. A key that the serve command names
//! (`{key}`) fills it; any other is appended to the command as vLLM appends it,
//! `--key-with-dashes VALUE`, `true` as `--key` and `false` as `--no-key`.

use std::path::Path;

// Read as YAML (JSON is YAML): its mappings keep the file's order, serde_json's do not.
use serde_yaml::Value;

use crate::plan::configs::{placeholders, Config};
use crate::settings::plan::PlanSettings;
use crate::UsageError;

/// The configurations of `plan`'s `--serve-params` file (checked: readable JSON of the shape
/// above, names unique, every `{name}` of the serve command and every `--link` parameter a
/// key of every entry), in the file's order.
pub fn read(plan: &PlanSettings, path: &Path) -> anyhow::Result<Vec<Config>> {
    let shown = path.display();
    let bad = |why: String| UsageError::new(format!("--serve-params {shown}: {why}"));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let json: Value = serde_yaml::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let shape = || bad("expected a list of objects, or an object of named objects".into());
    let entries: Vec<(Option<String>, &Value)> = match &json {
        Value::Sequence(a) => a.iter().map(|v| (None, v)).collect(),
        Value::Mapping(o) => o
            .iter()
            .map(|(k, v)| Some((Some(k.as_str()?.to_string()), v)))
            .collect::<Option<_>>()
            .ok_or_else(shape)?,
        _ => return Err(shape().into()),
    };
    if entries.is_empty() {
        return Err(bad("lists no configuration".into()).into());
    }
    let template = plan.serve.as_deref().unwrap_or_default();
    let named = placeholders(template).map_err(|e| UsageError::new(format!("--serve: {e}")))?;
    let mut out: Vec<Config> = Vec::new();
    for (i, (name, entry)) in entries.into_iter().enumerate() {
        let which = name.clone().unwrap_or_else(|| format!("entry {}", i + 1));
        let c = config(name, entry, &named).map_err(|e| bad(format!("{which}: {e}")))?;
        for (p, _) in &plan.links {
            if !c.values.contains_key(p) {
                return Err(bad(format!("{which}: has no `{p}`, which --link names")).into());
            }
        }
        if out.iter().any(|o| o.name == c.name) {
            return Err(bad(format!(
                "{which}: the configuration `{}` is listed twice",
                c.name
            ))
            .into());
        }
        out.push(c);
    }
    Ok(out)
}

/// One entry: its values (every key, as text), its name (`name`, else `k=v,...` in the
/// file's key order) and the flags for the keys the command does not name.
fn config(name: Option<String>, entry: &Value, named: &[String]) -> Result<Config, String> {
    let Value::Mapping(map) = entry else {
        return Err("expected an object of server settings".into());
    };
    let mut values = std::collections::BTreeMap::new();
    let mut flags = Vec::new();
    let mut pairs = Vec::new();
    for (k, v) in map {
        let k = k.as_str().ok_or("a setting's name must be a string")?;
        let text = text_of(v).map_err(|e| format!("`{k}`: {e}"))?;
        pairs.push(format!("{k}={text}"));
        if !named.iter().any(|n| n == k) {
            flags.extend(flag_of(k, v, &text));
        }
        values.insert(k.to_string(), text);
    }
    for n in named.iter().filter(|n| *n != "port") {
        if !values.contains_key(n) {
            return Err(format!("has no `{n}`, which --serve names as {{{n}}}"));
        }
    }
    Ok(Config {
        name: name.unwrap_or_else(|| pairs.join(",")),
        values,
        flags,
    })
}

/// A value as the serve command gets it: a string as written, a number or a boolean as JSON
/// writes it, a list or an object as compact JSON.
fn text_of(v: &Value) -> Result<String, String> {
    match v {
        Value::Null => Err("null is not a value".into()),
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Sequence(_) | Value::Mapping(_) => {
            serde_json::to_string(v).map_err(|e| format!("not a JSON value: {e}"))
        }
        Value::Tagged(_) => Err("a tagged YAML value is not JSON".into()),
    }
}

/// vLLM's flag for key `k` with value `v` (`text`): `--k-with-dashes VALUE`, `--k` for true,
/// `--no-k` for false; the value shell-quoted.
fn flag_of(k: &str, v: &Value, text: &str) -> Vec<String> {
    let flag = k.replace('_', "-");
    match v {
        Value::Bool(true) => vec![format!("--{flag}")],
        Value::Bool(false) => vec![format!("--no-{flag}")],
        _ => vec![format!("--{flag}"), shell_quoted(text)],
    }
}

/// `s` as one word for `sh -c`: as it is when every character is plain, else in single quotes.
fn shell_quoted(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(serve: &str) -> PlanSettings {
        let args = crate::settings::plan::PlanArgs {
            serve: Some(serve.into()),
            ..Default::default()
        };
        crate::settings::plan::resolve(&args, None, "").expect("plan")
    }

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("bench-listed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    #[test]
    fn entries_fill_the_command_and_the_rest_is_appended_as_vllm_does() {
        let p = write(
            "list.json",
            r#"[{"max_num_seqs": 32, "enforce_eager": true, "tp": 2},
                {"max_num_seqs": 64, "enforce_eager": false, "tp": 1,
                 "compilation_config": {"level": 3}}]"#,
        );
        let all = read(&plan("vllm serve M --port {port} -tp {tp}"), &p).expect("configs");
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].name, "max_num_seqs=32,enforce_eager=true,tp=2");
        assert_eq!(
            crate::plan::configs::render("vllm serve M --port {port} -tp {tp}", &all[0], 9),
            "vllm serve M --port 9 -tp 2 --max-num-seqs 32 --enforce-eager"
        );
        assert_eq!(
            crate::plan::configs::render("srv {tp}", &all[1], 9),
            "srv 1 --max-num-seqs 64 --no-enforce-eager --compilation-config '{\"level\":3}'"
        );
        let p = write("named.json", r#"{"small": {"tp": 1}, "big": {"tp": 2}}"#);
        let all = read(&plan("srv {tp} {port}"), &p).expect("configs");
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["small", "big"], "the file's order");
        assert!(all.iter().all(|c| c.flags.is_empty()));
    }

    #[test]
    fn bad_files_are_usage_errors_naming_the_file_and_the_entry() {
        for (text, says) in [
            ("{", "not JSON"),
            ("3", "expected a list"),
            ("[]", "lists no configuration"),
            ("[1]", "entry 1: expected an object"),
            (r#"[{"a": null}]"#, "`a`: null"),
            (r#"[{"a": 1}]"#, "has no `tp`"),
            (r#"[{"tp": 1}, {"tp": 1}]"#, "listed twice"),
        ] {
            let p = write("bad.json", text);
            let e = read(&plan("srv {tp}"), &p).expect_err(text).to_string();
            assert!(
                e.contains("--serve-params") && e.contains(says),
                "{text}: {e}"
            );
        }
        let missing = std::env::temp_dir().join("bench-listed-none.json");
        let e = read(&plan("srv"), &missing)
            .expect_err("missing")
            .to_string();
        assert!(e.contains("cannot read it"), "{e}");
    }
}
