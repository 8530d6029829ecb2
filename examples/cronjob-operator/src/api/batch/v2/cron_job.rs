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

//! The CronJob API (batch.tutorial.kubebuilder.io/v2): the Rust types of the custom
//! resource. The CRD in `config/crd/bases` is derived from them: after editing, run
//! `make manifests`. Doc comments become the field descriptions of the CRD.
//!
//! kubebuilder's book, "Tutorial: Multi-Version API" (`api/v2/cronjob_types.go`): v1's CronJob
//! with the schedule as a [`CronSchedule`], a field per part, instead of a string. v1 stays the
//! storage version and the hub; `cron_job_conversion.rs` converts between them.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// CronJobSpec defines the desired state of CronJob.
// Columns of the same type repeat `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "batch.tutorial.kubebuilder.io",
    version = "v2",
    kind = "CronJob",
    plural = "cronjobs",
    namespaced,
    status = "CronJobStatus",
    doc = "CronJob is the Schema for the cronjobs API.",
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
    pub schedule: CronSchedule,

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
    #[serde(default = "allow", skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,

    /// suspend tells the controller to suspend subsequent executions, it does
    /// not apply to already started executions.  Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// jobTemplate defines the job that will be created when executing a CronJob.
    #[schemars(schema_with = "crate::api::batch::v1::job_template_schema")]
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

/// CronSchedule describes a Cron schedule, a field per part; a part left out is `*`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronSchedule {
    /// minute specifies the minutes during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minute: Option<CronField>,
    /// hour specifies the hour during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hour: Option<CronField>,
    /// dayOfMonth specifies the day of the month during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_month: Option<CronField>,
    /// month specifies the month during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub month: Option<CronField>,
    /// dayOfWeek specifies the day of the week during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_week: Option<CronField>,
}

/// CronField represents a Cron field specifier.
pub type CronField = String;

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
