//! The runtime's scenarios on both back ends (the in-memory API server of memop-test, and the
//! real control plane from `KUBEBUILDER_ASSETS`), in the crate because they reach what it keeps
//! to itself: the sharding ring and its timings, the readiness gate, the settings the manager's
//! flags set, the annotations it writes, the metrics it counts (which memop's dashboards chart).
//! `tests/` keeps what goes through the public API only (the manager binary, the webhooks, the
//! operand and the workloads a project's controller keeps).

mod cache_memory;
mod controller;
mod dashboards;
mod local_webhooks;
mod owned;
mod sharding;
mod storage_migration;
mod watchdog;
mod webhook_certs;
mod webhook_conditions;
