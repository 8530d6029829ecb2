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

//! The CronJob API (batch.tutorial.kubebuilder.io/v1): the Rust types of the custom
//! resource. The CRD in `config/crd/bases` is derived from them: after editing, run
//! `make manifests`. Doc comments become the field descriptions of the CRD.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// CronJobSpec defines the desired state of CronJob.
// Default: the tests set the fields they are about and take the rest from it
// (`..Default::default()`), so they keep compiling as you add fields.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "batch.tutorial.kubebuilder.io",
    version = "v1",
    kind = "CronJob",
    plural = "cronjobs",
    namespaced,
    status = "CronJobStatus",
    doc = "CronJob is the Schema for the cronjobs API.",
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
pub struct CronJobSpec {
    /// foo is an example field of CronJob. Replace it with the fields your API needs, then
    /// run `make manifests` to regenerate the CRD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foo: Option<String>,
}

/// CronJobStatus defines the observed state of CronJob.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CronJobStatus {
    /// conditions represent the current state of the CronJob resource. "Available" tells
    /// whether it is fully functional, "Degraded" whether it failed to reach or keep its
    /// desired state (and, with reason "Finalizing", that it is being deleted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "memop_runtime::manifests::conditions_schema")]
    pub conditions: Vec<Condition>,
}
