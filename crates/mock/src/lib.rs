//! A continuous-batching LLM inference server simulator (OpenAI and TGI APIs) with fault injection
