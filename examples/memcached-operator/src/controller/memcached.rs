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
//! What is the Memcached's own is here: the kinds it works with ([`Context::rules`]), the
//! Deployment it asks for ([`desired_deployment`], a pure function), and what to do before one
//! is deleted ([`Context::cleanup`]). memop-runtime does the rest, the same for every kind
//! ([`Builder`]): the watches of Memcacheds and their Deployments, the finalizer, a status
//! write only when a condition changed, events, retries with backoff, recovery from a panic;
//! and [`Operand::ensure`] compares the Deployment wanted with the one in the cache and writes
//! only what differs (a new image waits its turn: `--max-concurrent-rollouts`).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use memop_runtime::controller::{
    Builder, Controller, Reconciler, Report, Result, condition, label_value, stamp,
};
use memop_runtime::manager::{Manager, Shared};
use memop_runtime::operand::{Operand, controller_reference, image_tag};
use memop_runtime::rbac::{Rule, Rules};

use crate::api::cache::v1alpha1::Memcached;

/// The controller's name in logs, metrics and readiness.
pub const NAME: &str = "memcached";
/// Added to every Memcached, so that its deletion waits for [`Context::cleanup`].
pub const FINALIZER: &str = "cache.example.com/finalizer";
/// The environment variable that names the operand image (`config/manager/manager.yaml` sets
/// it); set but empty, objects report `Degraded` with reason `Misconfigured`.
pub const IMAGE_ENV: &str = "MEMCACHED_IMAGE";
/// The operand image when [`IMAGE_ENV`] is not set, as for `make run`: the one `memop create
/// api` was given (PROJECT records it, and `config/manager/manager.yaml` sets the same).
pub const DEFAULT_IMAGE: &str = "memcached:1.6.26-alpine3.19";
/// The port the operand's container listens on.
pub const CONTAINER_PORT: i32 = 11211;
/// How often an object in sync is looked at again anyway (give or take a tenth, so that
/// objects made together do not all come back together).
pub const RESYNC: Duration = Duration::from_secs(300);
/// Deployments of this controller carry this label (the cache of Deployments holds those
/// only, not every Deployment of the cluster), and are written with it as field manager.
const MANAGED_BY: &str = "memcached-operator";

/// The API access of this controller's own code, besides what memop-runtime does for the kinds
/// it declares ([`Context::rules`]): none yet. Add a rule for each call your code makes (a
/// Secret it reads, say), then run `make manifests`.
pub const RULES: &[Rule] = &[];

/// What the reconcile of a Memcached works with.
pub struct Context {
    /// The operand image; without it nothing can be deployed.
    image: Option<String>,
    /// The Deployment of each Memcached.
    deployments: Operand,
}

impl Context {
    /// The context of the manager: the operand image comes from [`IMAGE_ENV`], or else is
    /// [`DEFAULT_IMAGE`].
    pub fn new(shared: &Shared) -> Self {
        let image = std::env::var(IMAGE_ENV).unwrap_or_else(|_| DEFAULT_IMAGE.into());
        Self::with_image(shared, Some(image))
    }

    /// A context with the operand image given (`None` or empty: not configured). It starts
    /// the watch of the controller's Deployments, which stops when the context is dropped.
    pub fn with_image(shared: &Shared, image: Option<String>) -> Self {
        Self {
            image: image.filter(|image| !image.trim().is_empty()),
            deployments: Operand::deployments(shared, "memcached deployments", MANAGED_BY),
        }
    }

    /// The controller's Deployments.
    pub fn deployments(&self) -> &Operand {
        &self.deployments
    }
}

/// Registers the controller with the manager; `main.rs` calls this.
pub fn register(manager: &mut Manager) {
    manager.register(|shared| {
        let ctx = Context::new(&shared);
        controller(&shared, ctx)
    });
}

/// The controller: Memcacheds, with a finalizer, owning their Deployments.
pub fn controller(shared: &Shared, ctx: Context) -> Controller<Context> {
    Builder::new(NAME, shared)
        .finalizer(FINALIZER)
        .field_manager(MANAGED_BY)
        .resync(RESYNC)
        .owns(ctx.deployments())
        .build(ctx)
}

impl Reconciler for Context {
    type Object = Memcached;

    /// What [`controller`] works with, for the role `make manifests` writes (memop-runtime knows
    /// the verbs of each): Memcacheds with a finalizer and their status, owning Deployments.
    /// A test fails if the builder gains a kind this does not declare.
    fn rules() -> Rules {
        Rules::reconciles::<Memcached>()
            .finalizer()
            .writes_status()
            .owns::<Deployment>()
    }

    fn conditions(object: &Memcached) -> &[Condition] {
        object
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default()
    }

    /// Brings the Deployment of `object` in line with its spec, and reports how it stands.
    async fn apply(&self, object: &Memcached, report: &mut Report) -> Result<Action> {
        let Some(image) = self.image.as_deref() else {
            let message = format!(
                "The operand image is not configured: {IMAGE_ENV} is set but empty; set it to an image in the manager's environment (config/manager/manager.yaml), or unset it to deploy {DEFAULT_IMAGE}"
            );
            return Err(report.stuck(condition::MISCONFIGURED, message));
        };
        let desired = desired_deployment(object, image)?;
        self.deployments
            .ensure(object, desired)
            .await
            .report(report)
    }

    /// Runs before a Memcached is deleted: while its finalizer is on, the object stays.
    ///
    /// The Deployment needs no work here: its owner reference makes Kubernetes
    /// garbage-collect it. Put cleanup that ownership cannot do here (external resources,
    /// backups), and return an error to retry it.
    async fn cleanup(&self, object: &Memcached, report: &mut Report) -> Result<()> {
        let name = object.name_any();
        let namespace = object.namespace().unwrap_or_default();
        let note =
            format!("Custom Resource {name} is being deleted from the namespace {namespace}");
        report.event(EventType::Warning, "Deleting", note);
        let message = format!(
            "Finalizer operations for custom resource {name} were successfully accomplished"
        );
        report.set(condition::DEGRADED, true, condition::FINALIZING, message);
        Ok(())
    }
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

/// The Deployment `object` asks for: a pure function of the object and the image.
pub fn desired_deployment(object: &Memcached, image: &str) -> Result<Deployment> {
    let owner = controller_reference(object)?;
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
