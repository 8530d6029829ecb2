//! The template context: every name a template may use, derived once from the PROJECT file.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::project::Project;

/// The Rust release the generated Dockerfile and CI build with.
pub const RUST_VERSION: &str = "1.95";

/// The names every template of the project sees.
#[derive(Debug, Serialize)]
pub struct ProjectContext {
    pub project_name: String,
    pub crate_name: String,
    pub domain: String,
    pub owner: String,
    /// Cargo.toml's `repository`, or empty.
    pub repo: String,
    pub license: String,
    pub year: i64,
    pub namespaced: bool,
    pub memop_version: &'static str,
    pub rust_version: &'static str,
    pub leader_election_id: String,
    /// The manager role's rules, merged from every controller (see `rules_of`).
    pub rules: Vec<MergedRule>,
    /// The rules before merging.
    #[serde(skip)]
    unmerged: Vec<Rule>,
}

impl ProjectContext {
    pub fn new(project: &Project) -> Self {
        let mut rules = Vec::new();
        for resource in project.resources.iter().filter(|r| r.controller) {
            let api = &resource.names;
            rules.extend(rules_of(&api.qualified_group, api.plural.as_str(), resource.operand.is_some()));
        }
        Self {
            project_name: project.project_name.clone(),
            crate_name: project.crate_name.clone(),
            domain: project.domain.clone(),
            owner: project.owner.clone(),
            repo: project.repo.clone(),
            license: project.license.clone(),
            year: super::current_year(),
            namespaced: project.namespaced,
            memop_version: env!("CARGO_PKG_VERSION"),
            rust_version: RUST_VERSION,
            leader_election_id: format!("{}.{}", project.project_name, project.domain),
            rules: merge(&rules),
            unmerged: rules,
        }
    }

    /// Keeps the rules of an existing `config/rbac/role.yaml` too: `make manifests` wrote it from
    /// the controllers' `RULES`, which may hold rules of the user's that memop cannot know.
    pub fn keep_rules_of(&mut self, role_yaml: &str) {
        let Ok(role) = serde_yaml::from_str::<serde_yaml::Value>(role_yaml) else { return };
        let strings = |v: &serde_yaml::Value| -> Vec<String> {
            v.as_sequence().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)).collect()
        };
        for rule in role["rules"].as_sequence().into_iter().flatten() {
            for api_group in strings(&rule["apiGroups"]) {
                self.unmerged.push(Rule {
                    api_group,
                    resources: strings(&rule["resources"]),
                    verbs: strings(&rule["verbs"]),
                });
            }
        }
        self.rules = merge(&self.unmerged);
    }
}

/// One RBAC rule: verbs on resources of one API group.
#[derive(Debug)]
struct Rule {
    api_group: String,
    resources: Vec<String>,
    verbs: Vec<String>,
}

/// The `RULES` constant of a generated controller, as memop writes it in
/// `templates/controller-*/src/controller/__kind_snake__.rs.tera`. The generated project's own
/// test fails if `config/rbac/role.yaml` (rendered from these) and its code ever disagree.
fn rules_of(group: &str, plural: &str, operand: bool) -> Vec<Rule> {
    let rule = |api_group: &str, resource: String, verbs: &[&str]| Rule {
        api_group: api_group.to_string(),
        resources: vec![resource],
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
    };
    if !operand {
        return vec![rule(group, plural.to_string(), &["list", "watch"])];
    }
    vec![
        rule(group, plural.to_string(), &["list", "watch", "patch"]),
        rule(group, format!("{plural}/status"), &["patch"]),
        rule(group, format!("{plural}/finalizers"), &["update"]),
        rule("apps", "deployments".into(), &["get", "list", "watch", "create", "patch"]),
        rule("events.k8s.io", "events".into(), &["create", "patch"]),
    ]
}

/// A rule of the generated role.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct MergedRule {
    pub api_group: String,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
}

/// Merges rules as the generated `rbac::merge` does (and controller-gen before it): one rule
/// per API group and set of verbs, groups and resources sorted.
fn merge(rules: &[Rule]) -> Vec<MergedRule> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_operands_share_merged_rules() {
        let mut rules = rules_of("cache.example.com", "memcacheds", true);
        rules.extend(rules_of("cache.example.com", "redises", true));
        let merged = merge(&rules);
        let apps: Vec<_> = merged.iter().filter(|r| r.api_group == "apps").collect();
        assert_eq!(apps.len(), 1, "deployments appear once: {merged:?}");
        let cache = merged.iter().find(|r| r.verbs == ["list", "patch", "watch"]).unwrap();
        assert_eq!(cache.resources, ["memcacheds", "redises"]);
    }
}
