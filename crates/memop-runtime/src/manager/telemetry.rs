//! Structured logging with `tracing`: the level from `RUST_LOG` (default `info`), the format
//! from `--log-format`.

use tracing_subscriber::EnvFilter;

use super::Flags;
use super::flags::LogFormat;

/// Starts logging to stderr in the format of `flags` (`--log-format`), at the level `RUST_LOG`
/// sets (default `info`).
pub fn init(flags: &Flags) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let installed = match flags.log_format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    installed.map_err(|err| anyhow::anyhow!("installing the logger: {err}"))
}
