// Copyright 2026 The memcached-operator Authors.
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

//! The Memcached controller: for every Memcached, keeps a Deployment of the operand image
//! running with `spec.size` replicas, and reports how that goes in the Memcached's status.
//!
//! kube's [`Controller`] calls [`reconcile`] whenever a Memcached or a Deployment it owns
//! changes, and every [`RESYNC`] besides. Each call:
//! 1. adds the finalizer on first sight (kube's [`finalizer()`] helper), so that deletion waits
//!    for [`cleanup`];
//! 2. compares the Deployment that should exist ([`desired_deployment`], a pure function) with
//!    the one in the controller's cache, and server-side applies it only when they differ (a
//!    change of the operator's own making, such as a new image, waits its turn: [`Rollouts`]);
//! 3. computes the status conditions and writes them only when they changed.
//!
//! So a reconcile of an object already in sync writes nothing, and one that fails returns the
//! error: the Controller retries it with an exponential backoff ([`error_policy`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};

use memop_runtime::controller::{
    self, Conditions, Error, Instruments, Observed, Owned, Recorder, Result, Truth, condition,
    label_value, owned_conditions, stamp,
};
use memop_runtime::manager::{Manager, Shared};
use memop_runtime::operand::{Rollout, Rollouts, controlled_by, resize_patch, rollout};
use memop_runtime::rbac::Rule;

use crate::api::cache::v1alpha1::{Memcached, MemcachedStatus};

/// The controller's name in logs, metrics and readiness.
pub const NAME: &str = "memcached";
/// Added to every Memcached, so that its deletion waits for [`cleanup`].
pub const FINALIZER: &str = "cache.example.com/finalizer";
/// The environment variable that names the operand image (`config/manager/manager.yaml` sets
/// it); set but empty, objects report `Degraded` with reason `Misconfigured`.
pub const IMAGE_ENV: &str = "MEMCACHED_IMAGE";
/// The operand image when [`IMAGE_ENV`] is not set, as for `make run`: the one `memop create
/// api` was given (PROJECT records it, and `config/manager/manager.yaml` sets the same).
pub const DEFAULT_IMAGE: &str = "memcached:1.6.26-alpine3.19";
/// The port the operand's container listens on.
pub const CONTAINER_PORT: i32 = 11211;
/// The field manager of everything this controller applies.
const FIELD_MANAGER: &str = "memcached-operator";
/// How often an object in sync is looked at again anyway (give or take a tenth, so that
/// objects made together do not all come back together).
pub const RESYNC: Duration = Duration::from_secs(300);
/// How long a rollout of the operator's own making waits, when
/// `--max-concurrent-rollouts` are under way, before it asks again.
const ROLLOUT_WAIT: Duration = Duration::from_secs(30);
/// How long a report of progress waits while the controller applies Deployments in bulk (a
/// fleet resized at once) before it is tried again.
const REPORT_WAIT: Duration = Duration::from_secs(5);
/// The cache of this controller's Deployments, in `/readyz` and logs.
const DEPLOYMENTS: &str = "memcached deployments";
/// Deployments of this controller carry this label; the Deployment cache is limited to them,
/// so the controller does not hold every Deployment of the cluster.
const MANAGED_BY: &str = "memcached-operator";

/// Exactly the API access this controller uses; `make manifests` turns it into the role.
pub const RULES: &[Rule] = &[
    // Watch Memcacheds; the finalizer is added and removed with a JSON patch.
    Rule {
        api_group: "cache.example.com",
        resources: &["memcacheds"],
        verbs: &["list", "watch", "patch"],
    },
    Rule {
        api_group: "cache.example.com",
        resources: &["memcacheds/status"],
        verbs: &["patch"],
    },
    // An owner reference with blockOwnerDeletion needs update on the owner's finalizers.
    Rule {
        api_group: "cache.example.com",
        resources: &["memcacheds/finalizers"],
        verbs: &["update"],
    },
    // Cache (list, watch) and server-side apply Deployments; get one of that name that is not
    // ours, to say so; an apply that creates one needs create as well as patch.
    Rule {
        api_group: "apps",
        resources: &["deployments"],
        verbs: &["get", "list", "watch", "create", "patch"],
    },
    // The Recorder writes events.k8s.io/v1 Events, patching them for repeats.
    Rule {
        api_group: "events.k8s.io",
        resources: &["events"],
        verbs: &["create", "patch"],
    },
];

/// The condition types this controller writes; other writers' conditions are left alone.
const OWNED_CONDITIONS: &[&str] = &[condition::AVAILABLE, condition::DEGRADED];

/// What [`reconcile`] works with.
pub struct Context {
    client: Client,
    recorder: Recorder,
    instruments: Instruments,
    /// The operand image ([`operand_image`]); without it nothing can be deployed.
    image: Option<String>,
    /// The Deployments this controller manages, as the cache of its watch holds them.
    deployments: Owned<Deployment>,
    /// How many of them may roll out at once for a change of the operator's own making.
    rollouts: Rollouts,
}

impl Context {
    /// The context of the manager: the operand image comes from [`IMAGE_ENV`], or else is
    /// [`DEFAULT_IMAGE`].
    pub fn new(shared: &Shared) -> Self {
        Self::with_image(shared, Some(operand_image(std::env::var(IMAGE_ENV).ok())))
    }

    /// A context with the operand image given (`None` or empty: not configured). It starts
    /// the watch of the controller's Deployments, which stops when the context is dropped.
    pub fn with_image(shared: &Shared, image: Option<String>) -> Self {
        let managed_by = format!("app.kubernetes.io/managed-by={MANAGED_BY}");
        let config = watcher::Config::default().labels(&managed_by);
        Self {
            client: shared.client.clone(),
            recorder: Recorder::new(shared.client.clone(), shared.reporter.clone()),
            instruments: Instruments::new(NAME, shared),
            image: image.filter(|image| !image.trim().is_empty()),
            deployments: Owned::watch(shared.namespaced_api(), config, shared, DEPLOYMENTS),
            rollouts: Rollouts::new(shared.max_concurrent_rollouts),
        }
    }

    /// The cache of this controller's Deployments.
    pub fn deployments(&self) -> &Owned<Deployment> {
        &self.deployments
    }
}

/// The operand image, given the value of [`IMAGE_ENV`]: that value when set (empty means not
/// configured), else [`DEFAULT_IMAGE`].
pub fn operand_image(env: Option<String>) -> String {
    env.unwrap_or_else(|| DEFAULT_IMAGE.to_string())
}

/// Registers the controller with the manager; `main.rs` calls this.
pub fn register(manager: &mut Manager) {
    manager.register(NAME, run);
}

/// Runs the controller until shutdown: what the manager runs once this replica leads.
pub async fn run(shared: Shared) -> anyhow::Result<()> {
    let ctx = Context::new(&shared);
    run_with(shared, ctx).await
}

/// [`run`] with a context of the caller's (tests choose the image).
pub async fn run_with(shared: Shared, ctx: Context) -> anyhow::Result<()> {
    let objects: Api<Memcached> = shared.namespaced_api();
    // Reconcile each Memcached, and the owner of each Deployment that changes.
    let controller = controller::new(
        NAME,
        &shared,
        objects,
        watcher::Config::default().any_semantic(),
    );
    let controller = ctx.deployments.owned_by(controller);
    controller::run(
        NAME,
        &shared,
        controller,
        reconcile,
        error_policy,
        Arc::new(ctx),
    )
    .await
}

/// Reconciles one Memcached (see [`Instruments::reconcile`] for what runs around it).
pub async fn reconcile(object: Arc<Memcached>, ctx: Arc<Context>) -> Result<Action> {
    let reconciled = reconcile_with_finalizer(object.clone(), &ctx);
    ctx.instruments.reconcile(object.as_ref(), reconciled).await
}

/// Retries a failed reconcile with a per-object exponential backoff.
pub fn error_policy(object: Arc<Memcached>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.instruments.retry(object.as_ref(), error)
}

async fn reconcile_with_finalizer(object: Arc<Memcached>, ctx: &Context) -> Result<Action> {
    let namespace = object.namespace().ok_or_else(|| {
        Error::Invalid(format!("Memcached {} has no namespace", object.name_any()))
    })?;
    let api: Api<Memcached> = Api::namespaced(ctx.client.clone(), &namespace);
    let result = finalizer(&api, FINALIZER, object, |event| async {
        match event {
            finalizer::Event::Apply(object) => apply(&object, ctx).await,
            finalizer::Event::Cleanup(object) => cleanup(&object, ctx).await,
        }
    })
    .await;
    match result {
        // Deleted before its finalizer went on: there is nothing to do.
        Err(finalizer::Error::AddFinalizer(kube::Error::Api(status))) if status.is_not_found() => {
            Ok(Action::await_change())
        }
        result => result.map_err(|err| Error::Finalizer(Box::new(err))),
    }
}

/// Brings the Deployment and the status of `object` in line with its spec.
async fn apply(object: &Memcached, ctx: &Context) -> Result<Action> {
    let name = deployment_name(object);
    let namespace = object.namespace().unwrap_or_default();
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut status = object.status.clone().unwrap_or_default();
    let generation = object.metadata.generation;
    let size = object.spec.size;
    // Whether this spec was reconciled before (the status reports on its generation): then a
    // Deployment that differs was changed by someone else.
    let spec_seen = status
        .conditions
        .iter()
        .any(|c| c.type_ == condition::AVAILABLE && c.observed_generation == generation);

    // Every path below ends with one status write, or a report deferred while Deployments are
    // applied in bulk (see the end). (kubebuilder's controllers first write "Starting
    // reconciliation", which this reconcile would replace a moment later.)
    let mut conditions = Conditions::new(&mut status.conditions, generation);

    let Some(image) = ctx.image.as_deref() else {
        let message = format!(
            "The operand image is not configured: {IMAGE_ENV} is set but empty; set it to an image in the manager's environment (config/manager/manager.yaml), or unset it to deploy {DEFAULT_IMAGE}"
        );
        return stuck(object, ctx, &mut status, condition::MISCONFIGURED, message).await;
    };

    let desired = desired_deployment(object, image)?;
    let observed = match ctx.deployments.observe(&desired).await {
        // Our apply of this very Deployment is not in the cache yet, and the status already
        // says what it returned: its watch event brings the next reconcile.
        Observed::Pending(wait) => return Ok(Action::requeue(wait)),
        observed => observed,
    };
    if let Some(other) = observed
        .object()
        .filter(|d| !controlled_by(d.as_ref(), object))
    {
        return not_owned(object, other, ctx, &mut status).await;
    }

    let resizing = observed
        .object()
        .and_then(|d| d.spec.replicas)
        .filter(|&replicas| replicas != size);
    let key = format!("{namespace}/{name}");
    // The same spec, the same size, and yet another Deployment: the change is the operator's
    // (a new image, a new version of this code) or a correction of someone's edit. It waits
    // while --max-concurrent-rollouts Deployments are rolling out, so that the fleet does not
    // restart at once and a bad image stops there.
    if matches!(observed, Observed::Differs(_))
        && spec_seen
        && resizing.is_none()
        && !ctx.rollouts.start(&key)
    {
        tracing::debug!(%name, rolling = ctx.rollouts.rolling_count(), "the rollout waits for others to complete");
        return Ok(controller::resync(object, ROLLOUT_WAIT));
    }
    let current = if let Observed::InSync(current) = observed {
        Some(current)
    } else {
        let written = match observed.object().and_then(|d| resize_patch(d, &desired)) {
            // Only spec.size changed: patch the replicas, a fraction of an apply's work for
            // the API server (which counts when a fleet is resized at once).
            Some(patch) => {
                let params = PatchParams {
                    field_manager: Some(FIELD_MANAGER.into()),
                    ..PatchParams::default()
                };
                deployments.patch(&name, &params, &patch).await
            }
            None => {
                let params = PatchParams::apply(FIELD_MANAGER).force();
                deployments
                    .patch(&name, &params, &Patch::Apply(&desired))
                    .await
            }
        };
        // An admission webhook or policy rewrote one of our fields on the way in: record what
        // they look like now on the Deployment, so that the operator's next process does not
        // take the rewrite for drift and apply again.
        let written = match written {
            Ok(applied) => match controller::fingerprint_patch(&applied, &desired) {
                Some(patch) => {
                    let params = PatchParams {
                        field_manager: Some(FIELD_MANAGER.into()),
                        ..PatchParams::default()
                    };
                    deployments.patch(&name, &params, &patch).await
                }
                None => Ok(applied),
            },
            Err(err) => Err(err),
        };
        match written {
            Ok(applied) => {
                // What our fields look like now, admission webhooks' changes included.
                ctx.deployments.applied(&desired, &applied);
                // An event for what the user did not ask for in this spec: a new Deployment, or
                // one changed behind the operator's back. A resize to a new spec.size is in the
                // status already (Resizing), and an event per object would cost a write each.
                let event = match (observed.object(), resizing) {
                    (None, _) => Some((
                        "Created",
                        format!("Created Deployment {name} with {size} replicas"),
                    )),
                    (Some(_), Some(from)) if spec_seen => Some((
                        "Resized",
                        format!("Resized Deployment {name} from {from} back to {size} replicas"),
                    )),
                    (Some(_), Some(_)) => None,
                    (Some(_), None) => Some(("Updated", format!("Updated Deployment {name}"))),
                };
                if let Some((reason, note)) = event {
                    controller::publish(&ctx.recorder, object, EventType::Normal, reason, note)
                        .await;
                }
                Some(Arc::new(applied))
            }
            Err(err) => {
                // The cache holds this operator's Deployments only: one of that name that is
                // someone else's fails the apply (its selector cannot change, or it has another
                // controller) and changes nothing. Read it, to say so.
                if observed.object().is_none()
                    && let Some(other) = deployments.get_opt(&name).await?
                    && !controlled_by(&other, object)
                {
                    return not_owned(object, &other, ctx, &mut status).await;
                }
                // Say why in the status, then fail: the Controller retries with backoff.
                let (verb, reason) = match (observed.object(), resizing) {
                    (None, _) => ("create", condition::CREATE_FAILED),
                    (Some(_), Some(_)) => ("resize", condition::RESIZING),
                    (Some(_), None) => ("update", condition::UPDATE_FAILED),
                };
                let message = format!("Failed to {verb} the Deployment {name}: ({err})");
                conditions.failing(reason, message);
                if let Err(status_err) = write_status(object, &status, ctx).await {
                    tracing::warn!(%name, error = %status_err, "could not record the failure in the status");
                }
                return Err(err.into());
            }
        }
    };
    let rollout = current
        .as_deref()
        .map_or(Rollout::InProgress, |d| rollout(d, size));
    ctx.rollouts.observed(&key, &rollout);
    let failed = matches!(rollout, Rollout::Failed(_));
    let healthy = "The Deployment matches the spec".to_string();
    match rollout {
        Rollout::Complete => {
            let message = format!("Deployment {name} has all {size} replicas available");
            conditions.set(condition::AVAILABLE, true, condition::RECONCILING, message);
            conditions.set(condition::DEGRADED, false, condition::RECONCILING, healthy);
        }
        Rollout::Failed(why) => {
            let message = format!("Deployment {name} failed to roll out: {why}");
            conditions.failing(condition::ROLLOUT_FAILED, message);
        }
        Rollout::InProgress => {
            let status = current.as_ref().and_then(|d| d.status.as_ref());
            let available = status.and_then(|s| s.available_replicas).unwrap_or(0);
            // Pods running at another size than asked for: a resize is under way.
            let reason = match status.and_then(|s| s.replicas) {
                Some(replicas) if replicas != size => condition::RESIZING,
                _ => condition::PROGRESSING,
            };
            let message = format!("Deployment {name} has {available} of {size} replicas available");
            conditions.set(condition::AVAILABLE, false, reason, message);
            conditions.set(condition::DEGRADED, false, condition::RECONCILING, healthy);
        }
    }
    // While Deployments are applied in bulk, the Deployments come first: a report of progress
    // waits (a failure is reported at once).
    if !failed && ctx.deployments.in_burst() && status_changes(object, &status) {
        return Ok(controller::resync(object, REPORT_WAIT));
    }
    write_status(object, &status, ctx).await?;
    Ok(controller::resync(object, RESYNC))
}
/// Reports that the Deployment named for `object` is `other`'s, which is never taken over (as
/// controller-runtime's SetControllerReference refuses to), and leaves it alone.
async fn not_owned(
    object: &Memcached,
    other: &Deployment,
    ctx: &Context,
    status: &mut MemcachedStatus,
) -> Result<Action> {
    let controller = other
        .owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
        .map_or("nothing".to_string(), |r| format!("{} {}", r.kind, r.name));
    let message = format!(
        "Deployment {} already exists and is controlled by {controller}, not by this Memcached: delete or rename it",
        other.name_any()
    );
    stuck(object, ctx, status, condition::NOT_OWNED, message).await
}

/// Reports a problem the reconcile cannot get past by itself (`Available=False` and
/// `Degraded=True` with `reason`, a Warning event, an error log), then fails, so that the
/// Controller retries with backoff until someone fixes it.
async fn stuck(
    object: &Memcached,
    ctx: &Context,
    status: &mut MemcachedStatus,
    reason: &str,
    message: String,
) -> Result<Action> {
    tracing::error!(name = %object.name_any(), "{message}");
    Conditions::new(&mut status.conditions, object.metadata.generation)
        .failing(reason, message.clone());
    write_status(object, status, ctx).await?;
    controller::publish(
        &ctx.recorder,
        object,
        EventType::Warning,
        reason,
        message.clone(),
    )
    .await;
    Err(Error::Invalid(message))
}

/// Runs before a Memcached is deleted: while its finalizer is on, the object stays.
///
/// The Deployment needs no work here: its owner reference makes Kubernetes garbage-collect it.
/// Put cleanup that ownership cannot do here (external resources, backups), between the two
/// status writes, and return an error to retry it.
async fn cleanup(object: &Memcached, ctx: &Context) -> Result<Action> {
    let name = object.name_any();
    let namespace = object.namespace().unwrap_or_default();
    let note = format!("Custom Resource {name} is being deleted from the namespace {namespace}");
    controller::publish(&ctx.recorder, object, EventType::Warning, "Deleting", note).await;
    let mut status = object.status.clone().unwrap_or_default();
    let generation = object.metadata.generation;
    let message = format!("Performing finalizer operations for the custom resource: {name}");
    Conditions::new(&mut status.conditions, generation).set(
        condition::DEGRADED,
        Truth::Unknown,
        condition::FINALIZING,
        message,
    );
    write_status(object, &status, ctx).await?;

    let message =
        format!("Finalizer operations for custom resource {name} were successfully accomplished");
    Conditions::new(&mut status.conditions, generation).set(
        condition::DEGRADED,
        true,
        condition::FINALIZING,
        message,
    );
    write_status(object, &status, ctx).await?;
    // Its Deployment goes with it: forget what it looked like.
    let deployment = deployment_name(object);
    ctx.rollouts.forget(&format!("{namespace}/{deployment}"));
    ctx.deployments.forget(&namespace, &deployment);
    Ok(Action::await_change())
}

/// Writes the conditions this controller owns into the status of `object`, unless they are
/// what it already has (see [`Instruments::write_conditions`]).
async fn write_status(object: &Memcached, status: &MemcachedStatus, ctx: &Context) -> Result<()> {
    ctx.instruments
        .write_conditions(
            &ctx.client,
            object,
            FIELD_MANAGER,
            OWNED_CONDITIONS,
            reported(object),
            &status.conditions,
        )
        .await
}

/// Whether `status` says something else than `object` reports now.
fn status_changes(object: &Memcached, status: &MemcachedStatus) -> bool {
    owned_conditions(reported(object), OWNED_CONDITIONS)
        != owned_conditions(&status.conditions, OWNED_CONDITIONS)
}

/// The conditions `object` reports now.
fn reported(object: &Memcached) -> &[Condition] {
    object
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

/// The Deployment of `object`: named after it, or, for a name too long to be a label value
/// (over 63 characters), after a shortened form with a hash that keeps it unique.
pub fn deployment_name(object: &Memcached) -> String {
    label_value(&object.name_any())
}

/// The labels of the operand's Deployment and pods; the selector uses the stable ones.
fn labels(object: &Memcached, image: &str) -> BTreeMap<String, String> {
    let mut labels = selector_labels(object);
    labels.insert("app.kubernetes.io/version".into(), image_tag(image));
    labels.insert(
        "app.kubernetes.io/part-of".into(),
        "memcached-operator".into(),
    );
    labels.insert("app.kubernetes.io/managed-by".into(), MANAGED_BY.into());
    labels
}

/// Name and instance: one Deployment per Memcached, even with several in a namespace.
fn selector_labels(object: &Memcached) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            "memcached".to_string(),
        ),
        (
            "app.kubernetes.io/instance".to_string(),
            deployment_name(object),
        ),
    ])
}

/// The tag of an image reference, as a label value ("latest" when it has none).
fn image_tag(image: &str) -> String {
    let without_digest = image.split('@').next().unwrap_or(image);
    match without_digest.rsplit_once(':') {
        Some((_, tag)) if !tag.contains('/') => label_value(tag),
        _ => "latest".to_string(),
    }
}

/// The Deployment `object` asks for: a pure function of the object and the image.
pub fn desired_deployment(object: &Memcached, image: &str) -> Result<Deployment> {
    let mut owner = object
        .controller_owner_ref(&())
        .ok_or_else(|| Error::Invalid(format!("Memcached {} has no uid yet", object.name_any())))?;
    // As controller-runtime's SetControllerReference: deleting the owner in the foreground
    // waits for this Deployment.
    owner.block_owner_deletion = Some(true);
    let labels = labels(object, image);
    let container = Container {
        name: "memcached".into(),
        image: Some(image.into()),
        image_pull_policy: Some("IfNotPresent".into()),
        ports: Some(vec![ContainerPort {
            container_port: CONTAINER_PORT,
            name: Some("memcached".into()),
            ..ContainerPort::default()
        }]),
        command: Some(vec![
            "memcached".into(),
            "--memory-limit=64".into(),
            "-o".into(),
            "modern".into(),
            "-v".into(),
        ]),
        // The restricted Pod Security Standard: no root, no privilege escalation, no
        // capabilities.
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(1001),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    };
    Ok(stamp(Deployment {
        metadata: ObjectMeta {
            name: Some(deployment_name(object)),
            namespace: object.namespace(),
            labels: Some(labels.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(object.spec.size),
            selector: LabelSelector {
                match_labels: Some(selector_labels(object)),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".into(),
                            ..SeccompProfile::default()
                        }),
                        ..PodSecurityContext::default()
                    }),
                    containers: vec![container],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags_become_label_values() {
        assert_eq!(
            image_tag("memcached:1.6.26-alpine3.19"),
            "1.6.26-alpine3.19"
        );
        assert_eq!(image_tag("registry:5000/team/app"), "latest");
        assert_eq!(image_tag("app:v1@sha256:abc"), "v1");
    }

    #[test]
    fn the_image_is_the_environments_else_the_default() {
        assert_eq!(operand_image(None), DEFAULT_IMAGE);
        let image = "registry.example.com/cache:2";
        assert_eq!(operand_image(Some(image.into())), image);
        // Set but empty is a mistake to report, not a reason to guess.
        assert_eq!(operand_image(Some(String::new())), "");
    }

    #[test]
    fn odd_image_tags_become_valid_label_values() {
        for image in ["app:_1.6", "app:.hidden", "app:1.6_"] {
            let tag = image_tag(image);
            assert!(
                tag.starts_with(|c: char| c.is_ascii_alphanumeric()),
                "{tag}"
            );
            assert!(tag.ends_with(|c: char| c.is_ascii_alphanumeric()), "{tag}");
        }
    }
}
