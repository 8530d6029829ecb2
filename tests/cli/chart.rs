//! The manager arguments the chart and `config/` give or suggest: every one a flag the manager
//! takes (the chart's values.yaml suggested `--zap-devel`, controller-runtime's, which the
//! manager refuses: a copied example gave a crash-looping pod).

use super::*;

/// The long flags of the manager: those of memop-runtime's flag structs, as clap parses them.
fn manager_flags() -> Vec<String> {
    use clap::Args;
    let command = clap::Command::new("manager");
    let command = memop_runtime::manager::Flags::augment_args(command);
    let command = memop_runtime::webhook::Flags::augment_args(command);
    let flags: Vec<String> =
        (command.get_arguments()).filter_map(|arg| arg.get_long()).map(|long| format!("--{long}")).collect();
    assert!(flags.len() > 10 && flags.contains(&"--log-format".to_string()), "{flags:?}");
    flags
}

/// Every `--flag` in `text` (not YAML's `---`), but on lines about memop's own commands.
fn flags_in(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines().filter(|line| !line.contains("memop ")) {
        let mut rest = line;
        while let Some(at) = rest.find("--") {
            let name: String = rest[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            if name.starts_with(|c: char| c.is_ascii_lowercase()) {
                found.push(format!("--{name}"));
            }
            rest = &rest[at + 2 + name.len()..];
        }
    }
    found
}

#[test]
fn the_chart_and_config_give_the_manager_only_flags_it_takes() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting");
    ok(&dir, "edit --plugins=helm/v2-alpha");
    let flags = manager_flags();
    let mut checked = 0;
    for (path, node) in snapshot(&dir) {
        let Node::File(bytes) = node else { continue };
        let yaml = path.extension().is_some_and(|e| e == "yaml");
        if !yaml || !(path.starts_with("dist/chart") || path.starts_with("config")) {
            continue;
        }
        for flag in flags_in(&String::from_utf8(bytes).unwrap()) {
            assert!(flags.contains(&flag), "{} gives the manager {flag}, which it refuses", path.display());
            checked += 1;
        }
    }
    assert!(checked > 5, "only {checked} flags found");
    // The example of values.yaml is one the manager takes.
    let values = read(&dir, "dist/chart/values.yaml");
    assert!(values.contains("e.g. [--log-format=json]"), "{values}");
}

/// The sharding Role of `config/` and of the chart grants what memop-runtime's sharded replicas
/// do with Leases (`manager::sharding::RULES`), no more (a verb the runtime does not use) and no
/// less (a 403 on the first round of every replica).
#[test]
fn the_sharding_role_grants_what_sharded_replicas_do() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, "edit --plugins=helm/v2-alpha");
    // The rules as `make manifests` writes a role of them (merged as controller-gen merges).
    let declared = memop_runtime::rbac::role_yaml(
        memop_runtime::rbac::Scope::Namespace,
        &[memop_runtime::manager::sharding::RULES],
    );
    let rules_of = |yaml: &str| {
        // The Role (the chart's file binds it after a `---`), without Helm's directives.
        let role = yaml.trim_start_matches("---\n").split("\n---").find(|doc| doc.contains("kind: Role")).unwrap();
        let role: Vec<&str> = role.lines().filter(|line| !line.contains("{{")).collect();
        let role: serde_yaml::Value = serde_yaml::from_str(&role.join("\n")).unwrap();
        assert_eq!(role["kind"], "Role");
        let strings = |value: &serde_yaml::Value| -> Vec<String> {
            let items = value.as_sequence().into_iter().flatten();
            let mut strings: Vec<String> = items.filter_map(|s| s.as_str().map(String::from)).collect();
            strings.sort();
            strings
        };
        (role["rules"].as_sequence().unwrap().iter())
            .map(|rule| (strings(&rule["apiGroups"]), strings(&rule["resources"]), strings(&rule["verbs"])))
            .collect::<Vec<_>>()
    };
    let declared = rules_of(&declared);
    assert!(!declared.is_empty());
    for path in ["config/sharding/role.yaml", "dist/chart/templates/rbac/sharding_role.yaml"] {
        let rules = rules_of(&fs::read_to_string(dir.join(path)).unwrap());
        assert_eq!(rules, declared, "{path}");
    }
}
