//! Real data files: formats, columns, ShareGPT filtering, book slices, errors.

use crate::common;

use std::path::Path;

use bench_loader::{DataSpec, Error, Loader};
use bench_tokenizer::Tokenizer;

fn load(arg: &str, column: Option<&str>) -> Result<Vec<bench_core::RequestSpec>, Error> {
    let spec = DataSpec::parse(arg, column)?;
    let mut l = Loader::new(spec, Tokenizer::builtin())?.cycle(false);
    let mut out = Vec::new();
    while let Some(s) = l.try_next()? {
        out.push(s);
    }
    Ok(out)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

#[test]
fn formats_and_columns() {
    let dir = common::temp_dir("formats");
    let tk = Tokenizer::builtin();
    let jsonl = write(
        &dir,
        "a.jsonl",
        "{\"prompt\": \"the first prompt\", \"n\": 5}\n\n{\"prompt\": \"a second one\", \"n\": \"7\"}\nnot json\n",
    );
    let got = load(&format!("path={jsonl},output_column=n"), None).expect("jsonl");
    assert_eq!(got.len(), 2);
    assert_eq!(&*got[0].prompt, "the first prompt");
    assert_eq!(got[0].prompt_tokens as usize, tk.count("the first prompt"));
    assert_eq!(got[0].output_tokens, Some(5));
    assert_eq!(got[1].output_tokens, Some(7));

    let json = write(
        &dir,
        "b.json",
        r#"[{"text": "alpha beta", "q": "x"}, {"text": "gamma"}]"#,
    );
    let got = load(&json, None).expect("json");
    assert_eq!(
        got.iter().map(|s| &*s.prompt).collect::<Vec<_>>(),
        ["alpha beta", "gamma"]
    );
    let got = load(&format!("path={json},output_tokens=9"), None).expect("json fixed output");
    assert!(got.iter().all(|s| s.output_tokens == Some(9)));

    let csv = write(
        &dir,
        "c.csv",
        "id,question,len\n1,\"Hello, world\",3\n2,second question,4\n",
    );
    let got = load(&csv, Some("question")).expect("csv");
    assert_eq!(&*got[0].prompt, "Hello, world");
    assert_eq!(got.len(), 2);
    let e = load(&csv, None).expect_err("no default column");
    assert!(matches!(e, Error::UnknownColumn { .. }));
    assert!(e.to_string().contains("id, len, question"), "{e}");
    let e = load(&csv, Some("nope")).expect_err("unknown column");
    assert!(
        e.to_string().contains("\"nope\"") && e.to_string().contains("c.csv"),
        "{e}"
    );

    let txt = write(&dir, "d.txt", "line one\n\nline two\n");
    let got = load(&txt, None).expect("txt");
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|s| s.output_tokens.is_none()));

    // The format can be forced.
    let odd = write(&dir, "e.data", "{\"input\": \"x y z\"}\n");
    assert_eq!(
        load(&format!("jsonl:{odd}"), None).expect("forced").len(),
        1
    );
    assert!(load(&odd, None)
        .expect_err("no format")
        .to_string()
        .contains("format="));

    // Samples bound what is read; cycling starts over.
    let got = load(&format!("path={txt},samples=1"), None).expect("samples");
    assert_eq!(got.len(), 1);
    let spec = DataSpec::parse(&txt, None).expect("spec");
    let cycled: Vec<_> = Loader::new(spec, tk).expect("l").take(5).collect();
    assert_eq!(cycled[2], cycled[0]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn file_errors_name_the_culprit() {
    let dir = common::temp_dir("file-errors");
    let e = load("/no/such/file.jsonl", None).expect_err("missing");
    assert!(matches!(e, Error::MissingFile(_)));
    assert!(e.to_string().contains("/no/such/file.jsonl"));
    let empty = write(&dir, "empty.jsonl", "\n\n");
    let e = load(&empty, None).expect_err("empty");
    assert!(
        matches!(e, Error::Empty { .. }) && e.to_string().contains("empty.jsonl"),
        "{e}"
    );
    let noout = write(&dir, "o.jsonl", "{\"prompt\": \"x\"}\n");
    let e = load(&format!("path={noout},output_column=len"), None).expect_err("output column");
    assert!(e.to_string().contains("\"len\""), "{e}");
    let bad = write(&dir, "bad.json", "{\"not\": \"an array\"}");
    let e = load(&bad, None).expect_err("not an array");
    assert!(e.to_string().contains("bad.json"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn conversation(human: &str, gpt: &str) -> serde_json::Value {
    serde_json::json!({"id": "x", "conversations": [
        {"from": "human", "value": human}, {"from": "gpt", "value": gpt}]})
}

#[test]
fn sharegpt_filters_like_vllm() {
    let dir = common::temp_dir("sharegpt");
    let long = " the".repeat(1100);
    let items = vec![
        conversation(
            "What is the capital of France, please?",
            "Paris is the capital of France.",
        ),
        conversation("Hi", "Hello there, how can I help you today?"), // prompt < 4 tokens
        conversation("Tell me about the river in the city.", "No."),  // reply < 4 tokens
        conversation(&long, "A long answer to a long question."),     // prompt > 1024 tokens
        serde_json::json!({"id": "y", "conversations": [{"from": "human", "value": "alone"}]}),
        conversation(
            "Explain the system model of the server.",
            "The server has a model of the system.",
        ),
    ];
    let path = write(
        &dir,
        "sg.json",
        &serde_json::to_string(&items).expect("json"),
    );
    let tk = Tokenizer::builtin();
    let got = load(&path, None).expect("sharegpt");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(&*got[0].prompt, "What is the capital of France, please?");
    assert_eq!(
        got[0].output_tokens,
        Some(tk.count("Paris is the capital of France.") as u32)
    );
    // A fixed output length skips the reply-length check.
    let got = load(&format!("path={path},output_tokens=100"), None).expect("fixed");
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|s| s.output_tokens == Some(100)));
    // Nothing passes: an error saying why.
    let none = write(
        &dir,
        "none.json",
        &serde_json::to_string(&items[1..3]).expect("json"),
    );
    let e = load(&format!("sharegpt:{none}"), None).expect_err("empty");
    assert!(e.to_string().contains("filter"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn book_slices_are_exact_and_start_at_different_places() {
    let dir = common::temp_dir("book");
    let text = bench_tokenizer::corpus::builtin_corpus(11, 60_000);
    let path = write(&dir, "book.txt", &text);
    for tk in common::all() {
        let spec = DataSpec::parse(
            &format!("path={path},format=book,prompt_tokens=1000,output_tokens=20"),
            None,
        )
        .expect("spec");
        let got: Vec<_> = Loader::new(spec, tk.clone())
            .expect("loader")
            .take(40)
            .collect();
        assert_eq!(got.len(), 40);
        for s in &got {
            assert_eq!(s.prompt_tokens, 1000);
            assert_eq!(tk.count(&s.prompt), 1000, "{}", tk.name());
            assert_eq!(s.output_tokens, Some(20));
            // Every slice starts at a word: at the file's start or after whitespace.
            let at = text
                .find(&*s.prompt)
                .expect("a slice is a piece of the book");
            assert!(
                at == 0 || text[..at].ends_with(char::is_whitespace),
                "{}: slice starts mid-word: {:?}",
                tk.name(),
                &text[at.saturating_sub(10)..at + 20]
            );
        }
        // 40 slices of 1,000 tokens span more than the file: later passes start elsewhere.
        let starts: std::collections::HashSet<String> = got
            .iter()
            .map(|s| s.prompt.chars().take(60).collect())
            .collect();
        assert_eq!(
            starts.len(),
            got.len(),
            "{}: repeated slice start",
            tk.name()
        );
    }
    let e = load(
        &format!("path={path},format=book,prompt_tokens=10000000"),
        None,
    )
    .expect_err("short");
    assert!(e.to_string().contains("shorter"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bytes that are not UTF-8 (here on line 3) are found before anything is read for a request:
/// the loader refuses the file, naming it and the line (issue 20; they used to end the stream
/// mid-run).
#[test]
fn bad_bytes_are_refused_before_the_stream_starts() {
    let dir = common::temp_dir("badbytes");
    let p = dir.join("broken.txt");
    let mut bytes = b"first prompt\nsecond prompt\n".to_vec();
    bytes.extend_from_slice(b"bad \xff\xfe bytes\nfourth\n");
    std::fs::write(&p, bytes).expect("write");
    let spec = DataSpec::parse(&p.display().to_string(), None).expect("spec");
    let e = Loader::new(spec, Tokenizer::builtin()).expect_err("bad bytes");
    let msg = e.to_string();
    assert!(
        msg.contains("broken.txt")
            && msg.contains("line 3: not UTF-8 text (byte 0xff at column 5)"),
        "{msg}"
    );
}

/// A read error in the middle of the stream that only the parse finds (here a JSON array cut
/// off after its second record) ends the iterator and is kept, naming the file and the cause,
/// for the caller to fail with (issue 13, defect 11): it is not mistaken for an exhausted
/// dataset.
#[test]
fn a_read_error_mid_stream_is_kept_not_taken_for_the_end() {
    let dir = common::temp_dir("midread");
    let p = dir.join("broken.json");
    std::fs::write(
        &p,
        r#"[{"prompt": "first"}, {"prompt": "second"}, {"prompt": "#,
    )
    .expect("write");
    let spec = DataSpec::parse(&p.display().to_string(), None).expect("spec");
    let mut l = Loader::new(spec, Tokenizer::builtin())
        .expect("the first record is fine")
        .cycle(true);
    let failure = l.failure();
    assert!(failure.get().is_none());
    let got: Vec<_> = l.by_ref().collect();
    assert_eq!(
        got.len(),
        2,
        "the two good records, then the error ends the stream"
    );
    let msg = failure.get().expect("the error is kept");
    assert!(msg.contains("broken.json"), "{msg}");
}

/// `batch_size`: each request gathers the next inputs, its prompt count their sum; a finite
/// file that ends leaves the last request short; keys that cannot batch say so.
#[test]
fn batch_size_gathers_inputs() {
    let dir = common::temp_dir("batch");
    let tk = Tokenizer::builtin();
    let lines = [
        "alpha beta",
        "gamma",
        "delta epsilon zeta",
        "eta",
        "theta iota",
    ];
    let txt = write(&dir, "a.txt", &lines.join("\n"));
    let got = load(&format!("path={txt},batch_size=2"), None).expect("txt");
    assert_eq!(got.len(), 3);
    let sent: Vec<Vec<&str>> = got
        .iter()
        .map(|s| {
            std::iter::once(&*s.prompt)
                .chain(s.batch.iter().map(|b| &**b))
                .collect()
        })
        .collect();
    assert_eq!(
        sent,
        [
            vec!["alpha beta", "gamma"],
            vec!["delta epsilon zeta", "eta"],
            vec!["theta iota"]
        ]
    );
    for (s, inputs) in got.iter().zip(&sent) {
        let want: usize = inputs.iter().map(|t| tk.count(t)).sum();
        assert_eq!(s.prompt_tokens as usize, want);
    }
    let synth = load("prompt_tokens=8,batch_size=3,samples=6", None).expect("synthetic");
    assert_eq!(synth.len(), 2);
    assert!(synth
        .iter()
        .all(|s| s.inputs() == 3 && s.prompt_tokens == 24));
    for bad in [
        "prompt_tokens=8,batch_size=0",
        "prompt_tokens=8,turns=2,batch_size=2",
    ] {
        let e = DataSpec::parse(bad, None).expect_err(bad).to_string();
        assert!(e.contains("batch_size"), "{bad}: {e}");
    }
}

/// Images: synthetic ones are new random pixels per request unless `image_repeat=true`;
/// a file's `image_column` takes paths (read and sent as data: URLs, their size read),
/// URLs (sent as given) and data: URLs; options out of range name the key.
#[test]
fn images_synthetic_and_from_files() {
    let dir = common::temp_dir("images");
    let fresh = load(
        "prompt_tokens=8,images=2,image_width=40,image_height=20,samples=3",
        None,
    )
    .expect("synthetic");
    let urls: Vec<&str> = fresh
        .iter()
        .flat_map(|s| s.images.iter().map(|i| &*i.url))
        .collect();
    assert_eq!(urls.len(), 6);
    let distinct: std::collections::BTreeSet<&str> = urls.iter().copied().collect();
    assert_eq!(distinct.len(), 6, "every image new");
    assert!(urls.iter().all(|u| u.starts_with("data:image/png;base64,")));
    assert!(fresh
        .iter()
        .flat_map(|s| &s.images)
        .all(|i| i.size == Some((40, 20)) && i.bytes > 0));
    let same = load(
        "prompt_tokens=8,images=1,image_format=jpeg,image_quality=70,image_repeat=true,samples=3",
        None,
    )
    .expect("repeat");
    assert!(same.iter().all(|s| s.images == same[0].images));
    assert!(same[0].images[0].url.starts_with("data:image/jpeg;base64,"));
    // A file naming a PNG it holds next to it, a URL, and a data: URL.
    let png = bench_loader::images::synthetic(
        &bench_loader::images::SyntheticImages {
            count: 1,
            width: 30,
            height: 17,
            format: bench_loader::images::ImageFormat::Png,
            repeat: false,
        },
        5,
    )
    .expect("png");
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(png.url.split_once(",").expect("data url").1)
        .expect("b64");
    std::fs::write(dir.join("cat.png"), &bytes).expect("png file");
    let jsonl = write(
        &dir,
        "mm.jsonl",
        &format!(
            "{{\"prompt\": \"describe\", \"image\": \"cat.png\"}}\n{{\"prompt\": \"and these\", \"image\": [\"https://example.com/a.jpg\", \"{}\"]}}\n{{\"prompt\": \"no image\"}}\n",
            png.url
        ),
    );
    let got = load(&format!("path={jsonl},image_column=image"), None).expect("file");
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].images.len(), 1);
    assert_eq!(got[0].images[0].size, Some((30, 17)));
    assert_eq!(got[0].images[0].bytes, bytes.len() as u64);
    assert_eq!(&*got[0].images[0].url, &*png.url);
    assert_eq!(got[1].images[0].url.as_ref(), "https://example.com/a.jpg");
    assert_eq!(got[1].images[0].size, None);
    assert_eq!(got[1].images[1].size, Some((30, 17)));
    assert!(got[2].images.is_empty());
    let missing = write(
        &dir,
        "bad.jsonl",
        "{\"prompt\": \"x\", \"image\": \"nope.png\"}\n",
    );
    let e = load(&format!("path={missing},image_column=image"), None).expect_err("missing");
    assert!(e.to_string().contains("nope.png"), "{e}");
    for (bad, says) in [
        (
            "prompt_tokens=8,images=17",
            "images must be in 1..=16, got 17",
        ),
        (
            "prompt_tokens=8,images=1,image_width=8",
            "image_width must be in 16..=4096, got 8",
        ),
        (
            "prompt_tokens=8,images=1,image_format=gif",
            "image_format must be png or jpeg",
        ),
        (
            "prompt_tokens=8,images=1,image_quality=50",
            "image_quality applies to image_format=jpeg",
        ),
        (
            "prompt_tokens=8,images=1,image_format=jpeg,image_quality=0",
            "image_quality must be in 1..=100, got 0",
        ),
        ("prompt_tokens=8,image_width=64", "image_width"),
    ] {
        let e = DataSpec::parse(bad, None).expect_err(bad).to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

/// A book with `prefix_tokens=P` (vLLM's sonnet `--sonnet-prefix-len`): every slice comes
/// after the book's first `P` tokens and a newline, the same text in every prompt; the count is
/// the joined text's.
#[test]
fn a_book_prefix_is_the_books_beginning_before_every_slice() {
    let dir = common::temp_dir("book-prefix");
    let lines: String = (0..200)
        .map(|i| format!("Shall I compare thee to a summer day number {i}\n"))
        .collect();
    let book = write(&dir, "sonnet.txt", &lines);
    let tk = Tokenizer::builtin();
    let got = load(
        &format!(
            "path={book},format=book,prompt_tokens=30,prefix_tokens=10,output_tokens=5,samples=6"
        ),
        None,
    )
    .expect("book with a prefix");
    assert_eq!(got.len(), 6);
    let prefix = got[0]
        .prompt
        .split('\n')
        .next()
        .expect("prefix")
        .to_string();
    assert_eq!(tk.count(&prefix), 10, "{prefix:?}");
    assert!(lines.starts_with(&prefix));
    for s in &got {
        assert!(
            s.prompt.starts_with(&format!("{prefix}\n")),
            "{:?}",
            s.prompt
        );
        assert_eq!(s.prompt_tokens as usize, tk.count(&s.prompt));
        assert!(
            (s.prompt_tokens as i64 - 40).abs() <= 2,
            "{}",
            s.prompt_tokens
        );
        assert_eq!(s.output_tokens, Some(5));
    }
    // Only a book takes a prefix.
    let jsonl = write(&dir, "p.jsonl", "{\"prompt\": \"x\"}\n");
    assert!(load(&format!("path={jsonl},prefix_tokens=4"), None).is_err());
}
