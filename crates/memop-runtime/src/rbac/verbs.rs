//! The verbs the runtime uses on each kind a controller declares (`rbac::Rules`).
//! One file serves two crates, as `merge.rs` does: this runtime, whose `Rules` grant them, and
//! memop's CLI, which writes the same role when it scaffolds a controller (it includes this
//! file with `#[path]`), so that the role memop writes and the one the code derives cannot
//! differ in their verbs. It may use only `std`.

/// A kind reconciled: listed and watched (its cache).
pub const RECONCILES: &[&str] = &["list", "watch"];

/// The events a controller's reconciles report: `events.k8s.io` Events, patched for a repeat.
pub const EVENTS: (&str, &str, &[&str]) = ("events.k8s.io", "events", &["create", "patch"]);

/// A finalizer on the reconciled kind: added and removed with a patch of the object.
pub const FINALIZER: &[&str] = &["patch"];

/// The status of the reconciled kind (`<plural>/status`): written with a server-side apply.
pub const WRITES_STATUS: &[&str] = &["patch"];

/// A kind owned through an `Operand`: its cache lists and watches them, `ensure` gets one that
/// is not in the cache to see whose it is, and writes them with a server-side apply (which
/// creates as well as patches).
pub const OWNS: &[&str] = &["get", "list", "watch", "create", "patch"];

/// The reconciled kind's finalizers (`<plural>/finalizers`), when it owns objects: an owner
/// reference that blocks its owner's deletion needs them.
pub const OWNER_FINALIZERS: &[&str] = &["update"];

/// A kind watched (`Builder::watches`): listed and watched.
pub const WATCHES: &[&str] = &["list", "watch"];
