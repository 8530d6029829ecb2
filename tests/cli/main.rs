//! The memop command line, end to end: every refusal (exit code 1, one `error:` message that
//! names the bad value and the fix, nothing written), dry runs, re-runs with `--force`, several
//! APIs in one project, and the informational commands.
//!
//! Commands are written as shell-like lines (`'…'` quotes an argument with spaces, `''` is an
//! empty one). Generated projects are never built here; these tests only look at the files
//! memop writes, so they run in seconds. One module per topic; the helpers are here.

mod autoupdate;
mod chart;
mod controller_name;
mod core_types;
mod create_api;
mod delete_api;
mod dry_run;
mod envtest;
mod external_types;
mod hostile;
mod info;
mod init;
mod messages;
mod names;
mod project_facts;
mod rerun;
mod safety;
mod several_apis;
mod special_files;
mod sum;
mod update;
mod update_hostile;
mod versions;
mod webhook;
mod webhook_config;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use tempfile::TempDir;

#[path = "../common/mod.rs"]
mod common;

use common::SOURCE_DATE_EPOCH;

/// The Memcached preset, as the README creates it.
const MEMCACHED: &str = "--group cache --kind Memcached";
/// An operand controller for an image of our own.
const NGINX: &str = "--group web --kind Nginx --image nginx:1.27 --image-container-port 8080";

/// Splits a command line into arguments: on whitespace, except inside `'…'`.
fn argv(line: &str) -> Vec<String> {
    let (mut args, mut arg, mut quoted, mut started) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, started) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if started {
                    args.push(std::mem::take(&mut arg));
                    started = false;
                }
            }
            c => {
                arg.push(c);
                started = true;
            }
        }
    }
    assert!(!quoted, "unbalanced quote in {line:?}");
    if started {
        args.push(arg);
    }
    args
}

/// The memop binary under test, with a reproducible clock, running `line` in `dir`.
fn memop(dir: &Path, line: &str) -> Command {
    let mut cmd = Command::cargo_bin("memop").expect("memop binary");
    cmd.env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH).current_dir(dir).args(argv(line));
    cmd
}

/// What a successful run printed.
struct Output {
    stdout: String,
    stderr: String,
}

/// Runs `memop <line>` in `dir`, asserting it succeeds.
#[track_caller]
fn ok(dir: &Path, line: &str) -> Output {
    let out = memop(dir, line).assert().success().get_output().clone();
    Output { stdout: String::from_utf8(out.stdout).unwrap(), stderr: String::from_utf8(out.stderr).unwrap() }
}

/// One entry of a directory tree: a directory, or a file's bytes.
#[derive(Debug, PartialEq, Eq)]
enum Node {
    Dir,
    File(Vec<u8>),
}

type Tree = BTreeMap<PathBuf, Node>;

/// Every path under `dir` (relative), directories included, with the contents of each file.
/// A missing `dir` gives an empty tree.
fn snapshot(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            if path.is_dir() {
                out.insert(relative, Node::Dir);
                walk(root, &path, out);
            } else {
                out.insert(relative, Node::File(fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The paths whose entry differs between two snapshots (added, removed or changed).
fn changed(before: &Tree, after: &Tree) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = before.keys().chain(after.keys()).cloned().collect();
    paths.sort();
    paths.dedup();
    paths.retain(|p| before.get(p) != after.get(p));
    paths
}

/// Asserts that `dir` is exactly as `before` recorded it.
#[track_caller]
fn assert_unchanged(dir: &Path, before: &Tree, what: &str) {
    let diff = changed(before, &snapshot(dir));
    assert!(diff.is_empty(), "`{what}` changed {} on disk: {diff:?}", dir.display());
}

/// Runs `memop <line>` in `dir` and asserts it is refused: exit code 1, nothing on stdout, stderr
/// starting with `error:` and holding every one of `expected`, and nothing under `dir` changed.
/// Returns stderr.
#[track_caller]
fn refused(dir: &Path, line: &str, expected: &[&str]) -> String {
    let before = snapshot(dir);
    let out = memop(dir, line).assert().code(1).get_output().clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("error: "), "memop {line}: not one error:\n{stderr}");
    assert!(stdout.is_empty(), "memop {line} failed but printed to stdout:\n{stdout}");
    for want in expected {
        assert!(stderr.contains(want), "memop {line}: stderr lacks {want:?}:\n{stderr}");
    }
    assert_unchanged(dir, &before, &format!("memop {line}"));
    stderr
}

/// A fresh, empty scratch directory.
fn scratch() -> TempDir {
    tempfile::tempdir().unwrap()
}

/// A scratch directory holding `proj/`, a project initialized with `--domain example.com`, with
/// `create api <api>` run for each of `apis`, in order.
fn project(apis: &[&str]) -> (TempDir, PathBuf) {
    let tmp = scratch();
    let dir = tmp.path().join("proj");
    fs::create_dir(&dir).unwrap();
    // A fresh project warns about nothing (no kept files, no rustfmt failure).
    let out = ok(&dir, "init --domain example.com");
    assert_eq!(out.stderr, "", "init warned");
    for api in apis {
        let out = ok(&dir, &format!("create api {api}"));
        assert_eq!(out.stderr, "", "create api {api} warned");
    }
    (tmp, dir)
}

fn read(dir: &Path, path: &str) -> String {
    fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

fn append(dir: &Path, path: &str, text: &str) {
    let contents = read(dir, path) + text;
    fs::write(dir.join(path), contents).unwrap();
}

/// How often `needle` occurs in `haystack`.
fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// Asserts `needle` occurs exactly once in file `path` of `dir`.
#[track_caller]
fn once(dir: &Path, path: &str, needle: &str) {
    let text = read(dir, path);
    assert_eq!(count(&text, needle), 1, "{needle:?} in {path}:\n{text}");
}
