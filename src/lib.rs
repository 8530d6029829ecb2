//! memop: scaffold Kubernetes operators in Rust (kube-rs), the way kubebuilder does for Go.
//!
//! - [`commands`]: one module per subcommand; each validates its input and builds a plan.
//! - [`scaffold`]: the engine: embedded templates, the in-memory plan, dry runs and writes.
//! - [`names`]: every validation rule and derived spelling of user-supplied names.
//! - [`project`]: the `PROJECT` file.

pub mod commands;
pub mod names;
pub mod project;
pub mod scaffold;
