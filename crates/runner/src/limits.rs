//! The open-file limit. Every request in flight over HTTP/1.1 holds a socket (two with
//! `--mock`: the simulator's end is in the same process; HTTP/2 streams share one), so a run
//! whose concurrency does not fit under `RLIMIT_NOFILE` turns into a storm of "Too many open
//! files" errors. At start the soft limit is raised to the hard limit; a run that still cannot
//! fit is refused before it starts.

use std::net::{IpAddr, Ipv4Addr};

use bench_profile::{Profile, Strategy};
use nix::fcntl::{fcntl, FcntlArg};
use nix::sys::resource::{getrlimit, setrlimit, Resource};

use crate::UsageError;

/// Descriptors kept aside for everything that is not a request socket (stdio, the runtime,
/// the tokenizer and data files, output files, the simulator's listener).
pub const RESERVED_FDS: u64 = 64;

/// Raises the soft open-file limit to the hard limit, and both to `want` descriptors when the
/// hard limit is lower and the process may raise it (root, or `CAP_SYS_RESOURCE`); returns
/// the soft limit now in force (`None` when the limit cannot be read).
pub fn raise_open_files(want: Option<u64>) -> Option<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if let Some(w) = want.filter(|&w| w > hard) {
        if setrlimit(Resource::RLIMIT_NOFILE, w, w).is_ok() {
            return Some(w);
        }
    }
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Some(hard);
    }
    Some(soft)
}

/// What a process that will open many connections does first: raises the open-file limit
/// towards `limit` ([`raise_open_files`]), then grows the descriptor table for `needed`
/// descriptors within it ([`table_slots`], [`presize_descriptor_table`]). Returns the soft
/// limit now in force (`None` when it cannot be read; the table is then left alone).
pub fn make_room(limit: Option<u64>, needed: Option<u64>) -> Option<u64> {
    let soft = raise_open_files(limit)?;
    presize_descriptor_table(table_slots(needed, soft));
    Some(soft)
}

/// Descriptor slots the kernel's table holds from the start of a run, unless the open-file
/// limit is lower or the planned concurrency needs more. Each slot costs the kernel about
/// 8 bytes (half a MiB for these).
pub const PRESIZED_FDS: u64 = 65_536;

/// The slots to reserve for `needed` descriptors (when the plan knows them) under the soft
/// open-file limit `soft`.
pub fn table_slots(needed: Option<u64>, soft: u64) -> u64 {
    needed.unwrap_or(0).max(PRESIZED_FDS).min(soft)
}

/// Grows this process's descriptor table to `slots` entries now, before any connection is
/// opened, by placing a descriptor in the last slot and closing it again (the kernel never
/// shrinks the table).
///
/// Linux grows the table by doubling when a new descriptor lands past its end. In a process of
/// several threads each growth waits for an RCU grace period, and every other thread that opens
/// a descriptor meanwhile (a connect, an accept) waits with it: a stall of milliseconds to tens
/// of milliseconds, mid-run, at the moment the connection count climbs, which makes it climb
/// further (docs/performance.md, "The descriptor table, grown before the run"). Best effort:
/// returns the slots now reserved, `None` when the OS refused (the table then grows as before).
pub fn presize_descriptor_table(slots: u64) -> Option<u64> {
    let last = std::os::fd::RawFd::try_from(slots.checked_sub(1)?).ok()?;
    let null = std::fs::File::open("/dev/null").ok()?;
    let fd = fcntl(&null, FcntlArg::F_DUPFD_CLOEXEC(last)).ok()?;
    let _ = nix::unistd::close(fd);
    Some(slots)
}

/// The descriptors each request in flight holds: over HTTP/1.1 its own connection (and, with
/// `--mock`, the simulator's end of it in this process); over HTTP/2 none, since its streams
/// share one connection per server (taken from the reserve).
pub fn descriptors_per_request(http2: bool, mock: bool) -> u64 {
    match (http2, mock) {
        (true, _) => 0,
        (false, true) => 2,
        (false, false) => 1,
    }
}

/// The descriptors `concurrency` requests need (`per_request` each, plus the reserve).
pub fn descriptors(concurrency: u64, per_request: u64) -> u64 {
    concurrency
        .saturating_mul(per_request)
        .saturating_add(RESERVED_FDS)
}

/// Connections one source address can hold open to one server address: the ephemeral port
/// range (Linux `ip_local_port_range`, else its default of 28,232), less a tenth kept for
/// connections in `TIME_WAIT` and for other programs.
pub fn ports_per_source() -> u64 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|n| n.parse::<u64>().ok());
            Some(it.next()??..=it.next()??)
        })
        .map_or(28_232, |r| r.end().saturating_sub(*r.start()) + 1);
    range - range / 10
}

/// For a loopback target (127.x.x.x or `localhost`) whose planned concurrency is more than one
/// source address's ports hold: the source addresses 127.0.0.1, 127.0.0.2, ... that hold it
/// (every 127.x address is this machine's). Empty otherwise: the OS chooses.
pub fn loopback_sources(target: &str, planned: Option<u64>, per_source: u64) -> Vec<IpAddr> {
    let Some(c) = planned.filter(|&c| c > per_source) else {
        return Vec::new();
    };
    if !is_ipv4_loopback(target) {
        return Vec::new();
    }
    let n = c.div_ceil(per_source.max(1)).min(250) as u8;
    (1..=n)
        .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
        .collect()
}

/// Whether `url`'s host is an IPv4 loopback address or `localhost`.
fn is_ipv4_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host_port.split(':').next().unwrap_or_default();
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// The soft open-file limit in force (`None` when it cannot be read).
pub fn open_files() -> Option<u64> {
    getrlimit(Resource::RLIMIT_NOFILE)
        .ok()
        .map(|(soft, _)| soft)
}

/// Why a run was stopped when a request could not connect for want of a file descriptor
/// (`message`, the connect error): the client's limit, named with what to do.
pub fn exhausted(soft: Option<u64>, message: &str) -> String {
    let limit = soft.map_or_else(|| "unknown".to_string(), |n| n.to_string());
    format!(
        "the client ran out of file descriptors: its open-file limit (RLIMIT_NOFILE, `ulimit -n`) \
         is {limit}, too low for the requests in flight (not the server's doing: {message}); \
         raise it (ulimit -n) or cap the requests in flight with --max-concurrency"
    )
}

/// The most requests the profile can have in flight at once, when it is known before the run
/// (`None` for uncapped open-loop rates, whose concurrency depends on the server).
pub fn planned_concurrency(profile: &Profile) -> Option<u64> {
    let cap = |s: &Strategy| -> Option<u64> {
        match s {
            Strategy::Synchronous => Some(1),
            Strategy::Concurrent { streams } => Some(u64::from(*streams)),
            Strategy::Throughput { max_concurrency } => Some(u64::from(*max_concurrency)),
            Strategy::Constant {
                max_concurrency, ..
            }
            | Strategy::Poisson {
                max_concurrency, ..
            } => max_concurrency.map(u64::from),
            Strategy::Burst { count } => Some(u64::from(*count)),
            Strategy::Trace {
                max_concurrency, ..
            } => max_concurrency.map(u64::from),
        }
    };
    match profile {
        // The throughput probe (guidellm mode) or the top of the ladder (adaptive mode).
        Profile::Sweep(s) => std::iter::once(u64::from(s.throughput_concurrency))
            .chain(s.max_concurrency.map(u64::from))
            .max(),
        Profile::Fixed { benchmarks } => benchmarks.iter().filter_map(cap).max(),
    }
}

/// Checks that `concurrency` requests fit under the open-file limit `soft` (each needing
/// `per_request` descriptors). The error names the limit and what to do.
pub fn check_fits(concurrency: u64, per_request: u64, soft: u64) -> Result<(), UsageError> {
    let needed = descriptors(concurrency, per_request);
    if needed <= soft {
        return Ok(());
    }
    let fits = soft.saturating_sub(RESERVED_FDS) / per_request.max(1);
    Err(UsageError::new(format!(
        "the open-file limit (RLIMIT_NOFILE, `ulimit -n`) is {soft}, too low for {concurrency} \
         requests in flight (about {needed} descriptors); raise it (ulimit -n {needed}) or lower \
         the concurrency to at most {fits}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_profile::{BuildOptions, RateType};

    fn profile(kind: RateType, rates: &[f64], cap: Option<u32>) -> Profile {
        let o = BuildOptions {
            max_concurrency: cap,
            burstiness: 1.0,
            seed: 1,
            sweep_size: 4,
            ..BuildOptions::default()
        };
        Profile::build(kind, rates, &o).expect("valid")
    }

    #[test]
    fn planned_concurrency_is_the_largest_cap() {
        assert_eq!(
            planned_concurrency(&profile(RateType::Concurrent, &[4.0, 1000.0], None)),
            Some(1000)
        );
        assert_eq!(
            planned_concurrency(&profile(RateType::Sweep, &[], None)),
            Some(512)
        );
        assert_eq!(
            planned_concurrency(&profile(RateType::Constant, &[5.0], None)),
            None
        );
        assert_eq!(
            planned_concurrency(&profile(RateType::Constant, &[5.0], Some(300))),
            Some(300)
        );
        assert_eq!(
            planned_concurrency(&profile(RateType::Synchronous, &[], None)),
            Some(1)
        );
    }

    #[test]
    fn loopback_targets_get_the_source_addresses_their_concurrency_needs() {
        let ips = |v: &[u8]| -> Vec<IpAddr> {
            v.iter()
                .map(|&i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
                .collect()
        };
        let t = "http://127.0.0.1:8000";
        assert_eq!(
            loopback_sources(t, Some(100_000), 25_000),
            ips(&[1, 2, 3, 4])
        );
        assert_eq!(
            loopback_sources(t, Some(100_001), 25_000),
            ips(&[1, 2, 3, 4, 5])
        );
        assert_eq!(
            loopback_sources("http://user:pw@localhost/v1", Some(60_000), 25_000),
            ips(&[1, 2, 3])
        );
        // Fits one address, or not a loopback target, or an open loop: the OS chooses.
        assert!(loopback_sources(t, Some(25_000), 25_000).is_empty());
        assert!(loopback_sources("https://10.0.0.7:443", Some(100_000), 25_000).is_empty());
        assert!(loopback_sources("http://[::1]:80", Some(100_000), 25_000).is_empty());
        assert!(loopback_sources(t, None, 25_000).is_empty());
        assert!(ports_per_source() > 1000);
    }

    #[test]
    fn a_concurrency_over_the_limit_is_refused_naming_it() {
        assert!(check_fits(100, 1, 256).is_ok());
        let e = check_fits(1000, 2, 256).expect_err("too many").to_string();
        assert!(e.contains("RLIMIT_NOFILE") && e.contains("256"), "{e}");
        assert!(e.contains("at most 96"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn running_out_of_descriptors_names_the_limit_not_the_server() {
        let e = exhausted(
            Some(200),
            "tcp connect error: Too many open files (os error 24)",
        );
        assert!(e.contains("ulimit -n") && e.contains("is 200"), "{e}");
        assert!(e.contains("--max-concurrency") && !e.contains('\n'), "{e}");
        assert!(!e.contains("server stopped"), "{e}");
    }

    #[test]
    fn raising_keeps_a_readable_limit() {
        let soft = raise_open_files(None).expect("readable");
        let (now, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("readable");
        assert_eq!(soft, now);
        assert_eq!(now, hard, "the soft limit is raised to the hard one");
        // Past the hard limit: granted to a privileged process, else the hard limit stays.
        let soft = raise_open_files(Some(hard + 1)).expect("readable");
        let (now, after) = getrlimit(Resource::RLIMIT_NOFILE).expect("readable");
        assert_eq!(soft, now);
        assert_eq!(now, after);
        assert!(after == hard || after == hard + 1, "{hard} -> {after}");
    }

    /// The table size the kernel reports for this process (`FDSize` in /proc/self/status).
    #[cfg(target_os = "linux")]
    fn table_size() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("readable");
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("FDSize:"))
            .expect("FDSize");
        line.trim().parse().expect("a number")
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_descriptor_table_is_grown_before_the_run_and_stays_grown() {
        let soft = raise_open_files(None).expect("readable");
        let slots = table_slots(None, soft).min(8192);
        assert!(
            slots > 64,
            "an open-file limit of {soft} leaves nothing to test"
        );
        assert_eq!(presize_descriptor_table(slots), Some(slots));
        assert!(table_size() >= slots, "{} < {slots}", table_size());
        // The slot used to grow it is free again: the next descriptor is a low one.
        let f = std::fs::File::open("/dev/null").expect("open");
        assert!(std::os::fd::AsRawFd::as_raw_fd(&f) < 1024);
        // Past any open-file limit (Linux caps it under 2^30) the OS refuses, and the run
        // goes on.
        assert_eq!(presize_descriptor_table(1 << 30), None);
        assert_eq!(presize_descriptor_table(0), None);
    }

    #[test]
    fn the_table_holds_the_plan_within_the_limit() {
        assert_eq!(table_slots(None, 1 << 20), PRESIZED_FDS);
        assert_eq!(table_slots(Some(200_064), 1 << 20), 200_064);
        assert_eq!(table_slots(Some(100), 20_000), 20_000);
        assert_eq!(table_slots(None, 1024), 1024);
    }
}
