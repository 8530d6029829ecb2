//! `memop update`: moves a project to this memop's runtime. What runs a memop project is the
//! memop-runtime and memop-test crates, which the project builds from memop's copies in
//! `vendor/` and pins in `Cargo.toml`; this command replaces those copies with this memop's,
//! moves the pins (and their `Cargo.lock` entries) and records the new memop in `PROJECT`.
//!
//! `vendor/` is memop's alone: a vendored file that changed since memop wrote it (`PROJECT.sum`
//! says what memop wrote) is refused with the way out, so an update never loses an edit.
//!
//! memop's files outside `vendor/` (those whose template says `{# owner: memop #}`: the
//! Dockerfile, the Makefile, the CI workflows, the scaffolded parts of `config/`) are rendered
//! again from PROJECT: one you did not edit is replaced; one you edited is merged three ways,
//! with what memop wrote then as the base (read from git by the blob id `PROJECT.sum` records),
//! so your edits and memop's changes both land; where they touch the same lines, the file gets
//! git's conflict markers and the command fails, saying which files to resolve. Without that base
//! (never committed, or no git) an edited file is kept as it is, and a note says so. Your own
//! files (an API's types, a controller, its tests) are never rewritten.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use super::{Global, finish};
use crate::project::{self, Project};
use crate::scaffold::{self, IfExists, Plan, RUNTIME_CRATES};
use crate::sum::{self, Sum};

/// Update the project to this memop: its runtime (vendor/, the pins), memop's own files (merged
/// with your edits), PROJECT
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
    let merged = update_memop_files(&project, &mut plan, &record, dir)?;
    let manifest = plan.read(Path::new("Cargo.toml"))?.context("the project has no Cargo.toml")?;
    plan.write("Cargo.toml", pin(&manifest, version)?, IfExists::Overwrite)?;
    if let Some(lock) = plan.read(Path::new("Cargo.lock"))? {
        plan.write("Cargo.lock", lock_versions(&lock, version), IfExists::Overwrite)?;
    }
    let from = std::mem::replace(&mut project.cli_version, version.to_string());
    plan.write(project::FILE, project.render()?, IfExists::Overwrite)?;
    let written = finish(global, plan)?;
    if written {
        let from = if from.is_empty() { "an earlier memop".to_string() } else { format!("memop {from}") };
        super::report(&format!(
            "\nUpdated from {from} to memop {version}: its runtime, and its files outside vendor/. Next:\n  \
             $ cargo test   # the lock follows the new runtime's dependencies on the first build\n"
        ))?;
    }
    if written && !dropped.is_empty() {
        super::report(&format!(
            "The runtime no longer has these files, which nothing builds now; delete them:\n  $ git rm {}\n",
            dropped.join(" ")
        ))?;
    }
    merged.finish(global, written, "`memop init` in an empty directory")
}

/// What [`merge_memop_files`] did with memop's files.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// Edited files whose edits and memop's changes were merged.
    merged: Vec<String>,
    /// Merged files with conflicts, marked in the text.
    conflicts: Vec<String>,
    /// Edited files kept as they are: no base to merge with.
    kept: Vec<String>,
    /// memop's text of each merged file, by path, to keep for the next merge.
    bases: Vec<(String, String)>,
}

impl Merged {
    /// Once the plan is written: keeps memop's text of the merged files for the next merge, and
    /// says which files were merged or kept (`what`: the files, as the user knows them). Fails,
    /// naming the files, when there are conflicts to resolve.
    pub fn finish(&self, global: &Global, written: bool, what: &str) -> Result<()> {
        if written {
            // The text memop's templates give now, which PROJECT.sum records as the base of the
            // next merge: kept where git can read it back, as the text of every file committed is.
            store_bases(&global.dir, &self.bases);
            if !self.merged.is_empty() {
                super::report(&format!("Merged memop's changes with your edits in: {}\n", self.merged.join(", ")))?;
            }
        }
        for path in &self.kept {
            crate::warn_line!(
                "note: {path} changed since memop wrote it, and git has no copy of what memop wrote (it was never \
                 committed as memop left it), so it was kept as it is; compare it with {what}"
            );
        }
        if !self.conflicts.is_empty() && !global.dry_run {
            bail!(
                "memop's changes and your edits touch the same lines of {}: resolve the conflicts between the \
                 <<<<<<< ours (yours) and >>>>>>> theirs (memop's) markers there (the rest is written), then \
                 run `make test` and commit",
                self.conflicts.join(", ")
            );
        }
        Ok(())
    }
}

/// Plans memop's files (templates that say `{# owner: memop #}`) as this memop renders them
/// from PROJECT: replaced where unedited, three-way merged where edited (see the module doc).
fn update_memop_files(project: &Project, plan: &mut Plan, record: &Sum, dir: &Path) -> Result<Merged> {
    let ctx = tera::Context::from_serialize(super::context::ProjectContext::new(project))?;
    let templates = scaffold::Templates::load(&["init/"])?;
    let mut files = Vec::new();
    for entry in templates.entries("init", &ctx)? {
        let scaffold::Entry::File { template, path, owner: scaffold::Owner::Memop } = entry else { continue };
        files.push((path, templates.render(&template, &ctx)?));
    }
    let mut merged = merge_memop_files(plan, record, dir, files, Missing::Keep)?;
    // A project with a Helm chart gets memop's chart templates too.
    merged.extend(super::helm::plan_chart(project, plan, record, false)?);
    Ok(merged)
}

/// What [`merge_memop_files`] does with a file of memop's that the project does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// Leave it out: memop's files are yours to drop.
    Keep,
    /// Create it unless PROJECT.sum says memop wrote it before (then you deleted it: it stays
    /// deleted), for files that come and go with the project's APIs.
    CreateNew,
}

/// Plans each of `files` (path, memop's text now) over the project's file: created or left out
/// when missing (`missing`), replaced when unedited since memop wrote it (`record`), else merged
/// three ways with what memop wrote then (read from git) as the base.
pub(crate) fn merge_memop_files(
    plan: &mut Plan,
    record: &Sum,
    dir: &Path,
    files: Vec<(String, String)>,
    missing: Missing,
) -> Result<Merged> {
    let mut merged = Merged::default();
    for (path, new) in files {
        let Some(current) = plan.read(Path::new(&path))? else {
            if missing == Missing::CreateNew && record.get(&path).is_none() {
                plan.write(&path, new, IfExists::Overwrite)?;
            }
            continue;
        };
        if current == new {
            continue;
        }
        let recorded = record.get(&path);
        if recorded == Some(sum::blob_id(&current).as_str()) {
            plan.write(&path, new, IfExists::Overwrite)?;
            continue;
        }
        let Some(base) = recorded.and_then(|id| git_blob(dir, id)) else {
            merged.kept.push(path);
            continue;
        };
        if base == new {
            continue; // memop's text did not change: your edits are all there is
        }
        let (text, conflicts) = merge(&current, &base, &new);
        plan.write(&path, text, IfExists::Overwrite)?;
        plan.set_base(&path, new.clone());
        merged.bases.push((path.clone(), new));
        match conflicts {
            true => merged.conflicts.push(path),
            false => merged.merged.push(path),
        }
    }
    Ok(merged)
}

impl Merged {
    fn extend(&mut self, other: Merged) {
        self.merged.extend(other.merged);
        self.conflicts.extend(other.conflicts);
        self.kept.extend(other.kept);
        self.bases.extend(other.bases);
    }
}

/// The text of git blob `id` in the repository `dir` is in, if it has it.
fn git_blob(dir: &Path, id: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(["cat-file", "blob", id])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    // What memop wrote has exactly that id: check, rather than trust the object store.
    out.status.success().then(|| String::from_utf8(out.stdout).ok()).flatten().filter(|text| sum::blob_id(text) == id)
}

/// `ours` (the file as it is) and `theirs` (memop's new text) merged over `base` (what memop
/// wrote then): the text, and whether it has conflicts, marked as git marks them (`<<<<<<< ours`,
/// `||||||| original`, `=======`, `>>>>>>> theirs`).
fn merge(ours: &str, base: &str, theirs: &str) -> (String, bool) {
    match diffy::merge(base, ours, theirs) {
        Ok(text) => (text, false),
        Err(text) => (text, true),
    }
}

/// The git ref under which `memop update` keeps memop's text of each merged file (a tree of
/// them), so that git never prunes the base of the next merge.
const BASES_REF: &str = "refs/memop/bases";

/// Writes each of `bases` (path, memop's text) into the git object store of the repository, so
/// that the next update reads them back as its base, and keeps them referenced by
/// [`BASES_REF`] (a tree holding the latest text of each path). Best effort: without them an
/// edited file is kept, not merged. Nothing is written where the repository is not inside the
/// project.
fn store_bases(dir: &Path, bases: &[(String, String)]) {
    use std::io::Write as _;
    let git_dir = std::process::Command::new("git").current_dir(dir).args(["rev-parse", "--absolute-git-dir"]).output();
    let Some(git_dir) = git_dir
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
    else {
        return;
    };
    if !std::path::absolute(dir).is_ok_and(|project| git_dir.starts_with(project)) || bases.is_empty() {
        return;
    }
    // A scratch index of our own: the user's index (and staged work) is never touched.
    let index = git_dir.join("memop-bases.index");
    let git = |args: &[&str], input: Option<&str>| -> Option<String> {
        let mut child = std::process::Command::new("git")
            .current_dir(dir)
            .env("GIT_INDEX_FILE", &index)
            .args(args)
            .stdin(if input.is_some() { std::process::Stdio::piped() } else { std::process::Stdio::null() })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            let _ = stdin.write_all(text.as_bytes());
        }
        let out = child.wait_with_output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // The bases an earlier update kept (none the first time), then this update's.
    let _ = git(&["read-tree", BASES_REF], None);
    for (path, text) in bases {
        if let Some(id) = git(&["hash-object", "-w", "--stdin"], Some(text)) {
            git(&["update-index", "--add", "--cacheinfo", &format!("100644,{id},{path}")], None);
        }
    }
    if let Some(tree) = git(&["write-tree"], None) {
        git(&["update-ref", BASES_REF, &tree], None);
    }
    let _ = std::fs::remove_file(&index);
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
