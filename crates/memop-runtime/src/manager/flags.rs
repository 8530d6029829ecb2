//! The manager's command line, with kubebuilder's flag names so its manifests and habits apply.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::ArgAction;

/// The manager's flags, to flatten into the binary's own command line:
///
/// ```
/// #[derive(clap::Parser)]
/// #[command(version, about = "The memcached-operator operator manager")]
/// struct Cli {
///     #[command(flatten)]
///     manager: memop_runtime::manager::Flags,
/// }
/// ```
#[derive(Debug, Clone, clap::Args)]
pub struct Flags {
    /// Address the metrics endpoint binds to, e.g. ":8443" (config/default sets it); "0"
    /// disables it
    #[arg(long, default_value = "0")]
    pub(crate) metrics_bind_address: String,

    /// Serve metrics over HTTPS, only to callers the API server authenticates and allows
    /// `get` on /metrics (the metrics-reader ClusterRole); "false" serves plain HTTP to anyone
    /// who can reach the port, e.g. for `make run`
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value_t = true, default_missing_value = "true")]
    pub(crate) metrics_secure: bool,

    /// Directory holding the metrics certificate and key (e.g. a cert-manager Secret), read
    /// again when they change; without it the manager makes a self-signed certificate
    #[arg(long)]
    pub(crate) metrics_cert_path: Option<PathBuf>,

    /// File name of the metrics certificate in --metrics-cert-path
    #[arg(long, default_value = "tls.crt")]
    pub(crate) metrics_cert_name: String,

    /// File name of the metrics certificate's key in --metrics-cert-path
    #[arg(long, default_value = "tls.key")]
    pub(crate) metrics_cert_key: String,

    /// Address the /healthz and /readyz probes bind to; "0" disables them
    #[arg(long, default_value = ":8081")]
    pub(crate) health_probe_bind_address: String,

    /// Elect a leader through a Lease, so that only one replica reconciles at a time
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value_t = false, default_missing_value = "true")]
    pub(crate) leader_elect: bool,

    /// Name of the leader election Lease [default: {operator name}.{domain}]
    #[arg(long)]
    pub(crate) leader_election_id: Option<String>,

    /// Run every replica, each reconciling its share of the objects, instead of one leader:
    /// each holds a Lease of its own (`<leader-election-id>-shard-<pod name>`, in the leader
    /// election namespace), and the objects are split over the live ones (memop_runtime::manager::sharding).
    /// Overrides --leader-elect, so that a manifest turns it on by adding this flag alone
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value_t = false, default_missing_value = "true")]
    pub(crate) sharding: bool,

    /// Namespace of the leader election Lease [default: the pod's namespace]
    #[arg(long, env = "POD_NAMESPACE")]
    pub(crate) leader_election_namespace: Option<String>,

    /// Serve HTTP/2 as well as HTTP/1.1. Off by default: HTTP/2 Stream Cancellation and Rapid
    /// Reset (CVE-2023-44487, CVE-2023-39325) make it a risk unless you need it.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value_t = false, default_missing_value = "true")]
    pub enable_http2: bool,

    /// Watch only this namespace (all namespaces when unset)
    #[arg(long, env = "WATCH_NAMESPACE")]
    pub(crate) watch_namespace: Option<String>,

    /// How many objects each controller reconciles at once
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) max_concurrent_reconciles: u16,

    /// How many of its Deployments each operand controller lets roll out at once, counted
    /// across all the operator's replicas (from the cache), so that a new operand image, a new
    /// operator version or a spec change to every object does not restart every operand
    /// together and a bad image stops there; 0 for no limit. A new size is never held back
    #[arg(long, default_value_t = 10)]
    pub(crate) max_concurrent_rollouts: usize,

    /// How long the controllers may take to fill their caches (list what they watch) before
    /// the manager gives up and exits: a missing CRD or RBAC rule shows as a crash, not as a
    /// pod that is never ready. E.g. "2m", "90s"
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub(crate) cache_sync_timeout: Duration,

    /// How long the controllers may take to finish their reconciles on shutdown; then they
    /// are stopped. Keep it below the pod's terminationGracePeriodSeconds (10 s)
    #[arg(long, default_value = "8s", value_parser = parse_duration)]
    pub(crate) graceful_shutdown_timeout: Duration,

    /// Log format; the level comes from RUST_LOG (default "info")
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
/// How the manager writes its log lines (`--log-format`).
pub(crate) enum LogFormat {
    /// Human-readable lines
    Text,
    /// One JSON object per line, for log collectors
    Json,
}

/// Parses a duration as Go writes the usual ones: a number of seconds ("90s"), minutes ("2m")
/// or milliseconds ("500ms").
pub fn parse_duration(value: &str) -> anyhow::Result<Duration> {
    let (number, unit) = value
        .find(|c: char| !c.is_ascii_digit())
        .map_or((value, ""), |at| value.split_at(at));
    let number: u64 = number
        .parse()
        .with_context(|| format!("invalid duration {value:?}: use e.g. 90s, 2m or 500ms"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(number * 60)),
        _ => anyhow::bail!("invalid duration {value:?}: use e.g. 90s, 2m or 500ms"),
    }
}

/// Parses a bind address the way controller-runtime does: ":8080" means every interface (IPv6
/// and IPv4, as in Go), "0" (or an empty string) means disabled.
pub(crate) fn parse_bind_address(value: &str) -> anyhow::Result<Option<SocketAddr>> {
    let parsed = match value {
        "" | "0" => return Ok(None),
        v if v.starts_with(':') => format!("[::]{v}").parse(),
        v => v.parse(),
    };
    let addr = parsed
        .with_context(|| format!("invalid bind address {value:?}: use :PORT or HOST:PORT"))?;
    Ok(Some(addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_follow_controller_runtime() {
        assert_eq!(parse_bind_address("0").unwrap(), None);
        assert_eq!(
            parse_bind_address(":8081").unwrap(),
            Some("[::]:8081".parse().unwrap())
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9000").unwrap(),
            Some("127.0.0.1:9000".parse().unwrap())
        );
        assert!(parse_bind_address("localhost").is_err());
    }

    #[test]
    fn durations_as_go_writes_them() {
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        for bad in ["", "2", "1h", "s", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
