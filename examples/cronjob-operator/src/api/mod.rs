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

//! The custom resources of this operator, one module per API group and version. Their CRDs
//! are derived from these types (`make manifests` writes them to `config/crd/bases`).
//!
//! `memop create api` adds each group's module and each CRD at the markers below.

pub mod batch;
// +memop:scaffold:api-groups

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use memop_runtime::manifests::merge_versions;

/// The version each kind served in several versions is stored as, by CRD name: exactly one
/// per kind, as kubebuilder's `+kubebuilder:storageversion` marks it. The API server writes
/// every object of the kind in this version. Changing it later is a storage migration: objects
/// stay stored in the old version until the manager migrates them (`memop_runtime::migration`).
const STORAGE_VERSIONS: &[(&str, &str)] = &[
    ("cronjobs.batch.tutorial.kubebuilder.io", "v1"),
    // +memop:scaffold:storage-versions
];

/// The CRD of every API of this project: one per kind, serving each of its versions.
pub fn crds() -> Vec<CustomResourceDefinition> {
    merge_versions(
        vec![
            <batch::v1::CronJob as kube::CustomResourceExt>::crd(),
            <batch::v2::CronJob as kube::CustomResourceExt>::crd(),
            // +memop:scaffold:crds
        ],
        STORAGE_VERSIONS,
    )
}

/// The names of those CRDs (`<plural>.<group>`): the manager migrates their stored objects to
/// the storage version, and their `storedVersions` with them.
pub fn crd_names() -> Vec<String> {
    crds()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect()
}
