//! Conversations replayed turn by turn (sessions): ShareGPT files (`conversations`, a list of
//! `{"from", "value"}`) and `.jsonl` / `.json` records with a `messages` list of `{"role",
//! "content"}`.
//!
//! Every user message becomes a turn, in order; its output length is the token count of the
//! recorded reply that follows it (or the fixed `output_tokens`). The recorded replies are never
//! sent: a session resends the server's own replies. A leading system message is the
//! conversation's system prompt. A user message with no recorded reply (and no fixed output
//! length) ends the conversation there, as do `turns=N` turns. Conversations without a usable
//! turn are skipped.

use std::path::PathBuf;
use std::sync::Arc;

use bench_core::{ConversationSpec, RequestSpec};
use bench_tokenizer::Tokenizer;
use serde_json::{Map, Value};

use crate::files::{Records, Row};
use crate::spec::ConversationFileConfig;
use crate::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    System,
    User,
    Assistant,
}

fn role(name: &str) -> Option<Role> {
    Some(match name.to_ascii_lowercase().as_str() {
        "system" => Role::System,
        "human" | "user" => Role::User,
        "gpt" | "assistant" | "chatgpt" | "bard" | "bing" | "model" => Role::Assistant,
        _ => return None,
    })
}

/// The messages of a record, in order, from `conversations` (ShareGPT), `messages`, or
/// `conversation` (Hugging Face chat sets such as lmsys-chat-1m, `{"role", "content"}`).
fn messages(m: &Map<String, Value>) -> Option<Vec<(Role, &str)>> {
    let role_content = m.get("messages").or(m.get("conversation"));
    let (list, role_key, text_key) = match (m.get("conversations"), role_content) {
        (Some(Value::Array(c)), _) => (c, "from", "value"),
        (_, Some(Value::Array(c))) => (c, "role", "content"),
        _ => return None,
    };
    Some(
        list.iter()
            .filter_map(|msg| {
                let r = role(msg.get(role_key)?.as_str()?)?;
                Some((r, msg.get(text_key)?.as_str()?))
            })
            .collect(),
    )
}

/// Conversations from a file, lazily.
#[derive(Debug)]
pub(crate) struct ConversationSource {
    config: ConversationFileConfig,
    tokenizer: Tokenizer,
    records: Records,
}

impl ConversationSource {
    pub(crate) fn new(config: ConversationFileConfig, tokenizer: Tokenizer) -> Result<Self, Error> {
        Ok(ConversationSource {
            records: Records::open(&config.path, config.format, config.samples)?,
            config,
            tokenizer,
        })
    }

    pub(crate) fn path(&self) -> &PathBuf {
        self.records.path()
    }

    pub(crate) fn reset(&mut self) -> Result<(), Error> {
        self.records.reset()
    }

    fn count(&self, text: &str) -> Result<u32, Error> {
        Ok(u32::try_from(self.tokenizer.try_encode(text)?.len()).unwrap_or(u32::MAX))
    }

    pub(crate) fn next_conversation(&mut self) -> Result<Option<ConversationSpec>, Error> {
        loop {
            let Some(row) = self.records.next()? else {
                return Ok(None);
            };
            let Row::Object(m) = row else { continue };
            let Some(msgs) = messages(&m) else { continue };
            if let Some(c) = self.conversation(&msgs)? {
                self.records.use_one();
                return Ok(Some(c));
            }
        }
    }

    /// The turns of one record's messages; `None` when it has no usable turn.
    fn conversation(&self, msgs: &[(Role, &str)]) -> Result<Option<ConversationSpec>, Error> {
        let system: String = msgs
            .iter()
            .take_while(|(r, _)| *r == Role::System)
            .map(|(_, t)| *t)
            .collect::<Vec<_>>()
            .join("\n");
        let max = self.config.max_turns.map_or(usize::MAX, |n| n as usize);
        let mut turns = Vec::new();
        let mut i = 0;
        while i < msgs.len() && turns.len() < max {
            if msgs[i].0 != Role::User {
                i += 1;
                continue;
            }
            let user = msgs[i].1;
            let reply = msgs.get(i + 1).filter(|(r, _)| *r == Role::Assistant);
            let output = match (self.config.output_tokens, reply) {
                (Some(n), _) => n,
                (None, Some((_, text))) => self.count(text)?.max(1),
                (None, None) => break,
            };
            turns.push(RequestSpec {
                prompt: user.into(),
                prompt_tokens: self.count(user)?,
                output_tokens: Some(output),
                at: None,
                batch: Vec::new(),
                images: Vec::new(),
            });
            i += 1;
        }
        if turns.is_empty() {
            return Ok(None);
        }
        let system_tokens = if system.is_empty() {
            0
        } else {
            self.count(&system)?
        };
        Ok(Some(ConversationSpec {
            system: Arc::from(system),
            system_tokens,
            turns,
        }))
    }
}
