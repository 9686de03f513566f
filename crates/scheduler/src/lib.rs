//! The scheduler of bench: drives a backend with request specs according to a load strategy
