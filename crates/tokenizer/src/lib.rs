//! Tokenizers for bench: tokenizer.json loading, Hugging Face id resolution, and the built-in default
