//! Parquet files and Hugging Face hub-cache trees written for tests (issue 47): the loader's
//! tests and the CLI's make their own small datasets with these, never a download.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

fn writer(path: &Path, schema: &str) -> SerializedFileWriter<std::fs::File> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let schema = Arc::new(parse_message_type(schema).expect("schema"));
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build(),
    );
    SerializedFileWriter::new(std::fs::File::create(path).expect("create"), schema, props)
        .expect("writer")
}

/// A file with a string column `text_col` and an int64 column `n`, `per_group` rows per row
/// group.
pub fn write_prompts(path: &Path, text_col: &str, rows: &[(&str, i64)], per_group: usize) {
    let mut w = writer(
        path,
        &format!("message s {{ REQUIRED BYTE_ARRAY {text_col} (UTF8); REQUIRED INT64 n; }}"),
    );
    for group in rows.chunks(per_group) {
        let mut rg = w.next_row_group().expect("row group");
        let texts: Vec<ByteArray> = group.iter().map(|(t, _)| ByteArray::from(*t)).collect();
        let mut c = rg.next_column().expect("col").expect("text column");
        c.typed::<ByteArrayType>()
            .write_batch(&texts, None, None)
            .expect("write");
        c.close().expect("close");
        let ns: Vec<i64> = group.iter().map(|(_, n)| *n).collect();
        let mut c = rg.next_column().expect("col").expect("n column");
        c.typed::<Int64Type>()
            .write_batch(&ns, None, None)
            .expect("write");
        c.close().expect("close");
        rg.close().expect("close group");
    }
    w.close().expect("close file");
}

/// A ShareGPT-like file: a `conversations` list of `{from, value}` per row.
pub fn write_conversations(path: &Path, convs: &[Vec<(&str, &str)>]) {
    let mut w = writer(
        path,
        "message s { REQUIRED GROUP conversations (LIST) { REPEATED GROUP list { \
         REQUIRED GROUP element { REQUIRED BYTE_ARRAY from (UTF8); \
         REQUIRED BYTE_ARRAY value (UTF8); } } } }",
    );
    let mut rg = w.next_row_group().expect("row group");
    for leaf in 0..2 {
        let (mut vals, mut defs, mut reps) = (Vec::new(), Vec::new(), Vec::new());
        for conv in convs {
            for (i, (from, value)) in conv.iter().enumerate() {
                vals.push(ByteArray::from(if leaf == 0 { *from } else { *value }));
                defs.push(1);
                reps.push(i16::from(i > 0));
            }
        }
        let mut c = rg.next_column().expect("col").expect("leaf");
        c.typed::<ByteArrayType>()
            .write_batch(&vals, Some(&defs), Some(&reps))
            .expect("write");
        c.close().expect("close");
    }
    rg.close().expect("close group");
    w.close().expect("close file");
}

/// A hub cache with `datasets--ORG--NAME`: `refs/<refname>` naming snapshot `commit`, whose
/// folder is returned.
pub fn hub_snapshot(cache: &Path, id: &str, refname: &str, commit: &str) -> PathBuf {
    let repo = cache.join(format!("datasets--{}", id.replace('/', "--")));
    let refs = repo.join("refs").join(refname);
    std::fs::create_dir_all(refs.parent().expect("parent")).expect("mkdir");
    std::fs::write(&refs, commit).expect("ref");
    let snap = repo.join("snapshots").join(commit);
    std::fs::create_dir_all(&snap).expect("mkdir");
    snap
}

/// A multimodal file: a `question` and a Hugging Face `Image` value (`{bytes, path}`) per row.
pub fn write_images(path: &Path, rows: &[(&str, &[u8])]) {
    let mut w = writer(
        path,
        "message s { REQUIRED BYTE_ARRAY question (UTF8); REQUIRED GROUP image { \
         REQUIRED BYTE_ARRAY bytes; REQUIRED BYTE_ARRAY path (UTF8); } }",
    );
    let mut rg = w.next_row_group().expect("row group");
    let columns: [Vec<ByteArray>; 3] = [
        rows.iter().map(|r| ByteArray::from(r.0)).collect(),
        rows.iter().map(|r| ByteArray::from(r.1.to_vec())).collect(),
        rows.iter().map(|_| ByteArray::from("image.png")).collect(),
    ];
    for values in columns {
        let mut c = rg.next_column().expect("col").expect("column");
        c.typed::<ByteArrayType>()
            .write_batch(&values, None, None)
            .expect("write");
        c.close().expect("close");
    }
    rg.close().expect("close group");
    w.close().expect("close file");
}
