//! memop: scaffold Kubernetes operators in Rust (kube-rs), the way kubebuilder does for Go.
//!
//! - [`commands`]: one module per subcommand; each validates its input and builds a plan.
//! - [`scaffold`]: the engine: embedded templates, the in-memory plan, dry runs and writes.
//! - [`names`]: every validation rule and derived spelling of user-supplied names.
//! - [`project`]: the `PROJECT` file.
//! - [`embedded`]: the templates memop ships, and the names they reserve.
//! - [`fs`]: how memop reads a project's files: regular files inside it, never through a link.
//! - [`clock`]: the year of license headers (`SOURCE_DATE_EPOCH`).
//! - [`lock`]: one command at a time per project, and what Ctrl-C does.

/// `eprintln!` that never panics: a closed standard error (`memop … 2>&1 | head`) must not turn
/// a command that did its work into a crash.
#[macro_export]
macro_rules! warn_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod clock;
pub mod commands;
pub mod embedded;
pub mod fs;
pub mod lock;
pub mod names;
pub mod project;
pub mod resource;
pub mod scaffold;
pub mod sum;

pub use lock::{catch_interrupts, interrupted};
