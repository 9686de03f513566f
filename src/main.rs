//! The `bench` binary: a thin shell around [`bench_cli`].

/// jemalloc instead of glibc's malloc. With glibc the client's peak RSS grew with every
/// benchmark of the same size (39 -> 68 MiB over six of 50,000 requests at 5,000 req/s): the
/// live heap does not grow (heaptrack), but glibc keeps what a benchmark freed (its large
/// buffers come from the heap once the dynamic mmap threshold has risen, and per-thread arenas
/// fragment). jemalloc returns it. Measured side by side, with the client ceiling at 10,000
/// req/s (not worse: less CPU per request), in docs/reliability.md (Soak).
///
/// Built with jemalloc's background threads (the `background_threads` feature): returning freed
/// memory to the OS (decay purging, `madvise`) then runs on jemalloc's own thread instead of
/// inline in a `malloc`/`free` on a runtime worker, where it held up every task queued behind it.
/// In the simulator (`bench mock-server`, the same binary) that pause was one of the starts of
/// the slow 15,000 req/s runs of issue 25 (docs/performance.md, "Allocator").
/// Freed pages wait 30 s before they go back to the OS (`dirty_decay_ms`, compiled in by
/// `.cargo/config.toml`; docs/performance.md, "Allocator").
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    bench_cli::main()
}
