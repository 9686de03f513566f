//! Parquet data files: records read row group by row group, each row turned into the same JSON
//! object a `.jsonl` line would give, so that every file source (prompts, ShareGPT,
//! conversations) reads them unchanged.
//!
//! A parquet "path" is one file, or a set of shards named by a pattern whose last component
//! holds one `*` (`data/train-*.parquet`: every file of that folder whose name starts with
//! `train-` and ends with `.parquet`, read in name order), which is how a Hugging Face dataset's
//! split is stored ([`crate::hub`]). Memory stays bounded by the row group being read: the
//! `parquet` crate's row reader decodes one row group's pages at a time.

use std::fs::File;
use std::path::{Path, PathBuf};

use ::parquet::file::reader::{FileReader, SerializedFileReader};
use ::parquet::record::reader::RowIter;
use ::parquet::record::{Field, Row};
use base64::Engine as _;
use serde_json::{Map, Value};

use crate::Error;

/// Whether `path` names parquet data (a `.parquet` file or pattern).
pub(crate) fn is_parquet(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

fn read_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// The files `path` names, in read order: the file itself, or the matches of its pattern.
/// None is an error ([`Error::MissingFile`]).
pub(crate) fn parts(path: &Path) -> Result<Vec<PathBuf>, Error> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some((prefix, suffix)) = name.split_once('*') else {
        return if path.is_file() {
            Ok(vec![path.to_path_buf()])
        } else {
            Err(Error::MissingFile(path.to_path_buf()))
        };
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|_| Error::MissingFile(path.to_path_buf()))?
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| {
                n.len() >= prefix.len() + suffix.len()
                    && n.starts_with(prefix)
                    && n.ends_with(suffix)
            })
        })
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(Error::MissingFile(path.to_path_buf()));
    }
    Ok(found)
}

fn open_file(path: &Path) -> Result<SerializedFileReader<File>, Error> {
    let f = File::open(path).map_err(|e| read_err(path, e))?;
    let r = SerializedFileReader::new(f)
        .map_err(|e| read_err(path, format!("not a parquet file: {e}")))?;
    // The row reader asserts these (a panic); a damaged footer is bad input, said as such.
    for (g, rg) in r.metadata().row_groups().iter().enumerate() {
        for c in rg.columns() {
            let bad = c.data_page_offset() < 0
                || c.compressed_size() < 0
                || c.dictionary_page_offset().is_some_and(|o| o < 0);
            if bad {
                return Err(read_err(
                    path,
                    format!("damaged parquet footer: row group {g} has a negative column offset or size"),
                ));
            }
        }
    }
    Ok(r)
}

/// The top-level columns of the first file `path` names, in schema order.
pub(crate) fn columns(path: &Path) -> Result<Vec<String>, Error> {
    let first = parts(path)?.remove(0);
    let r = open_file(&first)?;
    let schema = r.metadata().file_metadata().schema();
    Ok(schema
        .get_fields()
        .iter()
        .map(|f| f.name().to_string())
        .collect())
}

/// The rows of a parquet path, file after file.
pub(crate) struct ParquetRows {
    path: PathBuf,
    files: std::vec::IntoIter<PathBuf>,
    current: Option<(PathBuf, RowIter<'static>)>,
}

impl std::fmt::Debug for ParquetRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetRows")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ParquetRows {
    /// Opens the first file (so that a file that is not parquet fails before the run).
    pub(crate) fn open(path: &Path) -> Result<Self, Error> {
        let mut rows = ParquetRows {
            path: path.to_path_buf(),
            files: parts(path)?.into_iter(),
            current: None,
        };
        rows.advance()?;
        Ok(rows)
    }

    fn advance(&mut self) -> Result<bool, Error> {
        self.current = None;
        let Some(next) = self.files.next() else {
            return Ok(false);
        };
        let reader = open_file(&next)?;
        self.current = Some((next, RowIter::from_file_into(Box::new(reader))));
        Ok(true)
    }

    /// The next row as a JSON object, `None` after the last file's last row.
    pub(crate) fn next_row(&mut self) -> Result<Option<Map<String, Value>>, Error> {
        loop {
            let Some((file, rows)) = &mut self.current else {
                return Ok(None);
            };
            // The row reader panics on a few kinds of damaged pages (a dictionary-encoded page
            // without a dictionary): a damaged file is bad input, never a crash.
            let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rows.next()))
                .unwrap_or_else(|_| {
                    Some(Err(::parquet::errors::ParquetError::General(
                        "damaged data pages (the parquet reader could not decode them)".into(),
                    )))
                });
            match next {
                Some(Ok(row)) => return Ok(Some(row_to_json(&row))),
                Some(Err(e)) => return Err(read_err(file, explain(&e.to_string()))),
                None => {
                    if !self.advance()? {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

/// A reading error, with what to do when the file's codec is one bench leaves out.
fn explain(e: &str) -> String {
    match e.split_once("Disabled feature at compile time: ") {
        Some((_, codec)) => format!(
            "compressed with {codec}, which bench does not read (it reads uncompressed and \
             snappy parquet, what `datasets` writes); rewrite the file with snappy compression"
        ),
        None => e.to_string(),
    }
}

fn row_to_json(row: &Row) -> Map<String, Value> {
    row.get_column_iter()
        .map(|(k, v)| (k.clone(), field_to_json(v)))
        .collect()
}

/// A parquet value as JSON: numbers, strings, lists and groups as such; binary data as text
/// when it is UTF-8, as a `data:` URL when it is a PNG or JPEG image (a Hugging Face `Image`
/// column's `bytes`), else as base64.
fn field_to_json(f: &Field) -> Value {
    match f {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(v) => (*v).into(),
        Field::Short(v) => (*v).into(),
        Field::Int(v) => (*v).into(),
        Field::Long(v) => (*v).into(),
        Field::UByte(v) => (*v).into(),
        Field::UShort(v) => (*v).into(),
        Field::UInt(v) => (*v).into(),
        Field::ULong(v) => (*v).into(),
        Field::Float(v) => (*v).into(),
        Field::Double(v) => (*v).into(),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => bytes_to_json(b.data()),
        Field::Group(r) => Value::Object(row_to_json(r)),
        Field::ListInternal(l) => Value::Array(l.elements().iter().map(field_to_json).collect()),
        Field::MapInternal(m) => Value::Object(
            m.entries()
                .iter()
                .map(|(k, v)| match k {
                    Field::Str(s) => (s.clone(), field_to_json(v)),
                    other => (other.to_string(), field_to_json(v)),
                })
                .collect(),
        ),
        other => Value::String(other.to_string()),
    }
}

fn bytes_to_json(b: &[u8]) -> Value {
    if let Ok(s) = std::str::from_utf8(b) {
        return Value::String(s.to_string());
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(b);
    let mime = if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else {
        None
    };
    Value::String(match mime {
        Some(m) => format!("data:{m};base64,{b64}"),
        None => b64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_codec_left_out_is_named_with_the_way_out() {
        let e = explain("Parquet error: Disabled feature at compile time: zstd");
        assert!(
            e.starts_with("compressed with zstd") && e.contains("snappy"),
            "{e}"
        );
        assert_eq!(explain("EOF"), "EOF");
    }

    #[test]
    fn binary_values_become_text_data_urls_or_base64() {
        assert_eq!(bytes_to_json(b"plain"), Value::String("plain".into()));
        let png = bytes_to_json(b"\x89PNG\r\n\x1a\n\xff");
        assert!(png
            .as_str()
            .is_some_and(|s| s.starts_with("data:image/png;base64,")));
        assert_eq!(bytes_to_json(&[0xff, 0x00]), Value::String("/wA=".into()));
    }
}
