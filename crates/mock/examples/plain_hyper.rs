//! Baseline for `benches/simulator.sh`: the simplest hyper server that answers every request
//! with the same precomputed 128-token SSE body written in one go, as a new user would write
//! it. The simulator's zero-delay mode is measured side by side with it.
//!
//! `cargo run --release -p bench-mock --example plain_hyper` prints `listening on URL`.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut body = String::new();
    for i in 0..128 {
        let fin = if i == 127 { "\"length\"" } else { "null" };
        body.push_str(&format!(
            "data: {{\"id\":\"cmpl-0000000000000000\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"mock-model\",\"choices\":[{{\"index\":0,\"text\":\" word\",\"logprobs\":null,\"finish_reason\":{fin},\"stop_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"id\":\"cmpl-0000000000000000\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"mock-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"total_tokens\":136,\"completion_tokens\":128}}\n\ndata: [DONE]\n\n");
    let body = Bytes::from(body);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}", listener.local_addr()?);
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let body = body.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                let body = body.clone();
                async move {
                    // Read the request body, as any server must.
                    let _ = req.into_body().collect().await;
                    let mut r = Response::new(Full::new(body));
                    r.headers_mut().insert(
                        "content-type",
                        hyper::header::HeaderValue::from_static("text/event-stream"),
                    );
                    Ok::<_, Infallible>(r)
                }
            });
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}
