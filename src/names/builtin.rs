//! The Kubernetes kinds a controller can reconcile without the project defining them:
//! k8s-openapi's types, which `create api --resource=false --controller=true` scaffolds a
//! controller for, as kubebuilder does for core types (`--group core --version v1 --kind Pod`).
//!
//! Groups are spelled as kubebuilder spells them: `core` for the legacy group (API group `""`),
//! the group alone where it has no domain (`apps`, `batch`, `policy`, `autoscaling`), and the
//! first part of a `*.k8s.io` group with `k8s.io` as its domain (`networking`, `rbac.authorization`);
//! the full API group (`networking.k8s.io`) is accepted too.
//!
//! `tests/builtin_kinds.rs` checks every entry against k8s-openapi's own constants (group,
//! version, kind, plural, scope), and the generated projects of `tests/generated.rs` build and
//! test controllers over some of them on both back ends.

use anyhow::{Result, bail};

use super::{Domain, Group, Kind, Plural, Version};

/// A kind of k8s-openapi that memop scaffolds controllers for.
#[derive(Debug)]
pub struct BuiltinKind {
    /// `--group` as kubebuilder spells it (and PROJECT records it).
    pub group: &'static str,
    /// kubebuilder's domain of the group: `k8s.io`, or none.
    pub domain: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    /// An object of the kind that a real API server accepts (all but its metadata, as JSON):
    /// what the generated tests create.
    pub sample: &'static str,
}

impl BuiltinKind {
    /// The API group: `""` for core, `apps`, `networking.k8s.io`.
    pub fn api_group(&self) -> String {
        match (self.group, self.domain) {
            ("core", _) => String::new(),
            (group, "") => group.to_string(),
            (group, domain) => format!("{group}.{domain}"),
        }
    }

    /// `apps/v1`, `v1` for core: the object's `apiVersion`.
    pub fn api_version(&self) -> String {
        match self.api_group().as_str() {
            "" => self.version.to_string(),
            group => format!("{group}/{}", self.version),
        }
    }

    /// The names of the kind, as an API of the project holds them.
    pub fn names(&self) -> (Domain, Group, Version, Kind, Plural) {
        (
            Domain(self.domain.to_string()),
            Group(self.group.to_string()),
            Version(self.version.to_string()),
            Kind(self.kind.to_string()),
            Plural(self.plural.to_string()),
        )
    }

    /// The Rust type: `k8s_openapi::api::apps::v1::Deployment`.
    pub fn rust_path(&self) -> String {
        let module = self.group.split('.').next().unwrap_or(self.group);
        format!("k8s_openapi::api::{module}::{}::{}", self.version, self.kind)
    }
}

/// A pod template a restricted namespace admits (Pod Security Standard "restricted").
macro_rules! pod_spec {
    ($extra:literal) => {
        concat!(
            r#"{"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "securityContext": "#,
            r#"{"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}], "securityContext": "#,
            r#"{"runAsNonRoot": true, "runAsUser": 65535, "seccompProfile": {"type": "RuntimeDefault"}}"#,
            $extra,
            "}"
        )
    };
}

/// A selector and a pod template labelled to match it.
macro_rules! workload {
    ($extra:literal) => {
        concat!(
            r#"{"spec": {"selector": {"matchLabels": {"app": "sample"}}, "template": {"metadata": {"labels": "#,
            r#"{"app": "sample"}}, "spec": "#,
            pod_spec!(""),
            "}",
            $extra,
            "}}"
        )
    };
}

const fn kind(
    group: &'static str,
    domain: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    sample: &'static str,
) -> BuiltinKind {
    BuiltinKind { group, domain, version, kind, plural, namespaced, sample }
}

const K8S: &str = "k8s.io";
const ROLE_RULES: &str = r#"{"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}"#;

/// The kinds, by group.
pub const KINDS: &[BuiltinKind] = &[
    kind("core", "", "v1", "ConfigMap", "configmaps", true, r#"{"data": {"key": "value"}}"#),
    kind("core", "", "v1", "Namespace", "namespaces", false, "{}"),
    kind(
        "core",
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        r#"{"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}"#,
    ),
    kind("core", "", "v1", "Pod", "pods", true, concat!(r#"{"spec": "#, pod_spec!(""), "}")),
    kind("core", "", "v1", "Secret", "secrets", true, r#"{"stringData": {"key": "value"}}"#),
    kind(
        "core",
        "",
        "v1",
        "Service",
        "services",
        true,
        r#"{"spec": {"ports": [{"port": 80}], "selector": {"app": "sample"}}}"#,
    ),
    kind("core", "", "v1", "ServiceAccount", "serviceaccounts", true, "{}"),
    kind("apps", "", "v1", "DaemonSet", "daemonsets", true, workload!("")),
    kind("apps", "", "v1", "Deployment", "deployments", true, workload!("")),
    kind("apps", "", "v1", "ReplicaSet", "replicasets", true, workload!("")),
    kind("apps", "", "v1", "StatefulSet", "statefulsets", true, workload!(r#", "serviceName": "sample""#)),
    kind(
        "autoscaling",
        "",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        r#"{"spec": {"maxReplicas": 3, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sample"}}}"#,
    ),
    kind(
        "batch",
        "",
        "v1",
        "CronJob",
        "cronjobs",
        true,
        concat!(
            r#"{"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": "#,
            pod_spec!(r#", "restartPolicy": "Never""#),
            "}}}}}"
        ),
    ),
    kind(
        "batch",
        "",
        "v1",
        "Job",
        "jobs",
        true,
        concat!(r#"{"spec": {"template": {"spec": "#, pod_spec!(r#", "restartPolicy": "Never""#), "}}}"),
    ),
    kind("coordination", K8S, "v1", "Lease", "leases", true, r#"{"spec": {"holderIdentity": "sample"}}"#),
    kind(
        "discovery",
        K8S,
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
        r#"{"addressType": "IPv4", "endpoints": []}"#,
    ),
    kind(
        "networking",
        K8S,
        "v1",
        "Ingress",
        "ingresses",
        true,
        r#"{"spec": {"defaultBackend": {"service": {"name": "sample", "port": {"number": 80}}}}}"#,
    ),
    kind(
        "networking",
        K8S,
        "v1",
        "IngressClass",
        "ingressclasses",
        false,
        r#"{"spec": {"controller": "example.com/ingress"}}"#,
    ),
    kind("networking", K8S, "v1", "NetworkPolicy", "networkpolicies", true, r#"{"spec": {"podSelector": {}}}"#),
    kind(
        "policy",
        "",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        r#"{"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "sample"}}}}"#,
    ),
    kind("rbac.authorization", K8S, "v1", "ClusterRole", "clusterroles", false, ROLE_RULES),
    kind(
        "rbac.authorization",
        K8S,
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        r#"{"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sample"}, "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "sample"}]}"#,
    ),
    kind("rbac.authorization", K8S, "v1", "Role", "roles", true, ROLE_RULES),
    kind(
        "rbac.authorization",
        K8S,
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        r#"{"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "sample"}, "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "sample"}]}"#,
    ),
    kind("scheduling", K8S, "v1", "PriorityClass", "priorityclasses", false, r#"{"value": 1000}"#),
    kind("storage", K8S, "v1", "StorageClass", "storageclasses", false, r#"{"provisioner": "example.com/sample"}"#),
];

/// kubebuilder's spelling of `group` (`networking.k8s.io` → `networking`, `""` → `core`), when
/// it is a group of Kubernetes' own that memop knows kinds of.
pub fn group(group: &str) -> Option<&'static str> {
    KINDS
        .iter()
        .find(|k| {
            k.group == group
                || (!k.domain.is_empty() && format!("{}.{}", k.group, k.domain) == group)
                || (group.is_empty() && k.group == "core")
        })
        .map(|k| k.group)
}

/// The kind `kind` of `group` (kubebuilder's spelling) in `version`, or why memop cannot
/// scaffold a controller for it, with what to do instead.
pub fn find(group: &str, version: &str, kind: &str) -> Result<&'static BuiltinKind> {
    if let Some(found) = KINDS.iter().find(|k| k.group == group && k.version == version && k.kind == kind) {
        return Ok(found);
    }
    let full = |k: &BuiltinKind| match k.api_version().as_str() {
        "v1" => "core/v1".to_string(),
        v => v.to_string(),
    };
    if let Some(elsewhere) = KINDS.iter().find(|k| k.kind == kind) {
        let flags = format!("--group {} --version {}", elsewhere.group, elsewhere.version);
        bail!(
            "{kind} is Kubernetes' {} {kind}, not {group}/{version}: pass {flags} (kubebuilder's spelling: `core` for \
             the legacy group, the group's first part for *.k8s.io groups)",
            full(elsewhere)
        );
    }
    let theirs: Vec<&str> = KINDS.iter().filter(|k| k.group == group).map(|k| k.kind).collect();
    bail!(
        "{group}/{version} {kind} is not a Kubernetes type memop knows (k8s-openapi's kinds it scaffolds controllers \
         for in group {group}: {}). If {kind} is another operator's custom resource, pass its CRD: \
         --group <the CRD's group> --external-api-crd crd.yaml (memop writes its Rust types with kopium); if it is \
         a type of this project, drop --resource=false to define it here",
        theirs.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_spelled_as_kubebuilder_and_kubernetes_spell_them() {
        assert_eq!(group("core"), Some("core"));
        assert_eq!(group(""), Some("core"));
        assert_eq!(group("apps"), Some("apps"));
        assert_eq!(group("networking.k8s.io"), Some("networking"));
        assert_eq!(group("networking"), Some("networking"));
        assert_eq!(group("rbac.authorization.k8s.io"), Some("rbac.authorization"));
        assert_eq!(group("cache"), None);
        assert_eq!(group("apps.k8s.io"), None);
    }

    #[test]
    fn every_kind_is_a_valid_name_with_a_sample_in_json() {
        for k in KINDS {
            Kind::parse_builtin(k.kind).unwrap();
            Plural::parse(k.plural).unwrap();
            Version::parse(k.version).unwrap();
            let sample: serde_json::Value =
                serde_json::from_str(k.sample).unwrap_or_else(|e| panic!("{}: {e}", k.kind));
            assert!(sample.is_object(), "{}", k.kind);
        }
        let snakes: std::collections::BTreeSet<String> =
            KINDS.iter().map(|k| Kind(k.kind.to_string()).snake()).collect();
        assert_eq!(snakes.len(), KINDS.len(), "one controller module per kind name");
    }

    #[test]
    fn refusals_say_what_to_do() {
        let error = find("apps", "v1", "Pod").unwrap_err().to_string();
        assert!(error.contains("pass --group core --version v1"), "{error}");
        let error = find("core", "v1alpha1", "Pod").unwrap_err().to_string();
        assert!(error.contains("pass --group core --version v1"), "{error}");
        let error = find("apps", "v1", "Frobnicator").unwrap_err().to_string();
        assert!(error.contains("DaemonSet, Deployment, ReplicaSet, StatefulSet"), "{error}");
        assert!(error.contains("--external-api-crd"), "{error}");
        assert_eq!(find("networking", "v1", "Ingress").unwrap().api_group(), "networking.k8s.io");
        assert_eq!(find("core", "v1", "Pod").unwrap().rust_path(), "k8s_openapi::api::core::v1::Pod");
        assert_eq!(find("core", "v1", "Pod").unwrap().api_version(), "v1");
        assert_eq!(find("rbac.authorization", "v1", "Role").unwrap().rust_path(), "k8s_openapi::api::rbac::v1::Role");
    }
}
