//! `--serve-params FILE.json`, vLLM's spelling of the configurations (`vllm bench sweep serve
//! --serve-params`): a JSON list of objects, or an object whose values are objects named by
//! their keys, one configuration each, in the file's order. A key that the serve command names
//! (`{key}`) fills it; any other is appended to the command as vLLM appends it,
//! `--key-with-dashes VALUE`, `true` as `--key` and `false` as `--no-key`.

use std::path::Path;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use bench_runner::UsageError;

use crate::configs::{mask_secrets, placeholders, Appended, Config};
use crate::settings::{check_name, PlanSettings};

/// A JSON value whose objects keep the file's order (serde_json's maps sort their keys).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    List(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(n)
            .map(Json::Number)
            .ok_or_else(|| E::custom("not a finite number"))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_string()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = a.next_element()? {
            v.push(x);
        }
        Ok(Json::List(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some((k, x)) = a.next_entry::<String, Json>()? {
            v.push((k, x));
        }
        Ok(Json::Object(v))
    }
}

/// The configurations of `plan`'s `--serve-params` file (checked: JSON of the shape above,
/// with the line and column of a syntax error; names unique; every key a parameter name;
/// every `{name}` of the serve command and every `--link` parameter a key of every entry), in
/// the file's order, secrets masked ([`mask_secrets`]).
pub fn read(plan: &PlanSettings, path: &Path) -> Result<Vec<Config>, UsageError> {
    let shown = path.display();
    let bad = |why: String| UsageError::new(format!("--serve-params {shown}: {why}"));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let json: Json = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not JSON: line {}, column {}: {}",
            e.line(),
            e.column(),
            syntax_words(&e)
        ))
    })?;
    let shape = || bad("expected a list of objects, or an object of named objects".into());
    let entries: Vec<(Option<String>, &Json)> = match &json {
        Json::List(a) => a.iter().map(|v| (None, v)).collect(),
        Json::Object(o) => o.iter().map(|(k, v)| (Some(k.clone()), v)).collect(),
        _ => return Err(shape()),
    };
    if entries.is_empty() {
        return Err(bad("lists no configuration".into()));
    }
    let template = plan.serve.as_deref().unwrap_or_default();
    let named = placeholders(template).map_err(|e| UsageError::new(format!("--serve: {e}")))?;
    let mut out: Vec<Config> = Vec::new();
    for (i, (name, entry)) in entries.into_iter().enumerate() {
        let which = name.clone().unwrap_or_else(|| format!("entry {}", i + 1));
        let c = config(name, entry, &named).map_err(|e| bad(format!("{which}: {e}")))?;
        for (p, _) in &plan.links {
            if !c.values.contains_key(p) {
                return Err(bad(format!("{which}: has no `{p}`, which --link names")));
            }
        }
        if out.iter().any(|o| o.name == c.name) {
            return Err(bad(format!(
                "{which}: the same configuration as an earlier entry"
            )));
        }
        out.push(c);
    }
    mask_secrets(&mut out);
    Ok(out)
}

/// serde_json's error without its own ` at line L column C` (the message says where).
fn syntax_words(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// One entry: its values (every key, as text), its name (`name`, else `k=v,...` in the
/// file's key order) and the flags for the keys the command does not name. A key must be a
/// parameter name (letters, digits, `_`, `-`): it becomes a flag of the command.
fn config(name: Option<String>, entry: &Json, named: &[String]) -> Result<Config, String> {
    let Json::Object(map) = entry else {
        return Err("expected an object of server settings".into());
    };
    let mut flags = Vec::new();
    let mut pairs = Vec::new();
    for (k, v) in map {
        check_name(k, "key").map_err(|e| e.to_string())?;
        if pairs.iter().any(|(p, _)| p == k) {
            return Err(format!("`{k}` is given twice"));
        }
        let text = text_of(v).map_err(|e| format!("`{k}`: {e}"))?;
        if !named.iter().any(|n| n == k) {
            flags.push(flag_of(k, v));
        }
        pairs.push((k.clone(), text));
    }
    for n in named.iter().filter(|n| *n != "port") {
        if !pairs.iter().any(|(k, _)| k == n) {
            return Err(format!("has no `{n}`, which --serve names as {{{n}}}"));
        }
    }
    Ok(Config::new(pairs, name, flags))
}

/// A value as the serve command gets it: a string as written, a number or a boolean as JSON
/// writes it, a list or an object as compact JSON.
fn text_of(v: &Json) -> Result<String, String> {
    Ok(match v {
        Json::Null => return Err("null is not a value".into()),
        Json::String(s) => s.clone(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::List(items) => {
            let texts: Result<Vec<String>, String> = items.iter().map(compact).collect();
            format!("[{}]", texts?.join(","))
        }
        Json::Object(_) => compact(v)?,
    })
}

/// `v` as compact JSON, in the file's key order.
fn compact(v: &Json) -> Result<String, String> {
    Ok(match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => serde_json::to_string(s).map_err(|e| e.to_string())?,
        Json::List(_) => text_of(v)?,
        Json::Object(o) => {
            let mut parts = Vec::new();
            for (k, x) in o {
                let key = serde_json::to_string(k).map_err(|e| e.to_string())?;
                parts.push(format!("{key}:{}", compact(x)?));
            }
            format!("{{{}}}", parts.join(","))
        }
    })
}

/// vLLM's flag for key `k` with value `v`: `--k-with-dashes VALUE`, `--k` for true, `--no-k`
/// for false.
fn flag_of(k: &str, v: &Json) -> Appended {
    let flag = k.replace('_', "-");
    let (flag, with_value) = match v {
        Json::Bool(true) => (format!("--{flag}"), false),
        Json::Bool(false) => (format!("--no-{flag}"), false),
        _ => (format!("--{flag}"), true),
    };
    Appended {
        key: k.to_string(),
        flag,
        with_value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(serve: &str) -> PlanSettings {
        PlanSettings {
            serve: Some(serve.into()),
            ..PlanSettings::default()
        }
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
            crate::configs::render("vllm serve M --port {port} -tp {tp}", &all[0], 9),
            "vllm serve M --port 9 -tp 2 --max-num-seqs 32 --enforce-eager"
        );
        assert_eq!(
            crate::configs::render("srv {tp}", &all[1], 9),
            "srv 1 --max-num-seqs 64 --no-enforce-eager --compilation-config '{\"level\":3}'"
        );
        let p = write("named.json", r#"{"small": {"tp": 1}, "big": {"tp": 2}}"#);
        let all = read(&plan("srv {tp} {port}"), &p).expect("configs");
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["small", "big"], "the file's order");
        assert!(all.iter().all(|c| c.flags.is_empty()));
        // A value that fills `{key}` is one word for the shell, as an appended one is.
        let p = write(
            "fill.json",
            r#"[{"tp": "4; touch PWNED_FILL", "x": "a b"}]"#,
        );
        let all = read(&plan("srv {tp}"), &p).expect("configs");
        assert_eq!(
            crate::configs::render("srv {tp}", &all[0], 9),
            "srv '4; touch PWNED_FILL' --x 'a b'"
        );
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
            (r#"[{"tp": 1}, {"tp": 1}]"#, "the same configuration"),
            ("[{\"tp\": 1,}]", "not JSON: line 1, column 11"),
            ("- tp: 1\n", "not JSON: line 1, column 2"),
            ("not json {", "not JSON: line 1, column 2: expected ident"),
            (
                r#"[{"x;touch PWNED;#": 1, "tp": 1}]"#,
                "entry 1: key: `x;touch PWNED;#` is not a parameter name",
            ),
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
