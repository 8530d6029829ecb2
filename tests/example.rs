//! `examples/memcached-operator` is exactly what the README's two commands generate.
//! When a template changes, `scripts/update-example.sh` rewrites it.

mod common;

use std::path::Path;

#[test]
fn the_example_is_what_the_readme_commands_generate() {
    let scratch = tempfile::tempdir().unwrap();
    let fresh = scratch.path().join("memcached-operator");
    std::fs::create_dir(&fresh).unwrap();
    common::run(&fresh, &["init", "--domain", "example.com"]);
    common::run(&fresh, &["create", "api", "--group", "cache", "--kind", "Memcached"]);

    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/memcached-operator");
    let committed = common::tree(&example);
    let generated = common::tree(&fresh);
    let mut report = String::new();
    for path in committed.keys().chain(generated.keys()).collect::<std::collections::BTreeSet<_>>() {
        match (committed.get(path), generated.get(path)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                let shown = path.display().to_string();
                let diff = similar::TextDiff::from_lines(a, b);
                let unified = diff.unified_diff().header(&shown, &shown).to_string();
                report.push_str(&unified);
            }
            (Some(_), None) => report.push_str(&format!("only in examples/: {}\n", path.display())),
            (None, _) => report.push_str(&format!("missing from examples/: {}\n", path.display())),
        }
    }
    assert!(report.is_empty(), "examples/memcached-operator is stale; run scripts/update-example.sh\n{report}");
}
