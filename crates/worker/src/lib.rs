//! HTTP/1.1, HTTP/2 and TLS generative-request backends for bench, with per-chunk timing
