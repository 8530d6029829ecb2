//! `memop update`: moves a project to this memop. What runs a memop project is the memop-runtime
//! and memop-test crates, which the project builds from memop's copies in `vendor/` and pins in
//! `Cargo.toml`; this command replaces those copies with this memop's, moves the pins (and their
//! `Cargo.lock` entries), brings memop's files to this memop's text and records the new memop in
//! `PROJECT`.
//!
//! `vendor/` is memop's alone: a vendored file that changed since memop wrote it (`PROJECT.sum`
//! says what memop wrote) is refused with the way out, so an update never loses an edit.
//!
//! Every other file is rendered again from PROJECT ([`replay`]: init's scaffold, then `create
//! api` and `create webhook` for each API PROJECT lists, into a scratch plan that sees no disk),
//! and each goes by whose its template says it is, through the one rule every command uses
//! (`scaffold::reconcile`, see `update_files` there): memop's merged three ways with your edits,
//! yours left (named where memop now writes it otherwise), generated ones left to `make
//! manifests`. This module keeps what is the update's alone: `vendor/`, the pins, and the report.
//!
//! Where memop's changes and your edits touch the same lines, only the files in conflict are
//! written, with git's conflict markers (and their records, so that the next update does not
//! merge them again), and the command fails naming them: resolve, commit, and update again for
//! the rest. The plan is written at the end, all at once: an interrupted update changes nothing.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use super::replay::replay;
use super::{Global, Report};
use crate::project::{self, Project};
use crate::scaffold::merge::Decision;
use crate::scaffold::reconcile::{self, Merged, Router};
use crate::scaffold::{self, Declared, Owner, Plan, Purpose, RUNTIME_CRATES};
use crate::sum;

/// Update the project to this memop: its runtime (vendor/, the pins), memop's files and the
/// files it inserts into (merged with your edits), PROJECT
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  git commit -am 'before memop update' && memop update && make manifests && cargo test"
)]
pub struct Args {
    /// Update even when the git work tree has uncommitted changes (the update is then not one
    /// reviewable diff)
    #[arg(long)]
    allow_dirty: bool,

    /// Replace the files of vendor/ that were edited since memop wrote them (the edits are lost);
    /// update a project that lost its PROJECT.sum
    #[arg(long)]
    force: bool,

    /// Also write, in Markdown, what the update did to FILE (outside the project: a path of the
    /// CI runner's, say): the files changed and merged, the conflicts, the notes for your files,
    /// or why it refused; written however the update ends (the autoupdate/v1-alpha workflow makes
    /// it the body of its pull request)
    #[arg(long, value_name = "FILE")]
    summary: Option<std::path::PathBuf>,
}

pub fn run(global: &Global, args: Args, report: &mut Report) -> Result<()> {
    let file = args.summary.clone();
    let mut summary = Summary::default();
    let update = Update { args, summary: &mut summary };
    let result = Project::load(&global.dir).and_then(|project| super::frame::run(global, report, project, update));
    let Some(file) = file else { return result };
    let text = summary.render(report, global.dry_run, result.as_ref().err());
    std::fs::write(&file, text).with_context(|| format!("writing the summary to {}", file.display()))?;
    result
}

/// What `--summary` writes beside the update's report: the memop the project was made with, and
/// this one; the runtime's files no longer shipped that the user edited, left to delete.
#[derive(Debug, Default)]
struct Summary {
    from: String,
    to: String,
    dropped: Vec<String>,
}

impl Summary {
    /// The files the update that `report` tells changed and removed, and its notes: only the
    /// files in `conflicts` where it stopped at them, nothing where it failed before it planned
    /// them all.
    fn changes(&self, report: &Report, conflicts: &[String], dry_run: bool) -> (Vec<String>, Vec<String>, Vec<String>) {
        let Some(files) = report.files() else { return Default::default() };
        if !conflicts.is_empty() {
            return (conflicts.to_vec(), Vec::new(), Vec::new());
        }
        // PROJECT and PROJECT.sum change with every real update: not news.
        let news = |path: &&String| *path != project::FILE && *path != sum::FILE;
        let mut notes: Vec<String> = report.notes().collect();
        let empty = files.written.is_empty() && files.removed.is_empty();
        if !dry_run && !empty && !self.dropped.is_empty() {
            notes.push(format!(
                "The runtime no longer has these files, which you edited; delete them: `git rm {}`",
                self.dropped.join(" ")
            ));
        }
        (files.written.iter().filter(news).cloned().collect(), files.removed.clone(), notes)
    }

    /// The summary of the update that `report` tells (`error`: how it failed): the files it
    /// changed and merged, the conflicts it stopped at (then the only files changed), the notes.
    fn render(&self, report: &Report, dry_run: bool, error: Option<&anyhow::Error>) -> String {
        let code = |paths: &[String]| paths.iter().map(|p| format!("- `{p}`\n")).collect::<String>();
        let mut out = match self.from.is_empty() || self.from == self.to {
            true => format!("## memop update to memop {}\n\n", self.to),
            false => format!("## memop update: memop {} to memop {}\n\n", self.from, self.to),
        };
        // What the update got to plan: nothing, where it failed before it planned it all; only
        // the conflicts, where it stopped at them (the files that merged are not written yet).
        let (conflicts, mut merged) = report.files().map(|_| report.merges()).unwrap_or_default();
        if !conflicts.is_empty() {
            merged.clear();
        }
        let (changed, removed, notes) = self.changes(report, &conflicts, dry_run);
        let outcome = match (error, conflicts.is_empty()) {
            (Some(_), false) => {
                "**Stopped at conflicts.** memop's changes and your edits touch the same lines of the files \
                 below: they are written with git's conflict markers (`<<<<<<< ours` is yours, `>>>>>>> theirs` \
                 memop's), and nothing else was changed. Resolve them, commit, and run `memop update` again for \
                 the rest of the update."
                    .to_string()
            }
            (Some(err), true) => format!("**memop update refused, and changed nothing:**\n\n```\n{err:#}\n```"),
            (None, _) if changed.is_empty() && removed.is_empty() => {
                "Nothing to do: the project is up to date with this memop.".to_string()
            }
            (None, _) => {
                "Updated. Next: `make manifests` (the CRDs and roles from your code) and `make test`.".to_string()
            }
        };
        out.push_str(&outcome);
        out.push_str("\n\n");
        if dry_run {
            out.push_str("(A dry run: nothing was written.)\n\n");
        }
        if !conflicts.is_empty() {
            out.push_str(&format!("### Conflicts ({})\n\n{}\n", conflicts.len(), code(&conflicts)));
        }
        if !merged.is_empty() {
            out.push_str(&format!("### Merged with your edits ({})\n\n{}\n", merged.len(), code(&merged)));
        }
        // vendor/ is memop's copy of its crates: one line per crate.
        let mut vendored = std::collections::BTreeMap::<String, usize>::new();
        let mut files = Vec::new();
        for path in &changed {
            match path.strip_prefix(&format!("{}/", scaffold::VENDOR)).and_then(|rest| rest.split_once('/')) {
                Some((krate, _)) => *vendored.entry(format!("{}/{krate}/", scaffold::VENDOR)).or_default() += 1,
                None => files.push(format!("- `{path}`\n")),
            }
        }
        files.extend(vendored.iter().map(|(krate, n)| {
            format!("- `{krate}` ({n} file{}: memop's copy of its runtime)\n", if *n == 1 { "" } else { "s" })
        }));
        files.extend(removed.iter().map(|path| format!("- `{path}` (removed)\n")));
        if !files.is_empty() {
            out.push_str(&format!("### Files changed ({})\n\n{}\n", files.len(), files.concat()));
        }
        if !notes.is_empty() {
            out.push_str("### Notes for your files\n\n");
            for note in &notes {
                out.push_str(&format!("- {note}\n"));
            }
            out.push('\n');
        }
        out
    }
}

/// `update` in the frame: it plans `vendor/`, every file of memop's again, the pins and PROJECT,
/// and stops at conflicts, of these files or of the plugins' (see [`Report::stop_at_conflicts`]).
struct Update<'a> {
    args: Args,
    summary: &'a mut Summary,
}

impl super::frame::Command for Update<'_> {
    fn plan(&mut self, global: &Global, project: &mut Project, plan: &mut Plan, report: &mut Report) -> Result<()> {
        let version = env!("CARGO_PKG_VERSION");
        self.summary.from = project.cli_version.clone();
        self.summary.to = version.to_string();
        refuse_a_newer_project(&project.cli_version, version)?;
        if !self.args.allow_dirty && !global.dry_run {
            refuse_a_dirty_tree(&global.dir)?;
        }
        refuse_a_lost_record(plan, self.args.force)?;
        self.summary.dropped = plan_vendor(project, plan, self.args.force)?;
        let fresh = replay(project, plan)?;
        let updated = reconcile::update_files(&fresh, plan)?;
        // A conflict, in these files or in the chart's, stops the update: only the files in
        // conflict are written, and the rest waits for the next run.
        report.stop_at_conflicts();
        pin_the_runtime(plan, version)?;
        let from = std::mem::replace(&mut project.cli_version, version.to_string());
        plan.write(project::FILE, project.render()?)?;
        report_update(from, updated, &self.summary.dropped, plan, report, global.dry_run);
        Ok(())
    }
}

/// Says in `report` what the update of a project of memop `from` did with memop's files
/// (`updated`), and which of the runtime's files no longer shipped the user edited (`dropped`).
fn report_update(
    from: String,
    mut updated: Merged,
    dropped: &[String],
    plan: &mut Plan,
    report: &mut Report,
    dry_run: bool,
) {
    let version = env!("CARGO_PKG_VERSION");
    let from = if from.is_empty() { "an earlier memop".to_string() } else { format!("memop {from}") };
    report.next(format!(
        "\nUpdated from {from} to memop {version}: its runtime, and memop's files. Next:\n  \
         $ make manifests   # config/crd, config/rbac/role.yaml, config/webhook from your code\n  \
         $ cargo test       # the lock follows the new runtime's dependencies on the first build\n"
    ));
    note_yours(std::mem::take(&mut updated.yours), plan, report, dry_run);
    if !updated.generated.is_empty() {
        report.note(format!(
            "{} are generated from your code, and memop now generates them otherwise than when it wrote them: \
             run `make manifests` to write them again with this memop's runtime",
            updated.generated.join(", ")
        ));
    }
    report.merged(updated, "`memop init` in an empty directory");
    if !dropped.is_empty() {
        report.next(format!(
            "The runtime no longer has these files, which you edited; delete them:\n  $ git rm {}\n",
            dropped.join(" ")
        ));
    }
}

/// Refuses to update without `PROJECT.sum` (unless `force`): memop could not tell its text from
/// the user's edits.
fn refuse_a_lost_record(plan: &Plan, force: bool) -> Result<()> {
    if plan.read(Path::new(sum::FILE))?.is_none() && !force {
        bail!(
            "{} is missing: memop records there what it wrote into each file, and cannot tell your edits from \
             its own text without it. Restore it (`git checkout -- {0}`; keep it in version control, it is no \
             build artifact) and run `memop update` again; or pass --force to update without it: vendor/ is \
             replaced whole, and every other file of memop's that differs from its text now is kept as it is",
            sum::FILE
        );
    }
    Ok(())
}

/// Plans the project's pins of the runtime crates, in `Cargo.toml` and `Cargo.lock`, moved to
/// `version`.
fn pin_the_runtime(plan: &mut Plan, version: &str) -> Result<()> {
    let manifest = plan.read(Path::new("Cargo.toml"))?.context("the project has no Cargo.toml")?;
    plan.write("Cargo.toml", pin(&manifest, version)?)?;
    if let Some(lock) = plan.read(Path::new("Cargo.lock"))? {
        plan.write("Cargo.lock", lock_versions(&lock, version))?;
    }
    Ok(())
}

/// Plans `vendor/`, memop's copy of the runtime crates, through the rule every file goes by
/// ([`Purpose::Renew`]): this memop's files replace those as an earlier memop wrote them (`force`:
/// edited ones too, else an edited one is refused), and those it no longer ships go where
/// unedited. Returns the ones no longer shipped that were edited,
/// left for the user to delete.
fn plan_vendor(project: &Project, plan: &mut Plan, force: bool) -> Result<Vec<String>> {
    let shipped = scaffold::vendored_files();
    // What an earlier memop vendored and this one does not: no module names it any more.
    let vendor = format!("{}/", scaffold::VENDOR);
    // A chart an earlier memop let the user put under vendor/ is not the runtime's.
    let chart = project.plugins.helm.as_ref().map(|helm| format!("{}/", helm.output));
    let (dropped, gone): (Vec<String>, Vec<String>) = plan
        .record()
        .paths()
        .filter(|path| path.starts_with(&vendor) && !shipped.iter().any(|(s, _)| s == path))
        .filter(|path| chart.as_ref().is_none_or(|chart| !path.starts_with(chart.as_str())))
        .map(str::to_string)
        .partition(|path| plan.root().join(path).is_file());
    // Gone already (an update killed after it removed them): their records go too.
    gone.iter().for_each(|path| plan.forget(Path::new(path)));
    // Those still as memop wrote them go: a module that became a directory (`operand.rs` to
    // `operand/mod.rs`) would otherwise be found twice, and the crate would not build. One
    // edited since is left, with a note.
    let mut kept = Vec::new();
    for path in dropped {
        if Router::new(None).retire(plan, &path)? == Decision::Keep {
            kept.push(path);
        }
    }
    let mut router = Router::new(None);
    for (path, text) in shipped {
        router.route(plan, Purpose::Renew { force }, &path, Declared::from(Owner::Memop), text, true)?;
    }
    let edited = router.finish()?.edited;
    if !edited.is_empty() {
        bail!(
            "{} changed since memop wrote {}: vendor/ is memop's copy of the runtime crates, and an \
             update replaces it whole. Move the change into your own code (or propose it to memop), \
             then run `memop update --force`, which replaces vendor/ with this memop's copy (without \
             the move, the edits are lost)",
            edited.join(", "),
            if edited.len() == 1 { "it" } else { "them" }
        );
    }
    Ok(kept)
}

/// Notes each of the user's files that memop now writes otherwise (`yours`: path, memop's text
/// then as PROJECT.sum records it, memop's text now), with how to see and merge the change, and
/// records memop's text now as the base of the next merge (kept where git finds it,
/// `refs/memop/bases`).
fn note_yours(yours: Vec<(String, String, String)>, plan: &mut Plan, report: &mut Report, dry_run: bool) {
    for (path, then, new) in yours {
        let ids = sum::base(plan.root(), &then).is_some().then(|| (then, sum::blob_id(&new)));
        plan.set_base(&path, new);
        let see = match ids {
            Some((old, new)) => {
                let (old, new) = (&old[..12], &new[..12]);
                // memop's new text goes into git as the update is written: the dry run's
                // commands work once it is.
                let once = if dry_run { "once the update is written, " } else { "" };
                format!(
                    "{once}see what changed with `git diff {old} {new}`, and merge it into your file with `git \
                     merge-file {path} $(git unpack-file {old}) $(git unpack-file {new}) && rm .merge_file_*` (it marks \
                     any conflict in the file)"
                )
            }
            None => "see memop's text now with `memop init` and `create api` in an empty directory".to_string(),
        };
        report.note(format!(
            "{path} is yours, so it was left as it is, but memop now writes it otherwise than when it made \
             your copy (its code, or the runtime's API it calls, changed): {see}, and bring into your file what \
             you need"
        ));
    }
}

/// Refuses to update a git work tree with uncommitted changes, as `cargo publish` does, so that
/// the update is one diff of its own. A directory outside git has no such check.
fn refuse_a_dirty_tree(dir: &Path) -> Result<()> {
    let Ok(status) =
        std::process::Command::new("git").current_dir(dir).args(["status", "--porcelain", "--", "."]).output()
    else {
        return Ok(()); // no git
    };
    if !status.status.success() {
        let message = String::from_utf8_lossy(&status.stderr);
        if message.contains("not a git repository") {
            return Ok(());
        }
        // A repository git refuses (dubious ownership, a corrupt index) is no reason to skip
        // the check: the update would go over uncommitted work and find no merge base.
        bail!(
            "git cannot tell whether the work tree has uncommitted changes: {}; fix that (git's message says how) and \
             run `memop update` again, or pass --allow-dirty",
            message.trim().trim_start_matches("fatal: ").replace('\n', " ")
        );
    }
    let text = String::from_utf8_lossy(&status.stdout);
    // memop's own lock is held by this very command (the generated .gitignore lists it).
    let dirty: Vec<&str> = text.lines().filter(|l| !l.ends_with(crate::lock::LOCK_FILE)).collect();
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

/// Refuses to update a project that a newer memop than this one (`version`) last updated
/// (`made`, PROJECT's `cliVersion`): its runtime and memop's files would go back to older text,
/// which the project's code was not written against. A version that is not one (an earlier memop
/// left none) is no newer.
fn refuse_a_newer_project(made: &str, version: &str) -> Result<()> {
    if made.is_empty() {
        return Ok(()); // a PROJECT from before memop recorded its version
    }
    let Ok(made) = semver::Version::parse(made) else {
        bail!(
            "PROJECT's cliVersion {made:?} is not a memop version (such as {version}), so memop cannot tell whether \
             a newer memop made the project; restore PROJECT from version control"
        );
    };
    let Ok(this) = semver::Version::parse(version) else { return Ok(()) };
    if made > this {
        bail!(
            "memop {made} last updated this project, and this memop ({this}) is older: an update would move its \
             runtime (vendor/, the pins) and memop's files back to memop {this}'s, which your code was not written \
             against. Install memop {made} or newer (`cargo install memop --version {made}`) and run `memop update` \
             with it"
        );
    }
    Ok(())
}

/// `manifest` with every runtime crate pinned to `=version`: the version in each pin's line
/// replaced, the rest of the line (a comment of yours) kept.
fn pin(manifest: &str, version: &str) -> Result<String> {
    let mut out = String::with_capacity(manifest.len());
    let mut found = Vec::new();
    for line in manifest.split_inclusive('\n') {
        let pinned = RUNTIME_CRATES.iter().find_map(|name| {
            let rest = line.strip_prefix(name)?.trim_start().strip_prefix('=')?.trim_start();
            let old = rest.strip_prefix("\"=")?;
            Some((name, format!("\"={}\"", &old[..old.find('"')?])))
        });
        match pinned {
            Some((name, old)) => {
                found.push(*name);
                out.push_str(&line.replacen(&old, &format!("\"={version}\""), 1));
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
