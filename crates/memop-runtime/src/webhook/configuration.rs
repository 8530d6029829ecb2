//! The webhook configurations: what [`Webhook`]s the API server calls, as the cluster's
//! MutatingWebhookConfiguration and ValidatingWebhookConfiguration ([`configurations`]) and
//! as `config/webhook/manifests.yaml` ([`manifests_yaml`]) declare them.

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
#[cfg(test)]
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::ObjectMeta;
use serde_json::Value;

/// One webhook, as `config/webhook/manifests.yaml` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Mutating (defaulting) or validating.
    pub mutating: bool,
    /// Its name, unique in the cluster.
    pub name: &'static str,
    /// The path the webhook server serves it at.
    pub path: &'static str,
    /// The API group of the resource it is called for.
    pub group: &'static str,
    /// The version of that resource.
    pub version: &'static str,
    /// The resource (plural).
    pub resource: &'static str,
    /// The operations it is called for: CREATE, UPDATE, DELETE.
    pub operations: &'static [&'static str],
}

impl Webhook {
    /// Whether the API server must skip this webhook for objects in the manager's own
    /// namespace (`manager_namespace_selector`): a webhook on a kind of Kubernetes' own (the
    /// core group `""`, a group without a dot such as `apps`, or one under `k8s.io`), since
    /// the manager's namespace holds such objects the manager needs to start: its Pod, its
    /// ReplicaSet, its Secrets. With `failurePolicy: Fail`, a webhook on Pods that the API
    /// server asked about the manager's own Pod while no manager was up would refuse that Pod,
    /// and the manager could never start again (kubebuilder's "webhook bootstrap problem").
    /// A custom resource's group always has a dot, and the manager needs none of its objects.
    ///
    /// Such a webhook also skips the [`SYSTEM_NAMESPACES`], and the API server waits for it
    /// `SYSTEM_KIND_TIMEOUT_SECONDS`. A namespace selector cannot keep a webhook on a
    /// cluster-scoped kind (Nodes, Namespaces) away from anything: such a webhook is called for
    /// every object of the kind, and, under `failurePolicy: Fail`, refuses them all while no
    /// manager answers.
    pub(crate) fn skips_manager_namespace(&self) -> bool {
        !self.group.contains('.') || self.group.ends_with(".k8s.io")
    }
}

/// The label the API server gives every namespace, whose value is the namespace's name (and
/// which no one can set otherwise).
pub(crate) const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The namespaces of Kubernetes' own that a webhook on a kind of Kubernetes' own skips besides
/// the manager's: the cluster's own components (CNI, kube-proxy, CoreDNS) run in `kube-system`,
/// and every node's heartbeat is a Lease in `kube-node-lease`. Under `failurePolicy: Fail`, a
/// webhook on Pods or Leases whose manager is down would otherwise refuse them, and the cluster
/// could not heal (a new node's CNI, say) until the manager ran again, which may need them.
pub(crate) const SYSTEM_NAMESPACES: [&str; 2] = ["kube-node-lease", "kube-system"];

/// How long the API server waits for a webhook on a kind of Kubernetes' own before it fails
/// the request: 5 s, half the default, since such requests (a Pod, a Deployment) are on the
/// paths of everyone's workloads.
pub(crate) const SYSTEM_KIND_TIMEOUT_SECONDS: i32 = 5;

/// The namespace selector of a webhook that [skips the manager's
/// namespace](Webhook::skips_manager_namespace): every namespace but `namespace` and the
/// [`SYSTEM_NAMESPACES`], by its `NAMESPACE_NAME_LABEL`. `namespace` comes first:
/// `config/default` replaces the first value with the manager's namespace. [`manifests_yaml`]
/// writes it as YAML; the tests check the two agree, and the API server's view of it.
#[cfg(test)]
pub(crate) fn manager_namespace_selector(namespace: &str) -> LabelSelector {
    let mut values = vec![namespace.to_string()];
    values.extend(SYSTEM_NAMESPACES.map(String::from));
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: NAMESPACE_NAME_LABEL.into(),
            operator: "NotIn".into(),
            values: Some(values),
        }]),
        match_labels: None,
    }
}

/// The name of the match condition ([`METADATA_ONLY_UPDATE`]) of every webhook called for
/// updates.
pub(crate) const METADATA_ONLY_UPDATE_NAME: &str = "not-a-metadata-only-update";

/// The CEL expression of a match condition that keeps the API server from calling a webhook
/// for an update that changes nothing but the object's metadata (labels, annotations,
/// finalizers, owners): such an update (removing a finalizer while the operator is down, or
/// while its namespace is deleted) must not depend on the webhook being up, and the object's
/// defaults and validity do not change with it. Every other request is sent.
pub(crate) const METADATA_ONLY_UPDATE: &str = "request.operation != 'UPDATE' || \
     object.exists(k, k != 'metadata' && (!(k in oldObject) || object[k] != oldObject[k])) || \
     oldObject.exists(k, k != 'metadata' && !(k in object))";

/// The match conditions of `webhook`: [`METADATA_ONLY_UPDATE`] when it is called for updates.
pub(super) fn match_conditions(webhook: &Webhook) -> Option<Vec<MatchCondition>> {
    webhook.operations.contains(&"UPDATE").then(|| {
        vec![MatchCondition {
            name: METADATA_ONLY_UPDATE_NAME.into(),
            expression: METADATA_ONLY_UPDATE.into(),
        }]
    })
}

/// The mutating and the validating webhook configuration of `webhooks`, named `names`, each
/// webhook calling the server `client_config` gives it (a URL or a Service, and the CA), with
/// the settings of `config/webhook/manifests.yaml`: fail when it cannot be called, no side
/// effects, not called for updates that only change metadata (a match condition). A
/// configuration without webhooks has an empty list.
///
/// No webhook gets a namespace selector here: the caller knows which namespaces it serves. The
/// deployed configurations (`config/webhook/manifests.yaml`) keep the webhooks on kinds of
/// Kubernetes' own out of the manager's namespace; a manager run
/// on a developer's machine (`make run`) is in no namespace, and nothing it needs goes through
/// its webhooks.
pub fn configurations(
    webhooks: &[Webhook],
    names: [&str; 2],
    client_config: impl Fn(&Webhook) -> WebhookClientConfig,
) -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
    let rules = |webhook: &Webhook| {
        Some(vec![RuleWithOperations {
            api_groups: Some(vec![webhook.group.into()]),
            api_versions: Some(vec![webhook.version.into()]),
            operations: Some(webhook.operations.iter().map(|op| op.to_string()).collect()),
            resources: Some(vec![webhook.resource.into()]),
            scope: None,
        }])
    };
    let named = |name: &str| ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    };
    let of = |mutating: bool| {
        webhooks
            .iter()
            .filter(move |webhook| webhook.mutating == mutating)
    };
    let mutating = MutatingWebhookConfiguration {
        metadata: named(names[0]),
        webhooks: Some(
            of(true)
                .map(|webhook| MutatingWebhook {
                    name: webhook.name.into(),
                    admission_review_versions: vec!["v1".into()],
                    client_config: client_config(webhook),
                    failure_policy: Some("Fail".into()),
                    match_conditions: match_conditions(webhook),
                    rules: rules(webhook),
                    side_effects: "None".into(),
                    timeout_seconds: timeout_seconds(webhook),
                    ..MutatingWebhook::default()
                })
                .collect(),
        ),
    };
    let validating = ValidatingWebhookConfiguration {
        metadata: named(names[1]),
        webhooks: Some(
            of(false)
                .map(|webhook| ValidatingWebhook {
                    name: webhook.name.into(),
                    admission_review_versions: vec!["v1".into()],
                    client_config: client_config(webhook),
                    failure_policy: Some("Fail".into()),
                    match_conditions: match_conditions(webhook),
                    rules: rules(webhook),
                    side_effects: "None".into(),
                    timeout_seconds: timeout_seconds(webhook),
                    ..ValidatingWebhook::default()
                })
                .collect(),
        ),
    };
    (mutating, validating)
}

/// How long the API server waits for `webhook`: [`SYSTEM_KIND_TIMEOUT_SECONDS`] for a webhook
/// on a kind of Kubernetes' own, the API server's default (10 s) for the others.
fn timeout_seconds(webhook: &Webhook) -> Option<i32> {
    webhook
        .skips_manager_namespace()
        .then_some(SYSTEM_KIND_TIMEOUT_SECONDS)
}

/// `config/webhook/manifests.yaml`: the webhook configurations of `webhooks`, calling the
/// `webhook-service` Service of config/webhook, in order of name. A webhook on a kind of
/// Kubernetes' own (the core group, a group without a dot, or one under `k8s.io`) has the
/// selector of every namespace but the manager's and `kube-system` and `kube-node-lease`,
/// naming kustomize's placeholder `system` first, which `config/default` replaces with the
/// manager's namespace, as it does the Service's, and a timeout of 5 s instead of the API
/// server's default 10 s: the manager's namespace holds what the manager needs to start, and
/// the cluster's own namespaces what the cluster needs to heal, so these never wait for the
/// webhooks.
pub fn manifests_yaml(webhooks: &[Webhook]) -> String {
    let mut webhooks = webhooks.to_vec();
    // By name, so that the file does not depend on the order kinds were added in.
    webhooks.sort_by_key(|webhook| webhook.name);
    let mut yaml = String::from("# Generated by `make manifests` from src/webhook: do not edit.\n");
    for (mutating, kind) in [
        (true, "MutatingWebhookConfiguration"),
        (false, "ValidatingWebhookConfiguration"),
    ] {
        let webhooks: Vec<&Webhook> = webhooks.iter().filter(|w| w.mutating == mutating).collect();
        if webhooks.is_empty() {
            continue;
        }
        let name = if mutating {
            "mutating-webhook-configuration"
        } else {
            "validating-webhook-configuration"
        };
        yaml.push_str(&format!(
            "---\napiVersion: admissionregistration.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\nwebhooks:\n"
        ));
        for webhook in webhooks {
            let operations: String = webhook
                .operations
                .iter()
                .map(|op| format!("    - {op}\n"))
                .collect();
            let match_conditions = match match_conditions(webhook) {
                Some(conditions) => conditions
                    .iter()
                    .map(|c| {
                        format!(
                            "  - expression: {}\n    name: {}\n",
                            // A JSON string is a YAML one.
                            Value::String(c.expression.clone()),
                            c.name
                        )
                    })
                    .collect::<String>(),
                None => String::new(),
            };
            let match_conditions = if match_conditions.is_empty() {
                match_conditions
            } else {
                format!("  matchConditions:\n{match_conditions}")
            };
            let (namespace_selector, timeout) = if webhook.skips_manager_namespace() {
                let values: String = SYSTEM_NAMESPACES
                    .iter()
                    .map(|namespace| format!("      - {namespace}\n"))
                    .collect();
                (
                    format!(
                        "  namespaceSelector:\n    matchExpressions:\n    - key: {NAMESPACE_NAME_LABEL}\n      operator: NotIn\n      values:\n      - system\n{values}"
                    ),
                    format!("  timeoutSeconds: {SYSTEM_KIND_TIMEOUT_SECONDS}\n"),
                )
            } else {
                (String::new(), String::new())
            };
            yaml.push_str(&format!(
                "- admissionReviewVersions:\n  - v1\n  clientConfig:\n    service:\n      name: webhook-service\n      namespace: system\n      path: {path}\n  failurePolicy: Fail\n{match_conditions}  name: {name}\n{namespace_selector}  rules:\n  - apiGroups:\n    - {group}\n    apiVersions:\n    - {version}\n    operations:\n{operations}    resources:\n    - {resource}\n  sideEffects: None\n{timeout}",
                path = webhook.path,
                name = webhook.name,
                // The core group is `""`, which YAML must quote.
                group = if webhook.group.is_empty() { "\"\"" } else { webhook.group },
                version = webhook.version,
                resource = webhook.resource,
            ));
        }
    }
    yaml
}
