//! What memop answers to kubebuilder habits, to output it cannot write, and to text that would
//! break the files it generates.

use std::process::Command;

use crate::common::{self, memop};

fn stderr_of(assert: assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

#[test]
fn kubebuilder_commands_memop_lacks_are_answered_with_what_it_offers() {
    let scratch = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["edit", "--multigroup=true"], "always supports several groups"),
        (&["alpha", "generate"], "for `alpha generate`, run `memop init` in a new directory"),
        (&["alpha", "update"], "for `alpha update`, run `memop update`"),
    ];
    for (args, expected) in cases {
        let stderr = stderr_of(memop().current_dir(scratch.path()).args(args).assert().code(1));
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn kubebuilders_make_flag_is_accepted_with_a_note() {
    let scratch = tempfile::tempdir().unwrap();
    common::run(scratch.path(), &["init", "--domain", "example.com", "--project-name", "demo"]);
    let assert = memop()
        .current_dir(scratch.path())
        .args(["create", "api", "--group", "cache", "--kind", "Memcached", "--make=false"])
        .assert()
        .success();
    assert!(stderr_of(assert).contains("memop never runs make"));
}

#[test]
fn a_missing_directory_is_named_as_such() {
    let stderr = stderr_of(
        memop()
            .args(["-C", "/nonexistent/proj", "create", "api", "--group", "cache", "--kind", "Memcached"])
            .assert()
            .code(1),
    );
    assert!(stderr.contains("directory /nonexistent/proj does not exist"), "{stderr}");
}

#[test]
fn output_that_cannot_be_written_is_an_error_not_a_panic() {
    let scratch = tempfile::tempdir().unwrap();
    let memop = assert_cmd::cargo::cargo_bin("memop");
    // A reader that is gone before memop writes: a broken pipe.
    let script = format!(
        "set -o pipefail; '{}' --dry-run init --domain example.com --project-name demo | true",
        memop.display()
    );
    let out = Command::new("bash").args(["-c", &script]).current_dir(scratch.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("writing to standard output"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // A full disk.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(&memop)
        .args(["--dry-run", "init", "--domain", "example.com", "--project-name", "demo"])
        .current_dir(scratch.path())
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("writing to standard output"), "{stderr}");
}

#[test]
fn text_that_would_break_generated_files_is_refused_or_quoted() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let stderr = stderr_of(
        memop()
            .current_dir(dir)
            .args([
                "init",
                "--domain",
                "example.com",
                "--project-name",
                "demo",
                "--owner",
                "ACME\ncompile_error!(\"x\");",
            ])
            .assert()
            .code(1),
    );
    assert!(stderr.contains("one line of text"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0, "nothing written");

    common::run(dir, &["init", "--domain", "example.com", "--project-name", "demo"]);
    let too_big = [
        "create",
        "api",
        "--group",
        "web",
        "--kind",
        "Site",
        "--image",
        "nginx:1.27",
        "--image-container-port",
        "80",
        "--run-as-user",
        "4294967296",
    ];
    let stderr = stderr_of(memop().current_dir(dir).args(too_big).assert().code(1));
    assert!(stderr.contains("from 1 to 2147483647"), "{stderr}");
    // An image YAML would read as a boolean stays a string.
    common::run(
        dir,
        &["create", "api", "--group", "web", "--kind", "Site", "--image", "true", "--image-container-port", "80"],
    );
    let manager = std::fs::read_to_string(dir.join("config/manager/manager.yaml")).unwrap();
    assert!(manager.contains("value: \"true\""), "{manager}");
}

/// Examples in `--help` must survive copy and paste: clap re-wraps lines longer than the
/// terminal, so every example line fits in 80 columns (long commands continue with `\`).
#[test]
fn help_examples_fit_an_80_column_terminal() {
    for args in [&[][..], &["init"], &["create"], &["create", "api"]] {
        let out = memop().args(args).arg("--help").env("COLUMNS", "80").output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        let examples = help.split_once("\nExample").map(|(_, e)| e).unwrap_or_else(|| panic!("{args:?} has examples"));
        for line in examples.lines() {
            assert!(line.len() <= 78, "{args:?}: {line:?} would be wrapped");
        }
        let memop_lines = examples.lines().filter(|l| l.trim_start().starts_with("memop ")).count();
        assert!(memop_lines > 0, "{args:?}: {examples}");
    }
}

#[test]
fn init_next_to_an_unrelated_cargo_project_says_so() {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("Cargo.toml"), "[package]\nname = \"theirs\"\n").unwrap();
    let stderr = stderr_of(
        memop()
            .current_dir(scratch.path())
            .args(["init", "--domain", "example.com", "--project-name", "demo"])
            .assert()
            .code(1),
    );
    assert!(stderr.contains("holds a Cargo project (Cargo.toml) but no memop PROJECT file"), "{stderr}");
    assert!(!stderr.contains("memop create api"), "{stderr}");
}
