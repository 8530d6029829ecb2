//! What a controller keeps for each of its objects, of any namespaced kind: [`Operand`] holds
//! the cache of those objects and brings each in line with what its owner asks for
//! ([`Operand::ensure`]), creates the ones made once and never changed ([`Operand::create`], a
//! Job), lists an owner's from the cache ([`Operand::children`]) and deletes them
//! ([`Operand::delete`]); [`Outcome::report`] turns how that went into the owner's status
//! conditions and events. For the kinds that roll pods out ([`Workload`]: Deployments,
//! StatefulSets, DaemonSets), it also reads how their rollouts stand, patches a change of size
//! alone, and paces the rollouts it starts (`--max-concurrent-rollouts`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use crate::controller::{
    APPLIED_HASH, Error, Every, Kind, Observed, Owned, Report, Result, condition, fingerprint,
    fingerprint_patch, label_value,
};
use crate::shared::Shared;

mod workload;
pub use kube::api::PropagationPolicy;
pub use workload::{Rollout, Workload};
use workload::{Rollouts, resize_by_hash, resize_patch};

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

/// The objects of kind `K` a controller keeps for its objects (a Deployment per Memcached, a
/// Service, the Jobs of a CronJob), as kubebuilder's controllers keep theirs with `Owns()` and
/// `SetControllerReference`: [`Operand::ensure`] brings one in line with what its owner asks
/// for, and tells how that went ([`Outcome`]), which [`Outcome::report`] turns into the
/// owner's status conditions and events.
///
/// It holds the cache of those objects ([`Owned`]: only those labelled
/// `app.kubernetes.io/managed-by=<manager>`, never a live read of one in sync), what it
/// applied to each, and, for a [`Workload`], the pacing of rollouts
/// (`--max-concurrent-rollouts`). Give it to [`Builder::owns`](crate::controller::Builder::owns)
/// so that a change of one reconciles its owner. Cloning it is cheap: clones share all of
/// that.
pub struct Operand<K: Kind = Deployment> {
    inner: Arc<Inner<K>>,
}

impl<K: Kind> Clone for Operand<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<K: Kind> {
    client: Client,
    /// The field manager of every write, and the value of the label the cache selects.
    manager: String,
    objects: Owned<K>,
    /// For a [`Workload`]: how one stands, and the rollouts under way.
    workload: Option<Pacing<K>>,
}

/// What an operand reads of a [`Workload`], and the rollouts it started.
struct Pacing<K> {
    replicas: fn(&K) -> Option<i32>,
    rollout: fn(&K, i32) -> Rollout,
    rollouts: Arc<Rollouts>,
}

impl<K> Operand<K>
where
    K: Kind + Resource<Scope = NamespaceResourceScope>,
{
    /// The objects of kind `K` labelled `app.kubernetes.io/managed-by=<manager>` (give every
    /// object the controller makes that label), written as field manager `manager`, cached
    /// under `name` (in `/readyz` and logs), in the manager's namespace (or all). It starts the
    /// cache's watch, which stops when the last clone is dropped (inside a Tokio runtime).
    ///
    /// Such an object is as wanted once it is (see [`Self::ensure`]); for a kind that rolls
    /// pods out, [`Self::workloads`] reads and paces its rollouts too.
    pub fn new(shared: &Shared, name: &'static str, manager: &str) -> Self {
        Self::with(shared, name, manager, None)
    }

    fn with(
        shared: &Shared,
        name: &'static str,
        manager: &str,
        pacing: Option<(Pacing<K>, Every<K>)>,
    ) -> Self {
        let selector = format!("{MANAGED_BY_LABEL}={manager}");
        let config = watcher::Config::default().labels(&selector);
        let (workload, every) = pacing.unzip();
        let objects = Owned::watch_telling(shared.namespaced_api(), config, shared, name, every);
        Self {
            inner: Arc::new(Inner {
                client: shared.client.clone(),
                manager: manager.to_string(),
                objects,
                workload,
            }),
        }
    }

    /// The cache of the objects.
    pub fn cache(&self) -> &Owned<K> {
        &self.inner.objects
    }

    /// The cached objects that `owner` controls, from an index of the cache by controller (no
    /// request to the API server): what the book's CronJob controller lists its Jobs with.
    pub async fn children<P: Resource>(&self, owner: &P) -> Vec<Arc<K>> {
        self.inner.objects.children(owner).await
    }

    /// Brings the object that `owner` controls in line with `desired` (made with
    /// [`stamp`](crate::controller::stamp), and an owner reference to `owner` with
    /// `controller: true`: [`controller_reference`]), changing only what differs:
    /// - absent: created (a server-side apply);
    /// - a [`Workload`] whose size alone differs: its replicas patched, a fraction of an
    ///   apply's work for the API server (which counts when a fleet is resized at once);
    /// - anything else differs (a new image, someone's edit, a field no longer desired): applied
    ///   again; a workload once a rollout may start (at most `--max-concurrent-rollouts` of the
    ///   operator's workloads roll out at once, counted from the cache across every replica),
    ///   else [`Outcome::Waiting`];
    /// - in sync: nothing written.
    ///
    /// An object of that name that `owner` does not control is never taken over (as
    /// controller-runtime's `SetControllerReference` refuses to): [`Outcome::NotOwned`].
    pub async fn ensure<P: Resource<DynamicType = ()>>(&self, owner: &P, desired: K) -> Outcome<K> {
        let desired = match self.completed(owner, desired, true) {
            Ok(desired) => desired,
            Err(outcome) => return outcome,
        };
        let this = &self.inner;
        let name = desired.name_any();
        let namespace = desired.namespace().unwrap_or_default();
        let key = format!("{namespace}/{name}");
        let size = self.replicas(&desired);
        let api: Api<K> = Api::namespaced(this.client.clone(), &namespace);
        let (current, rehashed) = match self.current(&api, owner, &desired, &key, size).await {
            Ok(current) => current,
            Err(outcome) => return outcome,
        };
        let merge = PatchParams {
            field_manager: Some(this.manager.clone()),
            ..PatchParams::default()
        };
        let resize = match (&this.workload, &current) {
            // Cached projected, as this process last applied it: a new size alone is told by
            // the hash of what is wanted at the old size.
            (Some(_), Some(current)) if rehashed => resize_by_hash(current.as_ref(), &desired),
            (Some(_), Some(current)) => resize_patch(current.as_ref(), &desired),
            _ => None,
        };
        // Anything but a creation or a change of size rolls a workload's pods: it waits its
        // turn.
        if let (Some(pacing), Some(current)) = (&this.workload, &current)
            && resize.is_none()
            && !pacing.rollouts.start(&key, |key| {
                let (namespace, name) = key.split_once('/').unwrap_or_default();
                this.objects.contains(namespace, name)
            })
        {
            tracing::debug!(%name, "the rollout waits for others to complete");
            return self
                .wait(&api, owner, current, size, pacing.rollouts.max())
                .await;
        }
        let apply = PatchParams::apply(&this.manager).force();
        let written = match (&resize, &current) {
            (Some(patch), _) => api.patch(&name, &merge, patch).await,
            (None, Some(_)) => api.patch(&name, &apply, &Patch::Apply(&desired)).await,
            // Boxed: a creation is rare, and its future would make every reconcile's larger.
            (None, None) => Box::pin(self.create_by_apply(&api, owner, &desired)).await,
        };
        // An admission webhook or policy rewrote one of our fields on the way in: record what
        // they look like now on the object, so that the operator's next process does not take
        // the rewrite for drift and apply again.
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
                let failed = self.failed(&api, owner, current.as_deref(), resizing, &name, error);
                return failed.await;
            }
        };
        this.objects.applied(&desired, &applied, true);
        let state = self.settled(&key, Arc::new(applied), size);
        match (current, resize) {
            (None, _) => Outcome::Created(state),
            (Some(current), Some(_)) => Outcome::Resized {
                from: self.replicas(&current).unwrap_or(1),
                // The size we asked for is the one we applied last (the hash of what is
                // wanted is on the object): someone else changed it.
                restored: current.annotations().get(APPLIED_HASH)
                    == desired.annotations().get(APPLIED_HASH),
                state,
            },
            (Some(_), None) => Outcome::Updated(state),
        }
    }

    /// The object `desired` names as it is, to bring in line (`None`: absent), and whether it
    /// is the cache's projection of it as this process last applied it
    /// ([`Observed::Rehashed`]); or the outcome already: pending, in sync, not `owner`'s, or a
    /// failed read. The cache answers, but for an object whose projection says that a field
    /// applied to it changed ([`Observed::Changed`]): that one is read whole, to compare.
    async fn current<P: Resource<DynamicType = ()>>(
        &self,
        api: &Api<K>,
        owner: &P,
        desired: &K,
        key: &str,
        size: Option<i32>,
    ) -> std::result::Result<(Option<Arc<K>>, bool), Outcome<K>> {
        let objects = &self.inner.objects;
        let observed = match objects.observe(desired, true).await {
            // Our apply of this very object is not in the cache yet: its watch event brings
            // the next reconcile.
            Observed::Pending(wait) => return Err(Outcome::Pending(wait)),
            Observed::Changed(projected) => match api.get_opt(&desired.name_any()).await {
                Ok(Some(live)) => objects.compare(desired, Arc::new(live)),
                Ok(None) => Observed::Absent,
                Err(error) => {
                    let name = desired.name_any();
                    let projected = Some(projected.as_ref());
                    return Err(self
                        .failed(api, owner, projected, false, &name, error)
                        .await);
                }
            },
            observed => observed,
        };
        if let Some(other) = observed
            .object()
            .filter(|d| !controlled_by(d.as_ref(), owner))
        {
            return Err(Outcome::NotOwned(not_owned(other.as_ref(), &P::kind(&()))));
        }
        match observed {
            Observed::InSync(current) => Err(Outcome::InSync(self.settled(key, current, size))),
            Observed::Claimed(current) => {
                if self.rewritten_alike(desired, &current).await {
                    objects.verified(desired, &current);
                    return Err(Outcome::InSync(self.settled(key, current, size)));
                }
                Ok((Some(current), false))
            }
            Observed::Rehashed(current) => Ok((Some(current), true)),
            Observed::Differs(current) | Observed::Changed(current) => Ok((Some(current), false)),
            Observed::Absent | Observed::Pending(_) => Ok((None, false)),
        }
    }

    /// A workload's change that waits for a place among the rollouts under way: a new size
    /// goes through meanwhile, as it is no rollout.
    async fn wait<P: Resource<DynamicType = ()>>(
        &self,
        api: &Api<K>,
        owner: &P,
        current: &Arc<K>,
        size: Option<i32>,
        max: usize,
    ) -> Outcome<K> {
        let mut state = self.state(current.clone(), size);
        // (The hash stays the old one: the rest still differs.)
        if let Some(size) = size
            && self.replicas(current) != Some(size)
        {
            let merge = PatchParams {
                field_manager: Some(self.inner.manager.clone()),
                ..PatchParams::default()
            };
            let patch = Patch::Merge(json!({ "spec": { "replicas": size } }));
            let name = current.name_any();
            match api.patch(&name, &merge, &patch).await {
                Ok(scaled) => state = self.state(Arc::new(scaled), Some(size)),
                Err(error) => {
                    return self
                        .failed(api, owner, Some(current), true, &name, error)
                        .await;
                }
            }
        }
        Outcome::Waiting { max, state }
    }

    /// Creates `desired` with a server-side apply that cannot take over an object of that name
    /// the cache does not hold (someone else's, which the label selector leaves out): the
    /// apply carries a resourceVersion no object has, a precondition that a creation ignores
    /// and an update fails (409), so that it creates or changes nothing. The object found
    /// then is read: `owner`'s (made by an earlier process, its label taken off) is applied
    /// again without the precondition; someone else's is the error, which
    /// [`Self::failed`] reports as [`Outcome::NotOwned`].
    async fn create_by_apply<P: Resource<DynamicType = ()>>(
        &self,
        api: &Api<K>,
        owner: &P,
        desired: &K,
    ) -> kube::Result<K> {
        let name = desired.name_any();
        let apply = PatchParams::apply(&self.inner.manager).force();
        let mut creation = desired.clone();
        creation.meta_mut().resource_version = Some(NO_OBJECTS_VERSION.to_string());
        match api.patch(&name, &apply, &Patch::Apply(&creation)).await {
            Err(kube::Error::Api(status)) if status.code == 409 => {
                match api.get_opt(&name).await? {
                    Some(found) if !controlled_by(&found, owner) => Err(kube::Error::Api(status)),
                    _ => api.patch(&name, &apply, &Patch::Apply(desired)).await,
                }
            }
            written => written,
        }
    }

    /// Creates `desired`, controlled by `owner`, unless it exists: an object made once and
    /// never changed after (a Job, whose template cannot change; a Secret generated once), as
    /// controller-runtime's `Create` makes the book's Jobs. Nothing is compared: an object of
    /// that name that `owner` controls is [`Outcome::InSync`] as it is, one it does not
    /// control is [`Outcome::NotOwned`]. A reconcile that comes before the cache has seen this
    /// process's creation gets [`Outcome::Pending`], and writes nothing. Give it a name that
    /// says what it is for (the book names a Job after its scheduled time): then one made by
    /// an earlier process of the controller's, which the cache does not hold, is found by the
    /// API server's answer that it exists.
    pub async fn create<P: Resource<DynamicType = ()>>(&self, owner: &P, desired: K) -> Outcome<K> {
        let desired = match self.completed(owner, desired, false) {
            Ok(desired) => desired,
            Err(outcome) => return outcome,
        };
        let this = &self.inner;
        let (name, namespace) = (desired.name_any(), desired.namespace().unwrap_or_default());
        let key = format!("{namespace}/{name}");
        let size = self.replicas(&desired);
        let existing = match this.objects.observe(&desired, false).await {
            // Created by this process a moment ago; the cache has not seen it yet.
            Observed::Pending(wait) => return Outcome::Pending(wait),
            Observed::Absent => {
                let api: Api<K> = Api::namespaced(this.client.clone(), &namespace);
                let params = PostParams {
                    field_manager: Some(this.manager.clone()),
                    ..PostParams::default()
                };
                match api.create(&params, &desired).await {
                    Ok(created) => {
                        this.objects.applied(&desired, &created, false);
                        let mut state = self.settled(&key, Arc::new(created), size);
                        // Created in bulk, of any kind (a CronJob's Jobs at the top of a
                        // minute): the creations go first, the owner's report after them. (A
                        // workload's was held as it settled.)
                        if this.workload.is_none() {
                            self.hold_in_burst(&mut state);
                        }
                        return Outcome::Created(state);
                    }
                    // Made by someone else, or by this controller before it restarted, without
                    // the label the cache selects by.
                    Err(kube::Error::Api(status)) if status.is_already_exists() => {
                        match api.get_opt(&name).await {
                            Ok(live) => live.map(Arc::new),
                            Err(error) => return self.failed_create(&name, error),
                        }
                    }
                    Err(error) => return self.failed(&api, owner, None, false, &name, error).await,
                }
            }
            observed => observed.object().cloned(),
        };
        match existing {
            Some(other) if !controlled_by(other.as_ref(), owner) => {
                Outcome::NotOwned(not_owned(other.as_ref(), &P::kind(&())))
            }
            Some(object) => Outcome::InSync(self.settled(&key, object, size)),
            // Deleted between the create and the read: the next reconcile creates it.
            None => Outcome::Pending(Duration::ZERO),
        }
    }

    /// Deletes `object` (an object of this operand, as read from the cache: say, one of
    /// [`Self::children`] beyond a history limit) with `propagation` for what it owns
    /// ([`PropagationPolicy::Background`]: its pods go after it), only if it is still the
    /// object read: its UID and resourceVersion are the delete's preconditions, so that an
    /// object made again under that name, or changed since, is not deleted on a stale
    /// decision (the API server answers 409, an error: the reconcile is retried and decides
    /// again on what it reads then). An object gone already is no error.
    pub async fn delete(&self, object: &K, propagation: PropagationPolicy) -> Result<()> {
        let api: Api<K> = Api::namespaced(
            self.inner.client.clone(),
            &object.namespace().unwrap_or_default(),
        );
        let params = DeleteParams {
            propagation_policy: Some(propagation),
            preconditions: Some(Preconditions {
                uid: object.uid(),
                resource_version: object.resource_version(),
            }),
            ..DeleteParams::default()
        };
        match api.delete(&object.name_any(), &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// `desired` with what every object of the operand carries, where it lacks it: the label
    /// `app.kubernetes.io/managed-by=<manager>` the cache selects by, and a controller owner
    /// reference to `owner` ([`controller_reference`]); and, to compare (`stamp`), the hash of
    /// what is applied ([`stamp`](crate::controller::stamp), made again if anything was
    /// added). An object that has them all is as it was given. An owner not yet created (no
    /// UID) is a failure to report.
    fn completed<P: Resource<DynamicType = ()>>(
        &self,
        owner: &P,
        mut desired: K,
        stamp: bool,
    ) -> std::result::Result<K, Outcome<K>> {
        let mut added = false;
        let label = desired
            .labels()
            .get(MANAGED_BY_LABEL)
            .is_some_and(|value| *value == self.inner.manager);
        if !label {
            desired
                .labels_mut()
                .insert(MANAGED_BY_LABEL.into(), self.inner.manager.clone());
            added = true;
        }
        if !desired
            .owner_references()
            .iter()
            .any(|r| r.controller == Some(true))
        {
            match controller_reference(owner) {
                Ok(reference) => desired.owner_references_mut().push(reference),
                Err(error) => {
                    return Err(Outcome::Failed {
                        reason: condition::CREATE_FAILED,
                        message: error.to_string(),
                        error: kube::Error::Service(error.to_string().into()),
                    });
                }
            }
            added = true;
        }
        let stamped = desired.annotations().contains_key(APPLIED_HASH);
        if stamp && (added || !stamped) {
            desired.annotations_mut().remove(APPLIED_HASH);
            if desired.annotations().is_empty() {
                desired.meta_mut().annotations = None;
            }
            desired = crate::controller::stamp(desired);
        }
        Ok(desired)
    }

    /// The replicas `object` asks for, if it is a workload that says.
    fn replicas(&self, object: &K) -> Option<i32> {
        self.inner
            .workload
            .as_ref()
            .and_then(|pacing| (pacing.replicas)(object))
    }

    /// How `object` stands, towards `size` replicas (a workload).
    fn state(&self, object: Arc<K>, size: Option<i32>) -> State<K> {
        let rollout = match &self.inner.workload {
            Some(pacing) => (pacing.rollout)(&object, size.unwrap_or(1)),
            None => Rollout::Complete,
        };
        State {
            object,
            replicas: size,
            rollout,
            bulk: false,
            workload: self.inner.workload.is_some(),
        }
    }

    /// How `object` (namespace/name `key`) stands now that it is as wanted; the rollout of a
    /// workload is recorded, and while workloads are written in bulk, its owner's report of
    /// progress waits for the burst to end, and is brought on then.
    fn settled(&self, key: &str, object: Arc<K>, size: Option<i32>) -> State<K> {
        let mut state = self.state(object, size);
        if let Some(pacing) = &self.inner.workload {
            pacing.rollouts.observed(key, &state.rollout);
            self.hold_in_burst(&mut state);
        }
        state
    }

    /// While this process writes its objects in bulk ([`Owned::in_burst`]), marks `state` so
    /// ([`State::bulk`]), and has the owner's controller reconcile it again once the burst
    /// ends: its report of progress can wait until then.
    fn hold_in_burst(&self, state: &mut State<K>) {
        state.bulk = self.inner.objects.in_burst();
        if state.bulk {
            self.inner.objects.hold(&state.object);
        }
    }

    /// Whether an apply of `desired` would leave `current`'s fields as they are, as a dry run
    /// on the API server (admission included) says: a rewrite that `current` claims to be
    /// admission's, checked. Any failure says no (and the apply that follows says why).
    async fn rewritten_alike(&self, desired: &K, current: &K) -> bool {
        let api: Api<K> = Api::namespaced(
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

    /// The outcome of a failed write: [`Outcome::NotOwned`] when the object of that name
    /// turns out to be someone else's (the cache holds ours only: an apply that would take
    /// another over fails, or takes it over: a Deployment's selector cannot change, an object
    /// has one controller), else [`Outcome::Failed`].
    async fn failed<P: Resource<DynamicType = ()>>(
        &self,
        api: &Api<K>,
        owner: &P,
        current: Option<&K>,
        resizing: bool,
        name: &str,
        error: kube::Error,
    ) -> Outcome<K> {
        if current.is_none() {
            match api.get_opt(name).await {
                Ok(Some(other)) if !controlled_by(&other, owner) => {
                    return Outcome::NotOwned(not_owned(&other, &P::kind(&())));
                }
                Ok(_) => {}
                Err(err) => return self.failed_create(name, err),
            }
        }
        let (verb, reason) = match (current, resizing) {
            (None, _) => ("create", condition::CREATE_FAILED),
            (Some(_), true) => ("resize", condition::RESIZING),
            (Some(_), false) => ("update", condition::UPDATE_FAILED),
        };
        Outcome::Failed {
            reason,
            message: format!("Failed to {verb} the {} {name}: ({error})", K::kind(&())),
            error,
        }
    }

    fn failed_create(&self, name: &str, error: kube::Error) -> Outcome<K> {
        Outcome::Failed {
            reason: condition::CREATE_FAILED,
            message: format!("Failed to create the {} {name}: ({error})", K::kind(&())),
            error,
        }
    }
}

impl<K: Workload> Operand<K> {
    /// The workloads of kind `K` labelled `app.kubernetes.io/managed-by=<manager>`, as
    /// [`Self::new`] keeps objects, and with their rollouts read ([`Workload::rollout`]) and
    /// paced: at most `--max-concurrent-rollouts` of them roll out at once, a figure read from
    /// the cache ([`Workload::rolling_out`] of every workload its watch brings), so that it is
    /// the same on every replica of a sharded operator and survives a restart or a failover.
    pub fn workloads(shared: &Shared, name: &'static str, manager: &str) -> Self {
        let rollouts = Arc::new(Rollouts::new(shared.max_concurrent_rollouts));
        let pacing = Pacing {
            replicas: K::replicas,
            rollout: K::rollout,
            rollouts: rollouts.clone(),
        };
        // The rollouts are counted from every workload the cache's watch brings, this
        // replica's or not.
        let every: Every<K> = Arc::new(move |event: &watcher::Event<K>| rollouts.seen(event));
        Self::with(shared, name, manager, Some((pacing, every)))
    }
}

impl Operand<Deployment> {
    /// The Deployments labelled `app.kubernetes.io/managed-by=<manager>`:
    /// [`Self::workloads`] of kind Deployment.
    pub fn deployments(shared: &Shared, name: &'static str, manager: &str) -> Self {
        Self::workloads(shared, name, manager)
    }
}

/// What [`Operand::ensure`] or [`Operand::create`] did, and how the object stands.
#[derive(Debug)]
pub enum Outcome<K = Deployment> {
    /// The object was created.
    Created(State<K>),
    /// The object was applied again: a field of its differed.
    Updated(State<K>),
    /// Only a workload's size differed, and its replicas were patched: to a new size of the
    /// owner's (`restored` false), or back after someone else scaled it (`restored` true).
    Resized {
        /// The replicas before.
        from: i32,
        /// Whether someone else had changed the size the controller set.
        restored: bool,
        /// How it stands now.
        state: State<K>,
    },
    /// Nothing differs: nothing was written.
    InSync(State<K>),
    /// A workload's change waits for a place among the `max` rollouts under way
    /// (`--max-concurrent-rollouts`).
    Waiting {
        /// At most this many rollouts run at once.
        max: usize,
        /// How the workload, not yet changed, stands.
        state: State<K>,
    },
    /// The controller's own write of this very object is not in its cache yet: come back
    /// after this at the latest (its watch event comes first, as a rule).
    Pending(Duration),
    /// An object of that name exists and is controlled by something else: why, to report.
    NotOwned(String),
    /// Writing the object failed.
    Failed {
        /// The condition reason to report (`condition::CREATE_FAILED`,
        /// `condition::UPDATE_FAILED` or `condition::RESIZING`).
        reason: &'static str,
        /// What failed, to report.
        message: String,
        /// The API server's answer.
        error: kube::Error,
    },
}

/// How an object stands after [`Operand::ensure`].
#[derive(Debug)]
pub struct State<K = Deployment> {
    /// The object, as written, or as cached: of an object applied and unchanged since, the
    /// cache keeps its metadata the runtime reads, memop's annotations, `spec.replicas`,
    /// `spec.updateStrategy` and `status`; the rest of the spec is left out (or empty).
    pub object: Arc<K>,
    /// The replicas a workload's owner asks for (`None` for a kind that runs no replicas).
    pub replicas: Option<i32>,
    /// How a workload's rollout stands ([`Rollout::Complete`] for a kind that does not roll).
    pub rollout: Rollout,
    /// Whether the controller is writing workloads or creating objects in bulk (a fleet
    /// resized at once, a CronJob's Jobs at the top of a minute): a report of progress can
    /// then wait ([`Report::hold`]); the owner is reconciled again when the burst ends.
    pub bulk: bool,
    /// Whether the object is a workload (its rollout is reported).
    workload: bool,
}

impl<K: Kind> State<K> {
    /// The object's name.
    pub(crate) fn name(&self) -> String {
        self.object.name_any()
    }

    /// The object's kind and name, as messages name it ("Deployment memcached-sample").
    fn title(&self) -> String {
        format!("{} {}", K::kind(&()), self.name())
    }

    /// Its size as messages say it: "3 replicas", or "every pod" (a DaemonSet).
    fn size(&self) -> String {
        match self.replicas {
            Some(n) => format!("{n} replicas"),
            None => "every pod".to_string(),
        }
    }
}

/// The label every object of an operand carries, with the operand's manager as its value: the
/// operand's cache holds the objects so labelled only.
pub(crate) const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// A resourceVersion that no object has (etcd's revisions are counted from 1 and never come
/// near it): the precondition of an apply that must only create (see
/// `Operand::create_by_apply`).
const NO_OBJECTS_VERSION: &str = "9223372036854775807";

/// How long a change that waits for a place among the rollouts asks again.
const ROLLOUT_WAIT: Duration = Duration::from_secs(30);

impl<K: Kind> Outcome<K> {
    /// The usual report of an outcome, in the vocabulary of kubebuilder's deploy-image
    /// controllers ([`condition`]): for a [`Workload`], `Available` once every replica of the
    /// current spec is, and `Degraded` with the reason of a failure; an event for what the
    /// object's spec did not ask for (an object created, changed back, or a workload waiting
    /// for its rollout); and when to come back. A failure is returned as an error, to be
    /// retried with backoff (the report is written first).
    ///
    /// An object that runs no pods says nothing of the owner's availability: its success
    /// sets no condition, but clears a `Degraded` that its own failure set (so, with several
    /// operands, ensure each in turn with `?`, the workload last). A controller that reports
    /// otherwise matches on the outcome itself, and may call this for the cases it leaves as
    /// they are.
    pub fn report(self, report: &mut Report) -> Result<Action> {
        let kind = K::kind(&());
        match self {
            Self::Pending(wait) => Ok(Action::requeue(wait)),
            Self::NotOwned(message) => Err(report.stuck(&not_owned_reason(&kind), message)),
            Self::Failed {
                reason,
                message,
                error,
            } => {
                report.failing(reason, message);
                Err(error.into())
            }
            Self::Created(state) => {
                let note = match state.workload {
                    true => format!("Created {} with {}", state.title(), state.size()),
                    false => format!("Created {}", state.title()),
                };
                report.event(EventType::Normal, "Created", note);
                Ok(state.report(report, false))
            }
            Self::Updated(state) => {
                let note = format!("Updated {}", state.title());
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
                        "Resized {} from {from} back to {}",
                        state.title(),
                        state.size()
                    );
                    report.event(EventType::Normal, "Resized", note);
                }
                Ok(state.report(report, true))
            }
            Self::InSync(state) => Ok(state.report(report, false)),
            Self::Waiting { max, state } => {
                let message = format!(
                    "An update of {} waits: {max} rollouts of the operator's are under way (--max-concurrent-rollouts)",
                    state.title()
                );
                // Said once when the wait begins, not at each look every 30 seconds (a fleet
                // upgraded a few at a time has thousands waiting, for hours).
                let said = report.condition(condition::DEGRADED).is_some_and(|c| {
                    c.reason == condition::ROLLOUT_WAITING
                        && c.observed_generation == report.generation()
                });
                state.report(report, false);
                report.set(
                    condition::DEGRADED,
                    false,
                    condition::ROLLOUT_WAITING,
                    message.clone(),
                );
                if !said {
                    report.event(EventType::Normal, condition::ROLLOUT_WAITING, message);
                }
                Ok(Action::requeue(ROLLOUT_WAIT))
            }
        }
    }
}

impl<K: Kind> State<K> {
    /// Reports how the object stands (`resized`: a workload's replicas were just patched),
    /// and returns when to come back.
    fn report(&self, report: &mut Report, resized: bool) -> Action {
        let title = self.title();
        let healthy = || format!("The {} matches the spec", K::kind(&()));
        if !self.workload {
            // Clear what an earlier failure of this very object reported, and nothing else.
            let failed_here = report.condition(condition::DEGRADED).is_some_and(|c| {
                c.status == "True"
                    && [
                        condition::CREATE_FAILED,
                        condition::UPDATE_FAILED,
                        &not_owned_reason(&K::kind(&())),
                    ]
                    .contains(&c.reason.as_str())
                    && c.message.contains(&title)
            });
            if failed_here {
                report.set(
                    condition::DEGRADED,
                    false,
                    condition::RECONCILING,
                    healthy(),
                );
            }
            return report.resync();
        }
        match &self.rollout {
            Rollout::Complete => {
                let message = match self.replicas {
                    Some(_) => format!("{title} has all {} available", self.size()),
                    None => format!("{title} has every pod available"),
                };
                report.set(condition::AVAILABLE, true, condition::RECONCILING, message);
                report.set(
                    condition::DEGRADED,
                    false,
                    condition::RECONCILING,
                    healthy(),
                );
            }
            Rollout::Failed(why) => {
                let message = format!("{title} failed to roll out: {why}");
                report.failing(condition::ROLLOUT_FAILED, message);
                return report.resync();
            }
            Rollout::InProgress => {
                let reason = self.rollout_reason(report, resized);
                let message = if reason == condition::RESIZING {
                    format!("{title} is scaling to {}", self.size())
                } else {
                    format!("{title} is rolling out {}", self.size())
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

    /// The reason `Available=False` gives for a rollout under way: `Resizing` or `Progressing`.
    /// One report per rollout, not one per pod that comes up: the reason is chosen at the first
    /// report of this generation and kept (`resized` starts a new one), and the message names
    /// no count (each change would be a status write, and a watch event to every watcher of
    /// the kind).
    fn rollout_reason(&self, report: &Report, resized: bool) -> String {
        let reported = report
            .condition(condition::AVAILABLE)
            .filter(|c| c.status == "False" && c.observed_generation == report.generation())
            .map(|c| c.reason.as_str())
            .filter(|reason| [condition::RESIZING, condition::PROGRESSING].contains(reason));
        let scaling = serde_json::to_value(self.object.as_ref())
            .ok()
            .and_then(|v| v.pointer("/status/replicas").and_then(|r| r.as_i64()))
            .zip(self.replicas)
            .is_some_and(|(running, size)| running != i64::from(size));
        match reported {
            Some(reason) if !resized => reason,
            _ if resized || scaling => condition::RESIZING,
            _ => condition::PROGRESSING,
        }
        .to_string()
    }
}

/// The reason of a `Degraded` condition that says an object of `kind` is someone else's:
/// [`condition::NOT_OWNED`] for a Deployment.
fn not_owned_reason(kind: &str) -> String {
    format!("{kind}NotOwned")
}

/// Why `other`, an object of the name wanted, is left alone by the controller of a `kind`.
fn not_owned<K: Resource<DynamicType = ()>>(other: &K, kind: &str) -> String {
    let controller = other
        .owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
        .map_or("nothing".to_string(), |r| format!("{} {}", r.kind, r.name));
    format!(
        "{} {} already exists and is controlled by {controller}, not by this {kind}: delete or rename it",
        K::kind(&()),
        other.name_any()
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use serde_json::json;

    use super::*;

    /// The report of a reconcile of an owner whose status holds `conditions`.
    fn report(conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]) -> Report {
        let owner: ConfigMap =
            serde_json::from_value(json!({ "metadata": { "name": "owner", "generation": 1 } }))
                .unwrap();
        Report::new(&owner, conditions, Duration::from_secs(300))
    }

    fn state<K: Kind>(object: serde_json::Value, workload: bool) -> State<K> {
        State {
            object: Arc::new(serde_json::from_value(object).unwrap()),
            replicas: None,
            rollout: Rollout::Complete,
            bulk: false,
            workload,
        }
    }

    #[test]
    fn an_object_that_runs_no_pods_clears_only_the_failure_it_reported_itself() {
        let secret = json!({ "metadata": { "name": "creds" } });
        // Someone else's Secret of that name: Degraded, with the kind in the reason.
        let mut first = report(&[]);
        let not_owned = Outcome::<Secret>::NotOwned(
            "Secret creds already exists and is controlled by nothing, not by this ConfigMap: delete or rename it".into(),
        );
        assert!(not_owned.report(&mut first).is_err());
        let degraded = first.condition(condition::DEGRADED).unwrap().clone();
        assert_eq!(
            (degraded.status.as_str(), degraded.reason.as_str()),
            ("True", "SecretNotOwned")
        );
        let available = first.condition(condition::AVAILABLE).cloned().unwrap();

        // Renamed: the Secret is the controller's now, and the failure it reported is cleared;
        // whether the owner is available is not the Secret's to say.
        let mut second = report(&[degraded.clone(), available.clone()]);
        let in_sync = Outcome::InSync(state::<Secret>(secret.clone(), false));
        assert!(in_sync.report(&mut second).is_ok());
        let cleared = second.condition(condition::DEGRADED).unwrap();
        assert_eq!(
            (cleared.status.as_str(), cleared.reason.as_str()),
            ("False", condition::RECONCILING)
        );
        assert_eq!(second.condition(condition::AVAILABLE), Some(&available));

        // A failure of another object (the Deployment) stays for that one to clear.
        let mut failed = report(&[]);
        failed.failing(
            condition::UPDATE_FAILED,
            "Failed to update the Deployment owner: (conflict)".into(),
        );
        let deployment_failed = failed.condition(condition::DEGRADED).unwrap().clone();
        let mut third = report(std::slice::from_ref(&deployment_failed));
        let in_sync = Outcome::InSync(state::<Secret>(secret, false));
        assert!(in_sync.report(&mut third).is_ok());
        assert_eq!(
            third.condition(condition::DEGRADED),
            Some(&deployment_failed)
        );
    }

    #[test]
    fn a_rollout_that_waits_is_told_once_not_at_each_look() {
        let deployment = json!({ "metadata": { "name": "a", "generation": 1 },
            "spec": { "selector": {}, "template": {} } });
        let waiting = || Outcome::Waiting {
            max: 10,
            state: state::<Deployment>(deployment.clone(), true),
        };
        let mut first = report(&[]);
        assert!(waiting().report(&mut first).is_ok());
        assert_eq!(first.recorded(), [condition::ROLLOUT_WAITING]);
        let conditions: Vec<_> = [condition::AVAILABLE, condition::DEGRADED]
            .iter()
            .filter_map(|t| first.condition(t).cloned())
            .collect();
        let mut again = report(&conditions);
        assert!(waiting().report(&mut again).is_ok());
        assert!(again.recorded().is_empty(), "{:?}", again.recorded());
    }

    #[test]
    fn a_workload_reports_its_rollout_by_kind() {
        let mut report = report(&[]);
        let set = json!({ "metadata": { "name": "cache", "generation": 1 },
            "spec": { "selector": {}, "template": {} } });
        let outcome = Outcome::InSync(state::<k8s_openapi::api::apps::v1::DaemonSet>(set, true));
        assert!(outcome.report(&mut report).is_ok());
        let available = report.condition(condition::AVAILABLE).unwrap();
        assert_eq!(available.status, "True");
        assert_eq!(available.message, "DaemonSet cache has every pod available");
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
