//! The images a benchmark's chat requests sent (docs/metrics.md, "Images"): counted over its
//! included requests (any status: an image was sent whether or not the answer came), kept
//! aside for the few benchmarks that send images, so that a benchmark without images costs
//! nothing.

use bench_core::{ImageCounts, Pages, Phase, TokenSource, Window};
use serde::{Deserialize, Serialize};

use crate::figures::compact::Compact;

/// The images of a benchmark's included requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageReport {
    /// Included requests that sent images.
    pub requests: u64,
    /// Images sent.
    pub count: u64,
    /// Their pixels (`width × height`; images of unknown size, URLs bench did not read, count 0).
    pub pixels: u64,
    /// Their encoded bytes (not the base64 text).
    pub bytes: u64,
    /// `count / requests`.
    pub count_per_request: f64,
    /// `pixels / requests`.
    pub pixels_per_request: f64,
    /// `bytes / requests`.
    pub bytes_per_request: f64,
    /// Whether the prompt-token figures (`tokens.prompt`) include the images' tokens: `true`
    /// when every such request's prompt count came from the server's usage (which counts
    /// them), `false` when some came from bench's tokenizer (which counts the text only).
    pub prompt_tokens_include_images: bool,
}

/// The image counts of the requests that sent images: `(place in the accumulator, counts)`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImageLedger(Vec<(u64, ImageCounts)>);

impl ImageLedger {
    /// Notes that the request at `index` (its place in the accumulator) sent `counts`.
    pub(crate) fn add(&mut self, index: u64, counts: ImageCounts) {
        self.0.push((index, counts));
    }

    /// The report over the requests `window` includes; `None` when none of them sent images.
    pub(crate) fn report(&self, requests: &Pages<Compact>, window: &Window) -> Option<ImageReport> {
        let mut r = ImageReport {
            prompt_tokens_include_images: true,
            ..ImageReport::default()
        };
        for (i, c) in &self.0 {
            let Some(req) = requests.get(*i, 0) else {
                continue;
            };
            if window.phase(req.dispatched, req.end) != Phase::Measured {
                continue;
            }
            r.requests += 1;
            r.count += u64::from(c.count);
            r.pixels += c.pixels;
            r.bytes += c.bytes;
            r.prompt_tokens_include_images &= req.prompt_source == TokenSource::Usage;
        }
        with_means(r)
    }
}

/// `r` with its per-request means; `None` without a request.
fn with_means(mut r: ImageReport) -> Option<ImageReport> {
    if r.requests == 0 {
        return None;
    }
    let n = r.requests as f64;
    r.count_per_request = r.count as f64 / n;
    r.pixels_per_request = r.pixels as f64 / n;
    r.bytes_per_request = r.bytes as f64 / n;
    Some(r)
}

/// The images of several shards' requests together (`bench merge`).
pub(crate) fn merge<'a>(parts: impl Iterator<Item = &'a ImageReport>) -> Option<ImageReport> {
    let r = parts.fold(
        ImageReport {
            prompt_tokens_include_images: true,
            ..ImageReport::default()
        },
        |a, p| ImageReport {
            requests: a.requests + p.requests,
            count: a.count + p.count,
            pixels: a.pixels + p.pixels,
            bytes: a.bytes + p.bytes,
            prompt_tokens_include_images: a.prompt_tokens_include_images
                && p.prompt_tokens_include_images,
            ..a
        },
    );
    with_means(r)
}
