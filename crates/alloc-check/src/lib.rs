//! Nothing but a home for `tests/allocations.rs`: the heap allocations of bench's hot path per
//! request, counted with a counting global allocator that must not be installed in the test
//! binaries and benchmarks of the other crates.
