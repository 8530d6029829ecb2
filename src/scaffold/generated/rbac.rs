//! The manager role's rules, as the generated project's `rbac::merge` (and controller-gen before
//! it) writes them to `config/rbac/role.yaml`: memop renders that file from the same rules.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

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

/// A rule of the generated role.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedRule {
    pub api_group: String,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
}

/// Merges rules as the generated `rbac::merge` does (and controller-gen before it): one rule
/// per API group and set of verbs, groups and resources sorted.
pub fn merge(rules: &[Rule]) -> Vec<MergedRule> {
    let mut verbs_of: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for rule in rules {
        for resource in &rule.resources {
            let verbs = verbs_of.entry(&rule.api_group).or_default().entry(resource).or_default();
            verbs.extend(rule.verbs.iter().map(String::as_str));
        }
    }
    let mut merged = Vec::new();
    for (group, resources) in verbs_of {
        let mut by_verbs: BTreeMap<Vec<&str>, Vec<&str>> = BTreeMap::new();
        for (resource, verbs) in resources {
            by_verbs.entry(verbs.into_iter().collect()).or_default().push(resource);
        }
        let mut group_rules: Vec<MergedRule> = by_verbs
            .into_iter()
            .map(|(verbs, resources)| MergedRule {
                api_group: group.to_string(),
                resources: resources.into_iter().map(String::from).collect(),
                verbs: verbs.into_iter().map(String::from).collect(),
            })
            .collect();
        group_rules.sort_by(|a, b| a.resources.cmp(&b.resources));
        merged.extend(group_rules);
    }
    merged
}
