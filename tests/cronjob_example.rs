//! `examples/cronjob-operator`: kubebuilder's "Tutorial: Building CronJob" done with memop. It is
//! the output of the three memop commands in `scripts/update-cronjob-example.sh` plus the files
//! the tutorial writes by hand (the script's `user_files`, and the lock with the example's own
//! dependencies), with `vendor -> ../../crates` as in the Memcached example. These tests hold it
//! to that, check that `memop update` on it changes nothing, and build, lint and test it (both
//! tiers, as `KUBEBUILDER_ASSETS` allows) as CI does every generated project.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cronjob-operator")
}

fn script() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/update-cronjob-example.sh")).unwrap()
}

/// The memop commands of the script, each as its arguments.
fn commands() -> Vec<Vec<String>> {
    let commands: Vec<Vec<String>> = script()
        .lines()
        .filter_map(|line| line.strip_prefix("\"$memop\" "))
        .map(|line| {
            let line = line.strip_suffix(" >/dev/null").unwrap_or(line);
            line.split_whitespace().map(String::from).collect()
        })
        .collect();
    assert_eq!(commands.len(), 5, "init, create api, create webhook, and v2: {commands:?}");
    commands
}

/// The files the example may hold otherwise than memop writes them: the script's `user_files`,
/// and the lock (memop's, plus the example's own dependencies).
fn user_files() -> BTreeSet<PathBuf> {
    let script = script();
    let list = script.split_once("user_files=(\n").expect("the script's user_files").1;
    let list = list.split_once("\n)").unwrap().0;
    let mut files: BTreeSet<PathBuf> = list.lines().map(|line| PathBuf::from(line.trim())).collect();
    files.insert("Cargo.lock".into());
    files
}

/// The project the script's commands generate, in `dir` (named like the example).
fn generate(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for args in commands() {
        common::run(dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

#[test]
fn the_cronjob_example_is_the_scripts_commands_plus_the_tutorials_files() {
    let scratch = tempfile::tempdir().unwrap();
    let fresh = scratch.path().join("cronjob-operator");
    generate(&fresh);
    let link = std::fs::read_link(example().join("vendor")).expect("examples/cronjob-operator/vendor is a link");
    assert_eq!(link, Path::new("../../crates"));

    let committed = common::tree(&example());
    let generated = common::tree(&fresh);
    let user = user_files();
    let mut report = String::new();
    for path in committed.keys().chain(generated.keys()).collect::<BTreeSet<_>>() {
        match (committed.get(path), generated.get(path)) {
            (Some(a), Some(b)) if user.contains(path) => {
                // The tutorial's files are its own: none is left as memop wrote it.
                if a == b {
                    report.push_str(&format!("{} is as memop wrote it: not the tutorial's\n", path.display()));
                }
            }
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                let shown = path.display().to_string();
                let diff = similar::TextDiff::from_lines(a, b);
                report.push_str(&diff.unified_diff().header(&shown, &shown).to_string());
            }
            // A file of the tutorial's own (a test, say).
            (Some(_), None) if user.contains(path) => {}
            (Some(_), None) => report.push_str(&format!("only in examples/: {}\n", path.display())),
            (None, _) => report.push_str(&format!("missing from examples/: {}\n", path.display())),
        }
    }
    assert!(report.is_empty(), "examples/cronjob-operator is stale; run scripts/update-cronjob-example.sh\n{report}");
}

/// A user's project has memop's output in its history and the tutorial's edits on top: `memop
/// update` then finds nothing to change, and merges nothing into the tutorial's files.
#[test]
fn updating_the_cronjob_example_is_a_no_op() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("cronjob-operator");
    generate(&dir);
    common::git(&dir, &["init", "-q"]);
    common::commit(&dir, "memop init, create api, create webhook");
    for path in user_files() {
        std::fs::copy(example().join(&path), dir.join(&path)).unwrap();
    }
    common::commit(&dir, "the tutorial");

    let out = common::memop().current_dir(&dir).arg("update").assert().success().get_output().clone();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let status = common::check(&dir, "git", &["status", "--porcelain", "--untracked-files=all"]);
    assert!(status.is_empty(), "the update changed {status}\n{stdout}{stderr}");
    assert!(stdout.starts_with("Nothing to do"), "{stdout}");
    // memop compares the files `make manifests` writes with its scaffold's, not with the
    // example's code (which the CRD and role follow: the example's own tests check that), and
    // says so; nothing else.
    for line in stderr.lines() {
        assert!(line.contains("they are generated from your code: run `make manifests`"), "{stderr}");
    }
}

/// What CI asks of every generated project: fmt, clippy with `-D warnings`, `cargo test` (the
/// book's translated tests and the rest, on the real control plane too with
/// `KUBEBUILDER_ASSETS`), `kubectl kustomize config/default`, and `make manifests` with no
/// change.
#[test]
fn the_cronjob_example_builds_lints_and_passes_its_tests() {
    let example = example();
    common::build_lint_and_test(&example);
    common::check(&example, "cargo", &["run", "--locked", "--quiet", "--bin", "manifests", "--", "--check"]);
}

/// docs/tutorials/cronjob.md and multiversion.md stay true: their memop commands, in turn, are
/// the script's, and every Rust block they show is in the example as it stands (line for line,
/// indentation aside).
#[test]
fn the_cronjob_tutorials_show_the_examples_commands_and_code() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tutorials");
    let read = |name: &str| std::fs::read_to_string(docs.join(name)).unwrap();
    let doc = format!("{}\n{}", read("cronjob.md"), read("multiversion.md"));
    let blocks = |language: &str| -> Vec<Vec<String>> {
        let fence = format!("```{language}\n");
        doc.split(&fence)
            .skip(1)
            .map(|rest| rest.split("\n```").next().unwrap().lines().map(|l| l.trim().to_string()).collect())
            .collect()
    };
    let memop: Vec<Vec<String>> = blocks("sh")
        .concat()
        .iter()
        .filter_map(|line| line.strip_prefix("memop -C cronjob-operator "))
        .map(|line| line.split_whitespace().map(String::from).collect())
        .collect();
    assert_eq!(memop, commands(), "the tutorial's memop commands are the script's");

    let mut sources = Vec::new();
    for dir in ["src", "tests"] {
        for (path, text) in common::tree(&example().join(dir)) {
            let lines: Vec<String> = text.lines().map(|l| l.trim().to_string()).collect();
            sources.push((path, lines));
        }
    }
    let rust = blocks("rust");
    assert!(rust.len() >= 15, "{}", rust.len());
    for block in rust {
        let found =
            sources.iter().any(|(_, lines)| lines.windows(block.len()).any(|window| window == block.as_slice()));
        assert!(found, "not in examples/cronjob-operator/src or tests:\n{}", block.join("\n"));
    }
}
