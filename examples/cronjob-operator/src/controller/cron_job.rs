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

//! The CronJob controller: kubebuilder's book, "Tutorial: Building CronJob"
//! (`internal/controller/cronjob_controller.go`), step for step, on memop-runtime.
//!
//! Every reconcile (1) takes the CronJob from the controller's cache, (2) lists its Jobs from
//! the cache's index by controller owner (no request) and rebuilds `status.active` and
//! `status.lastScheduleTime` from them, (3) deletes finished Jobs beyond the history limits,
//! (4) stops there when suspended, (5) works out the last missed run and the next one from
//! the schedule, (6) runs a Job for the missed run unless it is past the starting deadline or
//! the concurrency policy forbids it, and (7) comes back at the next scheduled time.
//!
//! The runtime does the rest ([`Builder`]): the watches of CronJobs and of their Jobs
//! (`Owns(&kbatch.Job{})`), the conditions written only when they changed, events, backoff.
//! The book's `Clock` is [`Clock`]: the system's in the manager, one a test moves in tests.

use std::cmp::Ordering;

use croner::Cron;
use croner::parser::{CronParser, Seconds};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use memop_runtime::controller::{
    Builder, Clock, Controller, Error, Reconciler, Report, Result, Truth, condition,
};
use memop_runtime::manager::{Manager, Shared};
use memop_runtime::operand::{Operand, Outcome, PropagationPolicy, controller_reference};
use memop_runtime::rbac::{Rule, Rules};

use crate::api::batch::v1::{ConcurrencyPolicy, CronJob};

/// The controller's name in logs, metrics and readiness.
pub const NAME: &str = "cronjob";
/// The annotation on each Job with the time it was scheduled for (RFC 3339), from which
/// `status.lastScheduleTime` is rebuilt.
pub const SCHEDULED_TIME_ANNOTATION: &str = "batch.tutorial.kubebuilder.io/scheduled-at";
/// The Jobs of this controller carry `app.kubernetes.io/managed-by=<this>` (the cache of
/// Jobs holds those only, not every Job of the cluster), and it writes as this field manager.
pub const MANAGED_BY: &str = "cronjob-operator";
/// More missed start times than this since the last run is an error (a wrong clock, say).
pub const MAX_MISSED_STARTS: usize = 100;

/// The API access of this controller's own code, besides what memop-runtime does for the kinds
/// it declares ([`Context::rules`]); `make manifests` writes both into the role.
pub const RULES: &[Rule] = &[
    // Finished Jobs beyond the history limits are deleted.
    Rule {
        api_group: "batch",
        resources: &["jobs"],
        verbs: &["delete"],
    },
    // The validating webhook (src/webhook/cron_job.rs) reads the ServiceAccount the Jobs run as.
    Rule {
        api_group: "",
        resources: &["serviceaccounts"],
        verbs: &["get"],
    },
];

/// What the reconcile of a CronJob works with.
pub struct Context {
    /// The Jobs of every CronJob.
    jobs: Operand<Job>,
    /// What time it is: the system's, or a test's.
    clock: Clock,
}

impl Context {
    /// The context on `clock` ([`Clock::system`] in the manager). It starts the watch of the
    /// controller's Jobs, which stops when the context is dropped.
    pub fn new(shared: &Shared, clock: Clock) -> Self {
        Self {
            jobs: Operand::new(shared, "cronjob jobs", MANAGED_BY),
            clock,
        }
    }

    /// The controller's Jobs.
    pub fn jobs(&self) -> &Operand<Job> {
        &self.jobs
    }
}

/// Registers the controller with the manager; `main.rs` calls this.
pub fn register(manager: &mut Manager) {
    manager.register(|shared| controller(&shared, Context::new(&shared, Clock::system())));
}

/// The controller: every CronJob, owning its Jobs.
pub fn controller(shared: &Shared, ctx: Context) -> Controller<Context> {
    Builder::new(NAME, shared)
        .field_manager(MANAGED_BY)
        .owns(ctx.jobs())
        .build(ctx)
}

impl Reconciler for Context {
    type Object = CronJob;

    const CONDITIONS: &'static [&'static str] = &[
        condition::AVAILABLE,
        condition::PROGRESSING,
        condition::DEGRADED,
    ];
    /// Rebuilt from the Jobs on every reconcile, and written with the conditions.
    const STATUS_FIELDS: &'static [&'static str] = &["active", "lastScheduleTime"];

    /// What [`controller`] works with, for the role (memop-runtime knows the verbs of each):
    /// CronJobs and their status (the conditions, `status.active` and `lastScheduleTime`, in one
    /// apply), owning Jobs.
    fn rules() -> Rules {
        Rules::reconciles::<CronJob>().writes_status().owns::<Job>()
    }

    fn conditions(object: &CronJob) -> &[Condition] {
        object
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default()
    }

    async fn apply(&self, cronjob: &CronJob, report: &mut Report) -> Result<Action> {
        let name = cronjob.name_any();
        // While Jobs are created in bulk (a thousand CronJobs at the top of a minute), they go
        // first: the status waits until the creations end, and is written then.
        if self.jobs.cache().in_burst() {
            report.hold();
        }
        if Self::conditions(cronjob).is_empty() {
            let message = "Starting reconciliation".to_string();
            report.set(
                condition::PROGRESSING,
                Truth::Unknown,
                "Reconciling",
                message,
            );
        }

        // 2: the Jobs, split into active, successful and failed; the status rebuilt from them.
        let mut children = self.jobs.children(cronjob).await;
        children.sort_by_key(|job| job.name_any());
        let (mut active, mut successful, mut failed) = (Vec::new(), Vec::new(), Vec::new());
        let mut most_recent: Option<Timestamp> = None;
        for job in children {
            match scheduled_time(&job) {
                Ok(time) => most_recent = most_recent.max(time),
                Err(error) => {
                    tracing::error!(job = %job.name_any(), %error, "unable to parse schedule time for child job")
                }
            }
            match finished(&job) {
                None => active.push(job),
                Some("Failed") => failed.push(job),
                Some(_) => successful.push(job),
            }
        }
        let last_schedule_time = most_recent.map(Time);
        let references: Vec<ObjectReference> = active.iter().map(|job| reference(job)).collect();
        report.status_field("active", (!references.is_empty()).then_some(references));
        report.status_field("lastScheduleTime", &last_schedule_time);
        tracing::debug!(%name, active = active.len(), successful = successful.len(), failed = failed.len(), "job count");

        let suspended = cronjob.spec.suspend == Some(true);
        if suspended {
            let message = "CronJob is suspended".to_string();
            report.set(condition::AVAILABLE, false, "Suspended", message);
        } else if !failed.is_empty() {
            let message = format!("{} job(s) have failed", failed.len());
            report.set(condition::DEGRADED, true, "JobsFailed", message.clone());
            report.set(condition::AVAILABLE, false, "JobsFailed", message);
        } else if !active.is_empty() {
            let message = format!("{} job(s) are currently active", active.len());
            report.set(condition::PROGRESSING, true, "JobsActive", message);
            let message = format!("CronJob is progressing with {} active job(s)", active.len());
            report.set(condition::AVAILABLE, true, "JobsActive", message);
        } else {
            let message = "All jobs have completed successfully".to_string();
            report.set(condition::AVAILABLE, true, "AllJobsCompleted", message);
            let message = "No jobs are currently active".to_string();
            report.set(condition::PROGRESSING, false, "NoJobsActive", message);
        }
        // Unlike the book, a failure reported earlier is cleared once no failed Job is left
        // (the steps below set it again if they fail).
        if failed.is_empty() {
            let message = "No job has failed".to_string();
            report.set(condition::DEGRADED, false, "NoJobsFailed", message);
        }

        // 3: finished Jobs beyond the history limits, oldest first (best effort: a failure is
        // logged, and the next reconcile tries again).
        let limits = [
            (failed, cronjob.spec.failed_jobs_history_limit),
            (successful, cronjob.spec.successful_jobs_history_limit),
        ];
        for (mut jobs, limit) in limits {
            let Some(limit) = limit else { continue };
            jobs.sort_by(|a, b| compare_start_times(a, b));
            let excess = jobs
                .len()
                .saturating_sub(usize::try_from(limit).unwrap_or(0));
            for job in &jobs[..excess] {
                match self.jobs.delete(job, PropagationPolicy::Background).await {
                    Ok(()) => tracing::debug!(job = %job.name_any(), "deleted old finished job"),
                    Err(error) => {
                        tracing::error!(job = %job.name_any(), %error, "unable to delete old finished job")
                    }
                }
            }
        }

        // 4: nothing runs while suspended.
        if suspended {
            tracing::debug!(%name, "cronjob suspended, skipping");
            return Ok(Action::await_change());
        }

        // 5: the last run missed, and the next.
        let now = self.clock.now();
        let last = last_schedule_time.map(|time| time.0);
        let (missed, next) = match next_schedule(cronjob, last, now) {
            Ok(times) => times,
            Err(error) => {
                tracing::error!(%name, %error, "unable to figure out CronJob schedule");
                let message = format!("Failed to parse schedule: {error}");
                report.set(condition::DEGRADED, true, "InvalidSchedule", message);
                // Nothing to do until the CronJob changes.
                return Ok(Action::await_change());
            }
        };
        let scheduled = self.clock.requeue_at(next);
        let Some(missed) = missed else {
            tracing::debug!(%name, %now, %next, "no upcoming scheduled times, sleeping until next");
            return Ok(scheduled);
        };

        // 6: run a Job for it, unless too late or the concurrency policy forbids.
        let deadline = cronjob.spec.starting_deadline_seconds;
        if deadline.is_some_and(|seconds| add_seconds(missed, seconds) < now) {
            tracing::debug!(%name, %missed, "missed starting deadline for last run, sleeping till next");
            let message = format!("Missed starting deadline for run at {missed}");
            report.set(condition::DEGRADED, true, "MissedSchedule", message);
            return Ok(scheduled);
        }
        let policy = cronjob.spec.concurrency_policy.unwrap_or_default();
        if policy == ConcurrencyPolicy::Forbid && !active.is_empty() {
            tracing::debug!(%name, active = active.len(), "concurrency policy blocks concurrent runs, skipping");
            return Ok(scheduled);
        }
        if policy == ConcurrencyPolicy::Replace {
            for job in &active {
                self.jobs.delete(job, PropagationPolicy::Background).await?;
            }
        }
        let job = job_for(cronjob, missed)?;
        let job_name = job.name_any();
        match self.jobs.create(cronjob, job).await {
            Outcome::Created(state) => {
                let message = format!("Created job {job_name}");
                report.event(EventType::Normal, "SuccessfulCreate", message.clone());
                report.set(condition::PROGRESSING, true, "JobCreated", message);
                if state.bulk {
                    report.hold();
                }
            }
            Outcome::Failed { error, .. } => {
                let message = format!("Failed to create job: {error}");
                report.set(condition::DEGRADED, true, "JobCreationFailed", message);
                return Err(error.into());
            }
            Outcome::NotOwned(why) => {
                let message = format!("Failed to create job: {why}");
                report.set(condition::DEGRADED, true, "JobCreationFailed", message);
                return Err(Error::Invalid(why));
            }
            // There already (made before the cache saw it): its watch event comes.
            _ => {}
        }
        // 7: back at the next scheduled time (or sooner, when a Job changes).
        Ok(scheduled)
    }
}

/// Whether `job` has finished: its `Complete` or `Failed` condition, if one is true.
fn finished(job: &Job) -> Option<&str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .map(|c| c.type_.as_str())
}

/// The time `job` was scheduled for, from its annotation (none without it).
fn scheduled_time(job: &Job) -> Result<Option<Timestamp>, String> {
    let Some(raw) = job.annotations().get(SCHEDULED_TIME_ANNOTATION) else {
        return Ok(None);
    };
    raw.parse().map(Some).map_err(|e| format!("{raw:?}: {e}"))
}

/// A reference to `job` for `status.active`. Not its resourceVersion (which the book's
/// `ref.GetReference` copies): that changes with every change of the Job's status, and each
/// would be a write of the CronJob's status, to say nothing new; its uid says which Job it is.
fn reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// Oldest start first; a Job that has not started yet counts as oldest.
fn compare_start_times(a: &Job, b: &Job) -> Ordering {
    let start = |job: &Job| job.status.as_ref().and_then(|s| s.start_time.clone());
    start(a).map(|t| t.0).cmp(&start(b).map(|t| t.0))
}

/// `time` plus `seconds`, or the end of time.
fn add_seconds(time: Timestamp, seconds: i64) -> Timestamp {
    time.checked_add(SignedDuration::from_secs(seconds))
        .unwrap_or(Timestamp::MAX)
}

/// Parses a schedule as robfig/cron's `ParseStandard` (which the book uses): five fields
/// (minute, hour, day of month, month, day of week), or a descriptor (`@yearly`,
/// `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`), with robfig's
/// messages for a wrong number of fields.
///
/// croner: maintained, POSIX/Vixie semantics for five fields (a restricted day of month and
/// day of week match either, as robfig's and Kubernetes' CronJob), the descriptors, time
/// zones, and a jiff back end, which the runtime's [`Clock`] already speaks. (`cron` wants
/// six or seven fields with seconds; `saffron` is unmaintained.) Not supported: robfig's
/// `@every <duration>`.
pub fn parse_schedule(schedule: &str) -> Result<Cron, String> {
    if schedule.is_empty() {
        return Err("Empty spec string".into());
    }
    let spec = if schedule.starts_with('@') {
        match schedule.to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@hourly" => schedule,
            "@midnight" => "@daily",
            _ => return Err(format!("Unrecognized descriptor: {schedule}")),
        }
    } else {
        let fields = schedule.split_whitespace().count();
        if fields != 5 {
            return Err(format!(
                "Expected exactly 5 fields, found {fields}: {schedule}"
            ));
        }
        schedule
    };
    let parser = CronParser::builder().seconds(Seconds::Disallowed).build();
    parser.parse(spec).map_err(|error| error.to_string())
}

/// The last run of `cronjob` missed by `now` (if any) and the next one, counting from its last
/// run (`last`) or its creation, and at most `startingDeadlineSeconds` back. More than
/// [`MAX_MISSED_STARTS`] missed runs is an error, so that a wrong clock cannot make the
/// controller list decades of them.
pub fn next_schedule(
    cronjob: &CronJob,
    last: Option<Timestamp>,
    now: Timestamp,
) -> Result<(Option<Timestamp>, Timestamp), String> {
    let schedule = &cronjob.spec.schedule;
    let cron = parse_schedule(schedule)
        .map_err(|error| format!("unparseable schedule {schedule:?}: {error}"))?;
    // Scheduled in UTC, as the book's controller in its container.
    let next = |time: Timestamp| {
        cron.find_next_occurrence(&time.to_zoned(TimeZone::UTC), false)
            .map(|next| next.timestamp())
            .map_err(|error| format!("no next run of {schedule:?}: {error}"))
    };
    let created = cronjob.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let mut earliest = last.or(created).unwrap_or(now);
    if let Some(seconds) = cronjob.spec.starting_deadline_seconds {
        // Nothing is scheduled before this.
        let deadline = now
            .checked_sub(SignedDuration::from_secs(seconds))
            .unwrap_or(Timestamp::MIN);
        earliest = earliest.max(deadline);
    }
    if earliest > now {
        return Ok((None, next(now)?));
    }
    let (mut missed, mut starts) = (None, 0);
    let mut time = next(earliest)?;
    while time <= now {
        missed = Some(time);
        starts += 1;
        if starts > MAX_MISSED_STARTS {
            return Err("Too many missed start times (> 100). Set or decrease .spec.startingDeadlineSeconds or check clock skew.".into());
        }
        time = next(time)?;
    }
    Ok((missed, next(now)?))
}

/// The Job of `cronjob`'s run at `scheduled`: named `<cronjob>-<Unix time>` (the same run
/// always gets the same name, so that it is never made twice), the template's spec, labels and
/// annotations, the scheduled time in [`SCHEDULED_TIME_ANNOTATION`], the label the Jobs' cache
/// selects by, and `cronjob` as its controller.
pub fn job_for(cronjob: &CronJob, scheduled: Timestamp) -> Result<Job> {
    let template = &cronjob.spec.job_template;
    let meta = template.metadata.clone().unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_TIME_ANNOTATION.into(), scheduled.to_string());
    let mut labels = meta.labels.unwrap_or_default();
    labels.insert("app.kubernetes.io/managed-by".into(), MANAGED_BY.into());
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(format!("{}-{}", cronjob.name_any(), scheduled.as_second())),
            namespace: cronjob.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![controller_reference(cronjob)?]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    })
}
