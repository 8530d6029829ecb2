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

//! The YAML that `make manifests` writes into `config/`, produced from the code: the CRDs from
//! the types in [`crate::api`], the manager role from each controller's rules, the storage
//! migration's role from the CRDs.
//!
//! `memop create api` adds each controller's rules at the marker below.

// For each controller's `Context::rules()`, which `create api` adds below: unused until then.
#[allow(unused_imports)]
use memop_runtime::controller::Reconciler;
use memop_runtime::manifests::{File, crd_files};
use memop_runtime::rbac::{Rules, Scope, role_yaml};

/// The RBAC rules of every controller: those of the kinds it reconciles, owns and watches, with
/// the verbs memop-runtime uses on each (its `Reconciler::rules`), and those of its own code (its
/// `RULES`).
fn rules() -> Vec<Rules> {
    vec![
        crate::controller::memcached::Context::rules().with(crate::controller::memcached::RULES),
        // +memop:scaffold:rbac-rules
    ]
}

/// Every generated file, as (path relative to the project root, contents).
pub fn render() -> anyhow::Result<Vec<File>> {
    let mut files = crd_files(&crate::api::crds())?;
    files.push((
        "config/rbac/role.yaml".into(),
        role_yaml(Scope::Cluster, &rules()),
    ));
    let crds = crate::api::crd_names();
    let crds: Vec<&str> = crds.iter().map(String::as_str).collect();
    files.push((
        "config/rbac/storage_migration_role.yaml".into(),
        memop_runtime::migration::role_yaml(&crds),
    ));
    // +memop:scaffold:manifests
    Ok(files)
}
