//! Writes the small example traces of `examples/traces/`, one per format, from a fixed seed:
//! `cargo run -p bench-loader --example make_traces [DIR]` (default `examples/traces`). The
//! files are ours, made here (never copied from a published trace); a test
//! (`crates/loader/tests/it/trace.rs`) checks that the shipped files are exactly what this makes
//! and that each parses.

use std::fmt::Write as _;

/// A small deterministic generator (SplitMix64), so the files never depend on a crate's
/// random streams.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Rows of a conversational service: 8 system prompts (a few blocks each, shared by the
/// conversations that use them), conversations of 1-4 turns whose later turns extend the
/// earlier turn's blocks (its partial last block becomes whole), bursty arrivals. Returns `(ms, input_length, output_length,
/// hash_ids, conversation, turn)`.
#[allow(clippy::type_complexity)]
fn conversations(g: &mut Gen, rows: usize, block: u64) -> Vec<(u64, u64, u64, Vec<u64>, u64, u64)> {
    let mut next_id = 1000u64;
    let systems: Vec<Vec<u64>> = (0..8u64)
        .map(|s| (0..g.range(1, 3)).map(|k| s * 10 + k).collect())
        .collect();
    let mut out = Vec::new();
    let mut t = 0u64;
    let mut conv = 0u64;
    while out.len() < rows {
        let mut ids = systems[(g.next() % 8) as usize].clone();
        let turns = g.range(1, 4);
        for turn in 1..=turns {
            let new_blocks = g.range(1, 3);
            for _ in 0..new_blocks {
                ids.push(next_id);
                next_id += 1;
            }
            let input = (ids.len() as u64 - 1) * block + g.range(1, block);
            let output = g.range(8, 200);
            out.push((t, input, output, ids.clone(), conv, turn));
            // Bursts: most gaps short, some long.
            t += if g.next() % 5 == 0 {
                g.range(500, 2000)
            } else {
                g.range(0, 120)
            };
        }
        conv += 1;
    }
    out.truncate(rows);
    out
}

/// Every example trace: (file name, contents).
pub fn traces() -> Vec<(&'static str, String)> {
    let mut g = Gen(2026);
    let mut mooncake = String::new();
    for (t, i, o, ids, _, _) in conversations(&mut g, 60, 512) {
        let _ = writeln!(
            mooncake,
            "{{\"timestamp\": {t}, \"input_length\": {i}, \"output_length\": {o}, \"hash_ids\": {ids:?}}}"
        );
    }
    let mut bailian = String::new();
    for (t, i, o, ids, conv, turn) in conversations(&mut g, 60, 16) {
        let parent = if turn > 1 {
            format!("{}", conv * 10 + turn - 1)
        } else {
            "-1".into()
        };
        let _ = writeln!(
            bailian,
            "{{\"chat_id\": {}, \"parent_chat_id\": {parent}, \"timestamp\": {t}, \"input_length\": {i}, \"output_length\": {o}, \"type\": \"text\", \"turn\": {turn}, \"hash_ids\": {ids:?}}}",
            conv * 10 + turn
        );
    }
    let mut azure = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
    let mut ns: u64 = 0;
    for _ in 0..60 {
        ns += g.range(0, 900_000_000);
        let (s, frac) = (ns / 1_000_000_000, ns % 1_000_000_000 / 100);
        let _ = writeln!(
            azure,
            "2023-11-16 18:{:02}:{:02}.{frac:07},{},{}",
            15 + s / 60,
            s % 60,
            g.range(20, 4000),
            g.range(5, 700)
        );
    }
    let mut burst =
        String::from("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n");
    let mut secs = 5u64;
    for _ in 0..60 {
        secs += g.range(0, 4);
        let model = if g.next() % 4 == 0 {
            "GPT-4"
        } else {
            "ChatGPT"
        };
        let log = if g.next() % 3 == 0 {
            "API log"
        } else {
            "Conversation log"
        };
        let req = g.range(10, 2000);
        // BurstGPT records failed requests with 0 response tokens.
        let resp = if g.next() % 15 == 0 {
            0
        } else {
            g.range(5, 600)
        };
        let _ = writeln!(burst, "{secs},{model},{req},{resp},{},{log}", req + resp);
    }
    let mut plain = String::new();
    let mut ms = 0u64;
    let words = [
        "river", "stone", "light", "paper", "cloud", "garden", "window", "music",
    ];
    for k in 0..30u64 {
        ms += g.range(0, 400);
        let o = g.range(16, 256);
        let line = match k % 3 {
            0 => {
                let text: Vec<&str> = (0..g.range(5, 40)).map(|_| words[(g.next() % 8) as usize]).collect();
                format!("{{\"timestamp\": {ms}, \"prompt\": \"Tell me about {}.\", \"output_length\": {o}}}", text.join(" "))
            }
            1 => format!(
                "{{\"timestamp\": {ms}, \"messages\": [{{\"role\": \"system\", \"content\": \"You are terse.\"}}, {{\"role\": \"user\", \"content\": \"Summarise the {} report.\"}}], \"output_length\": {o}}}",
                words[(g.next() % 8) as usize]
            ),
            _ => format!("{{\"timestamp\": {ms}, \"input_length\": {}, \"output_length\": {o}}}", g.range(50, 3000)),
        };
        plain.push_str(&line);
        plain.push('\n');
    }
    vec![
        ("mooncake.jsonl", mooncake),
        ("bailian.jsonl", bailian),
        ("azure.csv", azure),
        ("burstgpt.csv", burst),
        ("plain.jsonl", plain),
    ]
}

#[allow(dead_code)]
fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "examples/traces".into());
    std::fs::create_dir_all(&dir)?;
    for (name, text) in traces() {
        std::fs::write(std::path::Path::new(&dir).join(name), text)?;
    }
    Ok(())
}
