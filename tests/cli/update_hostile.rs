//! `memop update` against a hostile but realistic user (issue #20): what a user does between two
//! updates, or to the files an update reads, never makes it lose an edit, leave a project that
//! looks updated but is not, or say something that is not so.

use super::update::{as_older_memop_wrote, git, older_project};
use super::*;

/// A conflict the user committed without resolving it is refused by the next update, by name,
/// rather than left in the file of a project the update calls updated.
#[test]
fn conflict_markers_left_from_an_earlier_update_are_refused() {
    let (_tmp, dir) = older_project();
    as_older_memop_wrote(&dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
    as_older_memop_wrote(&dir, "Dockerfile", "FROM rust:", "# memop 0.1.9\nFROM rust:");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9"]);
    let makefile = read(&dir, "Makefile").replace("IMG ?= controller:old", "IMG ?= registry.example.com/mine:v1");
    fs::write(dir.join("Makefile"), makefile).unwrap();
    git(&dir, &["commit", "-qam", "my image"]);
    memop(&dir, "update").assert().code(1);
    assert!(read(&dir, "Makefile").contains("<<<<<<< ours\n"));

    // Without resolving: committed as it is (or not committed, with --allow-dirty).
    refused(&dir, "update --allow-dirty", &["Makefile still holds the conflict markers", "resolve them"]);
    git(&dir, &["commit", "-qam", "the update, conflict and all"]);
    refused(&dir, "update", &["Makefile still holds the conflict markers", "resolve them"]);
    refused(&dir, "--dry-run update", &["Makefile still holds the conflict markers"]);
}
