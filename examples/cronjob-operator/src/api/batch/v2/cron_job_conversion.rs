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

//! How a CronJob of this version (v2, a spoke) converts to and from the hub version
//! v1, as kubebuilder's `ConvertTo` and `ConvertFrom` do. The conversion webhook
//! (`src/webhook/mod.rs`) converts between any two versions through the hub, so a spoke only
//! converts to and from it.
//!
//! The book's conversion (`api/v2/cronjob_conversion.go`): v2's [`CronSchedule`] is v1's
//! schedule split into its five fields, a `*` left out; the rest is copied. Where the book
//! fails (a v1 schedule that is not five fields, `@hourly` say), this converts without loss:
//! v2 gets what the schedule means in five fields (`0 * * * *`), and the v1 text is kept in the
//! annotation [`V1_SCHEDULE`] while the v2 schedule still means it, as Kubernetes' own APIs keep
//! what another version cannot say.

use super::{ConcurrencyPolicy, CronSchedule};
use crate::api::batch::v1 as hub;

/// Where a v1 schedule that v2's fields do not spell (a descriptor, extra spaces) is kept.
pub const V1_SCHEDULE: &str = "batch.tutorial.kubebuilder.io/v1-schedule";

impl CronSchedule {
    /// The schedule in v1's form: the five fields, `*` for each left out.
    pub fn to_v1(&self) -> String {
        let field = |part: &Option<String>| part.clone().unwrap_or_else(|| "*".into());
        [
            &self.minute,
            &self.hour,
            &self.day_of_month,
            &self.month,
            &self.day_of_week,
        ]
        .map(field)
        .join(" ")
    }

    /// The fields of a v1 schedule: five, or a descriptor's five (`@hourly` is `0 * * * *`);
    /// `None` for anything else. A `*` is a field left out.
    pub fn from_v1(schedule: &str) -> Option<Self> {
        let five = match schedule.trim().to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *".to_string(),
            "@monthly" => "0 0 1 * *".into(),
            "@weekly" => "0 0 * * 0".into(),
            "@daily" | "@midnight" => "0 0 * * *".into(),
            "@hourly" => "0 * * * *".into(),
            _ => schedule.to_string(),
        };
        let parts: Vec<&str> = five.split_whitespace().collect();
        let [minute, hour, day_of_month, month, day_of_week] = parts[..] else {
            return None;
        };
        let part = |raw: &str| (raw != "*").then(|| raw.to_string());
        Some(Self {
            minute: part(minute),
            hour: part(hour),
            day_of_month: part(day_of_month),
            month: part(month),
            day_of_week: part(day_of_week),
        })
    }
}

fn policy_to_hub(policy: ConcurrencyPolicy) -> hub::ConcurrencyPolicy {
    match policy {
        ConcurrencyPolicy::Allow => hub::ConcurrencyPolicy::Allow,
        ConcurrencyPolicy::Forbid => hub::ConcurrencyPolicy::Forbid,
        ConcurrencyPolicy::Replace => hub::ConcurrencyPolicy::Replace,
    }
}

fn policy_from_hub(policy: hub::ConcurrencyPolicy) -> ConcurrencyPolicy {
    match policy {
        hub::ConcurrencyPolicy::Allow => ConcurrencyPolicy::Allow,
        hub::ConcurrencyPolicy::Forbid => ConcurrencyPolicy::Forbid,
        hub::ConcurrencyPolicy::Replace => ConcurrencyPolicy::Replace,
    }
}

impl From<super::CronJob> for hub::CronJob {
    fn from(spoke: super::CronJob) -> Self {
        let mut metadata = spoke.metadata;
        let kept = metadata
            .annotations
            .as_mut()
            .and_then(|a| a.remove(V1_SCHEDULE));
        if metadata.annotations.as_ref().is_some_and(|a| a.is_empty()) {
            metadata.annotations = None;
        }
        let spec = spoke.spec;
        // The v1 text, while the v2 schedule still means it.
        let schedule = match kept {
            Some(v1) if CronSchedule::from_v1(&v1).unwrap_or_default() == spec.schedule => v1,
            _ => spec.schedule.to_v1(),
        };
        Self {
            metadata,
            spec: hub::CronJobSpec {
                schedule,
                starting_deadline_seconds: spec.starting_deadline_seconds,
                concurrency_policy: spec.concurrency_policy.map(policy_to_hub),
                suspend: spec.suspend,
                job_template: spec.job_template,
                successful_jobs_history_limit: spec.successful_jobs_history_limit,
                failed_jobs_history_limit: spec.failed_jobs_history_limit,
            },
            status: spoke.status.map(|status| hub::CronJobStatus {
                active: status.active,
                last_schedule_time: status.last_schedule_time,
                conditions: status.conditions,
            }),
        }
    }
}

impl From<hub::CronJob> for super::CronJob {
    fn from(hub: hub::CronJob) -> Self {
        let mut metadata = hub.metadata;
        let spec = hub.spec;
        let fields = CronSchedule::from_v1(&spec.schedule);
        if fields
            .as_ref()
            .is_none_or(|fields| fields.to_v1() != spec.schedule)
        {
            let annotations = metadata.annotations.get_or_insert_default();
            annotations.insert(V1_SCHEDULE.into(), spec.schedule.clone());
        }
        Self {
            metadata,
            spec: super::CronJobSpec {
                schedule: fields.unwrap_or_default(),
                starting_deadline_seconds: spec.starting_deadline_seconds,
                concurrency_policy: spec.concurrency_policy.map(policy_from_hub),
                suspend: spec.suspend,
                job_template: spec.job_template,
                successful_jobs_history_limit: spec.successful_jobs_history_limit,
                failed_jobs_history_limit: spec.failed_jobs_history_limit,
            },
            status: hub.status.map(|status| super::CronJobStatus {
                active: status.active,
                last_schedule_time: status.last_schedule_time,
                conditions: status.conditions,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{CronSchedule, V1_SCHEDULE, hub};

    /// The sample of this version, with a status, converts to the hub and back unchanged.
    #[test]
    fn a_round_trip_through_the_hub_loses_nothing() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/samples/batch_v2_cronjob.yaml"
        );
        let mut spoke: super::super::CronJob =
            serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        spoke.status = serde_json::from_value(json!({
            "active": [{ "apiVersion": "batch/v1", "kind": "Job", "name": "cronjob-sample-1795000020" }],
            "lastScheduleTime": "2026-11-18T10:00:00Z",
            "conditions": [{
                "type": "Available",
                "status": "True",
                "reason": "Reconciled",
                "message": "all good",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "observedGeneration": 1,
            }],
        }))
        .unwrap();
        let through_hub = hub::CronJob::from(spoke.clone());
        assert_eq!(through_hub.metadata, spoke.metadata);
        // The book's sample: `minute: "*/1"`, every other field `*`.
        assert_eq!(through_hub.spec.schedule, "*/1 * * * *");
        let back = super::super::CronJob::from(through_hub);
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&spoke).unwrap()
        );
    }

    /// Every v1 schedule comes back from v2 as it was: five fields as fields, and what v2's
    /// fields do not spell (a descriptor, extra spaces, a schedule that does not parse) kept in
    /// an annotation, while v2 holds what it means.
    #[test]
    fn every_v1_schedule_survives_a_round_trip_through_v2() {
        for schedule in [
            "1 * * * *",
            "*/5 0-6 1,15 * MON-FRI",
            "* * * * *",
            "@hourly",
            "0  9 * * *",
            "not a schedule",
        ] {
            let mut v1 = hub::CronJob::new("sample", hub::CronJobSpec::default());
            v1.spec.schedule = schedule.into();
            let v2 = super::super::CronJob::from(v1.clone());
            let annotated = v2
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(V1_SCHEDULE));
            let plain = ["1 * * * *", "*/5 0-6 1,15 * MON-FRI", "* * * * *"].contains(&schedule);
            assert_eq!(annotated.is_none(), plain, "{schedule}: {annotated:?}");
            let back = hub::CronJob::from(v2);
            assert_eq!(
                serde_json::to_value(&back).unwrap(),
                serde_json::to_value(&v1).unwrap(),
                "{schedule}"
            );
        }
        let v2 = super::super::CronJob::from(hub::CronJob::new(
            "hourly",
            hub::CronJobSpec {
                schedule: "@hourly".into(),
                ..hub::CronJobSpec::default()
            },
        ));
        assert_eq!(
            v2.spec.schedule.minute.as_deref(),
            Some("0"),
            "v2 says what @hourly means"
        );
        assert_eq!(v2.spec.schedule.to_v1(), "0 * * * *");

        // Changed in v2 since: the v2 schedule wins, and the annotation goes.
        let mut changed = v2;
        changed.spec.schedule.minute = Some("30".into());
        let v1 = hub::CronJob::from(changed);
        assert_eq!(v1.spec.schedule, "30 * * * *");
        assert!(v1.metadata.annotations.is_none());
        assert_eq!(CronSchedule::from_v1("1 2 3"), None);
    }
}
