// Copyright 2026 The memcached-operator Authors.
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

//! The memcached-operator operator.
//!
//! - [`api`]: the custom resources, as Rust types; their CRDs are derived from them.
//! - [`controller`]: one reconciler per API.
//! - [`manager`]: what runs the controllers (flags, health, metrics, leader election, shutdown).
//! - [`rbac`] and [`manifests`]: the RBAC rules the controllers need, and the YAML that
//!   `make manifests` writes to `config/` from the code.

pub mod api;
pub mod controller;
pub mod manager;
pub mod manifests;
pub mod rbac;
// +memop:scaffold:modules
