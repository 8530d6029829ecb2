//! The merge of RBAC rules into a role's rules, as controller-gen merges them. One file serves
//! two crates: this runtime, whose `role_yaml` writes `config/rbac/role.yaml` at `make
//! manifests`, and memop's CLI, which writes the same file when it scaffolds (it includes this
//! file with `#[path]` rather than depend on the runtime and its Kubernetes client), so the two
//! cannot merge differently. It may use only `std` and `serde`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// One rule of the merged role: resources of one group that need the same verbs. (De)serializable
/// for the CLI, which passes the rules through its template context.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedRule {
    /// The API group (`""` is the core group).
    pub api_group: String,
    /// Its resources, sorted.
    pub resources: Vec<String>,
    /// The verbs allowed on them, sorted.
    pub verbs: Vec<String>,
}

/// Merges rules, each `(api_group, resources, verbs)`: one rule per group and set of verbs,
/// groups first, then by resources, everything sorted.
pub fn merge<'a, S: AsRef<str> + 'a>(
    rules: impl IntoIterator<Item = (&'a str, &'a [S], &'a [S])>,
) -> Vec<MergedRule> {
    let mut verbs_of: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (api_group, resources, verbs) in rules {
        for resource in resources {
            verbs_of
                .entry(api_group)
                .or_default()
                .entry(resource.as_ref())
                .or_default()
                .extend(verbs.iter().map(AsRef::as_ref));
        }
    }
    let mut merged = Vec::new();
    for (group, resources) in verbs_of {
        let mut by_verbs: BTreeMap<Vec<&str>, Vec<&str>> = BTreeMap::new();
        for (resource, verbs) in resources {
            by_verbs
                .entry(verbs.into_iter().collect())
                .or_default()
                .push(resource);
        }
        let mut rules: Vec<MergedRule> = by_verbs
            .into_iter()
            .map(|(verbs, resources)| MergedRule {
                api_group: group.to_string(),
                resources: resources.into_iter().map(String::from).collect(),
                verbs: verbs.into_iter().map(String::from).collect(),
            })
            .collect();
        rules.sort_by(|a, b| a.resources.cmp(&b.resources));
        merged.extend(rules);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_groups_resources_with_the_same_verbs() {
        let rules: [(&str, &[&str], &[&str]); 4] = [
            ("apps", &["deployments"], &["get", "list"]),
            ("apps", &["statefulsets"], &["list", "get"]),
            ("", &["pods"], &["get"]),
            ("apps", &["deployments"], &["watch"]),
        ];
        let merged = merge(rules);
        assert_eq!(merged.len(), 3);
        assert_eq!(merged[0].api_group, "");
        assert_eq!(merged[1].resources, ["deployments"]);
        assert_eq!(merged[1].verbs, ["get", "list", "watch"]);
        assert_eq!(merged[2].resources, ["statefulsets"]);
    }
}
