//! `PROJECT.sum` records the git blob id of what memop last wrote into each file, so that a
//! later update can tell the user's edits from memop's text.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::*;

/// The record, by path.
fn recorded(dir: &Path) -> BTreeMap<String, String> {
    read(dir, "PROJECT.sum")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("memop "))
        .map(|l| {
            let (path, id) = l.rsplit_once(' ').unwrap();
            (path.to_string(), id.to_string())
        })
        .collect()
}

/// What `git hash-object` says of `path`.
fn git_id(dir: &Path, path: &str) -> String {
    let out = Command::new("git").current_dir(dir).args(["hash-object", path]).output().expect("git on PATH");
    assert!(out.status.success(), "git hash-object {path}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn every_file_memop_wrote_is_recorded_with_its_git_blob_id() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let sum = recorded(&dir);
    assert!(read(&dir, "PROJECT.sum").contains(&format!("\nmemop {}\n", env!("CARGO_PKG_VERSION"))));
    let files = common::tree(&dir).into_keys().chain(common::vendor_tree(&dir).into_keys());
    let files: Vec<String> = files.map(|p| p.to_string_lossy().into_owned()).filter(|p| p != "PROJECT.sum").collect();
    assert!(files.len() > 60, "{files:?}");
    for file in &files {
        assert_eq!(sum.get(file), Some(&git_id(&dir, file)), "{file}");
    }
    assert_eq!(sum.len(), files.len(), "the record lists only the project's files");
}

#[test]
fn the_record_keeps_memops_text_of_files_the_user_edited_since() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let before = recorded(&dir);
    append(&dir, "Makefile", "\nmine:\n\techo mine\n");
    ok(&dir, &format!("create api {NGINX}"));
    let after = recorded(&dir);
    // The Makefile memop did not touch again: still the id of what memop wrote, not the user's.
    assert_eq!(after["Makefile"], before["Makefile"]);
    assert_ne!(after["Makefile"], git_id(&dir, "Makefile"));
    // The files the command wrote or extended: their new text.
    for file in ["src/main.rs", "src/manifests.rs", "src/controller/nginx.rs", "PROJECT"] {
        assert_eq!(after[file], git_id(&dir, file), "{file}");
    }
    assert_ne!(after["src/main.rs"], before["src/main.rs"]);
    // A run that changes nothing leaves the record as it was.
    let text = read(&dir, "PROJECT.sum");
    ok(&dir, &format!("create api {NGINX} --force"));
    assert_eq!(read(&dir, "PROJECT.sum"), text);
}

#[test]
fn a_dry_run_writes_no_record() {
    let tmp = scratch();
    let dir = tmp.path().join("proj");
    std::fs::create_dir(&dir).unwrap();
    let out = ok(&dir, "--dry-run init --domain example.com");
    assert!(out.stdout.contains("PROJECT.sum"), "{}", out.stdout);
    assert!(!dir.join("PROJECT.sum").exists());
}

/// Two branches that each ran `create api`, merged, with `PROJECT.sum` resolved by keeping both
/// sides' lines: a path listed twice with two ids. Each command refuses it, naming the path and
/// the fix (it was taken last-wins: the next update merged over the wrong base); after the fix
/// the command runs.
#[test]
fn a_path_recorded_twice_by_a_merge_is_refused_with_the_fix() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let sum = read(&dir, "PROJECT.sum");
    let line = sum.lines().find(|l| l.starts_with("src/api/mod.rs ")).unwrap().to_string();
    let theirs = format!("src/api/mod.rs {}", common::blob_id("pub mod web;\n"));
    fs::write(dir.join("PROJECT.sum"), sum.replace(&line, &format!("{line}\n{theirs}"))).unwrap();
    let fix = ["PROJECT.sum lists src/api/mod.rs twice", "`git hash-object src/api/mod.rs`", "keep one line for it"];
    refused(&dir, &format!("create api {NGINX}"), &fix);
    refused(&dir, "update --allow-dirty", &fix);
    refused(&dir, "create webhook --group cache --kind Memcached --defaulting", &fix);
    // The fix: keep the line of the file's text.
    fs::write(dir.join("PROJECT.sum"), sum.replace(&line, &format!("{line}\n{line}"))).unwrap();
    ok(&dir, &format!("create api {NGINX}"));
    assert_eq!(recorded(&dir)["src/api/mod.rs"], git_id(&dir, "src/api/mod.rs"));
}
