//! The views: the figures rendered for people and for other tools.
//!
//! This tree owns every output format: the guidellm console ([`guidellm`]) and the vLLM
//! console ([`vllm`]) with their shared sections (server metrics [`server`], speculative
//! decoding [`spec_view`], the GPUs [`gpu_view`], a model mix [`models_view`], the steady state
//! [`steady_view`], reasoning [`reasoning_view`], sessions [`turns_view`], images
//! [`images_view`], capacity [`capacity_view`], trials and shard clocks [`runs_view`], the
//! precision check's lines [`precision_view`], the per-target line [`targets_view`]), the CSV, JSON and YAML files ([`files`],
//! [`interval_view`]), the HTML page and its SVG charts ([`html`], [`html_server`],
//! [`sweep_html`], [`svg`]), the vLLM result files ([`vllm_result`]), the comparison of runs
//! ([`compare`], [`compare_html`], [`compare_md`]) and its regression gate ([`gate`]), and the
//! views' own options ([`options`]). The tables, charts and page style are public
//! ([`crate::draw`]) for the deployment plan's views, which are `bench-plan`'s.
//!
//! A view may import any figure (`crate::figures`), the crate's [`crate::Error`], the views'
//! [`options`], and other views whose output it embeds: a console or page embeds its sections
//! (the vLLM console the steady-state line, the HTML page the session and server sections),
//! the HTML views draw their charts with [`svg`], the HTML and Markdown comparisons show the changes
//! [`compare`] judged, the gate judges rules by them, the files embed the HTML page and the sections' CSV columns. Helpers
//! (escaping, wrapping, number, time and capacity wording, the console table builder) come only
//! from [`common`], which imports figures alone, never from another view. No module here
//! imports one that imports it back (`tests/layers.rs` checks).

pub(crate) mod cancel_view;
pub(crate) mod capacity_view;
pub(crate) mod common;
pub(crate) mod compare;
pub(crate) mod compare_html;
pub(crate) mod compare_md;
pub(crate) mod files;
pub(crate) mod gate;
pub(crate) mod gpu_view;
pub(crate) mod guidellm;
pub(crate) mod html;
pub(crate) mod html_server;
pub(crate) mod images_view;
pub(crate) mod interval_view;
pub(crate) mod models_view;
pub(crate) mod options;
pub(crate) mod precision_view;
pub(crate) mod ramp_view;
pub(crate) mod reasoning_view;
pub(crate) mod runs_view;
pub(crate) mod server;
pub(crate) mod spec_view;
pub(crate) mod steady_view;
pub(crate) mod svg;
pub(crate) mod sweep_html;
pub(crate) mod targets_view;
pub(crate) mod turns_view;
pub(crate) mod vllm;
pub(crate) mod vllm_result;
