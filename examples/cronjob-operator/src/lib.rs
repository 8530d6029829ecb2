// Copyright 2026 The cronjob-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! The cronjob-operator operator.
//!
//! - [`api`]: the custom resources, as Rust types; their CRDs are derived from them.
//! - [`controller`]: one reconciler per API.
//! - [`manifests`]: the YAML that `make manifests` writes to `config/` from the code.
//!
//! What runs the controllers (flags, probes, metrics, leader election, shutdown) is the
//! `memop-runtime` crate, as controller-runtime is for a kubebuilder project.

pub mod api;
pub mod controller;
pub mod manifests;
pub mod webhook;
// +memop:scaffold:modules

/// Who this operator is, for the manager: the name its events and leader election use, and
/// the domain of its default Lease (`cronjob-operator.tutorial.kubebuilder.io`).
pub const OPERATOR: memop_runtime::Operator = memop_runtime::Operator {
    name: "cronjob-operator",
    domain: "tutorial.kubebuilder.io",
};
