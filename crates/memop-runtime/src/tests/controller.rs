//! `controller::Builder` against the in-memory API server of memop-test: what the runtime does
//! around a kind's reconcile, whatever the kind.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Operator;
use crate::controller::{Builder, Error, Reconciler, Report, Result};
use crate::manager::Shared;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use memop_test::{TestEnv, eventually};

const OPERATOR: Operator = Operator {
    name: "test-operator",
    domain: "example.com",
};

/// A reconciler with a bug: it panics on the object named `bad`.
#[derive(Clone, Default)]
struct Buggy {
    reconciled: Arc<Mutex<Vec<String>>>,
}

impl Reconciler for Buggy {
    type Object = ConfigMap;

    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    async fn apply(&self, object: &ConfigMap, report: &mut Report) -> Result<Action> {
        let name = object.name_any();
        assert_ne!(name, "bad", "a bug in the kind's code");
        self.reconciled.lock().unwrap().push(name);
        Ok(report.resync())
    }
}

async fn create(env: &TestEnv, name: &str) -> ConfigMap {
    let object = serde_json::from_value(serde_json::json!({ "metadata": { "name": name } }));
    Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace)
        .create(&PostParams::default(), &object.unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_panic_in_one_reconcile_fails_that_object_and_the_controller_goes_on() {
    let env = TestEnv::in_memory();
    let shared = Shared::new(&OPERATOR, env.operator.clone(), Some(env.namespace.clone()));
    let buggy = Buggy::default();
    let controller = Builder::new("configmaps", &shared).build(buggy.clone());

    // A failure of that object: retried with backoff, and counted as an error.
    let bad = Arc::new(create(&env, "bad").await);
    let err = controller.reconcile(bad.clone()).await.unwrap_err();
    assert!(
        matches!(&err, Error::Panicked(message) if message.contains("a bug in the kind's code")),
        "{err}"
    );
    assert_eq!(
        controller.error_policy(&bad, &err),
        Action::requeue(Duration::from_millis(5))
    );
    let metrics = shared.metrics().encode();
    assert!(
        metrics.contains(r#"controller_runtime_reconcile_errors_total{controller="configmaps"} 1"#),
        "{metrics}"
    );

    // The controller goes on with the other objects, and keeps running.
    let running = tokio::spawn(controller.run());
    create(&env, "good").await;
    eventually(
        "the good object reconciled",
        Duration::from_secs(10),
        || async {
            buggy
                .reconciled
                .lock()
                .unwrap()
                .contains(&"good".to_string())
        },
    )
    .await;
    // The bad one is retried meanwhile, and the controller does not end with its panics.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!running.is_finished(), "the controller still runs");
    shared.shutdown().trigger();
    tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the controller stops on shutdown")
        .unwrap()
        .unwrap();
}

/// A reconciler of a kind whose status is another controller's: it reports a failure, as
/// `Outcome::report` does for a write that failed.
struct Guest;

impl Reconciler for Guest {
    type Object = ConfigMap;

    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    async fn apply(&self, _: &ConfigMap, report: &mut Report) -> Result<Action> {
        Err(report.stuck("Refused", "the other controller's object".into()))
    }
}

#[tokio::test]
async fn a_controller_that_writes_no_status_leaves_the_status_to_its_owner() {
    for writes in [true, false] {
        let env = TestEnv::in_memory();
        let shared = Shared::new(&OPERATOR, env.operator.clone(), Some(env.namespace.clone()));
        let controller = Builder::new("guests", &shared)
            .writes_status(writes)
            .build(Guest);
        let object = Arc::new(create(&env, "theirs").await);
        assert!(controller.reconcile(object).await.is_err());
        let requests = env.requests.requests();
        let status_writes = requests
            .iter()
            .filter(|r| r.resource == "configmaps/status")
            .count();
        assert_eq!(
            status_writes,
            usize::from(writes),
            "writes_status({writes})"
        );
        // The event is recorded either way.
        assert_eq!(env.requests.writes("events"), 1, "writes_status({writes})");
    }
}

/// Counts the reconciles under way, and the most at once.
#[derive(Clone, Default)]
struct Slow {
    running: Arc<Mutex<(usize, usize)>>,
    done: Arc<Mutex<usize>>,
}

impl Reconciler for Slow {
    type Object = ConfigMap;

    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    async fn apply(&self, _: &ConfigMap, _: &mut Report) -> Result<Action> {
        {
            let mut running = self.running.lock().unwrap();
            running.0 += 1;
            running.1 = running.1.max(running.0);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.running.lock().unwrap().0 -= 1;
        *self.done.lock().unwrap() += 1;
        Ok(Action::await_change())
    }
}

#[tokio::test]
async fn a_controller_reconciles_at_most_its_own_limit_at_once() {
    for limit in [Some(1), None] {
        let env = TestEnv::in_memory();
        let shared = Shared::new(&OPERATOR, env.operator.clone(), Some(env.namespace.clone()));
        for i in 0..6 {
            create(&env, &format!("object-{i}")).await;
        }
        let slow = Slow::default();
        let builder = Builder::new("slow", &shared);
        let builder = match limit {
            Some(limit) => builder.max_concurrent_reconciles(limit),
            None => builder,
        };
        let running = tokio::spawn(builder.build(slow.clone()).run());
        eventually(
            "every object reconciled",
            Duration::from_secs(10),
            || async { *slow.done.lock().unwrap() == 6 },
        )
        .await;
        let most = slow.running.lock().unwrap().1;
        match limit {
            Some(limit) => assert_eq!(most, usize::from(limit)),
            // The manager's --max-concurrent-reconciles (10): all six at once.
            None => assert!(most > 1, "{most}"),
        }
        shared.shutdown().trigger();
        let _ = tokio::time::timeout(Duration::from_secs(5), running).await;
    }
}

/// Records each reconcile (the object's name, and whether it carries the edit), taking a while
/// over each, one at a time: a controller with a backlog.
#[derive(Clone, Default)]
struct Backlog {
    seen: Arc<Mutex<Vec<(String, bool)>>>,
}

impl Reconciler for Backlog {
    type Object = ConfigMap;

    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    async fn apply(&self, object: &ConfigMap, _: &mut Report) -> Result<Action> {
        let edited = object
            .data
            .as_ref()
            .is_some_and(|d| d.contains_key("edited"));
        self.seen.lock().unwrap().push((object.name_any(), edited));
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(Action::await_change())
    }
}

/// The real control plane, with the RBAC of the operand tests' fixture (which reads
/// ConfigMaps), when there is one.
async fn backends() -> Vec<TestEnv> {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture_operand");
    let mut envs = vec![TestEnv::in_memory()];
    envs.extend(TestEnv::real_for(&fixture).await);
    envs
}

/// A restart with many objects: all come from the initial list at once, and take a while to
/// reconcile one by one. A user's edit of one of them, made meanwhile, is reconciled next, not
/// after the backlog (as it would be in kube-runtime's first-in-first-out scheduler, where the
/// object keeps its place from the list: the last).
#[tokio::test]
async fn an_edit_is_reconciled_before_the_backlog_of_the_initial_list() {
    const OBJECTS: usize = 120;
    for env in backends().await {
        let shared = Shared::new(&OPERATOR, env.operator.clone(), Some(env.namespace.clone()));
        for i in 0..OBJECTS {
            create(&env, &format!("object-{i:03}")).await;
        }
        let backlog = Backlog::default();
        let controller = Builder::new("backlog", &shared)
            .max_concurrent_reconciles(1)
            .build(backlog.clone());
        let running = tokio::spawn(controller.run());
        eventually("the backlog started", Duration::from_secs(30), || async {
            !backlog.seen.lock().unwrap().is_empty()
        })
        .await;
        // The last object of the list (names list in order).
        let last = format!("object-{:03}", OBJECTS - 1);
        let edit = serde_json::json!({ "data": { "edited": "yes" } });
        Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace)
            .patch(&last, &PatchParams::default(), &Patch::Merge(&edit))
            .await
            .unwrap();
        eventually("the edit reconciled", Duration::from_secs(30), || async {
            backlog
                .seen
                .lock()
                .unwrap()
                .iter()
                .any(|(_, edited)| *edited)
        })
        .await;
        let seen = backlog.seen.lock().unwrap().clone();
        let at = seen.iter().position(|(_, edited)| *edited).unwrap();
        println!("the edit reconciled after {at} of {OBJECTS} objects of the backlog");
        assert!(
            at < OBJECTS / 2,
            "the edit waited behind {at} of the backlog's {OBJECTS} objects"
        );
        shared.shutdown().trigger();
        let _ = tokio::time::timeout(Duration::from_secs(5), running).await;
    }
}

/// A controller's own rate limit: its failed reconciles are retried at most that often overall,
/// after its burst, whatever each object's own backoff says.
#[tokio::test]
async fn a_controller_retries_at_most_at_its_own_rate() {
    let env = TestEnv::in_memory();
    let shared = Shared::new(&OPERATOR, env.operator.clone(), Some(env.namespace.clone()));
    let object: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "object", "namespace": "default" }
    }))
    .unwrap();
    let failure = Error::Invalid("a failure".into());
    // The default: 10 a second after a burst of 100, so a failure retries at its own 5 ms.
    let default = Builder::new("default", &shared).build(Slow::default());
    assert_eq!(
        default.error_policy(&object, &failure),
        Action::requeue(Duration::from_millis(5))
    );
    // One a second without a burst: even the first retry waits its second.
    let limited = Builder::new("limited", &shared)
        .rate_limit(1, 0)
        .build(Slow::default());
    assert_eq!(
        limited.error_policy(&object, &failure),
        Action::requeue(Duration::from_secs(1))
    );
}

/// Keeps every object it is given.
#[derive(Clone, Default)]
struct Seen {
    objects: Arc<Mutex<Vec<ConfigMap>>>,
}

impl Reconciler for Seen {
    type Object = ConfigMap;

    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    async fn apply(&self, object: &ConfigMap, _: &mut Report) -> Result<Action> {
        self.objects.lock().unwrap().push(object.clone());
        Ok(Action::await_change())
    }
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The controller's cache leaves out what no reconcile reads (`managedFields`, `kubectl apply`'s
/// record of the object), so the reconciler gets the object without them; a controller built
/// with `keeps_last_applied` gets the record. Its list is streamed. On both back ends.
#[tokio::test]
async fn the_cache_leaves_out_kubectl_applys_record_unless_the_controller_keeps_it() {
    let mut envs = vec![TestEnv::in_memory()];
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture");
    envs.extend(TestEnv::real_for(&fixture).await);
    for env in envs {
        let record = r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}"#;
        let object = serde_json::json!({ "metadata": {
            "name": "applied",
            "annotations": { LAST_APPLIED: record, "example.com/kept": "yes" },
        }, "data": { "a": "b" } });
        Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace)
            .create(
                &PostParams::default(),
                &serde_json::from_value(object).unwrap(),
            )
            .await
            .unwrap();
        for keeps in [false, true] {
            let shared = Shared::new(&OPERATOR, env.operator.clone(), Some(env.namespace.clone()));
            let seen = Seen::default();
            let builder = Builder::new("configmaps", &shared).writes_status(false);
            let builder = if keeps {
                builder.keeps_last_applied()
            } else {
                builder
            };
            let running = tokio::spawn(builder.build(seen.clone()).run());
            eventually("the object reconciled", Duration::from_secs(30), || {
                let seen = seen.objects.clone();
                async move { !seen.lock().unwrap().is_empty() }
            })
            .await;
            running.abort();
            let given = seen.objects.lock().unwrap()[0].clone();
            let annotations = given.annotations();
            let what = format!("real: {}, keeps: {keeps}: {annotations:?}", env.is_real());
            assert_eq!(annotations.get(LAST_APPLIED).is_some(), keeps, "{what}");
            assert_eq!(annotations["example.com/kept"], "yes", "{what}");
            assert_eq!(given.metadata.managed_fields, None, "{what}");
            assert_eq!(given.data.unwrap()["a"], "b", "{what}");
        }
        // The controller's cache streamed its list (a watch), as the `Owned` caches do.
        let requests = env.requests.requests();
        let lists = requests.iter().filter(|r| r.verb == memop_test::Verb::List);
        assert!(lists.clone().count() > 0, "real: {}", env.is_real());
        assert!(lists.clone().all(|r| r.streamed), "real: {}", env.is_real());
    }
}

/// A controller's own reconcile timeout: a reconcile longer than it fails with
/// `Error::Timeout`, whatever the manager's `--reconcile-timeout` (a minute).
#[tokio::test]
async fn a_controller_fails_a_reconcile_longer_than_its_own_timeout() {
    let env = TestEnv::in_memory();
    let shared = Shared::new(&OPERATOR, env.operator.clone(), Some(env.namespace.clone()));
    let object = Arc::new(create(&env, "slow").await);
    // Slow takes 100 ms.
    let default = Builder::new("default", &shared).build(Slow::default());
    default.reconcile(object.clone()).await.unwrap();
    let hurried = Builder::new("hurried", &shared)
        .reconcile_timeout(Duration::from_millis(20))
        .build(Slow::default());
    let err = hurried.reconcile(object).await.unwrap_err();
    assert!(
        matches!(err, Error::Timeout(limit) if limit == Duration::from_millis(20)),
        "{err}"
    );
}
