//! Sessions' tools (docs/data.md, "Tool calls"): the definitions every turn sends, synthetic
//! (`tools=N` of `tool_tokens` each) or read from `tools_file`, and the tool result a tool call
//! is answered with (`tool_result_tokens`).
//!
//! A definition is kept as *canonical* JSON text (serde_json's compact form, keys in order), so
//! that a server re-serializing it gets the same text: the text bench counts is the one a chat
//! template renders (`tools` go into the prompt as JSON, e.g. `tojson` in Llama 3.1's and Qwen
//! 2.5's templates). Its tokens are that text counted by the loader's tokenizer.

use std::sync::Arc;

use bench_core::Tools;
use rand::Rng;

use crate::Error;

/// A session's tools (docs/data.md, "Tool calls").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolKeys {
    /// Synthetic definitions (0 with a file).
    pub count: u32,
    /// Tokens of each synthetic definition.
    pub tokens: u32,
    /// A JSON file holding a list of definitions.
    pub file: Option<std::path::PathBuf>,
    /// Tokens of the tool result.
    pub result_tokens: u32,
}

/// Tokens of a synthetic tool definition unless `tool_tokens` says.
pub const DEFAULT_TOOL_TOKENS: u32 = 200;
/// Tokens of a tool result unless `tool_result_tokens` says.
pub const DEFAULT_TOOL_RESULT_TOKENS: u32 = 128;

/// What tools are written with: the prompts' composer, seen only as counting and composing
/// text (so this module needs nothing of the synthetic prompts' own).
pub(crate) trait Texts {
    /// Tokens of `text`.
    fn count(&self, text: &str) -> u32;
    /// A text of exactly `tokens` tokens.
    fn compose_text<R: Rng>(&self, tokens: u32, rng: &mut R) -> Result<String, Error>;
}

/// Attempts at sizing a synthetic definition's description to its exact count.
const SIZING_ROUNDS: usize = 8;

/// The tools of `keys`: the definitions (synthetic or from the file) and the tool result.
pub(crate) fn make<R: Rng>(
    keys: &ToolKeys,
    composer: &impl Texts,
    rng: &mut R,
) -> Result<Tools, Error> {
    let definitions = match &keys.file {
        Some(path) => from_file(path)?,
        None => (0..keys.count)
            .map(|i| synthetic(i, keys.tokens, composer, rng))
            .collect::<Result<_, _>>()?,
    };
    let definition_tokens = definitions
        .iter()
        .map(|d: &Arc<str>| composer.count(d))
        .fold(0, u32::saturating_add);
    let result = composer.compose_text(keys.result_tokens, rng)?;
    Ok(Tools {
        definitions,
        definition_tokens,
        result_tokens: composer.count(&result),
        result: result.into(),
    })
}

/// The canonical text of definition `i` with `description`.
fn definition(i: u32, description: &str) -> String {
    serde_json::json!({
        "type": "function",
        "function": {
            "name": format!("tool_{i}"),
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"input": {"type": "string"}},
                "required": ["input"],
            },
        },
    })
    .to_string()
}

/// Synthetic definition `i` of `tokens` tokens: its description sized until the definition's
/// text counts exactly that (the JSON around it takes some; fewer is an error).
fn synthetic<R: Rng>(
    i: u32,
    tokens: u32,
    composer: &impl Texts,
    rng: &mut R,
) -> Result<Arc<str>, Error> {
    let bare = composer.count(&definition(i, ""));
    if tokens <= bare {
        return Err(Error::Spec(format!(
            "tool_tokens={tokens}: a tool definition takes at least {} tokens (its JSON takes {bare})",
            bare + 1
        )));
    }
    let mut words = tokens - bare;
    let mut text = String::new();
    for _ in 0..SIZING_ROUNDS {
        let description = composer.compose_text(words, rng)?;
        text = definition(i, description.trim_start());
        let got = composer.count(&text);
        if got == tokens {
            break;
        }
        words = (i64::from(words) + i64::from(tokens) - i64::from(got)).max(1) as u32;
    }
    Ok(text.into())
}

/// The definitions of a JSON file holding a list of them (each made canonical).
fn from_file(path: &std::path::Path) -> Result<Vec<Arc<str>>, Error> {
    let bad = |why: String| Error::Spec(format!("tools_file {}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let list = v
        .as_array()
        .ok_or_else(|| bad("expected a JSON list of tool definitions".into()))?;
    if list.is_empty() {
        return Err(bad("the list of tool definitions is empty".into()));
    }
    list.iter()
        .enumerate()
        .map(|(k, d)| match d.get("function").and_then(|f| f.get("name")) {
            Some(serde_json::Value::String(_)) => Ok(d.to_string().into()),
            _ => Err(bad(format!(
                "definition {k} has no function.name (OpenAI's {{\"type\": \"function\", \"function\": {{\"name\", ...}}}})"
            ))),
        })
        .collect()
}
