//! The manager role's rules, as the generated project's `rbac::role_yaml` (and controller-gen
//! before it) writes them to `config/rbac/role.yaml`: memop renders that file from the same rules.

/// One RBAC rule: verbs on resources of one API group.
#[derive(Debug)]
pub struct Rule {
    pub api_group: String,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
}

/// The rules of a `config/rbac/role.yaml`, one per API group of each; none when it is not YAML.
pub fn rules_in(role_yaml: &str) -> Vec<Rule> {
    let Ok(role) = serde_yaml::from_str::<serde_yaml::Value>(role_yaml) else { return Vec::new() };
    let strings = |v: &serde_yaml::Value| -> Vec<String> {
        v.as_sequence().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)).collect()
    };
    let mut rules = Vec::new();
    for rule in role["rules"].as_sequence().into_iter().flatten() {
        for api_group in strings(&rule["apiGroups"]) {
            rules.push(Rule { api_group, resources: strings(&rule["resources"]), verbs: strings(&rule["verbs"]) });
        }
    }
    rules
}

/// The merge itself, with the generated project's runtime: one file, which memop-runtime's
/// `rbac::role_yaml` uses at `make manifests`, so memop and the project cannot merge differently.
/// Included rather than depended on: memop-runtime would bring kube and its TLS stack into memop.
/// Formatted with the runtime's rustfmt settings, not memop's.
#[rustfmt::skip]
#[path = "../../../crates/memop-runtime/src/rbac/merge.rs"]
mod shared;

pub use shared::MergedRule;

/// The verbs the runtime's `rbac::Rules` grants for each kind a controller declares: one file
/// with the runtime, as the merge is, so that `commands::context::rules_of` cannot drift from
/// the role the generated code derives.
#[rustfmt::skip]
#[path = "../../../crates/memop-runtime/src/rbac/verbs.rs"]
pub mod verbs;

/// Merges rules as the generated `rbac::role_yaml` does (and controller-gen before it): one rule
/// per API group and set of verbs, groups and resources sorted.
pub fn merge(rules: &[Rule]) -> Vec<MergedRule> {
    shared::merge(rules.iter().map(|r| (r.api_group.as_str(), r.resources.as_slice(), r.verbs.as_slice())))
}
