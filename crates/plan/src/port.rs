//! Where each configuration's server listens: a free port bench picks, or the one `--target`
//! names with `--serve` (the command names the port itself), refused when something already
//! answers there.

use std::net::SocketAddr;

use bench_runner::UsageError;

/// Where every launched server listens when the user named it: its URL and socket address.
pub type Fixed = (String, SocketAddr);

/// `--target` with `--serve`: the one URL the launched servers listen at (`None` without a
/// serve command or a target); refused when it is several, not a host:port, or in use.
pub fn fixed_target(serve: bool, targets: &[String]) -> Result<Option<Fixed>, UsageError> {
    let url = match (serve, targets) {
        (false, _) | (true, []) => return Ok(None),
        (true, [one]) => one,
        (true, _) => {
            return Err(UsageError::new(
                "--target: --serve starts one server per configuration; give one URL (where it listens) or none",
            ))
        }
    };
    let addr = socket_of(url).ok_or_else(|| {
        UsageError::new(format!("--target {url}: not a host:port bench can reach"))
    })?;
    if crate::launch::in_use(addr) {
        return Err(UsageError::new(format!(
            "--target {url}: port {} is already in use, and --serve would start a server there",
            addr.port()
        )));
    }
    Ok(Some((url.clone(), addr)))
}

/// The socket address of a target URL, parsed by the worker's rule
/// ([`bench_worker::target_host_port`]).
pub fn socket_of(url: &str) -> Option<SocketAddr> {
    use std::net::ToSocketAddrs as _;
    let (host, port) = bench_worker::target_host_port(url).ok()?;
    (host.as_str(), port).to_socket_addrs().ok()?.next()
}

/// Where a configuration's server listens: the fixed target, else a free port of the loopback.
pub fn listen_at(fixed: Option<&Fixed>) -> std::io::Result<Fixed> {
    match fixed {
        Some(t) => Ok(t.clone()),
        None => {
            let p = crate::launch::free_port()?;
            Ok((format!("http://127.0.0.1:{p}"), ([127, 0, 0, 1], p).into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_come_from_urls() {
        assert_eq!(
            socket_of("http://127.0.0.1:8123/v1").map(|a| a.port()),
            Some(8123)
        );
        // The worker's rule: credentials in the URL are refused, as every run refuses them.
        assert_eq!(socket_of("http://user:pw@127.0.0.1:9/"), None);
        assert_eq!(socket_of("127.0.0.1:9"), None);
        assert_eq!(socket_of("http://127.0.0.1").map(|a| a.port()), Some(80));
        assert_eq!(socket_of("https://127.0.0.1").map(|a| a.port()), Some(443));
        assert_eq!(
            socket_of("http://[::1]:8000/v1").map(|a| a.to_string()),
            Some("[::1]:8000".into())
        );
    }
}
