//! What a controller that keeps an operand running (a Deployment per object, as kubebuilder's
//! deploy-image plugin scaffolds) reads of what it owns: whether it controls an object, and how
//! a Deployment's rollout stands, and how many rollouts it may start on its own at once.

use std::collections::HashSet;
use std::sync::Mutex;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Patch;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use crate::controller::{APPLIED_HASH, in_sync, stamp};

/// Whether `owner` is the controller of `owned` (the owner reference a controller sets with
/// `controller: true`, as controller-runtime's `SetControllerReference` does).
pub fn controlled_by(owned: &impl Resource, owner: &impl Resource) -> bool {
    let uid = owner.meta().uid.as_ref();
    owned
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == uid)
}

/// How a Deployment's rollout stands, read as `kubectl rollout status` reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum Rollout {
    /// Every replica runs the current spec and is available; no old one is left.
    Complete,
    /// Still rolling out (or not yet seen by the deployment controller).
    InProgress,
    /// It will not finish without help: the progress deadline passed, or pods cannot be made.
    Failed(String),
}

/// The rollout of `deployment` towards `size` replicas.
pub fn rollout(deployment: &Deployment, size: i32) -> Rollout {
    let Some(status) = deployment.status.as_ref() else {
        return Rollout::InProgress;
    };
    let conditions = status.conditions.as_deref().unwrap_or_default();
    let failure = conditions.iter().find(|c| {
        let (type_, status) = (text(&c.type_), text(&c.status));
        (type_ == Some("Progressing") && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
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
    let complete = status.observed_generation >= deployment.metadata.generation
        && updated >= size
        && status.replicas.unwrap_or(0) <= updated
        && status.available_replicas.unwrap_or(0) >= updated;
    if complete {
        Rollout::Complete
    } else {
        Rollout::InProgress
    }
}

/// The patch that takes `current` to `desired` (both [`stamp`]ed) when only the replicas
/// differ, if they do: `current` is in sync with `desired` at its own size. A JSON merge patch of
/// the replicas and the hash annotation costs the API server a fraction of a server-side apply
/// of the whole Deployment, which counts when a whole fleet is resized at once. `None` when
/// anything else differs too (apply then), or when the replicas are the same.
///
/// Send it with the field manager of the applies: the API server then records the replicas as
/// that manager's (an update), and the next apply takes them back.
pub fn resize_patch(current: &Deployment, desired: &Deployment) -> Option<Patch<Value>> {
    let replicas = |d: &Deployment| {
        serde_json::to_value(d)
            .ok()?
            .pointer("/spec/replicas")
            .cloned()
    };
    let (from, to) = (replicas(current)?, replicas(desired)?);
    if from == to {
        return None;
    }
    // `desired` as it would be at the current size, stamped again.
    let mut same_size = serde_json::to_value(desired).ok()?;
    same_size["spec"]["replicas"] = from;
    let metadata = same_size["metadata"].as_object_mut()?;
    let annotations = metadata.get_mut("annotations")?.as_object_mut()?;
    annotations.remove(APPLIED_HASH);
    if annotations.is_empty() {
        metadata.remove("annotations");
    }
    let same_size = stamp(serde_json::from_value::<Deployment>(same_size).ok()?);
    if !in_sync(current, &same_size, None) {
        return None;
    }
    Some(Patch::Merge(json!({
        "metadata": { "annotations": { APPLIED_HASH: desired.annotations().get(APPLIED_HASH) } },
        "spec": { "replicas": to },
    })))
}

/// Paces the rollouts a controller starts on its own, so that a change of the operator's
/// making (a new operand image in its environment, a new version of its code) does not restart
/// every operand at once: at most `max` Deployments roll out at a time (`--max-concurrent-rollouts`),
/// and a rollout that fails keeps its place, so a bad image stops after `max` of them.
///
/// Every Deployment the controller sees rolling out counts, whoever started it; only the
/// operator's own changes wait. A change the user asked for (a new spec of that object) is
/// never held back. The count is rebuilt from what the controller observes, so after a restart
/// the first reconciles of the objects find the rollouts still under way.
pub struct Rollouts {
    max: usize,
    /// The Deployments (namespace/name) seen rolling out or told to, until seen complete.
    rolling: Mutex<HashSet<String>>,
}

impl Rollouts {
    /// At most `max` rollouts at once; 0 for no limit.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            rolling: Mutex::default(),
        }
    }

    /// Whether the controller may start a rollout of `deployment` (namespace/name) now, a
    /// change of its own making: yes when it is rolling out already or fewer than `max` are.
    /// A yes counts it as rolling until [`Self::observed`] sees it complete.
    pub fn start(&self, deployment: &str) -> bool {
        let mut rolling = self.rolling();
        if self.max == 0 || rolling.contains(deployment) || rolling.len() < self.max {
            rolling.insert(deployment.to_string());
            true
        } else {
            false
        }
    }

    /// Records how the rollout of `deployment` stands, as a reconcile saw it.
    pub fn observed(&self, deployment: &str, rollout: &Rollout) {
        let mut rolling = self.rolling();
        if *rollout == Rollout::Complete {
            rolling.remove(deployment);
        } else if !rolling.contains(deployment) {
            rolling.insert(deployment.to_string());
        }
    }

    /// Forgets `deployment`, which is gone.
    pub fn forget(&self, deployment: &str) {
        self.rolling().remove(deployment);
    }

    /// How many Deployments are rolling out, as far as the controller knows.
    pub fn rolling_count(&self) -> usize {
        self.rolling().len()
    }

    fn rolling(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.rolling
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
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rollout_is_complete_only_when_every_new_replica_is_available() {
        let deployment = |status: serde_json::Value| -> Deployment {
            serde_json::from_value(json!({ "metadata": { "generation": 2 }, "status": status }))
                .unwrap()
        };
        let done = json!({ "observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2 });
        assert_eq!(rollout(&deployment(done), 2), Rollout::Complete);
        let unseen = json!({ "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2 });
        assert_eq!(rollout(&deployment(unseen), 2), Rollout::InProgress);
        // Old pods still serve while the new ReplicaSet's do not come up.
        let rolling = json!({ "observedGeneration": 2, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 2 });
        assert_eq!(rollout(&deployment(rolling), 2), Rollout::InProgress);
        let stuck = json!({ "observedGeneration": 2, "conditions": [{
            "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
            "message": "ReplicaSet has timed out progressing." }] });
        assert!(
            matches!(rollout(&deployment(stuck), 2), Rollout::Failed(m) if m.contains("ProgressDeadlineExceeded"))
        );
        let quota = json!({ "observedGeneration": 2, "conditions": [{
            "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate" }] });
        assert_eq!(
            rollout(&deployment(quota), 2),
            Rollout::Failed("FailedCreate".into())
        );
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
        assert!(rollouts.start("ns/a"));
        assert!(rollouts.start("ns/b"));
        assert!(!rollouts.start("ns/c"), "two are rolling out");
        assert!(
            rollouts.start("ns/a"),
            "a rollout under way may be applied again"
        );

        rollouts.observed("ns/a", &Rollout::Failed("ProgressDeadlineExceeded".into()));
        assert!(!rollouts.start("ns/c"), "a failed rollout still counts");
        rollouts.observed("ns/a", &Rollout::Complete);
        assert!(rollouts.start("ns/c"));
        assert_eq!(rollouts.rolling_count(), 2);

        rollouts.forget("ns/b");
        rollouts.forget("ns/c");
        assert_eq!(rollouts.rolling_count(), 0);
    }

    #[test]
    fn rollouts_the_controller_did_not_start_count_too() {
        let rollouts = Rollouts::new(1);
        // A Deployment seen rolling out (created, or its spec changed by the user).
        rollouts.observed("ns/new", &Rollout::InProgress);
        assert!(!rollouts.start("ns/a"));
        rollouts.observed("ns/new", &Rollout::Complete);
        assert!(rollouts.start("ns/a"));
    }

    #[test]
    fn no_limit_at_zero() {
        let rollouts = Rollouts::new(0);
        for name in ["a", "b", "c"] {
            rollouts.observed(name, &Rollout::InProgress);
        }
        assert!(rollouts.start("d"));
    }

    #[test]
    fn only_the_controller_reference_counts() {
        let owner: ConfigMap =
            serde_json::from_value(json!({ "metadata": { "name": "a", "uid": "u1" } })).unwrap();
        let owned = |controller: bool, uid: &str| -> Deployment {
            serde_json::from_value(json!({ "metadata": { "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": uid,
                "controller": controller }] } }))
            .unwrap()
        };
        assert!(controlled_by(&owned(true, "u1"), &owner));
        assert!(!controlled_by(&owned(false, "u1"), &owner));
        assert!(!controlled_by(&owned(true, "u2"), &owner));
    }
}
