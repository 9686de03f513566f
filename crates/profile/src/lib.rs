//! Load shapes of bench: synchronous, concurrent, throughput, constant, poisson, burst and sweep, with warmup and cooldown
