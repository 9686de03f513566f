//! Reading a trace file one row at a time, checking each row as it comes.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde::Deserialize;

use super::{bad, TraceConfig, TraceFit, TraceFormat, TraceInput, TraceRow};
use crate::Error;

/// The rows of a trace, streamed from its file.
#[derive(Debug)]
pub struct TraceReader {
    config: TraceConfig,
    rows: Rows,
    /// Raw time of the first row and of the previous one, in nanoseconds.
    first: Option<i128>,
    last: Option<i128>,
    kept: u64,
    skipped: u64,
    /// Sessions met so far (any row), and those whose first turn was kept.
    sessions_seen: std::collections::HashSet<String>,
    sessions_kept: std::collections::HashSet<String>,
}

enum Rows {
    Json {
        lines: BufReader<File>,
        buf: Vec<u8>,
        line: u64,
    },
    Csv {
        records: csv::StringRecordsIntoIter<File>,
        cols: CsvCols,
    },
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rows::Json { line, .. } => f.debug_struct("Json").field("line", line).finish(),
            Rows::Csv { cols, .. } => f.debug_struct("Csv").field("cols", cols).finish(),
        }
    }
}

/// Positions of the columns a CSV trace uses.
#[derive(Debug)]
struct CsvCols {
    ts: usize,
    input: usize,
    output: usize,
    model: Option<usize>,
    log_type: Option<usize>,
}

/// One row as read, before the checks that need the rows before it.
struct Raw {
    line: u64,
    /// Nanoseconds (of the epoch for dates, of the unit's zero otherwise); `None` for a later
    /// session turn timed only by its `delay`.
    ts: Option<i128>,
    /// The row's `session_id` (JSON formats).
    session: Option<String>,
    /// Its `delay` after the previous turn's answer, nanoseconds.
    delay: Option<u64>,
    input: TraceInput,
    output: Option<u32>,
    /// `false` for a row filtered out (BurstGPT's model / log type, zero lengths).
    keep: bool,
    /// Its `input_length` was moved to fit its hash ids (`fit=length`).
    fitted: bool,
}

/// A JSONL row of any of the JSON formats; fields a format does not use are ignored.
#[derive(Deserialize)]
struct JsonRow {
    timestamp: Option<f64>,
    input_length: Option<i64>,
    output_length: Option<i64>,
    hash_ids: Option<Vec<u64>>,
    prompt: Option<String>,
    messages: Option<Vec<Message>>,
    delay: Option<f64>,
    session_id: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Message {
    content: String,
}

impl TraceReader {
    /// Opens the trace at its first row.
    pub fn open(config: &TraceConfig) -> Result<TraceReader, Error> {
        let path = &config.path;
        let rows = match config.format {
            TraceFormat::Azure | TraceFormat::Burstgpt => open_csv(path, config.format)?,
            _ => Rows::Json {
                lines: BufReader::new(open(path)?),
                buf: Vec::new(),
                line: 0,
            },
        };
        Ok(TraceReader {
            config: config.clone(),
            rows,
            first: None,
            last: None,
            kept: 0,
            skipped: 0,
            sessions_seen: Default::default(),
            sessions_kept: Default::default(),
        })
    }

    /// Rows filtered out so far (BurstGPT's `model` / `log_type`, rows recording 0 tokens).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The next row to replay; `Ok(None)` at the end of the file (or of `samples`).
    pub fn next_row(&mut self) -> Result<Option<TraceRow>, Error> {
        loop {
            if self.config.samples.is_some_and(|n| self.kept >= n) {
                return Ok(None);
            }
            let Some(raw) = self.next_raw()? else {
                return Ok(None);
            };
            let ts = self.timestamp(&raw)?;
            self.last = Some(ts);
            let first = *self.first.get_or_insert(ts);
            let keep = self.session_kept(&raw)?;
            if !raw.keep || !keep {
                self.skipped += 1;
                continue;
            }
            let Some(at) = u64::try_from(ts - first)
                .ok()
                .and_then(|at| at.checked_sub(self.config.start))
            else {
                continue;
            };
            if let Some(s) = &raw.session {
                self.sessions_kept.insert(s.clone());
            }
            self.kept += 1;
            return Ok(Some(TraceRow {
                line: raw.line,
                at,
                input: raw.input,
                output_tokens: self.config.output_tokens.or(raw.output),
                fitted: raw.fitted,
                session: raw.session,
                delay: raw.delay,
            }));
        }
    }

    /// The row's time: its timestamp, checked not to go back; a later session turn timed by
    /// its delay takes the previous row's.
    fn timestamp(&self, raw: &Raw) -> Result<i128, Error> {
        let Some(ts) = raw.ts else {
            return Ok(self.last.unwrap_or(0));
        };
        if let Some(last) = self.last {
            if ts < last {
                return Err(bad(
                    &self.config.path,
                    raw.line,
                    format!(
                        "timestamp goes back {} ms before the previous row's (rows must be in time order)",
                        (last - ts) as f64 / 1e6
                    ),
                ));
            }
        }
        Ok(ts)
    }

    /// Whether a row goes on: `true` for a row outside sessions, a session's first row, or a
    /// later turn of a session whose first turn was kept; `false` for a later turn of a
    /// session whose first row `start=` skipped. A row timed only by a delay needs an earlier
    /// row of its session.
    fn session_kept(&mut self, raw: &Raw) -> Result<bool, Error> {
        let Some(s) = &raw.session else {
            return Ok(true);
        };
        let first = self.sessions_seen.insert(s.clone());
        if first && raw.ts.is_none() {
            return Err(bad(
                &self.config.path,
                raw.line,
                format!("no timestamp, and no earlier row of session_id {s} (a session's first row needs a timestamp)"),
            ));
        }
        Ok(first || self.sessions_kept.contains(s))
    }

    fn next_raw(&mut self) -> Result<Option<Raw>, Error> {
        let config = &self.config;
        match &mut self.rows {
            Rows::Json { lines, buf, line } => loop {
                let next = crate::lines::next_line(lines, buf)
                    .map_err(|e| bad(&config.path, *line + 1, e.to_string()))?;
                let Some(text) = next else {
                    return Ok(None);
                };
                *line += 1;
                let text = text.map_err(|e| bad(&config.path, *line, e))?;
                if text.trim().is_empty() {
                    continue;
                }
                return json_row(config, *line, &text).map(Some);
            },
            Rows::Csv { records, cols } => {
                let Some(record) = records.next() else {
                    return Ok(None);
                };
                let line = record
                    .as_ref()
                    .ok()
                    .and_then(|r| r.position())
                    .map_or(0, |p| p.line());
                let record = record.map_err(|e| {
                    let line = e.position().map_or(line, |p| p.line());
                    bad(&config.path, line, e.to_string())
                })?;
                csv_row(config, cols, line, &record).map(Some)
            }
        }
    }
}

fn open(path: &Path) -> Result<File, Error> {
    File::open(path).map_err(|e| Error::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn open_csv(path: &Path, format: TraceFormat) -> Result<Rows, Error> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(open(path)?);
    let headers = reader
        .headers()
        .map_err(|e| bad(path, 1, e.to_string()))?
        .clone();
    if headers.is_empty() || headers.iter().all(str::is_empty) {
        return Err(bad(path, 0, "empty file, no rows"));
    }
    let find = |name: &str| headers.iter().position(|h| h == name);
    let need = |name: &str| {
        find(name).ok_or_else(|| {
            bad(
                path,
                1,
                format!(
                    "no column {name:?} for format={} (columns: {}; needs {})",
                    format.name(),
                    headers.iter().collect::<Vec<_>>().join(", "),
                    format.needs()
                ),
            )
        })
    };
    let cols = match format {
        TraceFormat::Azure => CsvCols {
            ts: need("TIMESTAMP")?,
            input: need("ContextTokens")?,
            output: need("GeneratedTokens")?,
            model: None,
            log_type: None,
        },
        _ => CsvCols {
            ts: need("Timestamp")?,
            input: need("Request tokens")?,
            output: need("Response tokens")?,
            model: find("Model"),
            log_type: find("Log Type"),
        },
    };
    Ok(Rows::Csv {
        records: reader.into_records(),
        cols,
    })
}

/// A count column: a non-negative integer that fits in `u32`.
fn tokens(path: &Path, line: u64, name: &str, v: i64) -> Result<u32, Error> {
    u32::try_from(v).map_err(|_| bad(path, line, format!("{name} must be 0 or more, got {v}")))
}

/// A numeric timestamp in nanoseconds; negative or non-finite ones are errors.
fn numeric_ts(config: &TraceConfig, line: u64, name: &str, v: f64) -> Result<i128, Error> {
    if !v.is_finite() || v < 0.0 {
        return Err(bad(
            &config.path,
            line,
            format!("{name} must be a number >= 0, got {v}"),
        ));
    }
    Ok((v * config.time_unit.nanos()).round() as i128)
}

/// When a JSON row is sent, as written.
struct RowTime {
    /// Its timestamp, ns (`None` for a later session turn timed by its delay).
    ts: Option<i128>,
    session: Option<String>,
    /// Its `delay`, ns.
    delay: Option<u64>,
}

/// A JSON row's time: its timestamp, `session_id` and `delay`, checked together.
fn row_time(config: &TraceConfig, line: u64, row: &JsonRow) -> Result<RowTime, Error> {
    let path = &config.path;
    let session = match &row.session_id {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            return Err(bad(
                path,
                line,
                format!("session_id must be a string or a number, got {other}"),
            ))
        }
    };
    let delay = row
        .delay
        .map(|d| numeric_ts(config, line, "delay", d).map(|d| d as u64))
        .transpose()?;
    let ts = match (row.timestamp, &session, delay) {
        (Some(ts), _, _) => Some(numeric_ts(config, line, "timestamp", ts)?),
        (None, Some(_), Some(_)) => None,
        (None, None, Some(_)) => {
            return Err(bad(
                path,
                line,
                "no timestamp, and a delay without a session_id (a delay times a later turn of a session)",
            ))
        }
        (None, _, None) => return Err(bad(path, line, "no timestamp")),
    };
    Ok(RowTime { ts, session, delay })
}

fn json_row(config: &TraceConfig, line: u64, text: &str) -> Result<Raw, Error> {
    let path = &config.path;
    let row: JsonRow = serde_json::from_str(text)
        .map_err(|e| bad(path, line, format!("not a JSON record: {e}")))?;
    let RowTime { ts, session, delay } = row_time(config, line, &row)?;
    let output = row
        .output_length
        .map(|v| tokens(path, line, "output_length", v))
        .transpose()?;
    let mut fitted = false;
    let input = if config.format == TraceFormat::Plain && row.input_length.is_none() {
        let text = match (row.prompt, row.messages) {
            (Some(p), _) => p,
            (None, Some(m)) => m
                .into_iter()
                .map(|m| m.content)
                .collect::<Vec<_>>()
                .join(bench_core::FLATTEN_SEPARATOR),
            (None, None) => {
                return Err(bad(
                    path,
                    line,
                    format!(
                        "no prompt, messages or input_length (format=plain needs {})",
                        TraceFormat::Plain.needs()
                    ),
                ))
            }
        };
        if text.is_empty() {
            return Err(bad(path, line, "empty prompt"));
        }
        TraceInput::Text(text)
    } else {
        let Some(n) = row.input_length else {
            return Err(bad(
                path,
                line,
                format!(
                    "no input_length (format={} needs {})",
                    config.format.name(),
                    config.format.needs()
                ),
            ));
        };
        let n = tokens(path, line, "input_length", n)?;
        let hash_ids = row.hash_ids.unwrap_or_default();
        let fits = check_fit(config, line, n, &hash_ids)?;
        fitted = fits != n;
        TraceInput::Blocks {
            tokens: fits,
            hash_ids,
        }
    };
    Ok(Raw {
        line,
        ts,
        input,
        output,
        keep: true,
        fitted,
        session,
        delay,
    })
}

/// `input_length` must fill its hash ids: every block but the last whole, the last with at
/// least one token. Returns the length to send: `n`, or under `fit=length` the nearest length
/// that fits.
fn check_fit(config: &TraceConfig, line: u64, n: u32, hash_ids: &[u64]) -> Result<u32, Error> {
    if n == 0 {
        return Err(bad(&config.path, line, "input_length must be at least 1"));
    }
    if hash_ids.is_empty() {
        return Ok(n);
    }
    let bs = u64::from(config.block_size);
    let k = hash_ids.len() as u64;
    let (lo, hi) = ((k - 1) * bs + 1, k * bs);
    if !(lo..=hi).contains(&u64::from(n)) {
        if config.fit == TraceFit::Length {
            let fitted = u64::from(n).clamp(lo, hi);
            return u32::try_from(fitted).map_err(|_| {
                bad(
                    &config.path,
                    line,
                    format!("fit=length: {k} hash_ids of {bs} tokens need more than 2^32 tokens"),
                )
            });
        }
        return Err(bad(
            &config.path,
            line,
            format!(
                "input_length {n} does not fit {k} hash_ids of {bs} tokens (needs {lo}..={hi}; block_size= sets the block size, fit=length sends the nearest length that fits)"
            ),
        ));
    }
    Ok(n)
}

fn csv_row(
    config: &TraceConfig,
    cols: &CsvCols,
    line: u64,
    record: &csv::StringRecord,
) -> Result<Raw, Error> {
    let path = &config.path;
    let field = |i: usize| record.get(i).unwrap_or("");
    let count = |i: usize, name: &str| -> Result<u32, Error> {
        let v = field(i);
        v.parse::<u32>()
            .or_else(|_| {
                v.parse::<f64>().map_err(|_| ()).and_then(|f| {
                    (f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&f))
                        .then_some(f as u32)
                        .ok_or(())
                })
            })
            .map_err(|_| {
                bad(
                    path,
                    line,
                    format!("{name} must be a count >= 0, got {v:?}"),
                )
            })
    };
    let (ts, input, output) = if config.format == TraceFormat::Azure {
        let raw = field(cols.ts);
        let ts = parse_datetime(raw).ok_or_else(|| {
            bad(
                path,
                line,
                format!("TIMESTAMP {raw:?} is not a date-time like 2023-11-16 18:15:46.6805900"),
            )
        })?;
        (
            ts,
            count(cols.input, "ContextTokens")?,
            count(cols.output, "GeneratedTokens")?,
        )
    } else {
        let raw = field(cols.ts);
        let v: f64 = raw.parse().map_err(|_| {
            bad(
                path,
                line,
                format!("Timestamp must be a number, got {raw:?}"),
            )
        })?;
        let ts = numeric_ts(config, line, "Timestamp", v)?;
        (
            ts,
            count(cols.input, "Request tokens")?,
            count(cols.output, "Response tokens")?,
        )
    };
    let matches = |col: Option<usize>, want: &Option<String>| match (col, want) {
        (_, None) => true,
        (Some(i), Some(w)) => field(i) == w.as_str(),
        (None, Some(_)) => false,
    };
    let keep = input > 0
        && (output > 0 || config.output_tokens.is_some())
        && matches(cols.model, &config.model)
        && matches(cols.log_type, &config.log_type);
    Ok(Raw {
        line,
        ts: Some(ts),
        input: TraceInput::Blocks {
            tokens: input,
            hash_ids: Vec::new(),
        },
        output: Some(output),
        fitted: false,
        session: None,
        delay: None,
        keep,
    })
}

/// `YYYY-MM-DD HH:MM:SS[.fraction][Z]` (or with a `T`), as nanoseconds of the Unix epoch.
pub(crate) fn parse_datetime(s: &str) -> Option<i128> {
    let s = s.trim().trim_end_matches('Z');
    let (date, time) = s.split_once([' ', 'T'])?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: i128 = if frac.is_empty() {
        0
    } else {
        frac.parse::<i128>().ok()? * 10i128.pow(9 - frac.len() as u32)
    };
    let days = days_from_civil(y, m, day);
    let secs = i128::from(days) * 86_400 + i128::from(hh * 3600 + mm * 60 + ss);
    Some(secs * 1_000_000_000 + frac_ns)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(parse_datetime("1970-01-01 00:00:00"), Some(0));
        assert_eq!(
            parse_datetime("1970-01-02T00:00:01.5Z"),
            Some(86_401_500_000_000)
        );
        // 2023-11-16 is 19,677 days after the epoch.
        assert_eq!(
            parse_datetime("2023-11-16 18:15:46.6805900"),
            Some((19_677i128 * 86_400 + 18 * 3600 + 15 * 60 + 46) * 1_000_000_000 + 680_590_000)
        );
        assert_eq!(parse_datetime("2023-13-01 00:00:00"), None);
        assert_eq!(parse_datetime("yesterday"), None);
    }
}
