//! Parquet data files and Hugging Face datasets in a hub-cache folder tree (issue 47): files
//! written here with the `parquet` crate (snappy-compressed, several row groups), read as data
//! files (the prompt column found as vLLM finds it, a conversations column read as ShareGPT);
//! the hub cache's two layouts resolved by subset and split; errors naming the dataset, the
//! subset or split missing and the columns found.

use crate::common;

use bench_loader::{hub, DataSpec, Error, Loader};
use bench_test_support::parquet::{
    hub_snapshot as snapshot, write_conversations, write_images, write_prompts,
};
use bench_tokenizer::Tokenizer;

fn load(arg: &str) -> Result<Vec<bench_core::RequestSpec>, Error> {
    let spec = DataSpec::parse(arg, None)?;
    let mut l = Loader::new(spec, Tokenizer::builtin())?.cycle(false);
    let mut out = Vec::new();
    while let Some(s) = l.try_next()? {
        out.push(s);
    }
    Ok(out)
}

#[test]
fn a_parquet_file_is_read_row_group_by_row_group_with_the_prompt_column_found() {
    let dir = common::temp_dir("parquet-prompts");
    let p = dir.join("gsm.parquet");
    let rows = [
        ("how many apples", 5),
        ("what is two plus two", 7),
        ("name a river", 3),
        ("count the stars", 9),
        ("why is the sky blue", 4),
    ];
    write_prompts(&p, "question", &rows, 2);
    let tk = Tokenizer::builtin();
    let got = load(&format!("path={},output_column=n", p.display())).expect("read");
    assert_eq!(
        got.iter().map(|s| &*s.prompt).collect::<Vec<_>>(),
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        "every row of the three row groups, in order"
    );
    assert_eq!(
        got.iter().map(|s| s.output_tokens).collect::<Vec<_>>(),
        rows.iter().map(|r| Some(r.1 as u32)).collect::<Vec<_>>()
    );
    assert_eq!(
        got[1].prompt_tokens as usize,
        tk.count("what is two plus two")
    );
    // The bare path works too, and `problem` is found like `question`.
    let q = dir.join("aime.parquet");
    write_prompts(&q, "problem", &rows[..2], 8);
    assert_eq!(load(&q.display().to_string()).expect("bare path").len(), 2);
    // No prompt column: the error names the columns found.
    let r = dir.join("odd.parquet");
    write_prompts(&r, "body", &rows[..1], 8);
    let e = load(&r.display().to_string())
        .expect_err("no prompt column")
        .to_string();
    assert!(e.contains("body, n") && e.contains("question"), "{e}");
    // A file that is not parquet is refused naming it.
    let bad = dir.join("bad.parquet");
    std::fs::write(&bad, "not parquet at all").expect("write");
    let e = load(&bad.display().to_string())
        .expect_err("not parquet")
        .to_string();
    assert!(
        e.contains("bad.parquet") && e.contains("not a parquet file"),
        "{e}"
    );
}

#[test]
fn a_conversations_column_is_read_as_sharegpt() {
    let dir = common::temp_dir("parquet-sharegpt");
    let p = dir.join("chats.parquet");
    let long = "tell me a long story about the river and the stone";
    let reply = "once upon a time there was a river that met a stone";
    write_conversations(
        &p,
        &[
            vec![("human", long), ("gpt", reply)],
            vec![("human", "hi")],
            vec![("human", long), ("gpt", reply), ("human", "more")],
        ],
    );
    let spec = DataSpec::parse(&p.display().to_string(), None).expect("spec");
    assert!(matches!(spec, DataSpec::ShareGpt(_)), "{spec:?}");
    let got = load(&p.display().to_string()).expect("read");
    let tk = Tokenizer::builtin();
    assert_eq!(
        got.len(),
        2,
        "the one-turn conversation is skipped, as vLLM does"
    );
    assert_eq!(&*got[0].prompt, long);
    assert_eq!(got[0].output_tokens, Some(tk.count(reply) as u32));
    // With turns=all the same file is replayed as sessions: every user turn with a reply.
    let spec = DataSpec::parse(&format!("path={},turns=all", p.display()), None).expect("spec");
    assert!(spec.sessions(), "{spec:?}");
    let DataSpec::Conversations(c) = &spec else {
        panic!("{spec:?}")
    };
    assert_eq!(c.format, bench_loader::spec::FileFormat::Sharegpt);
}

#[test]
fn the_hub_cache_layouts_resolve_by_subset_and_split() {
    let cache = common::temp_dir("hub-cache");
    // The repository's own files: <subset>/<split>-NNNNN-of-NNNNN.parquet.
    let snap = snapshot(&cache, "openai/gsm8k", "main", "abc123");
    write_prompts(
        &snap.join("main/train-00000-of-00002.parquet"),
        "question",
        &[("first shard one", 1), ("first shard two", 2)],
        8,
    );
    write_prompts(
        &snap.join("main/train-00001-of-00002.parquet"),
        "question",
        &[("second shard", 3)],
        8,
    );
    write_prompts(
        &snap.join("main/test-00000-of-00001.parquet"),
        "question",
        &[("a test row", 4)],
        8,
    );
    write_prompts(
        &snap.join("socratic/train-00000-of-00001.parquet"),
        "question",
        &[("socratic row", 5)],
        8,
    );
    let train = hub::resolve(&cache, "openai/gsm8k", Some("main"), None).expect("train");
    let got = load(&format!("path={},output_column=n", train.display())).expect("read");
    assert_eq!(
        got.iter().map(|s| &*s.prompt).collect::<Vec<_>>(),
        ["first shard one", "first shard two", "second shard"],
        "both shards of the split, in order, and no other split"
    );
    let test = hub::resolve(&cache, "openai/gsm8k", Some("main"), Some("test")).expect("test");
    assert_eq!(load(&test.display().to_string()).expect("test").len(), 1);
    // Errors name the dataset and what exists.
    let e = hub::resolve(&cache, "openai/gsm8k", None, None)
        .expect_err("two subsets")
        .to_string();
    assert!(
        e.contains("openai/gsm8k") && e.contains("main, socratic"),
        "{e}"
    );
    let e = hub::resolve(&cache, "openai/gsm8k", Some("nope"), None)
        .expect_err("no subset")
        .to_string();
    assert!(
        e.contains("\"nope\"") && e.contains("main, socratic"),
        "{e}"
    );
    let e = hub::resolve(&cache, "openai/gsm8k", Some("main"), Some("dev"))
        .expect_err("no split")
        .to_string();
    assert!(e.contains("\"dev\"") && e.contains("test, train"), "{e}");
    let e = hub::resolve(&cache, "someone/absent", None, None)
        .expect_err("not cached")
        .to_string();
    assert!(
        e.contains("someone/absent")
            && e.contains("huggingface-cli download --repo-type dataset someone/absent"),
        "{e}"
    );

    // The parquet conversion branch: <subset>/<split>/NNNN.parquet, its commit in
    // refs/refs/convert/parquet (huggingface_hub's ref of revision refs/convert/parquet), one
    // subset (so none need be named).
    let snap = snapshot(
        &cache,
        "AI-MO/aimo-validation-aime",
        "refs/convert/parquet",
        "def456",
    );
    write_prompts(
        &snap.join("default/train/0000.parquet"),
        "problem",
        &[("problem one", 1)],
        8,
    );
    write_prompts(
        &snap.join("default/train/0001.parquet"),
        "problem",
        &[("problem two", 2)],
        8,
    );
    let p = hub::resolve(&cache, "AI-MO/aimo-validation-aime", None, None).expect("convert");
    assert_eq!(
        load(&p.display().to_string())
            .expect("read")
            .iter()
            .map(|s| s.prompt.to_string())
            .collect::<Vec<_>>(),
        ["problem one", "problem two"]
    );
    assert!(hub::is_dataset_id("openai/gsm8k"));
    assert!(!hub::is_dataset_id("gsm8k") && !hub::is_dataset_id("a/b/c"));
    assert!(!hub::is_dataset_id("data/prompts.jsonl") && hub::is_dataset_id("org/name.v2"));
}

/// A Hugging Face `Image` column (`{bytes, path}`) named by `image_column`: each row's image is
/// sent as a `data:` URL of its bytes, its size read from them.
#[test]
fn an_image_column_of_hugging_face_image_values_becomes_data_urls() {
    let dir = common::temp_dir("parquet-images");
    // A PNG header (signature and IHDR: 40 x 30 pixels) is all the size reader needs.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&40u32.to_be_bytes());
    png.extend_from_slice(&30u32.to_be_bytes());
    png.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
    let p = dir.join("vqa.parquet");
    write_images(&p, &[("what is in the picture", &png)]);
    let got = load(&format!("path={},image_column=image", p.display())).expect("read");
    assert_eq!(&*got[0].prompt, "what is in the picture");
    let img = &got[0].images[0];
    assert!(img.url.starts_with("data:image/png;base64,"), "{}", img.url);
    assert_eq!((img.size, img.bytes), (Some((40, 30)), png.len() as u64));
}

/// A parquet file whose data pages are damaged (its footer intact) is an error naming the
/// file, never a panic.
#[test]
fn damaged_pages_are_an_error_not_a_panic() {
    let dir = common::temp_dir("parquet-damaged");
    let p = dir.join("damaged.parquet");
    let rows: Vec<(String, i64)> = (0..200)
        .map(|i| (format!("prompt number {i} of a file"), i))
        .collect();
    let refs: Vec<(&str, i64)> = rows.iter().map(|(t, n)| (t.as_str(), *n)).collect();
    write_prompts(&p, "prompt", &refs, 50);
    let mut bytes = std::fs::read(&p).expect("read");
    let len = bytes.len();
    // The first data page's header and values: past the magic, well before the footer.
    for b in &mut bytes[4..len / 3] {
        *b ^= 0x5a;
    }
    std::fs::write(&p, &bytes).expect("write");
    let e = load(&p.display().to_string()).expect_err("damaged");
    assert!(e.to_string().contains("damaged.parquet"), "{e}");
}

/// Every single-byte damage of a small file (each byte flipped in turn) reads or fails with an
/// error: no panic escapes the reader (the `parquet` crate's row reader asserts on some damaged
/// footers, checked first, and panics on a few damaged pages, caught and turned into an error).
#[test]
fn no_single_byte_damage_crashes_the_reader() {
    let dir = common::temp_dir("parquet-flip");
    let p = dir.join("f.parquet");
    let rows: Vec<(String, i64)> = (0..12).map(|i| (format!("prompt {i}"), i)).collect();
    let refs: Vec<(&str, i64)> = rows.iter().map(|(t, n)| (t.as_str(), *n)).collect();
    write_prompts(&p, "prompt", &refs, 4);
    let orig = std::fs::read(&p).expect("read");
    let arg = p.display().to_string();
    let mut escaped = Vec::new();
    for i in 0..orig.len() {
        let mut b = orig.clone();
        b[i] ^= 0xff;
        std::fs::write(&p, &b).expect("write");
        if std::panic::catch_unwind(|| load(&arg).map(|v| v.len())).is_err() {
            escaped.push(i);
        }
    }
    assert!(escaped.is_empty(), "panics at byte offsets {escaped:?}");
}

/// A one-thread HTTP/1.1 server on 127.0.0.1:0 standing in for the Hub's API
/// (`/api/datasets/ID/revision/REV`) and file URLs (`/datasets/ID/resolve/SHA/FILE`, the big
/// files redirected to a "CDN" path as the Hub does); records each request's path and
/// Authorization header.
struct FakeHub {
    url: String,
    seen: Seen,
}

/// Requests seen: path and Authorization header.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;

fn fake_hub(routes: std::collections::HashMap<String, (u16, Vec<u8>)>) -> FakeHub {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut auth = None;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("authorization") {
                        auth = Some(v.trim().to_string());
                    }
                }
            }
            seen2.lock().expect("lock").push((path.clone(), auth));
            let (status, body, location) = match routes.get(&path) {
                Some((302, to)) => (302, Vec::new(), String::from_utf8_lossy(to).into_owned()),
                Some((s, b)) => (*s, b.clone(), String::new()),
                None => (404, b"{\"error\":\"not found\"}".to_vec(), String::new()),
            };
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            if !location.is_empty() {
                head.push_str(&format!("location: {location}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    FakeHub { url, seen }
}

/// Datasets not in the cache are downloaded from the Hub (`HF_ENDPOINT`, here a loopback
/// server speaking its API) into the cache in `huggingface_hub`'s layout: only the parquet
/// shards of the chosen subset and split, from `main` or else the parquet conversion; a later
/// call reads the cache without a request; offline, nothing is asked; errors name the dataset
/// and what the Hub has.
#[test]
fn datasets_missing_from_the_cache_are_downloaded_from_the_hub() {
    use bench_tokenizer::hub::HubConfig;
    let dir = common::temp_dir("hub-download");
    let shard = |name: &str, rows: &[(&str, i64)]| {
        let p = dir.join(name);
        write_prompts(&p, "question", rows, 8);
        std::fs::read(&p).expect("read")
    };
    let mut routes = std::collections::HashMap::new();
    let api = |id: &str, rev: &str| format!("/api/datasets/{id}/revision/{rev}");
    routes.insert(
        api("acme/qa", "main"),
        (
            200,
            br#"{"id":"acme/qa","sha":"c0ffee1","siblings":[{"rfilename":".gitattributes"},{"rfilename":"README.md"},{"rfilename":"data/train-00000-of-00002.parquet"},{"rfilename":"data/train-00001-of-00002.parquet"},{"rfilename":"data/test-00000-of-00001.parquet"},{"rfilename":"../evil-00000-of-00001.parquet"}]}"#.to_vec(),
        ),
    );
    routes.insert(
        "/datasets/acme/qa/resolve/c0ffee1/data/train-00000-of-00002.parquet".into(),
        (302, b"/cdn/blob-a".to_vec()),
    );
    routes.insert(
        "/cdn/blob-a".into(),
        (
            200,
            shard(
                "a.parquet",
                &[("first train row", 1), ("second train row", 2)],
            ),
        ),
    );
    routes.insert(
        "/datasets/acme/qa/resolve/c0ffee1/data/train-00001-of-00002.parquet".into(),
        (200, shard("b.parquet", &[("third train row", 3)])),
    );
    routes.insert(
        "/datasets/acme/qa/resolve/c0ffee1/data/test-00000-of-00001.parquet".into(),
        (200, shard("c.parquet", &[("a test row", 4)])),
    );
    routes.insert(
        api("acme/old", "main"),
        (
            200,
            br#"{"sha":"aaa1","siblings":[{"rfilename":"old.py"}]}"#.to_vec(),
        ),
    );
    routes.insert(
        api("acme/old", "refs%2Fconvert%2Fparquet"),
        (
            200,
            br#"{"sha":"bbb2","siblings":[{"rfilename":"default/train/0000.parquet"}]}"#.to_vec(),
        ),
    );
    routes.insert(
        "/datasets/acme/old/resolve/bbb2/default/train/0000.parquet".into(),
        (200, shard("d.parquet", &[("a converted row", 5)])),
    );
    routes.insert(api("acme/private", "main"), (401, b"{}".to_vec()));
    let hub = fake_hub(routes);
    let cache = common::temp_dir("hub-download-cache");
    let config = HubConfig {
        endpoint: hub.url.clone(),
        cache: cache.clone(),
        token: Some("hf_test".into()),
        offline: false,
    };
    let requests = || hub.seen.lock().expect("lock").len();
    let prompts = |p: &std::path::Path| -> Vec<String> {
        load(&p.display().to_string())
            .expect("read")
            .iter()
            .map(|s| s.prompt.to_string())
            .collect()
    };

    let p = hub::resolve_or_download(&config, "acme/qa", None, None).expect("downloaded");
    assert_eq!(
        prompts(&p),
        ["first train row", "second train row", "third train row"]
    );
    let repo = cache.join("datasets--acme--qa");
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).expect("ref"),
        "c0ffee1"
    );
    assert!(repo
        .join("snapshots/c0ffee1/data/train-00001-of-00002.parquet")
        .is_file());
    assert!(!repo
        .join("snapshots/c0ffee1/data/test-00000-of-00001.parquet")
        .exists());
    let seen = hub.seen.lock().expect("lock").clone();
    assert!(seen
        .iter()
        .all(|(path, _)| !path.contains("test-") && !path.contains("evil")));
    assert!(seen
        .iter()
        .all(|(_, auth)| auth.as_deref() == Some("Bearer hf_test")));
    // In the cache now: no request.
    let before = requests();
    hub::resolve_or_download(&config, "acme/qa", None, None).expect("cached");
    assert_eq!(requests(), before);
    // Another split of a cached dataset is fetched when asked for.
    let p = hub::resolve_or_download(&config, "acme/qa", None, Some("test")).expect("test split");
    assert_eq!(prompts(&p), ["a test row"]);
    // No parquet in main: the Hub's parquet conversion.
    let p = hub::resolve_or_download(&config, "acme/old", None, None).expect("conversion");
    assert_eq!(prompts(&p), ["a converted row"]);
    assert_eq!(
        std::fs::read_to_string(cache.join("datasets--acme--old/refs/refs/convert/parquet"))
            .expect("ref"),
        "bbb2"
    );
    // Errors: a split the Hub does not have, a private dataset, offline.
    let e = hub::resolve_or_download(&config, "acme/qa", None, Some("dev"))
        .expect_err("no such split")
        .to_string();
    assert!(e.contains("\"dev\"") && e.contains("test, train"), "{e}");
    let e = hub::resolve_or_download(&config, "acme/private", None, None)
        .expect_err("private")
        .to_string();
    assert!(e.contains("acme/private") && e.contains("HF_TOKEN"), "{e}");
    let offline = HubConfig {
        offline: true,
        ..config.clone()
    };
    let before = requests();
    let e = hub::resolve_or_download(&offline, "acme/other", None, None)
        .expect_err("offline")
        .to_string();
    assert_eq!(requests(), before, "offline: no request");
    assert!(e.contains("HF_HUB_OFFLINE"), "{e}");
}
