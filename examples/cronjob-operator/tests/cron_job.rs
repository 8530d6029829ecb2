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

//! Tests of the CronJob controller, each run twice: on the in-memory API server of
//! `memop-test` and, when `KUBEBUILDER_ASSETS` is set, on a real kube-apiserver as the
//! operator's own ServiceAccount (see `memop_test::envtest`).
//!
//! [`the_books_controller_test`] is the book's `cronjob_controller_test.go`, on the running
//! controller loop. The others reconcile directly, on a manual [`Clock`] set just past a
//! scheduled time, one behaviour each: the Job of a run (name, annotation, template, owner),
//! the status rebuilt from the Jobs, the concurrency policies, suspend, the starting deadline,
//! more than 100 missed runs, an unparseable schedule, the history limits, the requeue at the
//! next run, and a steady state without writes.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use memop_runtime::controller::{Clock, Controller, Reconciler, condition};
use memop_runtime::manager::Shared;
use memop_runtime::operand::controller_reference;
use memop_runtime::rbac::Rules;
use memop_test::{TestEnv, eventually};
use serde_json::json;

use cronjob_operator::api::batch::v1::{ConcurrencyPolicy, CronJob, CronJobSpec};
use cronjob_operator::controller::cron_job::{
    Context, MANAGED_BY, RULES, SCHEDULED_TIME_ANNOTATION, controller, next_schedule,
    parse_schedule,
};

memop_test::scenarios!(
    the_books_controller_test,
    a_missed_run_gets_a_job_named_after_its_time_and_the_status_follows_the_jobs,
    allow_runs_a_job_beside_the_active_one,
    forbid_skips_runs_while_a_job_is_active,
    replace_deletes_the_active_job_for_the_new_run,
    a_suspended_cronjob_runs_nothing,
    a_run_missed_by_more_than_the_starting_deadline_is_not_started,
    more_than_100_missed_runs_is_an_error,
    an_unparseable_schedule_is_reported_and_not_retried,
    the_history_limits_keep_the_newest_finished_jobs,
    the_role_grants_what_the_controller_does,
);

/// The book's CronJob: a Job template of one container, labels and annotations to copy.
fn cronjob(name: &str, schedule: &str) -> CronJob {
    let template: JobTemplateSpec = serde_json::from_value(json!({
        "metadata": {
            "labels": { "team": "batch" },
            "annotations": { "note": "from the template" },
        },
        "spec": { "template": { "spec": {
            "containers": [{ "name": "test-container", "image": "test-image" }],
            "restartPolicy": "OnFailure",
        } } },
    }))
    .unwrap();
    let spec = CronJobSpec {
        schedule: schedule.into(),
        job_template: template,
        ..CronJobSpec::default()
    };
    CronJob::new(name, spec)
}

/// The test's own view of cronjobs, as an administrator.
fn api(env: &TestEnv) -> Api<CronJob> {
    Api::namespaced(env.admin.clone(), &env.namespace)
}

/// The test's own view of Jobs, as an administrator.
fn jobs(env: &TestEnv) -> Api<Job> {
    Api::namespaced(env.admin.clone(), &env.namespace)
}

fn shared(env: &TestEnv) -> Shared {
    Shared::new(
        &cronjob_operator::OPERATOR,
        env.operator.clone(),
        Some(env.namespace.clone()),
    )
}

async fn create(env: &TestEnv, object: CronJob) -> CronJob {
    api(env)
        .create(&PostParams::default(), &object)
        .await
        .unwrap()
}

/// When the API server created `object`.
fn created(object: &CronJob) -> Timestamp {
    object.metadata.creation_timestamp.as_ref().unwrap().0
}

/// The first whole minute after `time`: the first run of a `*/1 * * * *` CronJob made then.
fn minute_after(time: Timestamp) -> Timestamp {
    Timestamp::from_second((time.as_second().div_euclid(60) + 1) * 60).unwrap()
}

/// A controller whose clock stands at `now` until the test moves it.
fn controller_at(env: &TestEnv, now: Timestamp) -> (Controller<Context>, Clock) {
    let clock = Clock::manual(now);
    let shared = shared(env);
    (
        controller(&shared, Context::new(&shared, clock.clone())),
        clock,
    )
}

/// [`controller_at`], with the manager's shared things, to run it and stop it.
fn running_at(env: &TestEnv, now: Timestamp) -> (Controller<Context>, Shared) {
    let shared = shared(env);
    let ctx = Context::new(&shared, Clock::manual(now));
    (controller(&shared, ctx), shared)
}

/// Reconciles the CronJob `name` as it is stored now.
async fn reconcile(controller: &Controller<Context>, env: &TestEnv, name: &str) -> Action {
    let object = api(env).get(name).await.unwrap();
    controller.reconcile(Arc::new(object)).await.unwrap()
}

/// The names of the Jobs of the CronJob `name`, once the controller's cache agrees with the
/// API server on them.
async fn job_names(controller: &Controller<Context>, env: &TestEnv, name: &str) -> Vec<String> {
    let owner = api(env).get(name).await.unwrap();
    let stored = || async {
        let mut names: Vec<String> = (jobs(env).list(&Default::default()).await.unwrap())
            .items
            .iter()
            .filter(|job| {
                job.owner_references()
                    .iter()
                    .any(|r| Some(&r.uid) == owner.metadata.uid.as_ref())
            })
            .map(|job| job.name_any())
            .collect();
        names.sort();
        names
    };
    let cached = || async {
        let children = controller.reconciler().jobs().children(&owner).await;
        let mut names: Vec<String> = children.iter().map(|job| job.name_any()).collect();
        names.sort();
        names
    };
    eventually(
        "the cache holds the Jobs stored",
        Duration::from_secs(20),
        || async { stored().await == cached().await },
    )
    .await;
    stored().await
}

/// Marks the Job `name` finished, `Complete` or `Failed`, started at `start`, as the book's
/// test does (with the conditions the API server requires before them).
async fn finish(env: &TestEnv, name: &str, type_: &str, start: Timestamp) {
    let (before, count) = match type_ {
        "Complete" => ("SuccessCriteriaMet", "succeeded"),
        _ => ("FailureTarget", "failed"),
    };
    let mut status = json!({
        "startTime": start.to_string(),
        count: 1,
        "conditions": [
            { "type": before, "status": "True" },
            { "type": type_, "status": "True" },
        ],
    });
    if type_ == "Complete" {
        status["completionTime"] = json!(start.to_string());
    }
    let patch = Patch::Merge(json!({ "status": status }));
    jobs(env)
        .patch_status(name, &PatchParams::default(), &patch)
        .await
        .unwrap();
}

/// A Job that `owner` controls, made by someone else (the book's test makes its own), labelled
/// for the controller's cache, which holds only Jobs with `app.kubernetes.io/managed-by`.
async fn job_of(env: &TestEnv, owner: &CronJob, name: &str) -> Job {
    let mut job: Job = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": { "app.kubernetes.io/managed-by": MANAGED_BY },
        },
        "spec": { "template": { "spec": {
            "containers": [{ "name": "test-container", "image": "test-image" }],
            "restartPolicy": "OnFailure",
        } } },
    }))
    .unwrap();
    job.metadata.owner_references = Some(vec![controller_reference(owner).unwrap()]);
    jobs(env)
        .create(&PostParams::default(), &job)
        .await
        .unwrap()
}

/// The condition `type_` of the stored CronJob `name`: (status, reason, message).
async fn condition_of(env: &TestEnv, name: &str, type_: &str) -> Option<(String, String, String)> {
    let object = api(env).get(name).await.unwrap();
    let conditions = object.status.unwrap_or_default().conditions;
    let found = conditions.into_iter().find(|c| c.type_ == type_)?;
    Some((found.status, found.reason, found.message))
}

/// kubebuilder's book, `internal/controller/cronjob_controller_test.go`, on the controller
/// loop: a new CronJob gets conditions and no active Job; a Job it controls, running, is in
/// `status.active` and makes it `Available` with reason `JobsActive`; with history limits of
/// one, the older of two failed and of two successful Jobs are deleted.
async fn the_books_controller_test(env: TestEnv) {
    // The clock stands still before the CronJob is made: its run at minute 1 of the hour
    // never comes.
    let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    let (controller, shared) = running_at(&env, now);
    let running = tokio::spawn(controller.run());
    let cronjob = create(&env, cronjob("test-cronjob", "1 * * * *")).await;

    // Checking that status conditions are initialized.
    eventually("conditions", Duration::from_secs(30), || async {
        let object = api(&env).get("test-cronjob").await.unwrap();
        !object.status.unwrap_or_default().conditions.is_empty()
    })
    .await;

    // Checking that the CronJob has zero active Jobs (for two seconds).
    for _ in 0..8 {
        let object = api(&env).get("test-cronjob").await.unwrap();
        assert!(object.status.unwrap_or_default().active.is_empty());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Creating a new Job owned by the CronJob, running two pods.
    job_of(&env, &cronjob, "test-job").await;
    let active = Patch::Merge(json!({ "status": { "active": 2 } }));
    jobs(&env)
        .patch_status("test-job", &PatchParams::default(), &active)
        .await
        .unwrap();

    // Checking that the CronJob has one active Job in status.
    eventually("one active Job", Duration::from_secs(30), || async {
        let status = api(&env).get("test-cronjob").await.unwrap().status;
        let active = status.unwrap_or_default().active;
        active.len() == 1 && active[0].name.as_deref() == Some("test-job")
    })
    .await;
    eventually(
        "Available with reason JobsActive",
        Duration::from_secs(30),
        || async {
            let available = condition_of(&env, "test-cronjob", condition::AVAILABLE).await;
            available.is_some_and(|(status, reason, _)| status == "True" && reason == "JobsActive")
        },
    )
    .await;

    // Checking that old finished Jobs are pruned by history limits.
    let limits =
        json!({ "spec": { "failedJobsHistoryLimit": 1, "successfulJobsHistoryLimit": 1 } });
    api(&env)
        .patch(
            "test-cronjob",
            &PatchParams::default(),
            &Patch::Merge(&limits),
        )
        .await
        .unwrap();
    let base = Timestamp::now();
    let (old, new) = (
        base - Duration::from_secs(60),
        base + Duration::from_secs(1),
    );
    for (name, type_, start) in [
        ("test-failed-job-old", "Failed", old),
        ("test-failed-job-new", "Failed", new),
        ("test-successful-job-old", "Complete", old),
        ("test-successful-job-new", "Complete", new),
    ] {
        job_of(&env, &cronjob, name).await;
        finish(&env, name, type_, start).await;
    }
    eventually(
        "the older finished Jobs deleted",
        Duration::from_secs(30),
        || async {
            let exists = |name: &'static str| {
                let jobs = jobs(&env);
                async move { jobs.get_opt(name).await.unwrap().is_some() }
            };
            !exists("test-failed-job-old").await
                && !exists("test-successful-job-old").await
                && exists("test-failed-job-new").await
                && exists("test-successful-job-new").await
        },
    )
    .await;

    shared.shutdown().trigger();
    let stopped = tokio::time::timeout(Duration::from_secs(10), running).await;
    stopped
        .expect("the controller stops on shutdown")
        .unwrap()
        .unwrap();
}

/// A run missed by the clock gets its Job: named `<cronjob>-<Unix time>`, the scheduled time
/// in the annotation (RFC 3339), the template's labels, annotations and spec, the cache's label,
/// the CronJob as controller; the reconcile comes back at the next run. `status.active` and
/// `lastScheduleTime` follow the Jobs, and a reconcile with nothing to do writes nothing.
async fn a_missed_run_gets_a_job_named_after_its_time_and_the_status_follows_the_jobs(
    env: TestEnv,
) {
    let object = create(&env, cronjob("every-minute", "*/1 * * * *")).await;
    let run = minute_after(created(&object));
    let (controller, clock) = controller_at(&env, run + Duration::from_secs(10));

    let action = reconcile(&controller, &env, "every-minute").await;
    assert_eq!(
        action,
        Action::requeue(Duration::from_secs(50)),
        "back at the next run"
    );
    let name = format!("every-minute-{}", run.as_second());
    assert_eq!(
        job_names(&controller, &env, "every-minute").await,
        [name.as_str()]
    );
    let job = jobs(&env).get(&name).await.unwrap();
    let annotations = job.annotations();
    assert_eq!(annotations[SCHEDULED_TIME_ANNOTATION], run.to_string());
    assert!(
        annotations[SCHEDULED_TIME_ANNOTATION].ends_with(":00Z"),
        "RFC 3339"
    );
    assert_eq!(annotations["note"], "from the template");
    assert_eq!(job.labels()["team"], "batch");
    assert_eq!(job.labels()["app.kubernetes.io/managed-by"], MANAGED_BY);
    let owner: &OwnerReference = &job.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("CronJob", "every-minute")
    );
    assert_eq!(Some(&owner.uid), object.metadata.uid.as_ref());
    assert_eq!(owner.controller, Some(true));
    let container = &job
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0];
    assert_eq!(container.image.as_deref(), Some("test-image"));
    let (_, reason, message) = condition_of(&env, "every-minute", condition::PROGRESSING)
        .await
        .unwrap();
    assert_eq!(
        (reason.as_str(), message),
        ("JobCreated", format!("Created job {name}"))
    );

    // The next reconcile finds the Job active: status.active and lastScheduleTime say so, and
    // no second Job is made for the same run.
    reconcile(&controller, &env, "every-minute").await;
    let status = api(&env).get("every-minute").await.unwrap().status.unwrap();
    assert_eq!(status.active.len(), 1);
    let reference = &status.active[0];
    assert_eq!(reference.name.as_deref(), Some(name.as_str()));
    assert_eq!(
        (reference.kind.as_deref(), reference.api_version.as_deref()),
        (Some("Job"), Some("batch/v1"))
    );
    assert_eq!(reference.uid, job.metadata.uid);
    assert_eq!(status.last_schedule_time.unwrap().0, run);
    assert_eq!(
        job_names(&controller, &env, "every-minute").await,
        [name.as_str()]
    );
    let (available, reason, _) = condition_of(&env, "every-minute", condition::AVAILABLE)
        .await
        .unwrap();
    assert_eq!(
        (available.as_str(), reason.as_str()),
        ("True", "JobsActive")
    );

    // Nothing changed: nothing is written.
    env.requests.clear();
    let action = reconcile(&controller, &env, "every-minute").await;
    assert_eq!(action, Action::requeue(Duration::from_secs(50)));
    assert_eq!(env.requests.writes("*"), 0, "{:?}", env.requests.requests());

    // The Job completes: no longer active; lastScheduleTime stays.
    finish(&env, &name, "Complete", run).await;
    eventually(
        "the cache sees it complete",
        Duration::from_secs(20),
        || async {
            let owner = api(&env).get("every-minute").await.unwrap();
            let children = controller.reconciler().jobs().children(&owner).await;
            children
                .iter()
                .any(|job| job.status.as_ref().is_some_and(|s| s.succeeded == Some(1)))
        },
    )
    .await;
    reconcile(&controller, &env, "every-minute").await;
    let status = api(&env).get("every-minute").await.unwrap().status.unwrap();
    assert!(status.active.is_empty());
    assert_eq!(status.last_schedule_time.unwrap().0, run);
    let (available, reason, _) = condition_of(&env, "every-minute", condition::AVAILABLE)
        .await
        .unwrap();
    assert_eq!(
        (available.as_str(), reason.as_str()),
        ("True", "AllJobsCompleted")
    );

    // The next minute: the next run.
    clock.advance(Duration::from_secs(60));
    let action = reconcile(&controller, &env, "every-minute").await;
    assert_eq!(action, Action::requeue(Duration::from_secs(50)));
    let next = format!("every-minute-{}", run.as_second() + 60);
    assert_eq!(
        job_names(&controller, &env, "every-minute").await,
        [name, next]
    );
}

/// Two runs, the first Job still active at the second: the Jobs there are after it, and the
/// CronJob.
async fn two_runs(env: &TestEnv, name: &str, policy: ConcurrencyPolicy) -> (Vec<String>, i64) {
    let mut object = cronjob(name, "*/1 * * * *");
    object.spec.concurrency_policy = Some(policy);
    let object = create(env, object).await;
    let run = minute_after(created(&object));
    let (controller, clock) = controller_at(env, run + Duration::from_secs(10));
    reconcile(&controller, env, name).await;
    assert_eq!(job_names(&controller, env, name).await.len(), 1);
    clock.advance(Duration::from_secs(60));
    let action = reconcile(&controller, env, name).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(50)));
    (job_names(&controller, env, name).await, run.as_second())
}

async fn allow_runs_a_job_beside_the_active_one(env: TestEnv) {
    let (names, run) = two_runs(&env, "allow", ConcurrencyPolicy::Allow).await;
    assert_eq!(
        names,
        [format!("allow-{run}"), format!("allow-{}", run + 60)]
    );
}

async fn forbid_skips_runs_while_a_job_is_active(env: TestEnv) {
    let (names, run) = two_runs(&env, "forbid", ConcurrencyPolicy::Forbid).await;
    assert_eq!(
        names,
        [format!("forbid-{run}")],
        "the second run is skipped"
    );
}

async fn replace_deletes_the_active_job_for_the_new_run(env: TestEnv) {
    let (names, run) = two_runs(&env, "replace", ConcurrencyPolicy::Replace).await;
    assert_eq!(
        names,
        [format!("replace-{}", run + 60)],
        "the first Job deleted"
    );
}

async fn a_suspended_cronjob_runs_nothing(env: TestEnv) {
    let mut object = cronjob("suspended", "*/1 * * * *");
    object.spec.suspend = Some(true);
    let object = create(&env, object).await;
    let run = minute_after(created(&object));
    let (controller, _clock) = controller_at(&env, run + Duration::from_secs(10));
    let action = reconcile(&controller, &env, "suspended").await;
    assert_eq!(action, Action::await_change());
    assert!(job_names(&controller, &env, "suspended").await.is_empty());
    let available = condition_of(&env, "suspended", condition::AVAILABLE).await;
    assert_eq!(
        available,
        Some((
            "False".into(),
            "Suspended".into(),
            "CronJob is suspended".into()
        ))
    );

    // Resumed: the missed run starts.
    let resume = Patch::Merge(json!({ "spec": { "suspend": false } }));
    api(&env)
        .patch("suspended", &PatchParams::default(), &resume)
        .await
        .unwrap();
    reconcile(&controller, &env, "suspended").await;
    let names = job_names(&controller, &env, "suspended").await;
    assert_eq!(names, [format!("suspended-{}", run.as_second())]);
}

async fn a_run_missed_by_more_than_the_starting_deadline_is_not_started(env: TestEnv) {
    let mut object = cronjob("deadline", "*/1 * * * *");
    object.spec.starting_deadline_seconds = Some(30);
    let object = create(&env, object).await;
    let run = minute_after(created(&object));
    // 40 seconds late: past the deadline of 30; the next run is awaited.
    let (controller, clock) = controller_at(&env, run + Duration::from_secs(40));
    let action = reconcile(&controller, &env, "deadline").await;
    assert_eq!(action, Action::requeue(Duration::from_secs(20)));
    assert!(job_names(&controller, &env, "deadline").await.is_empty());
    // 20 seconds late for the next: within the deadline, it starts.
    clock.advance(Duration::from_secs(40));
    reconcile(&controller, &env, "deadline").await;
    let names = job_names(&controller, &env, "deadline").await;
    assert_eq!(names, [format!("deadline-{}", run.as_second() + 60)]);
}

async fn more_than_100_missed_runs_is_an_error(env: TestEnv) {
    let object = create(&env, cronjob("wedged", "*/1 * * * *")).await;
    let run = minute_after(created(&object));
    let (controller, _clock) = controller_at(&env, run + Duration::from_secs(101 * 60));
    let action = reconcile(&controller, &env, "wedged").await;
    assert_eq!(action, Action::await_change());
    assert!(job_names(&controller, &env, "wedged").await.is_empty());
    let (degraded, reason, message) = condition_of(&env, "wedged", condition::DEGRADED)
        .await
        .unwrap();
    assert_eq!(
        (degraded.as_str(), reason.as_str()),
        ("True", "InvalidSchedule")
    );
    assert!(
        message.contains("Too many missed start times (> 100)"),
        "{message}"
    );

    // With a starting deadline, only the runs within it count: the last one starts.
    let deadline = Patch::Merge(json!({ "spec": { "startingDeadlineSeconds": 600 } }));
    api(&env)
        .patch("wedged", &PatchParams::default(), &deadline)
        .await
        .unwrap();
    reconcile(&controller, &env, "wedged").await;
    let names = job_names(&controller, &env, "wedged").await;
    assert_eq!(names, [format!("wedged-{}", run.as_second() + 101 * 60)]);
    let (degraded, _, _) = condition_of(&env, "wedged", condition::DEGRADED)
        .await
        .unwrap();
    assert_eq!(degraded, "False", "cleared");
}

async fn an_unparseable_schedule_is_reported_and_not_retried(env: TestEnv) {
    // No webhook here to refuse it (the API server takes any string).
    create(&env, cronjob("unparseable", "every minute please")).await;
    let (controller, _clock) = controller_at(&env, Timestamp::now());
    let action = reconcile(&controller, &env, "unparseable").await;
    assert_eq!(action, Action::await_change());
    let (degraded, reason, message) = condition_of(&env, "unparseable", condition::DEGRADED)
        .await
        .unwrap();
    assert_eq!(
        (degraded.as_str(), reason.as_str()),
        ("True", "InvalidSchedule")
    );
    assert_eq!(
        message,
        "Failed to parse schedule: unparseable schedule \"every minute please\": Expected exactly 5 fields, found 3: every minute please"
    );
}

async fn the_history_limits_keep_the_newest_finished_jobs(env: TestEnv) {
    let mut object = cronjob("limited", "0 0 1 1 *");
    object.spec.successful_jobs_history_limit = Some(2);
    object.spec.failed_jobs_history_limit = Some(0);
    let object = create(&env, object).await;
    let start = created(&object);
    for (name, type_, minutes) in [
        ("ok-1", "Complete", 1),
        ("ok-2", "Complete", 2),
        ("ok-3", "Complete", 3),
        ("failed-1", "Failed", 1),
        ("failed-2", "Failed", 2),
    ] {
        job_of(&env, &object, name).await;
        finish(&env, name, type_, start + Duration::from_secs(minutes * 60)).await;
    }
    job_of(&env, &object, "running").await;
    let (controller, _clock) = controller_at(&env, start);
    eventually(
        "the cache holds the finished Jobs",
        Duration::from_secs(20),
        || async {
            let children = controller.reconciler().jobs().children(&object).await;
            children
                .iter()
                .filter(|job| job.status.as_ref().is_some_and(|s| s.start_time.is_some()))
                .count()
                == 5
        },
    )
    .await;
    reconcile(&controller, &env, "limited").await;
    let names = job_names(&controller, &env, "limited").await;
    assert_eq!(
        names,
        ["ok-2", "ok-3", "running"],
        "the oldest successful and every failed Job deleted"
    );
}

/// Schedules parse as robfig/cron's `ParseStandard`: five fields or a descriptor, its message
/// for a wrong number of fields; restricted days of month and week match either (Vixie cron).
#[test]
fn schedules_parse_as_robfig_parse_standard() {
    for good in [
        "*/5 * * * *",
        "0 0 * * *",
        "1 * * * *",
        "0 9 * * MON-FRI",
        "@hourly",
        "@daily",
        "@midnight",
        "@weekly",
        "@monthly",
        "@yearly",
        "@annually",
    ] {
        assert!(parse_schedule(good).is_ok(), "{good}");
    }
    let refused = |schedule: &str| parse_schedule(schedule).unwrap_err();
    assert_eq!(
        refused("invalid-cron-schedule"),
        "Expected exactly 5 fields, found 1: invalid-cron-schedule"
    );
    assert_eq!(
        refused("0 * * * * *"),
        "Expected exactly 5 fields, found 6: 0 * * * * *"
    );
    assert_eq!(refused(""), "Empty spec string");
    assert_eq!(
        refused("@fortnightly"),
        "Unrecognized descriptor: @fortnightly"
    );
    assert!(parse_schedule("61 * * * *").is_err());

    // The 13th of the month or a Friday: either.
    let mut object = cronjob("either", "0 0 13 * 5");
    object.metadata.creation_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-12-01T00:00:00Z".parse().unwrap(),
        ));
    let now = "2026-12-01T00:00:00Z".parse().unwrap();
    let (missed, next) = next_schedule(&object, None, now).unwrap();
    assert_eq!(missed, None);
    assert_eq!(
        next,
        "2026-12-04T00:00:00Z".parse::<Timestamp>().unwrap(),
        "Friday the 4th"
    );
}

/// `make manifests` writes the role from `Context::rules` and `RULES`: they must grant all that
/// the controller's runtime does for what `controller` declares (a kind it owns or watches).
async fn the_role_grants_what_the_controller_does(env: TestEnv) {
    let (controller, _) = controller_at(&env, Timestamp::now());
    let declared = Context::rules().with(RULES);
    assert_eq!(
        declared.missing(&controller.rules()),
        Rules::default(),
        "declare these in Context::rules (or RULES), then run `make manifests`"
    );
}
