//! Kinds whose objects run pods from a template and roll them out when it changes
//! ([`Workload`]: Deployments, StatefulSets, DaemonSets, or a kind of the project's own): how a
//! rollout stands, the patch of a change of size alone, and the pacing of the rollouts a
//! controller starts itself.

use std::collections::HashSet;
use std::sync::Mutex;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, DeploymentSpec, StatefulSet};
use kube::ResourceExt;
use kube::api::Patch;
use kube::runtime::watcher;
use serde_json::{Value, json};

use crate::controller::{APPLIED_HASH, Kind, in_sync, stamp};

/// A kind whose objects run pods from a template and roll them out when it changes: the
/// kinds an [`Operand`](super::Operand) paces (`--max-concurrent-rollouts`) and reports the
/// rollout of. memop-runtime implements it for Deployments, StatefulSets and DaemonSets;
/// implement it for a kind of the project's own that rolls (`Operand::workloads`).
pub trait Workload: Kind + kube::Resource<Scope = NamespaceResourceScope> {
    /// How many pods it asks for (`spec.replicas`), if it says: a change of that alone is
    /// patched, not applied, and rolls nothing.
    fn replicas(&self) -> Option<i32> {
        serde_json::to_value(self)
            .ok()?
            .pointer("/spec/replicas")?
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
    }

    /// How its rollout towards `replicas` pods stands, as `kubectl rollout status` reads it.
    fn rollout(&self, replicas: i32) -> Rollout;

    /// Whether it is rolling a new template out, as its own controller last reported: pods of
    /// an earlier template still run (or wait to be replaced) beside the new one's. This is
    /// what `--max-concurrent-rollouts` counts, on every replica of the operator alike, from
    /// the cache; a rollout that has stalled (a bad image) still counts, but pods that are
    /// merely not ready at the one template they all run (pending, short of a quota) do not.
    ///
    /// By default, any rollout not complete ([`Self::rollout`] at its own size).
    fn rolling_out(&self) -> bool {
        self.rollout(self.replicas().unwrap_or(1)) != Rollout::Complete
    }
}

impl Workload for Deployment {
    /// k8s-openapi types a Deployment's `spec` as `DeploymentSpec` for Kubernetes 1.37 and as
    /// `Option<DeploymentSpec>` before.
    fn replicas(&self) -> Option<i32> {
        let spec: Option<&DeploymentSpec> = (&self.spec).into();
        spec?.replicas
    }

    fn rollout(&self, size: i32) -> Rollout {
        let Some(status) = self.status.as_ref() else {
            return Rollout::InProgress;
        };
        let conditions = status.conditions.as_deref().unwrap_or_default();
        let failure = conditions.iter().find(|c| {
            let (type_, status) = (text(&c.type_), text(&c.status));
            (type_ == Some("Progressing")
                && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
                || (type_ == Some("ReplicaFailure") && status == Some("True"))
        });
        if let Some(failure) = failure {
            let reason = failure
                .reason
                .clone()
                .or_else(|| text(&failure.type_).map(String::from))
                .unwrap_or_default();
            return Rollout::Failed(match &failure.message {
                Some(message) => format!("{reason}: {message}"),
                None => reason,
            });
        }
        let updated = status.updated_replicas.unwrap_or(0);
        let complete = status.observed_generation >= self.metadata.generation
            && updated >= size
            && status.replicas.unwrap_or(0) <= updated
            && status.available_replicas.unwrap_or(0) >= updated;
        if complete {
            Rollout::Complete
        } else {
            Rollout::InProgress
        }
    }

    /// Pods of an older ReplicaSet are still counted beside the new one's: the deployment
    /// controller has not replaced them all yet.
    fn rolling_out(&self) -> bool {
        self.status.as_ref().is_some_and(|status| {
            status.replicas.unwrap_or(0) > status.updated_replicas.unwrap_or(0)
        })
    }
}

impl Workload for StatefulSet {
    /// As kubectl reads a StatefulSet's: its controller has seen the spec, `replicas` pods are
    /// ready, and all are of the update revision (or, with a partition, those above it).
    fn rollout(&self, size: i32) -> Rollout {
        let Some(value) = serde_json::to_value(self).ok() else {
            return Rollout::InProgress;
        };
        if !generation_seen(&value) || int(&value, "/status/readyReplicas") < i64::from(size) {
            return Rollout::InProgress;
        }
        if let Some(partition) = value
            .pointer("/spec/updateStrategy/rollingUpdate/partition")
            .and_then(Value::as_i64)
        {
            let wanted = i64::from(size) - partition;
            return if int(&value, "/status/updatedReplicas") < wanted {
                Rollout::InProgress
            } else {
                Rollout::Complete
            };
        }
        let revision = |field: &str| value.pointer(field).and_then(Value::as_str);
        if revision("/status/updateRevision") != revision("/status/currentRevision") {
            return Rollout::InProgress;
        }
        Rollout::Complete
    }

    /// Pods of an older revision are left to replace (above the partition, if any).
    fn rolling_out(&self) -> bool {
        let Some(value) = serde_json::to_value(self).ok() else {
            return false;
        };
        if let Some(partition) = value
            .pointer("/spec/updateStrategy/rollingUpdate/partition")
            .and_then(Value::as_i64)
        {
            let wanted = int(&value, "/spec/replicas") - partition;
            return int(&value, "/status/updatedReplicas") < wanted;
        }
        let revision = |field: &str| value.pointer(field).and_then(Value::as_str);
        match (
            revision("/status/updateRevision"),
            revision("/status/currentRevision"),
        ) {
            (Some(update), Some(current)) => update != current,
            _ => false,
        }
    }
}

impl Workload for DaemonSet {
    /// None: a DaemonSet runs a pod on every node it selects.
    fn replicas(&self) -> Option<i32> {
        None
    }

    /// As kubectl reads a DaemonSet's: its controller has seen the spec, and every node it
    /// schedules on runs an updated pod that is available.
    fn rollout(&self, _: i32) -> Rollout {
        let Some(value) = serde_json::to_value(self).ok() else {
            return Rollout::InProgress;
        };
        let desired = int(&value, "/status/desiredNumberScheduled");
        let done = generation_seen(&value)
            && int(&value, "/status/updatedNumberScheduled") >= desired
            && int(&value, "/status/numberAvailable") >= desired;
        if done {
            Rollout::Complete
        } else {
            Rollout::InProgress
        }
    }

    /// Nodes are left whose pod runs an older template.
    fn rolling_out(&self) -> bool {
        let Some(value) = serde_json::to_value(self).ok() else {
            return false;
        };
        int(&value, "/status/updatedNumberScheduled")
            < int(&value, "/status/desiredNumberScheduled")
    }
}

/// Whether the controller of a workload has seen its current spec.
fn generation_seen(value: &Value) -> bool {
    let observed = int(value, "/status/observedGeneration");
    observed > 0 && observed >= int(value, "/metadata/generation")
}

/// An integer field of `value`, 0 when absent.
fn int(value: &Value, pointer: &str) -> i64 {
    value.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// How a workload's rollout stands, read as `kubectl rollout status` reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum Rollout {
    /// Every replica runs the current spec and is available; no old one is left. (A kind
    /// that does not roll is complete once it is as wanted.)
    Complete,
    /// Still rolling out (or not yet seen by the workload's own controller).
    InProgress,
    /// It will not finish without help: the progress deadline passed, or pods cannot be made.
    Failed(String),
}

/// The patch that takes `current` to `desired` (both [`stamp`]ed) when only the replicas
/// differ, if they do: `current` is in sync with `desired` at its own size. A JSON merge patch of
/// the replicas and the hash annotation costs the API server a fraction of a server-side apply
/// of the whole object, which counts when a whole fleet is resized at once. `None` when
/// anything else differs too (apply then), or when the replicas are the same.
///
/// Send it with the field manager of the applies: the API server then records the replicas as
/// that manager's (an update), and the next apply takes them back.
pub(crate) fn resize_patch<K: Kind>(current: &K, desired: &K) -> Option<Patch<Value>> {
    let (from, to, patch) = resize(current, desired)?;
    // Scaled by someone else: at the size wanted, it is in sync.
    let mut scaled = serde_json::to_value(current).ok()?;
    scaled["spec"]["replicas"] = to;
    if in_sync(&serde_json::from_value::<K>(scaled).ok()?, desired, None) {
        return Some(patch);
    }
    in_sync(current, &at_size(desired, from)?, None).then_some(patch)
}

/// [`resize_patch`] for `current` as the cache projects it, its fields as this process last
/// applied them: only the replicas differ when `desired` at `current`'s size is what was
/// applied (the same [`APPLIED_HASH`]).
pub(crate) fn resize_by_hash<K: Kind>(current: &K, desired: &K) -> Option<Patch<Value>> {
    let (from, _, patch) = resize(current, desired)?;
    let hash = |object: &K| object.annotations().get(APPLIED_HASH).cloned();
    (hash(current).is_some() && hash(current) == hash(&at_size(desired, from)?)).then_some(patch)
}

/// The replicas of `current` and `desired` when they differ, and the patch from one to the
/// other.
fn resize<K: Kind>(current: &K, desired: &K) -> Option<(Value, Value, Patch<Value>)> {
    let replicas = |object: &K| {
        serde_json::to_value(object)
            .ok()?
            .pointer("/spec/replicas")
            .cloned()
    };
    let (from, to) = (replicas(current)?, replicas(desired)?);
    if from == to {
        return None;
    }
    let patch = Patch::Merge(json!({
        "metadata": { "annotations": { APPLIED_HASH: desired.annotations().get(APPLIED_HASH) } },
        "spec": { "replicas": to },
    }));
    Some((from, to, patch))
}

/// `desired` as it would be at `size` replicas, stamped again.
fn at_size<K: Kind>(desired: &K, size: Value) -> Option<K> {
    let mut same_size = serde_json::to_value(desired).ok()?;
    same_size["spec"]["replicas"] = size;
    let metadata = same_size["metadata"].as_object_mut()?;
    let annotations = metadata.get_mut("annotations")?.as_object_mut()?;
    annotations.remove(APPLIED_HASH);
    if annotations.is_empty() {
        metadata.remove("annotations");
    }
    Some(stamp(serde_json::from_value::<K>(same_size).ok()?))
}

/// Paces the rollouts of a controller's own making, so that a change of the operator (a new
/// operand image in its environment, a new version of its code) or of every spec at once (a
/// GitOps sync) does not restart every operand at once: at most `max` workloads roll out at
/// a time for such a change (`--max-concurrent-rollouts`), and a rollout that fails keeps its
/// place, so a bad image stops after `max` of them.
///
/// The count is the fleet's, read from the cache ([`Self::seen`]): the operator's workloads
/// that are rolling out ([`Workload::rolling_out`]), every one its watch brings, whichever
/// replica (sharded) or process (before a failover or a restart) started it. So the limit holds
/// across the replicas of a sharded operator and through its restarts, instead of each process
/// allowing `max` of its own. Between the apply that starts a rollout and the moment the
/// workload's controller reports it (and the cache shows it), this process counts it itself
/// ([`Self::start`]), until the cache shows it under way or a reconcile sees it complete.
///
/// A workload unhealthy for a reason of its own (pods pending, a quota) at the template all its
/// pods run takes no place. A place is freed when the rollout is seen complete, or when its
/// workload is gone (deleted with its owner, wherever that ran).
pub(crate) struct Rollouts {
    max: usize,
    /// The workloads (namespace/name) the cache shows rolling out, of the whole fleet.
    fleet: Mutex<Fleet>,
    /// The workloads (namespace/name) this process started rolling out and the cache does
    /// not show under way yet.
    started: Mutex<HashSet<String>>,
}

/// The workloads rolling out, as the cache's watch brings them.
#[derive(Default)]
struct Fleet {
    rolling: HashSet<String>,
    /// While the watch lists (again): those of the list so far. The list replaces `rolling` at
    /// its end; until then the count is the one before.
    listing: Option<HashSet<String>>,
}

impl Rollouts {
    /// At most `max` rollouts at once; 0 for no limit.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            fleet: Mutex::default(),
            started: Mutex::default(),
        }
    }

    /// Follows an event of the operand cache's watch: every object it brings, before a
    /// sharded replica leaves out those of other replicas' buckets.
    pub fn seen<K: Workload>(&self, event: &watcher::Event<K>) {
        let key = |object: &K| {
            format!(
                "{}/{}",
                object.namespace().unwrap_or_default(),
                object.name_any()
            )
        };
        let mut fleet = self.fleet.lock().expect("the rollouts are never poisoned");
        match event {
            watcher::Event::Init => fleet.listing = Some(HashSet::new()),
            watcher::Event::InitApply(object) => {
                if object.rolling_out() {
                    fleet.listing.get_or_insert_default().insert(key(object));
                }
            }
            watcher::Event::InitDone => {
                if let Some(listed) = fleet.listing.take() {
                    fleet.rolling = listed;
                }
            }
            watcher::Event::Apply(object) if object.rolling_out() => {
                fleet.rolling.insert(key(object));
            }
            watcher::Event::Apply(object) | watcher::Event::Delete(object) => {
                fleet.rolling.remove(&key(object));
            }
        }
    }

    /// Whether the controller may start a rollout of `workload` (namespace/name) now: yes
    /// when it is rolling out already or fewer than `max` are, not counting those this process
    /// started for which `exists` says the workload is gone. A yes counts it as rolling until
    /// the cache shows it so, or [`Self::observed`] sees it complete.
    pub fn start(&self, workload: &str, exists: impl Fn(&str) -> bool) -> bool {
        if self.max == 0 {
            return true;
        }
        let fleet = self.fleet.lock().expect("the rollouts are never poisoned");
        let mut started = self.started();
        // What the cache shows under way is counted there.
        started.retain(|key| !fleet.rolling.contains(key));
        if fleet.rolling.contains(workload) || started.contains(workload) {
            return true;
        }
        if fleet.rolling.len() + started.len() >= self.max {
            started.retain(|key| exists(key));
        }
        if fleet.rolling.len() + started.len() < self.max {
            started.insert(workload.to_string());
            true
        } else {
            false
        }
    }

    /// Records how the rollout of `workload` stands, as a reconcile saw it.
    pub fn observed(&self, workload: &str, rollout: &Rollout) {
        if *rollout == Rollout::Complete {
            self.started().remove(workload);
        }
    }

    /// At most how many rollouts run at once (0: no limit).
    pub fn max(&self) -> usize {
        self.max
    }

    fn started(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.started
            .lock()
            .expect("the rollouts are never poisoned")
    }
}

/// A string field that k8s-openapi types as `String` for some Kubernetes versions and as
/// `Option<String>` for others, as an `Option<&str>`: a Deployment condition's `type` and `status`
/// are optional in the 1.37 schema, required before. The crate leaves the version to the
/// project, so it builds with either.
fn text<'a>(field: impl Into<Option<&'a String>>) -> Option<&'a str> {
    field.into().map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_is_complete_only_when_every_new_replica_is_available() {
        let deployment = |status: serde_json::Value| -> Deployment {
            serde_json::from_value(json!({ "metadata": { "generation": 2 }, "status": status }))
                .unwrap()
        };
        let done = json!({ "observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2 });
        assert_eq!(deployment(done).rollout(2), Rollout::Complete);
        let unseen = json!({ "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2 });
        assert_eq!(deployment(unseen).rollout(2), Rollout::InProgress);
        // Old pods still serve while the new ReplicaSet's do not come up.
        let rolling = json!({ "observedGeneration": 2, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 2 });
        assert_eq!(deployment(rolling).rollout(2), Rollout::InProgress);
        let stuck = json!({ "observedGeneration": 2, "conditions": [{
            "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
            "message": "ReplicaSet has timed out progressing." }] });
        assert!(
            matches!(deployment(stuck).rollout(2), Rollout::Failed(m) if m.contains("ProgressDeadlineExceeded"))
        );
        let quota = json!({ "observedGeneration": 2, "conditions": [{
            "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate" }] });
        assert_eq!(
            deployment(quota).rollout(2),
            Rollout::Failed("FailedCreate".into())
        );
    }

    #[test]
    fn a_stateful_set_is_rolled_out_when_every_replica_is_ready_at_the_update_revision() {
        let set = |strategy: Option<Value>, status: Value| -> StatefulSet {
            let mut spec =
                json!({ "selector": {}, "template": {}, "serviceName": "s", "replicas": 3 });
            if let Some(strategy) = strategy {
                spec["updateStrategy"] = strategy;
            }
            let set = json!({ "metadata": { "generation": 3 }, "spec": spec, "status": status });
            serde_json::from_value(set).unwrap()
        };
        let done = json!({ "observedGeneration": 3, "replicas": 3, "readyReplicas": 3,
            "currentRevision": "r2", "updateRevision": "r2" });
        assert_eq!(set(None, done.clone()).rollout(3), Rollout::Complete);
        assert_eq!(set(None, done).replicas(), Some(3));
        let old = json!({ "observedGeneration": 3, "replicas": 3, "readyReplicas": 3,
            "currentRevision": "r1", "updateRevision": "r2" });
        assert_eq!(set(None, old).rollout(3), Rollout::InProgress);
        let unseen = json!({ "observedGeneration": 2, "replicas": 3, "readyReplicas": 3 });
        assert_eq!(set(None, unseen).rollout(3), Rollout::InProgress);
        // A partition of 2: only the pods at or above ordinal 2 are updated.
        let partitioned = json!({ "type": "RollingUpdate", "rollingUpdate": { "partition": 2 } });
        let one_updated = json!({ "observedGeneration": 3, "replicas": 3, "readyReplicas": 3,
            "updatedReplicas": 1, "currentRevision": "r1", "updateRevision": "r2" });
        assert_eq!(
            set(Some(partitioned), one_updated).rollout(3),
            Rollout::Complete
        );
    }

    #[test]
    fn a_daemon_set_is_rolled_out_when_every_scheduled_pod_is_updated_and_available() {
        let set = |status: Value| -> DaemonSet {
            serde_json::from_value(json!({ "metadata": { "generation": 1 }, "status": status }))
                .unwrap()
        };
        let done = json!({ "observedGeneration": 1, "desiredNumberScheduled": 2,
            "currentNumberScheduled": 2, "numberMisscheduled": 0, "numberReady": 2,
            "updatedNumberScheduled": 2, "numberAvailable": 2 });
        assert_eq!(set(done.clone()).rollout(1), Rollout::Complete);
        assert_eq!(set(done).replicas(), None);
        let rolling = json!({ "observedGeneration": 1, "desiredNumberScheduled": 2,
            "currentNumberScheduled": 2, "numberMisscheduled": 0, "numberReady": 2,
            "updatedNumberScheduled": 1, "numberAvailable": 2 });
        assert_eq!(set(rolling).rollout(1), Rollout::InProgress);
    }

    /// A Deployment as a controller builds it, `size` replicas, stamped.
    fn desired(size: i32, image: &str) -> Deployment {
        stamp(
            serde_json::from_value(json!({
                "metadata": { "name": "a", "namespace": "ns", "labels": { "app": "a" } },
                "spec": {
                    "replicas": size,
                    "selector": { "matchLabels": { "app": "a" } },
                    "template": {
                        "metadata": { "labels": { "app": "a" } },
                        "spec": { "containers": [{ "name": "a", "image": image }] },
                    },
                },
            }))
            .unwrap(),
        )
    }

    /// `deployment` as the API server returns it: with defaults and a status.
    fn served(deployment: &Deployment) -> Deployment {
        let mut value = serde_json::to_value(deployment).unwrap();
        value["metadata"]["resourceVersion"] = json!("7");
        value["metadata"]["generation"] = json!(1);
        value["spec"]["strategy"] = json!({ "type": "RollingUpdate" });
        value["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] =
            json!("/dev/termination-log");
        value["status"] = json!({ "replicas": 1 });
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_resize_alone_is_a_merge_patch_of_the_replicas_and_the_hash() {
        let current = served(&desired(1, "memcached:1"));
        let wanted = desired(3, "memcached:1");
        let Some(Patch::Merge(patch)) = resize_patch(&current, &wanted) else {
            panic!("a merge patch")
        };
        let hash = wanted.annotations()[APPLIED_HASH].clone();
        assert_eq!(
            patch,
            json!({ "metadata": { "annotations": { APPLIED_HASH: hash } }, "spec": { "replicas": 3 } })
        );
        // Patched so, the Deployment is in sync with what is wanted.
        let mut patched = serde_json::to_value(&current).unwrap();
        json_patch::merge(&mut patched, &patch);
        let patched: Deployment = serde_json::from_value(patched).unwrap();
        assert!(in_sync(&patched, &wanted, None));
    }

    #[test]
    fn anything_else_that_differs_is_left_to_an_apply() {
        let current = served(&desired(1, "memcached:1"));
        assert!(
            resize_patch(&current, &desired(1, "memcached:1")).is_none(),
            "same size"
        );
        assert!(
            resize_patch(&current, &desired(3, "memcached:2")).is_none(),
            "a new image"
        );
        // Someone changed the image behind the controller's back: the hash is the same, the
        // Deployment is not.
        let mut edited = serde_json::to_value(&current).unwrap();
        edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("theirs:1");
        let edited: Deployment = serde_json::from_value(edited).unwrap();
        assert!(resize_patch(&edited, &desired(3, "memcached:1")).is_none());
    }

    #[test]
    fn at_most_max_rollouts_start_and_a_failed_one_keeps_its_place() {
        let rollouts = Rollouts::new(2);
        let exists = |_: &str| true;
        assert!(rollouts.start("ns/a", exists));
        assert!(rollouts.start("ns/b", exists));
        assert!(!rollouts.start("ns/c", exists), "two are rolling out");
        assert!(
            rollouts.start("ns/a", exists),
            "a rollout under way may be applied again"
        );

        rollouts.observed("ns/a", &Rollout::Failed("ProgressDeadlineExceeded".into()));
        assert!(
            !rollouts.start("ns/c", exists),
            "a failed rollout still counts"
        );
        rollouts.observed("ns/a", &Rollout::Complete);
        assert!(rollouts.start("ns/c", exists));
    }

    #[test]
    fn rollouts_the_controller_did_not_start_take_no_place() {
        let rollouts = Rollouts::new(1);
        // Deployments seen unhealthy for reasons of their own: pods pending, a quota.
        rollouts.observed("ns/pending", &Rollout::InProgress);
        rollouts.observed("ns/quota", &Rollout::Failed("FailedCreate".into()));
        assert!(rollouts.start("ns/a", |_| true));
    }

    #[test]
    fn the_place_of_a_deployment_that_is_gone_is_freed() {
        let rollouts = Rollouts::new(1);
        assert!(rollouts.start("ns/deleted", |_| true));
        // Its owner was deleted (its cleanup ran elsewhere, or its finalizer was removed by
        // hand), and its Deployment with it: the cache no longer holds it.
        assert!(rollouts.start("ns/a", |key| key != "ns/deleted"));
    }

    /// A Deployment `name` whose controller reports `replicas` pods, `updated` of them of its
    /// current template.
    fn reported(name: &str, replicas: i32, updated: i32) -> Deployment {
        serde_json::from_value(json!({
            "metadata": { "name": name, "namespace": "ns", "generation": 2 },
            "status": { "observedGeneration": 2, "replicas": replicas,
                "updatedReplicas": updated, "availableReplicas": updated },
        }))
        .unwrap()
    }

    #[test]
    fn a_deployment_rolls_out_while_pods_of_an_older_template_are_left() {
        assert!(reported("a", 2, 1).rolling_out());
        // A stalled rollout (a bad image) keeps its old pods: still rolling out.
        assert!(reported("a", 1, 0).rolling_out());
        assert!(!reported("a", 2, 2).rolling_out());
        // Pods pending at the one template they all run: no rollout.
        let mut pending = reported("a", 2, 2);
        pending.status.as_mut().unwrap().available_replicas = Some(0);
        assert!(!pending.rolling_out());
        assert!(!Deployment::default().rolling_out());
    }

    #[test]
    fn the_fleets_rollouts_count_wherever_they_were_started() {
        let rollouts = Rollouts::new(2);
        // Another replica's (or an earlier process's) rollouts, as the cache lists them.
        rollouts.seen(&watcher::Event::<Deployment>::Init);
        rollouts.seen(&watcher::Event::InitApply(reported("elsewhere", 2, 1)));
        rollouts.seen(&watcher::Event::InitApply(reported("done", 1, 1)));
        rollouts.seen(&watcher::Event::<Deployment>::InitDone);
        rollouts.seen(&watcher::Event::Apply(reported("other", 2, 1)));
        assert!(!rollouts.start("ns/a", |_| true), "two are rolling out");
        assert!(
            rollouts.start("ns/other", |_| true),
            "one under way goes on"
        );

        // One completes, wherever it was started: a place is free.
        rollouts.seen(&watcher::Event::Apply(reported("other", 1, 1)));
        assert!(rollouts.start("ns/a", |_| true));
        assert!(!rollouts.start("ns/b", |_| true));
        // The one started here shows in the cache: counted once.
        rollouts.seen(&watcher::Event::Apply(reported("a", 2, 1)));
        assert!(!rollouts.start("ns/b", |_| true));

        // A relist replaces the count at its end: a rollout deleted meanwhile is gone.
        rollouts.seen(&watcher::Event::<Deployment>::Init);
        rollouts.seen(&watcher::Event::InitApply(reported("a", 2, 1)));
        assert!(
            !rollouts.start("ns/b", |_| true),
            "the count before, until the end"
        );
        rollouts.seen(&watcher::Event::<Deployment>::InitDone);
        assert!(rollouts.start("ns/b", |_| true));
        rollouts.seen(&watcher::Event::Delete(reported("a", 2, 1)));
        assert!(
            rollouts.start("ns/c", |_| true),
            "a deleted one frees its place"
        );
    }

    #[test]
    fn no_limit_at_zero() {
        let rollouts = Rollouts::new(0);
        for name in ["a", "b", "c"] {
            assert!(rollouts.start(name, |_| true));
        }
        assert!(rollouts.start("d", |_| true));
    }
}
