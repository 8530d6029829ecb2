//! What a controller that keeps an operand running (a Deployment per object, as kubebuilder's
//! deploy-image plugin scaffolds) reads of what it owns: whether it controls an object, and how
//! a Deployment's rollout stands, and how many rollouts it may start on its own at once.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::controller::{
    APPLIED_HASH, Error, Observed, Owned, Report, Result, condition, fingerprint,
    fingerprint_patch, in_sync, label_value, stamp,
};
use crate::manager::Shared;

/// Whether `owner` is the controller of `owned` (the owner reference a controller sets with
/// `controller: true`, as controller-runtime's `SetControllerReference` does).
pub(crate) fn controlled_by(owned: &impl Resource, owner: &impl Resource) -> bool {
    let uid = owner.meta().uid.as_ref();
    owned
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == uid)
}

/// The owner reference that makes `owner` the controller of an object, as controller-runtime's
/// `SetControllerReference` makes it: `controller: true`, and `blockOwnerDeletion`, so that
/// deleting the owner in the foreground waits for the object. Fails for an object not yet
/// created (it has no uid).
pub fn controller_reference<K: Resource<DynamicType = ()>>(owner: &K) -> Result<OwnerReference> {
    let mut reference = owner.controller_owner_ref(&()).ok_or_else(|| {
        Error::Invalid(format!(
            "{} {} has no uid yet",
            K::kind(&()),
            owner.name_any()
        ))
    })?;
    reference.block_owner_deletion = Some(true);
    Ok(reference)
}

/// The tag of an image reference, as a label value (`app.kubernetes.io/version`): "latest"
/// when it has none.
pub fn image_tag(image: &str) -> String {
    let without_digest = image.split('@').next().unwrap_or(image);
    match without_digest.rsplit_once(':') {
        Some((_, tag)) if !tag.contains('/') => label_value(tag),
        _ => "latest".to_string(),
    }
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
pub(crate) fn rollout(deployment: &Deployment, size: i32) -> Rollout {
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
pub(crate) fn resize_patch(current: &Deployment, desired: &Deployment) -> Option<Patch<Value>> {
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
    let patch = Patch::Merge(json!({
        "metadata": { "annotations": { APPLIED_HASH: desired.annotations().get(APPLIED_HASH) } },
        "spec": { "replicas": to },
    }));
    // Scaled by someone else: at the size wanted, it is in sync.
    let mut scaled = serde_json::to_value(current).ok()?;
    scaled["spec"]["replicas"] = to.clone();
    if in_sync(
        &serde_json::from_value::<Deployment>(scaled).ok()?,
        desired,
        None,
    ) {
        return Some(patch);
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
    in_sync(current, &same_size, None).then_some(patch)
}

/// Paces the rollouts of a controller's own making, so that a change of the operator (a new
/// operand image in its environment, a new version of its code) or of every spec at once (a
/// GitOps sync) does not restart every operand at once: at most `max` Deployments roll out at
/// a time for such a change (`--max-concurrent-rollouts`), and a rollout that fails keeps its
/// place, so a bad image stops after `max` of them.
///
/// Only rollouts started through [`Self::start`] count: a Deployment unhealthy for a reason of
/// its own (pods pending, a quota) takes no place. A place is freed when the rollout is seen
/// complete, or when its Deployment is gone (deleted with its owner, wherever that ran).
pub(crate) struct Rollouts {
    max: usize,
    /// The Deployments (namespace/name) this controller started rolling out, until seen
    /// complete.
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

    /// Whether the controller may start a rollout of `deployment` (namespace/name) now: yes
    /// when it is rolling out already or fewer than `max` are, not counting those for which
    /// `exists` says the Deployment is gone. A yes counts it as rolling until
    /// [`Self::observed`] sees it complete.
    pub fn start(&self, deployment: &str, exists: impl Fn(&str) -> bool) -> bool {
        let mut rolling = self.rolling();
        if self.max == 0 || rolling.contains(deployment) {
            rolling.insert(deployment.to_string());
            return true;
        }
        if rolling.len() >= self.max {
            rolling.retain(|key| exists(key));
        }
        if rolling.len() < self.max {
            rolling.insert(deployment.to_string());
            true
        } else {
            false
        }
    }

    /// Records how the rollout of `deployment` stands, as a reconcile saw it.
    pub fn observed(&self, deployment: &str, rollout: &Rollout) {
        if *rollout == Rollout::Complete {
            self.rolling().remove(deployment);
        }
    }

    /// At most how many rollouts run at once (0: no limit).
    pub fn max(&self) -> usize {
        self.max
    }

    fn rolling(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.rolling
            .lock()
            .expect("the rollouts are never poisoned")
    }
}

/// The Deployment a controller keeps for each of its objects, as kubebuilder's deploy-image
/// plugin scaffolds it: [`Operand::ensure`] brings it in line with what the object asks for,
/// and tells how that went ([`Outcome`]), which [`Outcome::report`] turns into the object's
/// status conditions and events.
///
/// It holds the cache of the controller's Deployments ([`Owned`]: only those labelled
/// `app.kubernetes.io/managed-by=<manager>`, never a live read of one in sync), what it
/// applied to each, and the pacing of rollouts (`--max-concurrent-rollouts`). Cloning it is
/// cheap: clones share all of that.
#[derive(Clone)]
pub struct Operand {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    /// The field manager of every write, and the value of the label the cache selects.
    manager: String,
    deployments: Owned<Deployment>,
    rollouts: Rollouts,
}

impl Operand {
    /// The Deployments labelled `app.kubernetes.io/managed-by=<manager>`, written as field
    /// manager `manager`, cached under `name` (in `/readyz` and logs), in the manager's
    /// namespace (or all), with at most `--max-concurrent-rollouts` rollouts of the
    /// controller's own making at once. It starts the cache's watch, which stops when the
    /// last clone is dropped (inside a Tokio runtime).
    pub fn deployments(shared: &Shared, name: &'static str, manager: &str) -> Self {
        let selector = format!("app.kubernetes.io/managed-by={manager}");
        let config = watcher::Config::default().labels(&selector);
        Self {
            inner: Arc::new(Inner {
                client: shared.client.clone(),
                manager: manager.to_string(),
                deployments: Owned::watch(shared.namespaced_api(), config, shared, name),
                rollouts: Rollouts::new(shared.max_concurrent_rollouts),
            }),
        }
    }

    /// The cache of the Deployments.
    pub fn cache(&self) -> &Owned<Deployment> {
        &self.inner.deployments
    }

    /// Brings the Deployment that `owner` controls in line with `desired` (made with
    /// [`stamp`], and an owner reference to `owner` with `controller: true`), changing only
    /// what differs:
    /// - absent: created (a server-side apply);
    /// - only its size differs: its replicas patched, a fraction of an apply's work for the API
    ///   server (which counts when a fleet is resized at once);
    /// - anything else differs (a new image, someone's edit, a field no longer desired): applied
    ///   again, once a rollout may start (at most `--max-concurrent-rollouts` of the operator's
    ///   own at once), else [`Outcome::Waiting`];
    /// - in sync: nothing written.
    ///
    /// A Deployment of that name that `owner` does not control is never taken over (as
    /// controller-runtime's `SetControllerReference` refuses to): [`Outcome::NotOwned`].
    pub async fn ensure<P: Resource<DynamicType = ()>>(
        &self,
        owner: &P,
        desired: Deployment,
    ) -> Outcome {
        let this = &self.inner;
        let name = desired.name_any();
        let namespace = desired.namespace().unwrap_or_default();
        let size = replicas(&desired).unwrap_or(1);
        let observed = match this.deployments.observe(&desired).await {
            // Our apply of this very Deployment is not in the cache yet: its watch event
            // brings the next reconcile.
            Observed::Pending(wait) => return Outcome::Pending(wait),
            observed => observed,
        };
        if let Some(other) = observed
            .object()
            .filter(|d| !controlled_by(d.as_ref(), owner))
        {
            return Outcome::NotOwned(not_owned(other, &P::kind(&())));
        }
        let key = format!("{namespace}/{name}");
        let current = match observed {
            Observed::InSync(current) => {
                let state = self.settled(current, size);
                this.rollouts.observed(&key, &state.rollout);
                return Outcome::InSync(state);
            }
            Observed::Claimed(current) => {
                if self.rewritten_alike(&desired, &current).await {
                    this.deployments.verified(&desired, &current);
                    let state = self.settled(current, size);
                    this.rollouts.observed(&key, &state.rollout);
                    return Outcome::InSync(state);
                }
                Some(current)
            }
            Observed::Differs(current) => Some(current),
            Observed::Absent | Observed::Pending(_) => None,
        };
        let resize = current.as_deref().and_then(|d| resize_patch(d, &desired));
        // Anything but a creation or a change of size rolls the pods: it waits its turn.
        let exists = |key: &str| {
            let (namespace, name) = key.split_once('/').unwrap_or_default();
            this.deployments.contains(namespace, name)
        };
        let api: Api<Deployment> = Api::namespaced(this.client.clone(), &namespace);
        let merge = PatchParams {
            field_manager: Some(this.manager.clone()),
            ..PatchParams::default()
        };
        if let Some(current) = &current
            && resize.is_none()
            && !this.rollouts.start(&key, exists)
        {
            tracing::debug!(%name, "the rollout waits for others to complete");
            let mut state = State::new(current.clone(), size);
            // A new size is no rollout: it goes through meanwhile (the hash stays the old
            // one: the rest still differs).
            if replicas(current) != Some(size) {
                let patch = Patch::Merge(json!({ "spec": { "replicas": size } }));
                match api.patch(&name, &merge, &patch).await {
                    Ok(scaled) => state = State::new(Arc::new(scaled), size),
                    Err(error) => {
                        return self
                            .failed(&api, owner, Some(current), true, &name, error)
                            .await;
                    }
                }
            }
            return Outcome::Waiting {
                max: this.rollouts.max(),
                state,
            };
        }
        let written = match &resize {
            Some(patch) => api.patch(&name, &merge, patch).await,
            None => {
                let apply = PatchParams::apply(&this.manager).force();
                api.patch(&name, &apply, &Patch::Apply(&desired)).await
            }
        };
        // An admission webhook or policy rewrote one of our fields on the way in: record what
        // they look like now on the Deployment, so that the operator's next process does not
        // take the rewrite for drift and apply again.
        let written = match written {
            Ok(applied) => match fingerprint_patch(&applied, &desired) {
                Some(patch) => api.patch(&name, &merge, &patch).await,
                None => Ok(applied),
            },
            Err(err) => Err(err),
        };
        let applied = match written {
            Ok(applied) => applied,
            Err(error) => {
                let resizing = resize.is_some();
                return self
                    .failed(&api, owner, current.as_deref(), resizing, &name, error)
                    .await;
            }
        };
        this.deployments.applied(&desired, &applied);
        let state = self.settled(Arc::new(applied), size);
        this.rollouts.observed(&key, &state.rollout);
        match (current, resize) {
            (None, _) => Outcome::Created(state),
            (Some(current), Some(_)) => Outcome::Resized {
                from: replicas(&current).unwrap_or(1),
                // The size we asked for is the one we applied last (the hash of what is
                // wanted is on the Deployment): someone else changed it.
                restored: current.annotations().get(APPLIED_HASH)
                    == desired.annotations().get(APPLIED_HASH),
                state,
            },
            (Some(_), None) => Outcome::Updated(state),
        }
    }

    /// How `deployment` stands; while Deployments are written in bulk, its owner's report of
    /// progress waits for the burst to end, and is brought on then.
    fn settled(&self, deployment: Arc<Deployment>, size: i32) -> State {
        let mut state = State::new(deployment, size);
        state.bulk = self.inner.deployments.in_burst();
        if state.bulk {
            self.inner.deployments.hold(&state.deployment);
        }
        state
    }

    /// Whether an apply of `desired` would leave `current`'s fields as they are, as a dry run
    /// on the API server (admission included) says: a rewrite that `current` claims to be
    /// admission's, checked. Any failure says no (and the apply that follows says why).
    async fn rewritten_alike(&self, desired: &Deployment, current: &Deployment) -> bool {
        let api: Api<Deployment> = Api::namespaced(
            self.inner.client.clone(),
            &desired.namespace().unwrap_or_default(),
        );
        let params = PatchParams::apply(&self.inner.manager).force().dry_run();
        match api
            .patch(&desired.name_any(), &params, &Patch::Apply(desired))
            .await
        {
            Ok(dry_run) => fingerprint(&dry_run, desired) == fingerprint(current, desired),
            Err(err) => {
                tracing::debug!(name = %desired.name_any(), error = %err, "the dry run of an apply failed");
                false
            }
        }
    }

    /// The outcome of a failed write: [`Outcome::NotOwned`] when the Deployment of that name
    /// turns out to be someone else's (the cache holds ours only: an apply that would take
    /// another over fails, its selector cannot change), else [`Outcome::Failed`].
    async fn failed<P: Resource<DynamicType = ()>>(
        &self,
        api: &Api<Deployment>,
        owner: &P,
        current: Option<&Deployment>,
        resizing: bool,
        name: &str,
        error: kube::Error,
    ) -> Outcome {
        if current.is_none() {
            match api.get_opt(name).await {
                Ok(Some(other)) if !controlled_by(&other, owner) => {
                    return Outcome::NotOwned(not_owned(&other, &P::kind(&())));
                }
                Ok(_) => {}
                Err(err) => {
                    return Outcome::Failed {
                        reason: condition::CREATE_FAILED,
                        message: format!("Failed to create the Deployment {name}: ({err})"),
                        error: err,
                    };
                }
            }
        }
        let (verb, reason) = match (current, resizing) {
            (None, _) => ("create", condition::CREATE_FAILED),
            (Some(_), true) => ("resize", condition::RESIZING),
            (Some(_), false) => ("update", condition::UPDATE_FAILED),
        };
        Outcome::Failed {
            reason,
            message: format!("Failed to {verb} the Deployment {name}: ({error})"),
            error,
        }
    }
}

/// What [`Operand::ensure`] did, and how the Deployment stands.
#[derive(Debug)]
pub enum Outcome {
    /// The Deployment was created.
    Created(State),
    /// The Deployment was applied again: its template or another field differed.
    Updated(State),
    /// Only its size differed, and its replicas were patched: to a new size of the object's
    /// (`restored` false), or back after someone else scaled it (`restored` true).
    Resized {
        /// The replicas before.
        from: i32,
        /// Whether someone else had changed the size the controller set.
        restored: bool,
        /// How it stands now.
        state: State,
    },
    /// Nothing differs: nothing was written.
    InSync(State),
    /// A change waits for a place among the `max` rollouts under way (`--max-concurrent-rollouts`).
    Waiting {
        /// At most this many rollouts run at once.
        max: usize,
        /// How the Deployment, not yet changed, stands.
        state: State,
    },
    /// The controller's own apply of this very Deployment is not in its cache yet: come back
    /// after this at the latest (its watch event comes first, as a rule).
    Pending(Duration),
    /// A Deployment of that name exists and is controlled by something else: why, to report.
    NotOwned(String),
    /// Writing the Deployment failed.
    Failed {
        /// The condition reason to report ([`condition::CREATE_FAILED`] or
        /// [`condition::UPDATE_FAILED`]).
        reason: &'static str,
        /// What failed, to report.
        message: String,
        /// The API server's answer.
        error: kube::Error,
    },
}

/// How a Deployment stands after [`Operand::ensure`].
#[derive(Debug)]
pub struct State {
    /// The Deployment, as written or cached.
    pub deployment: Arc<Deployment>,
    /// The replicas the object asks for.
    pub replicas: i32,
    /// How its rollout stands.
    pub rollout: Rollout,
    /// Whether the controller is writing Deployments in bulk (a fleet resized at once): a
    /// report of progress can then wait ([`Report::hold`]).
    pub bulk: bool,
}

impl State {
    fn new(deployment: Arc<Deployment>, replicas: i32) -> Self {
        let rollout = rollout(&deployment, replicas);
        Self {
            deployment,
            replicas,
            rollout,
            bulk: false,
        }
    }

    /// The Deployment's name.
    pub fn name(&self) -> String {
        self.deployment.name_any()
    }
}

/// How long a change that waits for a place among the rollouts asks again.
const ROLLOUT_WAIT: Duration = Duration::from_secs(30);

impl Outcome {
    /// The usual report of an outcome, in the vocabulary of kubebuilder's deploy-image
    /// controllers ([`condition`]): `Available` once every replica of the current spec is,
    /// `Degraded` with the reason of a failure; an event for what the object's spec did not
    /// ask for (a Deployment created, changed back, or waiting for its rollout); and when to
    /// come back. A failure is returned as an error, to be retried with backoff (the report is
    /// written first).
    ///
    /// A controller that reports otherwise matches on the outcome itself, and may call this
    /// for the cases it leaves as they are.
    pub fn report(self, report: &mut Report) -> Result<Action> {
        match self {
            Self::Pending(wait) => Ok(Action::requeue(wait)),
            Self::NotOwned(message) => Err(report.stuck(condition::NOT_OWNED, message)),
            Self::Failed {
                reason,
                message,
                error,
            } => {
                report.failing(reason, message);
                Err(error.into())
            }
            Self::Created(state) => {
                let note = format!(
                    "Created Deployment {} with {} replicas",
                    state.name(),
                    state.replicas
                );
                report.event(EventType::Normal, "Created", note);
                Ok(state.report(report, false))
            }
            Self::Updated(state) => {
                let note = format!("Updated Deployment {}", state.name());
                report.event(EventType::Normal, "Updated", note);
                Ok(state.report(report, false))
            }
            Self::Resized {
                from,
                restored,
                state,
            } => {
                // A resize the spec asked for is in the status already (Resizing): an event
                // per object would cost a write each when a fleet is resized.
                if restored {
                    let note = format!(
                        "Resized Deployment {} from {from} back to {} replicas",
                        state.name(),
                        state.replicas
                    );
                    report.event(EventType::Normal, "Resized", note);
                }
                Ok(state.report(report, true))
            }
            Self::InSync(state) => Ok(state.report(report, false)),
            Self::Waiting { max, state } => {
                let message = format!(
                    "An update of Deployment {} waits: {max} rollouts of the operator's are under way (--max-concurrent-rollouts)",
                    state.name()
                );
                state.report(report, false);
                report.set(
                    condition::DEGRADED,
                    false,
                    condition::ROLLOUT_WAITING,
                    message.clone(),
                );
                report.event(EventType::Normal, condition::ROLLOUT_WAITING, message);
                Ok(Action::requeue(ROLLOUT_WAIT))
            }
        }
    }
}

impl State {
    /// Reports how the rollout stands (`resized`: the replicas were just patched), and
    /// returns when to come back.
    fn report(&self, report: &mut Report, resized: bool) -> Action {
        let (name, size) = (self.name(), self.replicas);
        let healthy = || "The Deployment matches the spec".to_string();
        match &self.rollout {
            Rollout::Complete => {
                let message = format!("Deployment {name} has all {size} replicas available");
                report.set(condition::AVAILABLE, true, condition::RECONCILING, message);
                report.set(
                    condition::DEGRADED,
                    false,
                    condition::RECONCILING,
                    healthy(),
                );
            }
            Rollout::Failed(why) => {
                let message = format!("Deployment {name} failed to roll out: {why}");
                report.failing(condition::ROLLOUT_FAILED, message);
                return report.resync();
            }
            Rollout::InProgress => {
                // One report per rollout, not one per pod that comes up: the reason is chosen
                // at the first report of this generation and kept, and the message names no
                // count (each change would be a status write, and a watch event to every
                // watcher of the kind).
                let reported = report
                    .condition(condition::AVAILABLE)
                    .filter(|c| c.status == "False" && c.observed_generation == report.generation())
                    .map(|c| c.reason.as_str())
                    .filter(|reason| {
                        [condition::RESIZING, condition::PROGRESSING].contains(reason)
                    });
                let scaling = self
                    .deployment
                    .status
                    .as_ref()
                    .and_then(|s| s.replicas)
                    .is_some_and(|replicas| replicas != size);
                let reason = match reported {
                    Some(reason) if !resized => reason,
                    _ if resized || scaling => condition::RESIZING,
                    _ => condition::PROGRESSING,
                }
                .to_string();
                let message = if reason == condition::RESIZING {
                    format!("Deployment {name} is scaling to {size} replicas")
                } else {
                    format!("Deployment {name} is rolling out {size} replicas")
                };
                report.set(condition::AVAILABLE, false, &reason, message);
                report.set(
                    condition::DEGRADED,
                    false,
                    condition::RECONCILING,
                    healthy(),
                );
            }
        }
        if self.bulk {
            report.hold();
        }
        report.resync()
    }
}

/// Why `other`, a Deployment of the name wanted, is left alone by the controller of a `kind`.
fn not_owned(other: &Deployment, kind: &str) -> String {
    let controller = other
        .owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
        .map_or("nothing".to_string(), |r| format!("{} {}", r.kind, r.name));
    format!(
        "Deployment {} already exists and is controlled by {controller}, not by this {kind}: delete or rename it",
        other.name_any()
    )
}

/// A Deployment's `spec.replicas`: k8s-openapi types its `spec` as `DeploymentSpec` for
/// Kubernetes 1.37 and as `Option<DeploymentSpec>` before.
fn replicas(deployment: &Deployment) -> Option<i32> {
    let spec: Option<&DeploymentSpec> = (&deployment.spec).into();
    spec?.replicas
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

    #[test]
    fn no_limit_at_zero() {
        let rollouts = Rollouts::new(0);
        for name in ["a", "b", "c"] {
            assert!(rollouts.start(name, |_| true));
        }
        assert!(rollouts.start("d", |_| true));
    }

    #[test]
    fn image_tags_become_label_values() {
        assert_eq!(
            image_tag("memcached:1.6.26-alpine3.19"),
            "1.6.26-alpine3.19"
        );
        assert_eq!(image_tag("registry:5000/team/app"), "latest");
        assert_eq!(image_tag("app:v1@sha256:abc"), "v1");
        for image in ["app:_1.6", "app:.hidden", "app:1.6_"] {
            let tag = image_tag(image);
            assert!(
                tag.starts_with(|c: char| c.is_ascii_alphanumeric()),
                "{tag}"
            );
            assert!(tag.ends_with(|c: char| c.is_ascii_alphanumeric()), "{tag}");
        }
    }

    #[test]
    fn a_controller_reference_blocks_the_owners_deletion() {
        let owner: ConfigMap =
            serde_json::from_value(json!({ "metadata": { "name": "a", "uid": "u1" } })).unwrap();
        let reference = controller_reference(&owner).unwrap();
        assert_eq!(
            (reference.controller, reference.block_owner_deletion),
            (Some(true), Some(true))
        );
        assert_eq!(reference.uid, "u1");
        let new: ConfigMap =
            serde_json::from_value(json!({ "metadata": { "name": "a" } })).unwrap();
        assert!(
            controller_reference(&new)
                .unwrap_err()
                .to_string()
                .contains("no uid")
        );
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
