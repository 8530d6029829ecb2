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
//!    the one that does, and server-side applies it only when they differ;
//! 3. computes the status conditions and writes them only when they changed.
//!
//! So a reconcile of an object already in sync writes nothing, and one that fails returns the
//! error: the Controller retries it with an exponential backoff ([`error_policy`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use super::{Backoff, Conditions, Error, Result, contains};
use crate::api::cache::v1alpha1::{Memcached, MemcachedStatus};
use crate::manager::{Manager, Metrics, Shared};
use crate::rbac::Rule;

/// The controller's name in logs, metrics and readiness.
pub const NAME: &str = "memcached";
/// Added to every Memcached, so that its deletion waits for [`cleanup`].
pub const FINALIZER: &str = "cache.example.com/finalizer";
/// The environment variable with the operand image (set in `config/manager/manager.yaml`).
pub const IMAGE_ENV: &str = "MEMCACHED_IMAGE";
/// The operand image when [`IMAGE_ENV`] is unset.
pub const DEFAULT_IMAGE: &str = "memcached:1.6.26-alpine3.19";
/// The port the operand's container listens on.
pub const CONTAINER_PORT: i32 = 11211;
/// The field manager of everything this controller applies.
const FIELD_MANAGER: &str = "memcached-operator";
/// How often an object in sync is looked at again anyway.
pub const RESYNC: Duration = Duration::from_secs(300);
/// Deployments of this controller carry this label; the Deployment watch is limited to them,
/// so the controller does not cache every Deployment of the cluster.
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
    // Read, watch (`.owns`) and server-side apply Deployments; an apply that creates one
    // needs create as well as patch.
    Rule {
        api_group: "apps",
        resources: &["deployments"],
        verbs: &["get", "list", "watch", "create", "patch"],
    },
    // kube's Recorder writes events.k8s.io/v1 Events, patching them for repeats.
    Rule {
        api_group: "events.k8s.io",
        resources: &["events"],
        verbs: &["create", "patch"],
    },
];

/// What [`reconcile`] works with.
pub struct Context {
    client: Client,
    recorder: Recorder,
    metrics: Arc<Metrics>,
    backoff: Backoff,
    image: String,
}

impl Context {
    pub fn new(shared: &Shared) -> Self {
        Self {
            client: shared.client.clone(),
            recorder: Recorder::new(shared.client.clone(), shared.reporter.clone()),
            metrics: shared.metrics.clone(),
            backoff: Backoff::default(),
            image: operand_image(std::env::var(IMAGE_ENV).ok()),
        }
    }
}

/// The operand image: `value` of [`IMAGE_ENV`] when set and not empty, else [`DEFAULT_IMAGE`].
pub fn operand_image(value: Option<String>) -> String {
    value
        .filter(|image| !image.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_IMAGE.to_string())
}

/// Registers the controller with the manager; `main.rs` calls this.
pub fn register(manager: &mut Manager) {
    manager.register(NAME, run);
}

/// Runs the controller until shutdown: what the manager runs once this replica leads.
pub async fn run(shared: Shared) -> anyhow::Result<()> {
    let memcacheds: Api<Memcached> = shared.namespaced_api();
    let deployments: Api<Deployment> = shared.namespaced_api();
    let managed_by = format!("app.kubernetes.io/managed-by={MANAGED_BY}");
    let owned = watcher::Config::default().labels(&managed_by);
    let shutdown = shared.shutdown.clone();
    let controller = Controller::new(memcacheds, watcher::Config::default().any_semantic())
        .owns(deployments, owned)
        .graceful_shutdown_on(async move { shutdown.wait().await });
    shared.readiness.track(NAME, controller.store());
    tracing::info!(controller = NAME, "starting");
    controller
        .run(reconcile, error_policy, Arc::new(Context::new(&shared)))
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(%object, "reconciled"),
                // error_policy has logged it already.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                // A change of an object deleted meanwhile: nothing to do.
                Err(controller::Error::ObjectNotFound(object)) => {
                    tracing::debug!(%object, "gone before its reconcile")
                }
                Err(err) => tracing::warn!(error = %err, "controller error"),
            }
        })
        .await;
    tracing::info!(controller = NAME, "stopped");
    Ok(())
}

/// Reconciles one Memcached.
pub async fn reconcile(object: Arc<Memcached>, ctx: Arc<Context>) -> Result<Action> {
    let started = Instant::now();
    let key = ObjectRef::from_obj(object.as_ref());
    let result = reconcile_with_finalizer(object, &ctx).await;
    ctx.metrics
        .reconciled(NAME, result.is_ok(), started.elapsed());
    if result.is_ok() {
        ctx.backoff.succeeded(&key);
    }
    result
}

/// Retries a failed reconcile with a per-object exponential backoff.
pub fn error_policy(object: Arc<Memcached>, error: &Error, ctx: Arc<Context>) -> Action {
    tracing::warn!(name = %object.name_any(), %error, "reconcile failed; will retry");
    ctx.backoff.failed(&ObjectRef::from_obj(object.as_ref()))
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
    let name = object.name_any();
    let namespace = object.namespace().unwrap_or_default();
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let desired = desired_deployment(object, &ctx.image)?;
    let observed = deployments.get_opt(&name).await?;
    let wanted = serde_json::to_value(&desired).unwrap_or_default();
    let in_sync = observed.as_ref().is_some_and(|current| {
        contains(&serde_json::to_value(current).unwrap_or_default(), &wanted)
    });
    let mut status = object.status.clone().unwrap_or_default();
    let mut conditions = Conditions::new(&mut status.conditions, object.metadata.generation);
    let size = object.spec.size;
    let current = if in_sync {
        observed
    } else {
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let patch = Patch::Apply(&desired);
        match deployments.patch(&name, &params, &patch).await {
            Ok(applied) => {
                let (reason, note) = match observed {
                    Some(_) => ("Updated", format!("Updated Deployment {name}")),
                    None => (
                        "Created",
                        format!("Created Deployment {name} with {size} replicas"),
                    ),
                };
                publish(ctx, object, EventType::Normal, reason, note).await;
                Some(applied)
            }
            Err(err) => {
                // Say why in the status, then fail: the Controller retries with backoff.
                let (verb, reason) = match observed {
                    Some(_) => ("update", "UpdateFailed"),
                    None => ("create", "CreateFailed"),
                };
                let message = format!("Failed to {verb} the Deployment {name}: ({err})");
                conditions.set("Available", false, reason, message.clone());
                conditions.set("Degraded", true, reason, message);
                if let Err(status_err) = write_status(object, status, ctx).await {
                    tracing::warn!(%name, error = %status_err, "could not record the failure in the status");
                }
                return Err(err.into());
            }
        }
    };
    // Available once the Deployment's controller has seen its current spec and reports every
    // replica available; until then the pods are still starting (or failing to).
    let rolled_out = current.as_ref().and_then(|d| {
        let status = d.status.as_ref()?;
        let caught_up = status.observed_generation >= d.metadata.generation;
        caught_up.then_some(status.available_replicas.unwrap_or(0))
    });
    match rolled_out {
        Some(available) if available >= size => {
            let message = format!("Deployment {name} has all {size} replicas available");
            conditions.set("Available", true, "Reconciling", message);
        }
        available => {
            let available = available.unwrap_or(0);
            let message = format!("Deployment {name} has {available} of {size} replicas available");
            conditions.set("Available", false, "Progressing", message);
        }
    }
    let healthy = "The Deployment matches the spec".to_string();
    conditions.set("Degraded", false, "Reconciling", healthy);
    write_status(object, status, ctx).await?;
    Ok(Action::requeue(RESYNC))
}

/// Runs before a Memcached is deleted: while its finalizer is on, the object stays.
///
/// The Deployment needs no work here: its owner reference makes Kubernetes garbage-collect it.
/// Put cleanup that ownership cannot do here (external resources, backups), before the status
/// write, and return an error to retry it.
async fn cleanup(object: &Memcached, ctx: &Context) -> Result<Action> {
    let name = object.name_any();
    let namespace = object.namespace().unwrap_or_default();
    let note = format!("Custom Resource {name} is being deleted from the namespace {namespace}");
    publish(ctx, object, EventType::Warning, "Deleting", note).await;
    let mut status = object.status.clone().unwrap_or_default();
    let message =
        format!("Finalizer operations for custom resource {name} were successfully accomplished");
    let mut conditions = Conditions::new(&mut status.conditions, object.metadata.generation);
    conditions.set("Degraded", true, "Finalizing", message);
    write_status(object, status, ctx).await?;
    Ok(Action::await_change())
}

/// Writes `status` through the status subresource, unless it is what the object already has.
/// An object deleted meanwhile is no error: there is nothing left to report on.
async fn write_status(object: &Memcached, status: MemcachedStatus, ctx: &Context) -> Result<()> {
    if object.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<Memcached> =
        Api::namespaced(ctx.client.clone(), &object.namespace().unwrap_or_default());
    // Server-side apply as this controller's field manager: `conditions` is a list keyed by
    // type, so conditions that others set on the object are left alone.
    let patch = Patch::Apply(json!({
        "apiVersion": Memcached::api_version(&()),
        "kind": Memcached::kind(&()),
        "status": status,
    }));
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api.patch_status(&object.name_any(), &params, &patch).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            tracing::debug!(name = %object.name_any(), "gone before its status was written");
            Ok(())
        }
        Err(err) => Err(err.into()),
    }
}

/// Records an event on `object`. Events are informational: a failure is logged, not returned.
async fn publish(ctx: &Context, object: &Memcached, type_: EventType, reason: &str, note: String) {
    // kubebuilder's action names: DeleteCR for the deletion warning, Reconcile otherwise.
    let action = match reason {
        "Deleting" => "DeleteCR",
        _ => "Reconcile",
    };
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: action.into(),
        secondary: None,
    };
    // Without its resourceVersion, which every status write changes, the reference stays the
    // same, so the Recorder turns repeats of an event into one series instead of new Events.
    let mut reference = object.object_ref(&());
    reference.resource_version = None;
    if let Err(err) = ctx.recorder.publish(&event, &reference).await {
        tracing::warn!(name = %object.name_any(), error = %err, "could not record an event");
    }
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
        ("app.kubernetes.io/instance".to_string(), object.name_any()),
    ])
}

/// The tag of an image reference, as a label value ("latest" when it has none).
fn image_tag(image: &str) -> String {
    let without_digest = image.split('@').next().unwrap_or(image);
    let tag = match without_digest.rsplit_once(':') {
        Some((_, tag)) if !tag.contains('/') => tag,
        _ => "latest",
    };
    // A label value has at most 63 characters and ends with an alphanumeric one.
    let tag: String = tag.chars().take(63).collect();
    tag.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
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
    Ok(Deployment {
        metadata: ObjectMeta {
            name: Some(object.name_any()),
            namespace: object.namespace(),
            labels: Some(labels.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
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
        }),
        ..Deployment::default()
    })
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
    fn operand_image_falls_back_to_the_default() {
        assert_eq!(operand_image(None), DEFAULT_IMAGE);
        assert_eq!(operand_image(Some(" ".into())), DEFAULT_IMAGE);
        assert_eq!(
            operand_image(Some("example.com/x:1".into())),
            "example.com/x:1"
        );
    }
}
