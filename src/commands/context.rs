//! The template context: every name a template may use, derived once from the PROJECT file.

use serde::Serialize;

use crate::project::Project;
use crate::scaffold::rbac::{MergedRule, Rule, merge, verbs};

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
    /// The license header of every Rust file: the project's `hack/boilerplate.rs.txt`.
    pub boilerplate: String,
    /// The year of that header (the README's copyright), or this year.
    pub year: i64,
    pub namespaced: bool,
    pub memop_version: &'static str,
    pub rust_version: &'static str,
    pub leader_election_id: String,
    /// The git URL the update workflow installs memop from (autoupdate/v1-alpha), or empty.
    pub memop_git: String,
    /// The manager role's rules, merged from every controller (see `rules_of`).
    pub rules: Vec<MergedRule>,
    /// The project's CRDs, `<plural>.<group>`, sorted: the storage migration's role
    /// (`memop_runtime::migration::role_yaml`) names them.
    pub crds: Vec<String>,
    /// The plurals of those CRDs by API group, for that role's rewrite rule.
    pub crd_groups: Vec<CrdGroup>,
}

/// The kinds of one API group that have a CRD.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CrdGroup {
    pub group: String,
    pub plurals: Vec<String>,
}

impl ProjectContext {
    pub fn new(project: &Project) -> Self {
        let mut rules = Vec::new();
        for resource in project.resources.iter().filter(|r| r.controller) {
            let api = &resource.names;
            let template = match &resource.operand {
                Some(_) => Template::Operand,
                None => Template::of(resource),
            };
            rules.extend(rules_of(&api.qualified_group, api.plural.as_str(), template));
        }
        // A named controller (`create api --controller-name`) is a skeleton, or a kind of
        // Kubernetes' own or another project's.
        for resource in project.resources.iter().filter(|r| !r.controllers.is_empty()) {
            let api = &resource.names;
            rules.extend(rules_of(&api.qualified_group, api.plural.as_str(), Template::of(resource)));
        }
        // Sorted and deduplicated as `role_yaml` sorts them: one CRD serves every version of a kind.
        let crds: std::collections::BTreeSet<String> = project
            .resources
            .iter()
            .filter(|r| r.api.is_some())
            .map(|r| format!("{}.{}", r.names.plural.as_str(), r.names.qualified_group))
            .collect();
        let mut groups: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
        for crd in &crds {
            if let Some((plural, group)) = crd.split_once('.') {
                groups.entry(group.to_string()).or_default().push(plural.to_string());
            }
        }
        Self {
            crds: crds.into_iter().collect(),
            crd_groups: groups.into_iter().map(|(group, plurals)| CrdGroup { group, plurals }).collect(),
            project_name: project.project_name.clone(),
            crate_name: project.crate_name.clone(),
            domain: project.domain.clone(),
            owner: project.owner.clone(),
            repo: project.repo.clone(),
            license: project.license.clone(),
            boilerplate: project.boilerplate.clone(),
            year: crate::project::copyright_year(&project.boilerplate).unwrap_or_else(crate::clock::current_year),
            namespaced: project.namespaced,
            memop_version: env!("CARGO_PKG_VERSION"),
            rust_version: RUST_VERSION,
            leader_election_id: format!("{}.{}", project.project_name, project.domain),
            memop_git: project.plugins.autoupdate.as_ref().map(|a| a.memop_git.clone()).unwrap_or_default(),
            rules: merge(&rules),
        }
    }
}

/// The controller template a kind's controller comes from.
#[derive(Clone, Copy)]
enum Template {
    /// `controller-operand`: a Deployment per object, a finalizer, the status.
    Operand,
    /// `controller-skeleton`: a kind of the project's, and its status.
    Skeleton,
    /// `controller-core`: a kind of Kubernetes' own or another project's, whose status is not
    /// this controller's to write.
    Core,
}

impl Template {
    /// The template of a controller of `resource` that deploys no operand, as `create api`
    /// chooses it.
    fn of(resource: &crate::project::Resource) -> Self {
        if resource.names.external || resource.names.builtin_kind().is_some() { Self::Core } else { Self::Skeleton }
    }
}

/// The rules of a generated controller, as memop-runtime derives them from the kinds its
/// `Context::rules` declares in `templates/controller-*/src/controller/__kind_snake__.rs.tera`
/// (`memop_runtime::rbac::Rules`; its `RULES` are empty). The generated project's own test fails
/// if `config/rbac/role.yaml` (rendered from these) and its code ever disagree.
fn rules_of(group: &str, plural: &str, template: Template) -> Vec<Rule> {
    let rule = |api_group: &str, resource: String, verbs: &[&str]| Rule {
        api_group: api_group.to_string(),
        resources: vec![resource],
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
    };
    // `Rules::reconciles`: the kind's cache, and the events its reconciles report.
    let (events_group, events, events_verbs) = verbs::EVENTS;
    let mut rules =
        vec![rule(group, plural.to_string(), verbs::RECONCILES), rule(events_group, events.into(), events_verbs)];
    // `.writes_status()`
    if let Template::Operand | Template::Skeleton = template {
        rules.push(rule(group, format!("{plural}/status"), verbs::WRITES_STATUS));
    }
    // `.finalizer().owns::<Deployment>()`
    if let Template::Operand = template {
        rules.push(rule(group, plural.to_string(), verbs::FINALIZER));
        rules.push(rule(group, format!("{plural}/finalizers"), verbs::OWNER_FINALIZERS));
        rules.push(rule("apps", "deployments".into(), verbs::OWNS));
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_operands_share_merged_rules() {
        let mut rules = rules_of("cache.example.com", "memcacheds", Template::Operand);
        rules.extend(rules_of("cache.example.com", "redises", Template::Operand));
        let merged = merge(&rules);
        let apps: Vec<_> = merged.iter().filter(|r| r.api_group == "apps").collect();
        assert_eq!(apps.len(), 1, "deployments appear once: {merged:?}");
        let cache = merged.iter().find(|r| r.verbs == ["list", "patch", "watch"]).unwrap();
        assert_eq!(cache.resources, ["memcacheds", "redises"]);
    }
}
