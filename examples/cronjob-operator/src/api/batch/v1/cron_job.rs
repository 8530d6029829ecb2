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
//!
//! kubebuilder's book, "Tutorial: Building CronJob" (`api/v1/cronjob_types.go`), field for
//! field; its validation markers are schemars attributes here:
//! `+kubebuilder:validation:Minimum=0` is `range(min = 0)`, `MinLength` is `length(min)`,
//! `+kubebuilder:default:=Allow` a serde default, `+kubebuilder:validation:Enum` an enum,
//! `+listType=atomic` an `x-kubernetes-list-type` extension.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// CronJobSpec defines the desired state of CronJob.
// Default: the tests set the fields they are about and take the rest from it
// (`..Default::default()`), so they keep compiling as you add fields.
// Columns of the same type repeat `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "batch.tutorial.kubebuilder.io",
    version = "v1",
    kind = "CronJob",
    plural = "cronjobs",
    namespaced,
    status = "CronJobStatus",
    doc = "CronJob is the Schema for the cronjobs API.",
    printcolumn(name = "Schedule", type_ = "string", json_path = ".spec.schedule"),
    printcolumn(name = "Suspend", type_ = "boolean", json_path = ".spec.suspend"),
    printcolumn(
        name = "Last Schedule",
        type_ = "date",
        json_path = ".status.lastScheduleTime"
    ),
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
    /// schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.
    #[schemars(length(min = 0))]
    pub schedule: String,

    /// startingDeadlineSeconds defines in seconds for starting the job if it misses scheduled
    /// time for any reason.  Missed jobs executions will be counted as failed ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub starting_deadline_seconds: Option<i64>,

    /// concurrencyPolicy specifies how to treat concurrent executions of a Job.
    /// Valid values are:
    /// - "Allow" (default): allows CronJobs to run concurrently;
    /// - "Forbid": forbids concurrent runs, skipping next run if previous run hasn't finished yet;
    /// - "Replace": cancels currently running job and replaces it with a new one
    // `None` is Go's "": not set (the defaulting webhook sets it; the CRD's default too).
    #[serde(default = "allow", skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,

    /// suspend tells the controller to suspend subsequent executions, it does
    /// not apply to already started executions.  Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// jobTemplate defines the job that will be created when executing a CronJob.
    #[schemars(schema_with = "job_template_schema")]
    pub job_template: JobTemplateSpec,

    /// successfulJobsHistoryLimit defines the number of successful finished jobs to retain.
    /// This is a pointer to distinguish between explicit zero and not specified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub successful_jobs_history_limit: Option<i32>,

    /// failedJobsHistoryLimit defines the number of failed finished jobs to retain.
    /// This is a pointer to distinguish between explicit zero and not specified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub failed_jobs_history_limit: Option<i32>,
}

/// The CRD's default of `concurrencyPolicy` (`+kubebuilder:default:=Allow`).
fn allow() -> Option<ConcurrencyPolicy> {
    Some(ConcurrencyPolicy::Allow)
}

// ConcurrencyPolicy describes how the job will be handled.
// Only one of the following concurrent policies may be specified.
// If none of the following policies is specified, the default one
// is AllowConcurrent. (Not a doc comment: the CRD takes the field's description.)
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ConcurrencyPolicy {
    /// AllowConcurrent allows CronJobs to run concurrently.
    #[default]
    Allow,
    /// ForbidConcurrent forbids concurrent runs, skipping next run if previous
    /// hasn't finished yet.
    Forbid,
    /// ReplaceConcurrent cancels currently running job and replaces it with a new one.
    Replace,
}

/// The schema of `jobTemplate`: k8s-openapi's, without the descriptions inside it, as the
/// book's `controller-gen crd:maxDescLen=0` writes it: with them the CRD is over 600 kB, more
/// than `kubectl apply` can keep in its last-applied annotation (256 kB).
pub fn job_template_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = JobTemplateSpec::json_schema(generator);
    strip_descriptions(schema.as_object_mut().expect("a schema object"));
    schema
}

/// Removes the descriptions of `schema` and of every schema within it.
fn strip_descriptions(schema: &mut serde_json::Map<String, serde_json::Value>) {
    schema.remove("description");
    for (key, value) in schema.iter_mut() {
        match value {
            // Keyed by property name: each value is a schema (a property may be called
            // "description").
            serde_json::Value::Object(properties) if key == "properties" => {
                properties
                    .values_mut()
                    .filter_map(serde_json::Value::as_object_mut)
                    .for_each(strip_descriptions);
            }
            serde_json::Value::Object(inner) => strip_descriptions(inner),
            serde_json::Value::Array(items) => items
                .iter_mut()
                .filter_map(serde_json::Value::as_object_mut)
                .for_each(strip_descriptions),
            _ => {}
        }
    }
}

/// CronJobStatus defines the observed state of CronJob.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobStatus {
    /// active defines a list of pointers to currently running jobs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 10), extend("x-kubernetes-list-type" = "atomic"))]
    pub active: Vec<ObjectReference>,

    /// lastScheduleTime defines when was the last time the job was successfully scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,

    /// conditions represent the current state of the CronJob resource. "Available" tells
    /// whether it is fully functional, "Progressing" whether Jobs are being created or run,
    /// "Degraded" whether it failed to reach or keep its desired state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "memop_runtime::manifests::conditions_schema")]
    pub conditions: Vec<Condition>,
}
