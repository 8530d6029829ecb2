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

//! The Memcached API (cache.example.com/v1alpha1): the Rust types of the custom
//! resource. The CRD in `config/crd/bases` is derived from them: after editing, run
//! `make manifests`. Doc comments become the field descriptions of the CRD.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// MemcachedSpec defines the desired state of Memcached.
// Default: the tests set the fields they are about and take the rest from it
// (`..Default::default()`), so they keep compiling as you add fields.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    plural = "memcacheds",
    namespaced,
    status = "MemcachedStatus",
    shortname = "mc",
    doc = "Memcached is the Schema for the memcacheds API.",
    printcolumn(name = "Size", type_ = "integer", json_path = ".spec.size"),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Available")].status"#
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// size defines the number of Memcached instances, the replicas of its Deployment.
    #[serde(default = "default_size")]
    #[schemars(range(min = 1, max = 3))]
    pub size: i32,
}

fn default_size() -> i32 {
    1
}

/// MemcachedStatus defines the observed state of Memcached.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct MemcachedStatus {
    /// conditions represent the current state of the Memcached resource. "Available" tells
    /// whether it is fully functional, "Degraded" whether it failed to reach or keep its
    /// desired state (and, with reason "Finalizing", that it is being deleted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "memop_runtime::manifests::conditions_schema")]
    pub conditions: Vec<Condition>,
}
