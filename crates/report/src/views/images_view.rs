//! The images' figures ([`crate::figures::images`]) as CSV cells and as the vLLM console's
//! "Images" section.

use crate::figures::model::BenchmarkReport;

/// CSV columns of the images (empty without them).
pub(crate) const CSV_COLUMNS: &[&str] = &[
    "image_requests",
    "images",
    "image_pixels",
    "image_bytes",
    "prompt_tokens_include_images",
];

/// The [`CSV_COLUMNS`] cells of `b`.
pub(crate) fn csv_cells(b: &BenchmarkReport) -> Vec<String> {
    match &b.images {
        Some(i) => vec![
            i.requests.to_string(),
            i.count.to_string(),
            i.pixels.to_string(),
            i.bytes.to_string(),
            i.prompt_tokens_include_images.to_string(),
        ],
        None => vec![String::new(); CSV_COLUMNS.len()],
    }
}

/// The vLLM console's "Images" section (empty without images).
pub(crate) fn vllm_section(b: &BenchmarkReport, centered: impl Fn(&str) -> String) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let Some(i) = &b.images else {
        return out;
    };
    let _ = writeln!(out, "{}", centered("Images"));
    let _ = writeln!(out, "{:<40} {:<10}", "Requests with images:", i.requests);
    let _ = writeln!(out, "{:<40} {:<10}", "Images sent:", i.count);
    let _ = writeln!(
        out,
        "{:<40} {:<10.2}",
        "Images per request:", i.count_per_request
    );
    let _ = writeln!(
        out,
        "{:<40} {:<10.0}",
        "Pixels per request:", i.pixels_per_request
    );
    let _ = writeln!(
        out,
        "{:<40} {:<10.0}",
        "Image bytes per request:", i.bytes_per_request
    );
    let include = if i.prompt_tokens_include_images {
        "yes (server usage)"
    } else {
        "no (text only)"
    };
    let _ = writeln!(
        out,
        "{:<40} {include}",
        "Input tokens include image tokens:"
    );
    out
}
