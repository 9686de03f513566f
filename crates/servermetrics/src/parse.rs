//! The Prometheus text exposition format (version 0.0.4, and the OpenMetrics subset servers
//! write: `# EOF`, `_created` samples), parsed strictly: a line that is not a comment, a blank
//! line or a well-formed sample makes the whole exposition invalid, so a page that is not
//! Prometheus text (HTML, JSON) is refused rather than half-read.
//!
//! Grammar of a sample line: `name [ "{" label="value" { "," label="value" } [","] "}" ] value
//! [ timestamp ]`, where `name` matches `[a-zA-Z_:][a-zA-Z0-9_:]*`, label values escape `\\`,
//! `\"` and `\n`, and `value` is a float (`+Inf`, `-Inf`, `NaN` included).

use std::collections::HashMap;

use crate::Error;

/// The type a `# TYPE` line gives a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
    Summary,
    /// No `# TYPE` line, or `untyped` / `unknown`: treated as a gauge.
    Untyped,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// A parsed exposition: the family types and every sample, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub types: HashMap<String, Kind>,
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// The type of the family a sample name belongs to (`x_total`, `x_bucket`, `x_sum`,
    /// `x_count`, `x_created` belong to `x` when `x` has a type line).
    pub fn kind_of<'a>(&self, sample: &'a str) -> (Kind, &'a str) {
        if let Some(k) = self.types.get(sample) {
            return (*k, sample);
        }
        for suffix in ["_total", "_bucket", "_sum", "_count", "_created"] {
            if let Some(base) = sample.strip_suffix(suffix) {
                if let Some(k) = self.types.get(base) {
                    return (*k, base);
                }
            }
        }
        (Kind::Untyped, sample)
    }
}

/// Parses a whole exposition; the error names the first bad line.
pub fn parse(text: &str) -> Result<Exposition, Error> {
    let mut out = Exposition::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        let bad = |reason: &'static str| Error::Malformed {
            line: i + 1,
            reason,
        };
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if words.next() == Some("TYPE") {
                let name = words.next().ok_or(bad("TYPE line without a name"))?;
                if !is_name(name) {
                    return Err(bad("TYPE line with an invalid metric name"));
                }
                let kind = match words.next() {
                    Some("counter") => Kind::Counter,
                    Some("gauge") => Kind::Gauge,
                    Some("histogram") | Some("gaugehistogram") => Kind::Histogram,
                    Some("summary") => Kind::Summary,
                    Some("untyped") | Some("unknown") | Some("info") | Some("stateset") => {
                        Kind::Untyped
                    }
                    _ => return Err(bad("TYPE line with an unknown type")),
                };
                out.types.insert(name.to_string(), kind);
            }
            continue;
        }
        out.samples.push(sample(trimmed).map_err(bad)?);
    }
    Ok(out)
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn name_len(s: &str) -> usize {
    s.char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit()))
        })
        .map_or(s.len(), |(i, _)| i)
}

fn sample(line: &str) -> Result<Sample, &'static str> {
    let n = name_len(line);
    if n == 0 {
        return Err("a line that is neither a comment nor a sample");
    }
    let name = line[..n].to_string();
    let mut rest = &line[n..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = parse_labels(r, &mut labels)?;
    }
    let mut parts = rest.split_whitespace();
    if !rest.starts_with([' ', '\t']) {
        return Err("no space between the metric and its value");
    }
    let value = parts.next().ok_or("a sample without a value")?;
    let value = parse_value(value).ok_or("a sample value that is not a number")?;
    if let Some(ts) = parts.next() {
        ts.parse::<f64>()
            .map_err(|_| "a timestamp that is not a number")?;
    }
    if parts.next().is_some() {
        return Err("text after the sample's timestamp");
    }
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Parses `label="value",...}` (after the `{`) and returns the text after the `}`.
fn parse_labels<'a>(
    mut r: &'a str,
    labels: &mut Vec<(String, String)>,
) -> Result<&'a str, &'static str> {
    loop {
        r = r.trim_start();
        if let Some(after) = r.strip_prefix('}') {
            return Ok(after);
        }
        let n = name_len(r);
        if n == 0 {
            return Err("a label without a valid name");
        }
        let key = r[..n].to_string();
        r = r[n..].trim_start();
        r = r
            .strip_prefix('=')
            .ok_or("a label without '='")?
            .trim_start();
        r = r.strip_prefix('"').ok_or("a label value without quotes")?;
        let mut value = String::new();
        let mut chars = r.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("an unterminated label value"),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    _ => return Err("an invalid escape in a label value"),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((key, value));
        r = r[end + 1..].trim_start();
        if let Some(after) = r.strip_prefix(',') {
            r = after;
        } else if !r.starts_with('}') {
            return Err("labels not separated by ','");
        }
    }
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ if s
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            s.parse().ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vllm_style_text() {
        let text = "# HELP vllm:num_requests_running Running.\n\
                    # TYPE vllm:num_requests_running gauge\n\
                    vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 16.0\n\
                    # TYPE vllm:generation_tokens counter\n\
                    vllm:generation_tokens_total{model_name=\"a\\\"b\\\\c\\nd\"} 1.5e3\n\
                    vllm:generation_tokens_created{model_name=\"m\"} 1.7e9\n\
                    # TYPE h histogram\n\
                    h_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2 1700000000000\n\
                    h_sum 0.3\nh_count 2\n# EOF\n";
        let e = parse(text).expect("valid");
        assert_eq!(e.samples.len(), 7);
        assert_eq!(e.samples[0].value, 16.0);
        assert_eq!(e.samples[1].labels[0].1, "a\"b\\c\nd");
        assert_eq!(e.samples[1].value, 1500.0);
        assert_eq!(
            e.kind_of("vllm:generation_tokens_total"),
            (Kind::Counter, "vllm:generation_tokens")
        );
        assert_eq!(e.kind_of("h_bucket"), (Kind::Histogram, "h"));
        assert_eq!(e.samples[4].value, 2.0);
        assert_eq!(e.samples[4].labels[0].1, "+Inf");
    }

    #[test]
    fn refuses_what_is_not_prometheus_text() {
        for (text, line) in [
            ("<html><body>Not Found</body></html>", 1),
            ("{\"error\": \"not found\"}", 1),
            ("ok 1\nmetric{a=\"1\" 2\n", 2),
            ("m{a=1} 2", 1),
            ("m 1 2 3", 1),
            ("m abc", 1),
            ("m", 1),
            ("m{a=\"x\\q\"} 1", 1),
            ("# TYPE m sideways\nm 1", 1),
            ("m{a=\"1\"}2", 1),
            ("404 page not found", 1),
        ] {
            match parse(text) {
                Err(Error::Malformed { line: l, .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }
}
