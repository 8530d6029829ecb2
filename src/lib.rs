//! memop: scaffold Kubernetes operators in Rust (kube-rs), the way kubebuilder does for Go.
//!
//! - [`commands`]: one module per subcommand; each validates its input and builds a plan.
//! - [`scaffold`]: the engine: embedded templates, the in-memory plan, dry runs and writes.
//! - [`names`]: every validation rule and derived spelling of user-supplied names.
//! - [`project`]: the `PROJECT` file.

use std::sync::atomic::{AtomicBool, Ordering};

pub mod commands;
pub mod names;
pub mod project;
pub mod resource;
pub mod scaffold;
pub mod sum;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Turns Ctrl-C and SIGTERM into a flag that [`interrupted`] reads, instead of an exit at any
/// point: commands stop before they write, and clean up what they made.
pub fn catch_interrupts() {
    // Without the handler (it can only be set once) memop is just stopped by the signal.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
}

/// Whether Ctrl-C or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
