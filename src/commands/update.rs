//! `memop update`: moves a project to this memop's runtime. What runs a memop project is the
//! memop-runtime and memop-test crates, which the project builds from memop's copies in
//! `vendor/` and pins in `Cargo.toml`; this command replaces those copies with this memop's,
//! moves the pins (and their `Cargo.lock` entries) and records the new memop in `PROJECT`.
//!
//! It never merges: `vendor/` is memop's alone. A vendored file that changed since memop wrote it
//! (`PROJECT.sum` says what memop wrote) is refused with the way out, so an update never loses an
//! edit. The files memop scaffolded outside `vendor/` (the Makefile, the Dockerfile, `config/`,
//! the CI workflows) are not updated yet: that needs a three-way merge with the user's edits.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use super::{Global, finish};
use crate::project::{self, Project};
use crate::scaffold::{self, IfExists, Plan, RUNTIME_CRATES};
use crate::sum::{self, Sum};

/// Update the project to this memop's runtime: vendor/, the versions Cargo.toml pins, PROJECT
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  git commit -am 'before memop update' && memop update && cargo test")]
pub struct Args {
    /// Update even when the git work tree has uncommitted changes (the update is then not one
    /// reviewable diff)
    #[arg(long)]
    allow_dirty: bool,

    /// Replace the files of vendor/ that were edited since memop wrote them (the edits are lost)
    #[arg(long)]
    force: bool,
}

pub fn run(global: &Global, args: Args) -> Result<()> {
    let dir = &global.dir;
    let mut project = Project::load(dir)?;
    if !args.allow_dirty && !global.dry_run {
        refuse_a_dirty_tree(dir)?;
    }
    let version = env!("CARGO_PKG_VERSION");
    let mut plan = Plan::new(dir);
    let record = Sum::parse(plan.read(Path::new(sum::FILE))?.as_deref())?;
    let shipped = scaffold::vendored_files();
    // What an earlier memop vendored and this one does not: no module names it any more.
    let vendor = format!("{}/", scaffold::VENDOR);
    let dropped: Vec<&str> = record
        .paths()
        .filter(|path| path.starts_with(&vendor) && !shipped.iter().any(|(s, _)| s == path))
        .filter(|path| dir.join(path).is_file())
        .collect();
    let mut edited = Vec::new();
    for (path, text) in shipped {
        let unedited = match plan.read(Path::new(&path))? {
            Some(current) if current == text => continue,
            Some(current) => record.get(&path) == Some(sum::blob_id(&current).as_str()),
            // Restored: memop's file, gone.
            None => true,
        };
        if !unedited && !args.force {
            edited.push(path);
            continue;
        }
        plan.write(&path, text, IfExists::Overwrite)?;
        plan.mark_formatted(&path);
    }
    if !edited.is_empty() {
        bail!(
            "{} changed since memop wrote {}: vendor/ is memop's copy of the runtime crates, and an \
             update replaces it whole. Move the change into your own code (or propose it to memop), \
             restore the files with `git checkout -- vendor`, and run `memop update` again; or pass \
             --force to replace them (the edits are lost)",
            edited.join(", "),
            if edited.len() == 1 { "it" } else { "them" }
        );
    }
    let manifest = plan.read(Path::new("Cargo.toml"))?.context("the project has no Cargo.toml")?;
    plan.write("Cargo.toml", pin(&manifest, version)?, IfExists::Overwrite)?;
    if let Some(lock) = plan.read(Path::new("Cargo.lock"))? {
        plan.write("Cargo.lock", lock_versions(&lock, version), IfExists::Overwrite)?;
    }
    let from = std::mem::replace(&mut project.cli_version, version.to_string());
    plan.write(project::FILE, project.render()?, IfExists::Overwrite)?;
    if finish(global, plan)? {
        let from = if from.is_empty() { "an earlier memop".to_string() } else { format!("memop {from}") };
        super::report(&format!(
            "\nUpdated from {from} to memop {version}'s runtime. Next:\n  $ cargo test   # the lock \
             follows the new runtime's dependencies on the first build\nmemop does not update the \
             files it scaffolded outside vendor/ yet (Makefile, Dockerfile, config/, CI): compare them \
             with a project that this memop generates.\n"
        ))?;
        if !dropped.is_empty() {
            super::report(&format!(
                "The runtime no longer has these files, which nothing builds now; delete them:\n  $ git rm {}\n",
                dropped.join(" ")
            ))?;
        }
    }
    Ok(())
}

/// Refuses to update a git work tree with uncommitted changes, as `cargo publish` does, so that
/// the update is one diff of its own. A directory outside git has no such check.
fn refuse_a_dirty_tree(dir: &Path) -> Result<()> {
    let status = std::process::Command::new("git").current_dir(dir).args(["status", "--porcelain", "--", "."]).output();
    let Some(status) = status.ok().filter(|s| s.status.success()) else {
        return Ok(()); // not a git work tree, or no git
    };
    let text = String::from_utf8_lossy(&status.stdout);
    // memop's own lock is held by this very command (the generated .gitignore lists it).
    let dirty: Vec<&str> = text.lines().filter(|l| !l.ends_with(super::LOCK_FILE)).collect();
    if let Some(first) = dirty.first() {
        bail!(
            "the git work tree has uncommitted changes ({}{}); commit or stash them first, so that the \
             update is one diff you can review, or pass --allow-dirty",
            first.get(3..).unwrap_or(first),
            if dirty.len() > 1 { ", …" } else { "" }
        );
    }
    Ok(())
}

/// `manifest` with every runtime crate pinned to `=version`.
fn pin(manifest: &str, version: &str) -> Result<String> {
    let mut out = String::with_capacity(manifest.len());
    let mut found = Vec::new();
    for line in manifest.split_inclusive('\n') {
        let pinned = RUNTIME_CRATES.iter().find_map(|name| {
            let rest = line.strip_prefix(name)?.trim_start().strip_prefix('=')?.trim();
            rest.starts_with("\"=").then_some(name)
        });
        match pinned {
            Some(name) => {
                found.push(*name);
                out.push_str(&format!("{name} = \"={version}\"\n"));
            }
            None => out.push_str(line),
        }
    }
    for name in RUNTIME_CRATES {
        if !found.contains(name) {
            bail!(
                "Cargo.toml has no line `{name} = \"=<version>\"`, which memop pins the runtime with; \
                 restore it as `{name} = \"={version}\"` (in [dependencies] for memop-runtime, \
                 [dev-dependencies] for memop-test) and run `memop update` again"
            );
        }
    }
    Ok(out)
}

/// `lock` with the vendored crates (path packages: no `source`) at `version`.
fn lock_versions(lock: &str, version: &str) -> String {
    let blocks: Vec<String> = lock
        .split("\n\n")
        .map(|block| {
            let vendored =
                RUNTIME_CRATES.iter().any(|name| block.contains(&format!("[[package]]\nname = \"{name}\"\n")));
            if !vendored || block.contains("\nsource = ") {
                return block.to_string();
            }
            block
                .lines()
                .map(
                    |line| {
                        if line.starts_with("version = ") { format!("version = \"{version}\"") } else { line.into() }
                    },
                )
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    blocks.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pins_move_and_nothing_else() {
        let manifest = "[dependencies]\nanyhow = \"1\"\nmemop-runtime = \"=0.1.9\"\n\n[dev-dependencies]\nmemop-test = \"=0.1.9\"\n";
        let pinned = pin(manifest, "0.2.0").unwrap();
        assert_eq!(
            pinned,
            "[dependencies]\nanyhow = \"1\"\nmemop-runtime = \"=0.2.0\"\n\n[dev-dependencies]\nmemop-test = \"=0.2.0\"\n"
        );
        let error = pin("[dependencies]\nmemop-runtime = \"0.1\"\n", "0.2.0").unwrap_err().to_string();
        assert!(error.contains("no line `memop-runtime = \"=<version>\"`"), "{error}");
    }

    #[test]
    fn only_the_vendored_packages_of_the_lock_move() {
        let lock = "version = 4\n\n[[package]]\nname = \"memop-runtime\"\nversion = \"0.1.9\"\ndependencies = [\n \"kube\",\n]\n\n[[package]]\nname = \"memop-test\"\nversion = \"0.1.9\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
        let moved = lock_versions(lock, "0.2.0");
        assert!(moved.contains("name = \"memop-runtime\"\nversion = \"0.2.0\"\ndependencies"), "{moved}");
        // A registry package of that name (once published) is cargo's to move.
        assert!(moved.contains("name = \"memop-test\"\nversion = \"0.1.9\"\nsource"), "{moved}");
    }
}
