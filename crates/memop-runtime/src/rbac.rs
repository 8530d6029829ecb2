//! The RBAC rules of the manager, declared next to the code that needs them. Each controller
//! declares the kinds it reconciles, owns and watches ([`Rules`], from
//! `Reconciler::rules`), and the runtime knows the verbs it uses on each; its `RULES` constant
//! lists what its own code does besides. `make manifests` merges them into
//! `config/rbac/role.yaml` with [`role_yaml`], and a test fails when that file is stale.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use kube::Resource;

mod merge;
mod verbs;

use merge::merge;

/// Verbs on resources of one API group.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// `""` is the core group.
    pub api_group: &'static str,
    /// The resources (plural, or `<plural>/<subresource>`).
    pub resources: &'static [&'static str],
    /// The verbs allowed on them.
    pub verbs: &'static [&'static str],
}

/// The API access of one controller, for the role `make manifests` writes: the kinds it
/// reconciles, owns and watches, each with the verbs the runtime uses on it (so that they cannot
/// drift from what the runtime does), and the rules of the controller's own code ([`Self::with`]).
/// `Reconciler::rules` declares a controller's; its `Controller::rules` says what the built
/// controller does, and a test holds the one to the other (see [`Self::missing`]).
///
/// ```
/// # use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
/// # use k8s_openapi::api::core::v1::Secret;
/// use memop_runtime::rbac::{Rule, Rules};
///
/// let rules = Rules::reconciles::<ReplicaSet>()
///     .finalizer()
///     .writes_status()
///     .owns::<Deployment>()
///     .watches::<Secret>()
///     .with(&[Rule { api_group: "", resources: &["configmaps"], verbs: &["get"] }]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// The kind reconciled (group, plural), whose subresources the other rules name.
    reconciled: Option<(String, String)>,
    /// The verbs on each (group, resource).
    verbs: BTreeMap<(String, String), BTreeSet<String>>,
}

impl From<&[Rule]> for Rules {
    fn from(rules: &[Rule]) -> Self {
        Self::default().with(rules)
    }
}

impl Rules {
    /// What the runtime does for every controller of kind `K`: list and watch them (its cache),
    /// and record the events its reconciles report (`events.k8s.io` Events, patched for a
    /// repeat).
    pub fn reconciles<K: Resource<DynamicType = ()>>() -> Self {
        let kind = (K::group(&()).into_owned(), K::plural(&()).into_owned());
        let mut rules = Self::default();
        rules.grant(&kind.0, kind.1.as_str(), verbs::RECONCILES);
        let (group, resource, events) = verbs::EVENTS;
        rules.grant(group, resource, events);
        rules.reconciled = Some(kind);
        rules
    }

    /// With a finalizer (`Builder::finalizer`): it is added and removed with a patch of the
    /// object. This and the other rules on the reconciled kind need [`Self::reconciles`] first.
    pub fn finalizer(mut self) -> Self {
        if let Some((group, plural)) = self.reconciled.clone() {
            self.grant(&group, plural, verbs::FINALIZER);
        }
        self
    }

    /// Writing the conditions a reconcile reports (`Builder::writes_status`): a server-side
    /// apply of the status subresource.
    pub fn writes_status(mut self) -> Self {
        if let Some((group, plural)) = self.reconciled.clone() {
            self.grant(&group, format!("{plural}/status"), verbs::WRITES_STATUS);
        }
        self
    }

    /// Owning objects of kind `O` through an `Operand` (`Builder::owns`): its cache lists and
    /// watches them; `Operand::ensure` gets one that is not in the cache to see whose it is,
    /// and writes them with a server-side apply (which creates as well as patches); and an
    /// owner reference that blocks its owner's deletion needs `update` on the owner's
    /// finalizers.
    pub fn owns<O: Resource<DynamicType = ()>>(mut self) -> Self {
        let (group, plural) = (O::group(&()), O::plural(&()));
        self.grant(&group, plural, verbs::OWNS);
        if let Some((group, plural)) = self.reconciled.clone() {
            self.grant(
                &group,
                format!("{plural}/finalizers"),
                verbs::OWNER_FINALIZERS,
            );
        }
        self
    }

    /// Watching objects of kind `W` (`Builder::watches`): listed and watched.
    pub fn watches<W: Resource<DynamicType = ()>>(mut self) -> Self {
        self.grant(&W::group(&()), W::plural(&()), verbs::WATCHES);
        self
    }

    /// And `rules`: what the controller's own code does besides (its `RULES`).
    pub fn with(mut self, rules: &[Rule]) -> Self {
        for rule in rules {
            for resource in rule.resources {
                self.grant(rule.api_group, *resource, rule.verbs);
            }
        }
        self
    }

    /// What of `needed` these rules do not grant (nothing: [`Rules::default`]). A controller's
    /// test asserts that its declared rules miss nothing its built controller does.
    pub fn missing(&self, needed: &Rules) -> Rules {
        let mut missing = Rules::default();
        for ((group, resource), verbs) in &needed.verbs {
            let granted = self.verbs.get(&(group.clone(), resource.clone()));
            for verb in verbs {
                if !granted.is_some_and(|granted| granted.contains(verb)) {
                    missing.grant(group, resource.as_str(), &[verb.as_str()]);
                }
            }
        }
        missing
    }

    fn grant(&mut self, group: &str, resource: impl Into<String>, verbs: &[&str]) {
        self.verbs
            .entry((group.to_string(), resource.into()))
            .or_default()
            .extend(verbs.iter().map(|verb| verb.to_string()));
    }
}

/// Where the manager's role applies: kubebuilder's `--namespaced` projects watch one namespace
/// and get a `Role`, the others a `ClusterRole`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A `ClusterRole`: the manager watches every namespace.
    Cluster,
    /// A `Role` in the namespace the manager watches.
    Namespace,
}

impl Scope {
    /// The kind of the role object.
    pub(crate) fn role_kind(self) -> &'static str {
        match self {
            Self::Cluster => "ClusterRole",
            Self::Namespace => "Role",
        }
    }
}

/// A YAML scalar for a group, resource or verb: the core group `""` and the wildcard `'*'`
/// (a YAML alias when bare) are quoted, as controller-gen writes them.
fn scalar(value: &str) -> String {
    match value {
        "" => "\"\"".to_string(),
        v if v.starts_with('*') => format!("'{v}'"),
        v => v.to_string(),
    }
}

/// `config/rbac/role.yaml`: the manager's role of `scope`, merging the rules of every
/// controller: each its [`Rules`], or a list of [`Rule`]s.
pub fn role_yaml<R: Clone + Into<Rules>>(scope: Scope, controllers: &[R]) -> String {
    let controllers: Vec<Rules> = controllers.iter().cloned().map(Into::into).collect();
    let rules: Vec<(&str, [&str; 1], Vec<&str>)> = controllers
        .iter()
        .flat_map(|rules| &rules.verbs)
        .map(|((group, resource), verbs)| {
            let verbs = verbs.iter().map(String::as_str).collect();
            (group.as_str(), [resource.as_str()], verbs)
        })
        .collect();
    let rules = merge(
        rules
            .iter()
            .map(|(group, resource, verbs)| (*group, &resource[..], &verbs[..])),
    );
    let mut yaml = format!(
        "# Generated by `make manifests` from the RULES of src/controller/*.rs: do not edit.\n\
         ---\n\
         apiVersion: rbac.authorization.k8s.io/v1\n\
         kind: {}\n\
         metadata:\n  name: manager-role\n",
        scope.role_kind()
    );
    if rules.is_empty() {
        yaml.push_str("rules: []\n");
    } else {
        yaml.push_str("rules:\n");
    }
    for rule in rules {
        let _ = writeln!(yaml, "- apiGroups:\n  - {}", scalar(&rule.api_group));
        let _ = writeln!(yaml, "  resources:");
        for resource in &rule.resources {
            let _ = writeln!(yaml, "  - {}", scalar(resource));
        }
        let _ = writeln!(yaml, "  verbs:");
        for verb in &rule.verbs {
            let _ = writeln!(yaml, "  - {}", scalar(verb));
        }
    }
    yaml
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_and_the_core_group_are_quoted() {
        assert_eq!(scalar("*"), "'*'");
        assert_eq!(scalar(""), "\"\"");
        assert_eq!(scalar("deployments/status"), "deployments/status");
    }

    #[test]
    fn the_role_merges_every_controller_and_has_the_scope_kind() {
        const A: &[Rule] = &[Rule {
            api_group: "apps",
            resources: &["deployments"],
            verbs: &["get"],
        }];
        const B: &[Rule] = &[Rule {
            api_group: "apps",
            resources: &["deployments"],
            verbs: &["list"],
        }];
        let yaml = role_yaml(Scope::Namespace, &[A, B]);
        assert!(yaml.contains("kind: Role\n"), "{yaml}");
        assert!(
            yaml.ends_with("  resources:\n  - deployments\n  verbs:\n  - get\n  - list\n"),
            "{yaml}"
        );
        let empty = role_yaml(Scope::Cluster, &[] as &[Rules]);
        assert!(
            empty.contains("kind: ClusterRole\n") && empty.ends_with("rules: []\n"),
            "{empty}"
        );
    }

    /// The rules the runtime derives for the Memcached controller of the getting-started
    /// tutorial, as the role: the same as the `RULES` it listed by hand before.
    #[test]
    fn the_derived_rules_are_those_an_operand_controller_listed_by_hand() {
        use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
        const BY_HAND: &[Rule] = &[
            Rule {
                api_group: "apps",
                resources: &["replicasets"],
                verbs: &["list", "watch", "patch"],
            },
            Rule {
                api_group: "apps",
                resources: &["replicasets/status"],
                verbs: &["patch"],
            },
            Rule {
                api_group: "apps",
                resources: &["replicasets/finalizers"],
                verbs: &["update"],
            },
            Rule {
                api_group: "apps",
                resources: &["deployments"],
                verbs: &["get", "list", "watch", "create", "patch"],
            },
            Rule {
                api_group: "events.k8s.io",
                resources: &["events"],
                verbs: &["create", "patch"],
            },
        ];
        let derived = Rules::reconciles::<ReplicaSet>()
            .finalizer()
            .writes_status()
            .owns::<Deployment>();
        assert_eq!(
            role_yaml(Scope::Cluster, &[derived]),
            role_yaml(Scope::Cluster, &[BY_HAND])
        );
    }

    #[test]
    fn missing_names_each_verb_not_granted() {
        use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
        use k8s_openapi::api::core::v1::Service;
        let declared = Rules::reconciles::<ReplicaSet>().owns::<Deployment>();
        let needed = Rules::reconciles::<ReplicaSet>()
            .finalizer()
            .owns::<Deployment>()
            .watches::<Service>();
        let expected = Rules::default().with(&[
            Rule {
                api_group: "apps",
                resources: &["replicasets"],
                verbs: &["patch"],
            },
            Rule {
                api_group: "",
                resources: &["services"],
                verbs: &["list", "watch"],
            },
        ]);
        assert_eq!(declared.missing(&needed), expected);
        assert_eq!(needed.missing(&declared), Rules::default());
    }
}
