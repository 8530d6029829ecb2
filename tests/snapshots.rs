//! insta snapshots of the trees users generate. `examples/memcached-operator` already pins the
//! Memcached preset file by file, so each variant is snapshotted as its file list plus how it
//! differs from the example: a diff for a file both have, the whole file for one only the
//! variant has. Review changes with `cargo insta review` (or `INSTA_UPDATE=always cargo test`).

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn example() -> BTreeMap<PathBuf, String> {
    common::tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/memcached-operator"))
}

/// Generates a project named `memcached-operator` with `commands`, and describes it against
/// the example. Cargo.lock is left out: it is pinned by its own test and the example. So is the
/// text of PROJECT.sum, ids of the other files' text (tests/cli/sum.rs checks it).
fn variant(commands: &[&[&str]]) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("memcached-operator");
    std::fs::create_dir(&dir).unwrap();
    for args in commands {
        common::run(&dir, args);
    }
    let tree = common::tree(&dir);
    let example = example();
    let mut out = String::from("# files\n");
    for path in tree.keys() {
        let mark = if example.contains_key(path) { ' ' } else { '+' };
        let _ = writeln!(out, "{mark} {}", path.display());
    }
    for path in example.keys().filter(|p| !tree.contains_key(*p)) {
        let _ = writeln!(out, "- {}", path.display());
    }
    for (path, contents) in tree.iter().filter(|(path, _)| *path != Path::new("PROJECT.sum")) {
        let shown = path.display().to_string();
        match example.get(path) {
            Some(same) if same == contents => {}
            Some(original) => {
                let diff = similar::TextDiff::from_lines(original, contents);
                let _ = write!(out, "\n# diff {shown}\n{}", diff.unified_diff().context_radius(2));
            }
            None => {
                let _ = write!(out, "\n# new {shown}\n{contents}");
            }
        }
    }
    out
}

const INIT: &[&str] = &["init", "--domain", "example.com"];
const MEMCACHED: &[&str] = &["create", "api", "--group", "cache", "--kind", "Memcached"];

#[test]
fn init_only() {
    insta::assert_snapshot!(variant(&[INIT]));
}

#[test]
fn memcached_preset_is_the_example() {
    let described = variant(&[INIT, MEMCACHED]);
    assert!(!described.contains("\n# "), "the preset differs from the example:\n{described}");
}

#[test]
fn skeleton_kind() {
    insta::assert_snapshot!(variant(&[
        INIT,
        &["create", "api", "--group", "batch", "--version", "v1", "--kind", "CronJob"]
    ]));
}

#[test]
fn image_kind() {
    insta::assert_snapshot!(variant(&[
        INIT,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--kind",
            "Nginx",
            "--image",
            "nginx:1.27",
            "--image-container-port",
            "8080",
            "--image-container-command",
            "nginx,-g,daemon off;",
            "--run-as-user",
            "101",
        ],
    ]));
}

#[test]
fn two_groups() {
    insta::assert_snapshot!(variant(&[
        INIT,
        MEMCACHED,
        &[
            "create",
            "api",
            "--group",
            "apps",
            "--version",
            "v1beta1",
            "--kind",
            "Redis",
            "--image",
            "redis:7.4",
            "--image-container-port",
            "6379"
        ],
    ]));
}

#[test]
fn namespaced_project() {
    insta::assert_snapshot!(variant(&[&["init", "--domain", "example.com", "--namespaced"], MEMCACHED]));
}

#[test]
fn license_none() {
    insta::assert_snapshot!(variant(&[&["init", "--domain", "example.com", "--license", "none"], MEMCACHED]));
}

#[test]
fn memcached_webhooks() {
    insta::assert_snapshot!(variant(&[
        INIT,
        MEMCACHED,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--defaulting",
            "--programmatic-validation"
        ]
    ]));
}

/// A second version of Memcached, stored from now on, and the conversion webhook between the
/// two through the hub v1.
#[test]
fn memcached_versions() {
    insta::assert_snapshot!(variant(&[
        INIT,
        MEMCACHED,
        &["create", "api", "--group", "cache", "--version", "v1", "--kind", "Memcached", "--storage-version"],
        &["create", "webhook", "--group", "cache", "--version", "v1", "--kind", "Memcached", "--conversion"]
    ]));
}
