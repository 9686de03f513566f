//! Request data for bench: exact-length synthetic prompts and real datasets
