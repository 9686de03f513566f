//! Reading what a server says its batch is ([`ServerBatch`], docs/metrics.md, "The server's
//! batch") from the answers of vLLM, llama.cpp and SGLang.

use bench_core::ServerBatch;

/// Reads a batch from an answer's body.
pub type Parse = fn(&[u8]) -> Option<ServerBatch>;

/// The batch from a Prometheus text: the first `vllm:*_info` series with a label named
/// `max_num_seqs` or ending in `_max_num_seqs` (vLLM's `vllm:vllm_config_info` writes
/// `scheduler_config_max_num_seqs`), whose value is a positive integer.
pub fn from_vllm_metrics(text: &str) -> Option<ServerBatch> {
    text.lines()
        .filter(|l| l.starts_with("vllm:"))
        .filter(|l| l.split('{').next().is_some_and(|n| n.ends_with("_info")))
        .find_map(|l| {
            let labels = l.split_once('{')?.1.rsplit_once('}')?.0;
            labels.split(',').find_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                let k = k.trim();
                (k == "max_num_seqs" || k.ends_with("_max_num_seqs"))
                    .then(|| positive(v.trim().trim_matches('"')))?
            })
        })
        .map(|size| ServerBatch::new(size, "vllm_max_num_seqs"))
}

/// The batch from llama.cpp's `/props` body: `total_slots`.
pub fn from_llamacpp_props(body: &[u8]) -> Option<ServerBatch> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let size = positive(&v.get("total_slots")?.to_string())?;
    Some(ServerBatch::new(size, "llamacpp_total_slots"))
}

/// The batch from SGLang's `/get_server_info` body: `max_running_requests` (a server argument;
/// also read inside `internal_states`, where newer versions report it).
pub fn from_sglang_info(body: &[u8]) -> Option<ServerBatch> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let direct = v.get("max_running_requests");
    let internal = v
        .get("internal_states")
        .and_then(|s| s.get(0))
        .and_then(|s| s.get("max_running_requests"));
    let size = positive(&direct.or(internal)?.to_string())?;
    Some(ServerBatch::new(size, "sglang_max_running_requests"))
}

/// A positive integer (a float written as one, such as `64.0`, counts).
fn positive(s: &str) -> Option<u32> {
    let x: f64 = s.parse().ok()?;
    (x >= 1.0 && x.fract() == 0.0 && x <= f64::from(u32::MAX)).then_some(x as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_says_its_batch_in_an_info_series_label() {
        let text = "# HELP vllm:vllm_config_info Information of the LLMEngine VllmConfig\n\
            # TYPE vllm:vllm_config_info gauge\n\
            vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"573\"} 1.0\n\
            vllm:vllm_config_info{cache_config_block_size=\"16\",scheduler_config_max_num_seqs=\"256\"} 1.0\n";
        let b = from_vllm_metrics(text).expect("batch");
        assert_eq!((b.size, b.source.as_str()), (256, "vllm_max_num_seqs"));
        // A label of that name on a series that is not an info series, or a bad value: none.
        assert_eq!(
            from_vllm_metrics("vllm:num_requests_running{max_num_seqs=\"8\"} 1\n"),
            None
        );
        assert_eq!(
            from_vllm_metrics("vllm:x_info{max_num_seqs=\"None\"} 1\n"),
            None
        );
        assert_eq!(from_vllm_metrics(""), None);
    }

    #[test]
    fn llamacpp_and_sglang_say_theirs_in_json() {
        let b = from_llamacpp_props(br#"{"total_slots":32,"model_alias":"m"}"#);
        assert_eq!(b.map(|b| b.size), Some(32));
        assert_eq!(from_llamacpp_props(b"{}"), None);
        assert_eq!(from_llamacpp_props(br#"{"total_slots":0}"#), None);
        let s = from_sglang_info(br#"{"max_running_requests":48}"#).expect("sglang");
        assert_eq!(
            (s.size, s.source_words()),
            (48, "SGLang max_running_requests, /get_server_info")
        );
        let inner = br#"{"internal_states":[{"max_running_requests":96}]}"#;
        assert_eq!(from_sglang_info(inner).map(|b| b.size), Some(96));
        assert_eq!(from_sglang_info(b"not json"), None);
    }
}
