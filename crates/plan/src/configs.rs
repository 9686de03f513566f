//! The plan's server configurations: the Cartesian product of the parameters, the serve
//! command filled in for each, the GPUs a replica uses, and the load settings that follow a
//! parameter.

use std::collections::BTreeMap;

use bench_runner::UsageError;

use crate::settings::{Link, Param, PlanSettings};

/// One server configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `a=1,b=2` in the order the parameters were given (`target` without any), or the name
    /// a `--serve-params` entry was given; a secret's value masked ([`mask_secrets`]). It is
    /// what the console, the plan's files and its folder (`slug`) show.
    pub name: String,
    /// The parameters' values, as the serve command gets them.
    pub values: BTreeMap<String, String>,
    /// The values as shown and kept: a secret-named parameter's masked (`***`, or `***1`,
    /// `***2`, ... when it takes several values).
    pub shown: BTreeMap<String, String>,
    /// The parameters in the name's order.
    pub order: Vec<String>,
    /// The name a `--serve-params` entry was given (`None`: named by its values).
    pub label: Option<String>,
    /// Flags appended to the serve command (a `--serve-params` entry's keys the command does
    /// not name; none for `--params`).
    pub flags: Vec<Appended>,
}

/// A flag appended to the serve command for a `--serve-params` key.
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    /// The key whose value it carries.
    pub key: String,
    /// The flag, `--key-with-dashes` (or `--no-key`).
    pub flag: String,
    /// Whether the key's value follows it (false for a boolean's bare flag).
    pub with_value: bool,
}

impl Config {
    /// A configuration of `pairs` (in the name's order), named by them unless `label` names it.
    pub fn new(pairs: Vec<(String, String)>, label: Option<String>, flags: Vec<Appended>) -> Self {
        let order: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
        let values: BTreeMap<String, String> = pairs.into_iter().collect();
        let mut c = Config {
            name: String::new(),
            shown: values.clone(),
            values,
            order,
            label,
            flags,
        };
        c.name = c.name_of();
        c
    }

    /// The name from the shown values ([`Config::name`]).
    fn name_of(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        if self.order.is_empty() {
            return "target".into();
        }
        self.order
            .iter()
            .map(|k| format!("{k}={}", self.shown.get(k).map_or("", String::as_str)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The secret values of this configuration with their masks, longest first.
    pub fn secrets(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> = self
            .values
            .iter()
            .filter(|(k, _)| secret_name(k))
            .filter_map(|(k, v)| Some((v.as_str(), self.shown.get(k)?.as_str())))
            .filter(|(v, _)| v.chars().count() >= MIN_SCRUBBED)
            .collect();
        v.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        v
    }

    /// `text` with every secret value of this configuration replaced by its mask: what a
    /// server's log, its tail and a failure's reason keep of them.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (real, mask) in self.secrets() {
            out = out.replace(real, mask);
        }
        out
    }

    /// A name fit for a directory: `a-1_b-2`.
    pub fn slug(&self) -> String {
        let s: String = self
            .name
            .chars()
            .map(|c| match c {
                '=' => '-',
                ',' => '_',
                c if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' => c,
                _ => '~',
            })
            .collect();
        if s.is_empty() {
            "target".into()
        } else {
            s
        }
    }
}

/// Every combination of the parameters' values, the first parameter varying slowest; one
/// configuration named `target` without parameters.
pub fn product(params: &[Param]) -> Vec<Config> {
    let mut out = vec![Vec::<(String, String)>::new()];
    for p in params {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                p.values.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push((p.name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    let mut all: Vec<Config> = out
        .into_iter()
        .map(|pairs| Config::new(pairs, None, Vec::new()))
        .collect();
    mask_secrets(&mut all);
    all
}

/// A secret value shorter than this is not searched for in a server's output (a two-letter
/// value would mask every such pair of letters in its log); it is masked in every name,
/// record and path all the same.
pub const MIN_SCRUBBED: usize = 4;

/// Masks the value of every secret-named parameter ([`secret_name`], the words the serve
/// command's masking uses) in the configurations' shown values and names: `***` when the
/// parameter takes one value across them, `***1`, `***2`, ... (in order of first use) when it
/// takes several, so that the names and folders stay apart.
pub fn mask_secrets(all: &mut [Config]) {
    let keys: std::collections::BTreeSet<String> = all
        .iter()
        .flat_map(|c| c.values.keys())
        .filter(|k| secret_name(k))
        .cloned()
        .collect();
    for k in keys {
        let mut distinct: Vec<String> = Vec::new();
        for c in all.iter() {
            if let Some(v) = c.values.get(&k) {
                if !distinct.contains(v) {
                    distinct.push(v.clone());
                }
            }
        }
        for c in all.iter_mut() {
            let Some(v) = c.values.get(&k) else { continue };
            let i = distinct.iter().position(|d| d == v).unwrap_or(0);
            let mask = if distinct.len() == 1 {
                "***".to_string()
            } else {
                format!("***{}", i + 1)
            };
            c.shown.insert(k.clone(), mask);
        }
    }
    for c in all.iter_mut() {
        c.name = c.name_of();
    }
}

/// The `{name}`s of `template`, in order (`{{` and `}}` are literal braces); an unclosed `{`
/// is an error.
pub fn placeholders(template: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
            }
            '}' => {
                return Err(format!(
                    "a lone `}}` in `{}` (write `}}}}` for a brace)",
                    redact_command(template)
                ))
            }
            '{' => {
                let mut name = String::new();
                let closed = chars.by_ref().any(|c| {
                    name.push(c);
                    c == '}'
                });
                name.pop();
                if !closed || name.is_empty() || name.contains('{') {
                    return Err(format!(
                        "an unclosed or empty `{{` in `{}` (write `{{{{` for a brace)",
                        redact_command(template)
                    ));
                }
                names.push(name);
            }
            _ => {}
        }
    }
    Ok(names)
}

/// Checks the serve command before anything starts: not empty, every `{name}` a parameter or
/// `port`, and every parameter named by the command or a `--link` (one that is neither would
/// make every configuration the same server); a usage error naming the first culprit.
pub fn check_template(template: &str, params: &[Param], links: &[Link]) -> Result<(), UsageError> {
    check_not_empty(template)?;
    let names = placeholders(template).map_err(|e| UsageError::new(format!("--serve: {e}")))?;
    for n in &names {
        if n != "port" && !params.iter().any(|p| &p.name == n) {
            return Err(UsageError::new(format!(
                "--serve: `{{{n}}}` is neither a parameter (--params {n}=...) nor {{port}}"
            )));
        }
    }
    for p in params {
        if !names.contains(&p.name) && !links.iter().any(|(l, _)| l == &p.name) {
            return Err(UsageError::new(format!(
                "--params {0}: neither --serve (as `{{{0}}}`) nor a --link uses it, so every configuration would be the same server",
                p.name
            )));
        }
    }
    Ok(())
}

/// A serve command of nothing but blanks is a usage error.
pub fn check_not_empty(template: &str) -> Result<(), UsageError> {
    if template.trim().is_empty() {
        return Err(UsageError::new("--serve: the command is empty"));
    }
    Ok(())
}

/// `template` with `config`'s values and `port` filled in (checked by [`check_template`]),
/// then its flags appended; every value bench inserts is one word for `sh -c`
/// ([`shell_quoted`]).
pub fn render(template: &str, config: &Config, port: u16) -> String {
    render_from(template, config, &config.values, port)
}

/// [`render`] as it may be shown and kept: the secret parameters' values masked, then any
/// secret the command itself holds ([`redact_command`]).
pub fn render_shown(template: &str, config: &Config, port: u16) -> String {
    redact_command(&render_from(template, config, &config.shown, port))
}

fn render_from(
    template: &str,
    config: &Config,
    values: &BTreeMap<String, String>,
    port: u16,
) -> String {
    let mut out = fill(template, values, port);
    for f in &config.flags {
        out.push(' ');
        out.push_str(&f.flag);
        if f.with_value {
            out.push(' ');
            out.push_str(&shell_quoted(values.get(&f.key).map_or("", String::as_str)));
        }
    }
    out
}

/// `s` as one word for `sh -c`: as it is when every character is plain, else in single quotes.
pub fn shell_quoted(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn fill(template: &str, values: &BTreeMap<String, String>, port: u16) -> String {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                match name.as_str() {
                    "port" => out.push_str(&port.to_string()),
                    n => out.push_str(&shell_quoted(values.get(n).map_or("", String::as_str))),
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether a flag, variable or parameter name names a secret (an API key, a token, a
/// password).
pub fn secret_name(name: &str) -> bool {
    let n = name
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('-', "_");
    ["key", "token", "secret", "password", "passwd", "auth"]
        .iter()
        .any(|w| n.split('_').any(|part| part == *w) || n.ends_with(w))
}

/// `command` as it may be shown and kept (console, plan files, the server's log): the value of
/// a secret-named flag (`--api-key X`, `--hf-token=X`) or variable (`HF_TOKEN=X`) replaced by
/// `***`. Words are split on whitespace, so a quoted secret with spaces keeps its tail.
pub fn redact_command(command: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    for word in command.split_whitespace() {
        if hide_next {
            out.push("***".into());
            hide_next = false;
            continue;
        }
        match word.split_once('=') {
            Some((name, _)) if secret_name(name) => out.push(format!("{name}=***")),
            None if word.starts_with("--") && secret_name(word) => {
                out.push(word.into());
                hide_next = true;
            }
            _ => out.push(word.into()),
        }
    }
    out.join(" ")
}

/// `params` as they may be shown (`--show-config`): a secret-named parameter's values
/// masked as the configurations' names mask them (`***`, or `***1`, `***2`, ... when it takes
/// several).
pub fn shown_params(params: &[Param]) -> Vec<Param> {
    params
        .iter()
        .map(|p| {
            let values = if !secret_name(&p.name) {
                p.values.clone()
            } else if p.values.len() == 1 {
                vec!["***".to_string()]
            } else {
                (1..=p.values.len()).map(|i| format!("***{i}")).collect()
            };
            Param {
                name: p.name.clone(),
                values,
            }
        })
        .collect()
}

/// The serve command as it may be shown before it is filled in (`--show-config`): as
/// [`redact_command`], but a `{name}` that follows a secret-named flag stays (the parameter
/// holds the secret, masked where it is given); the command as written when it names no
/// secret.
pub fn redact_template(template: &str) -> String {
    let placeholder = |w: &str| w.starts_with('{') && w.ends_with('}') && !w.starts_with("{{");
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    let mut changed = false;
    for word in template.split_whitespace() {
        if std::mem::take(&mut hide_next) && !placeholder(word) {
            out.push("***".into());
            changed = true;
            continue;
        }
        match word.split_once('=') {
            Some((name, value)) if secret_name(name) && !placeholder(value) => {
                out.push(format!("{name}=***"));
                changed = true;
            }
            None if word.starts_with("--") && secret_name(word) => {
                out.push(word.into());
                hide_next = true;
            }
            _ => out.push(word.into()),
        }
    }
    if changed {
        out.join(" ")
    } else {
        template.to_string()
    }
}

/// GPUs one replica of `config` uses: `expr` is a product of numbers and `{param}`s.
pub fn gpus(expr: &str, config: &Config) -> Result<f64, String> {
    let mut product = 1.0;
    for term in expr.split('*').map(str::trim) {
        let text = match term.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            Some(name) => config
                .values
                .get(name)
                .ok_or_else(|| {
                    format!("--gpus-per-replica `{expr}`: `{{{name}}}` is not a parameter")
                })?
                .as_str(),
            None => term,
        };
        let v: f64 = text.parse().map_err(|_| {
            format!(
                "--gpus-per-replica `{expr}`: `{text}` is not a number (for {})",
                config.name
            )
        })?;
        if !(v.is_finite() && v > 0.0) {
            return Err(format!(
                "--gpus-per-replica `{expr}`: {v} must be positive (for {})",
                config.name
            ));
        }
        product *= v;
    }
    Ok(product)
}

/// Checks the GPU expression against every configuration before anything starts.
pub fn check_gpus(plan: &PlanSettings, configs: &[Config]) -> Result<(), UsageError> {
    for c in configs {
        gpus(&plan.gpus_per_replica, c).map_err(UsageError::new)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Vec<Param> {
        vec![
            Param {
                name: "seqs".into(),
                values: vec!["8".into(), "16".into()],
            },
            Param {
                name: "tp".into(),
                values: vec!["1".into(), "2".into()],
            },
        ]
    }

    #[test]
    fn the_product_varies_the_first_parameter_slowest() {
        let names: Vec<String> = product(&params()).into_iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            ["seqs=8,tp=1", "seqs=8,tp=2", "seqs=16,tp=1", "seqs=16,tp=2"]
        );
        assert_eq!(product(&[])[0].name, "target");
        assert_eq!(product(&params())[3].slug(), "seqs-16_tp-2");
    }

    #[test]
    fn the_template_is_filled_and_unknown_names_are_refused() {
        let t = "srv --port {port} --seqs {seqs} --tp={tp} --json '{{\"a\": 1}}'";
        check_template(t, &params(), &[]).expect("known");
        let c = &product(&params())[1];
        assert_eq!(
            render(t, c, 4321),
            "srv --port 4321 --seqs 8 --tp=2 --json '{\"a\": 1}'"
        );
        let e = check_template("srv {bogus} {seqs} {tp}", &params(), &[])
            .expect_err("unknown")
            .to_string();
        assert_eq!(
            e,
            "--serve: `{bogus}` is neither a parameter (--params bogus=...) nor {port}"
        );
        assert!(check_template("srv {port", &params(), &[]).is_err());
        // A parameter nothing uses, a lone `}` and an empty command are refused; a --link
        // uses a parameter.
        let e = check_template("srv {seqs}", &params(), &[]).expect_err("tp unused");
        assert!(
            e.to_string().starts_with("--params tp: neither --serve"),
            "{e}"
        );
        let links = [("tp".to_string(), "max_concurrency".to_string())];
        check_template("srv {seqs}", &params(), &links).expect("linked");
        assert!(check_template("srv } {seqs} {tp}", &params(), &[]).is_err());
        assert!(check_template(" ", &[], &[]).is_err());
        // A value is one word for the shell however it is written.
        let mut c = product(&params())[0].clone();
        c.values.insert("seqs".into(), "8; touch X".into());
        assert_eq!(render("srv {seqs}", &c, 1), "srv '8; touch X'");
        c.values.insert("seqs".into(), "it's".into());
        assert_eq!(render("srv {seqs}", &c, 1), r"srv 'it'\''s'");
    }

    #[test]
    fn secret_parameters_are_masked_in_names_and_scrubbed_from_text() {
        let p = [Param {
            name: "api_key".into(),
            values: vec!["sk-aaaa".into(), "sk-bbbb".into()],
        }];
        let all = product(&p);
        assert_eq!(all[0].name, "api_key=***1");
        assert_eq!(all[1].shown["api_key"], "***2");
        assert_eq!(all[1].values["api_key"], "sk-bbbb");
        assert_eq!(
            render_shown("srv --api-key {api_key}", &all[0], 1),
            "srv --api-key ***"
        );
        assert_eq!(all[0].scrub("got sk-aaaa!"), "got ***1!");
        let one = product(&[Param {
            name: "token".into(),
            values: vec!["t0ken-x".into()],
        }]);
        assert_eq!(one[0].name, "token=***");
    }

    #[test]
    fn secrets_in_the_serve_command_are_hidden() {
        let cmd =
            "HF_TOKEN=hf_abc vllm serve M --api-key sk-1 --port 8 --hf-token=t2 --max-num-seqs 4";
        assert_eq!(
            redact_command(cmd),
            "HF_TOKEN=*** vllm serve M --api-key *** --port 8 --hf-token=*** --max-num-seqs 4"
        );
        assert_eq!(redact_command("srv --keyfile k.pem"), "srv --keyfile k.pem");
        // A template keeps its placeholders, and its spacing when it names no secret.
        assert_eq!(
            redact_template("HF_TOKEN=hf_abc srv --api-key {key} --port {port}"),
            "HF_TOKEN=*** srv --api-key {key} --port {port}"
        );
        assert_eq!(redact_template("srv  --n {n}"), "srv  --n {n}");
        let shown = shown_params(&[
            Param {
                name: "api_key".into(),
                values: vec!["sk-a".into(), "sk-b".into()],
            },
            Param {
                name: "n".into(),
                values: vec!["8".into()],
            },
        ]);
        assert_eq!(shown[0].values, ["***1", "***2"]);
        assert_eq!(shown[1].values, ["8"]);
    }

    #[test]
    fn gpus_multiply_numbers_and_parameters() {
        let c = &product(&params())[3];
        assert_eq!(gpus("{tp}*2", c), Ok(4.0));
        assert_eq!(gpus("1", c), Ok(1.0));
        assert!(gpus("{pp}", c)
            .expect_err("unknown")
            .contains("`{pp}` is not a parameter"));
        assert!(gpus("x", c)
            .expect_err("nan")
            .contains("`x` is not a number"));
        assert!(gpus("0", c).is_err());
    }
}
