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

//! The custom resources of this operator, one module per API group and version. Their CRDs
//! are derived from these types (`make manifests` writes them to `config/crd/bases`).
//!
//! `memop create api` adds each group's module and each CRD at the markers below.

pub mod cache;
// +memop:scaffold:api-groups

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::crd::merge_crds;

/// The version each kind served in several versions is stored as, by CRD name: exactly one
/// per kind, as kubebuilder's `+kubebuilder:storageversion` marks it. The API server writes
/// every object of the kind in this version. Changing it later is a storage migration: objects
/// stay stored in the old version until they are written again.
const STORAGE_VERSIONS: &[(&str, &str)] = &[
    // +memop:scaffold:storage-versions
];

/// The CRD of every API of this project: one per kind, serving each of its versions.
pub fn crds() -> Vec<CustomResourceDefinition> {
    merge_versions(vec![
        <cache::v1alpha1::Memcached as kube::CustomResourceExt>::crd(),
        // +memop:scaffold:crds
    ])
}

/// Merges the CRDs of each kind's versions (kube derives one CRD per version) into one CRD per
/// kind, stored as the version [`STORAGE_VERSIONS`] names, with its versions in order of name.
fn merge_versions(versions: Vec<CustomResourceDefinition>) -> Vec<CustomResourceDefinition> {
    let mut kinds: Vec<Vec<CustomResourceDefinition>> = Vec::new();
    for crd in versions {
        match kinds
            .iter_mut()
            .find(|kind| kind[0].metadata.name == crd.metadata.name)
        {
            Some(kind) => kind.push(crd),
            None => kinds.push(vec![crd]),
        }
    }
    kinds
        .into_iter()
        .map(|mut kind| {
            if kind.len() == 1 {
                return kind.remove(0);
            }
            let name = kind[0].metadata.name.clone().unwrap_or_default();
            let Some((_, storage)) = STORAGE_VERSIONS.iter().find(|(crd, _)| *crd == name) else {
                panic!("{name} is served in several versions: add the one it is stored as to STORAGE_VERSIONS");
            };
            let mut crd = merge_crds(kind, storage).unwrap_or_else(|e| panic!("the versions of {name} do not merge: {e}"));
            crd.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
            crd
        })
        .collect()
}

/// The schema of a `conditions` list, exactly as controller-gen writes it for Go's
/// `[]metav1.Condition` with `+listType=map` and `+listMapKey=type`: a list keyed by `type`
/// (so server-side apply merges conditions by type) with the API server's validation of each
/// field. The schema k8s-openapi derives for `Condition` lacks those bounds and the list type.
pub fn conditions_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {
                    "description": "lastTransitionTime is the last time the condition transitioned from one status to another.",
                    "type": "string",
                    "format": "date-time"
                },
                "message": {
                    "description": "message is a human readable message indicating details about the transition.",
                    "type": "string",
                    "maxLength": 32768
                },
                "observedGeneration": {
                    "description": "observedGeneration represents the .metadata.generation that the condition was set based upon.",
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0
                },
                "reason": {
                    "description": "reason contains a programmatic identifier indicating the reason for the condition's last transition.",
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
                },
                "status": {
                    "description": "status of the condition, one of True, False, Unknown.",
                    "type": "string",
                    "enum": ["True", "False", "Unknown"]
                },
                "type": {
                    "description": "type of condition in CamelCase or in foo.example.com/CamelCase.",
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                }
            }
        }
    })
}
