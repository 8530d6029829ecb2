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
//! (`scaffold::reconcile`), with `vendor/`, through one router (`scaffold::router::update_files`):
//! memop's merged three ways with your edits, yours left (named where memop now writes it
//! otherwise), generated ones left to `make manifests`. This module keeps what is the update's
//! alone: its refusals, and what it asks of the others (the pins: `scaffold::pin_the_runtime`;
//! the report and `--summary`: `Report::updated`, `Summary`).
//!
//! Where memop's changes and your edits touch the same lines, only the files in conflict are
//! written, with git's conflict markers (and their records, so that the next update does not
//! merge them again), and the command fails naming them: resolve, commit, and update again for
//! the rest. The plan is written at the end, all at once: an interrupted update changes nothing.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use super::replay::replay;
use super::report::Summary;
use super::{Global, Report};
use crate::project::{self, Project};
use crate::scaffold::router::{self, Renewal};
use crate::scaffold::{self, Plan};
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

/// `update` in the frame: it plans `vendor/`, every file of memop's again, the pins and PROJECT,
/// and stops at conflicts, of these files or of the plugins' (see [`Report::stop_at_conflicts`]).
/// Its own checks come first; then the project goes through the replay, the router and the
/// report, each once.
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
        let shipped = scaffold::vendored_files();
        let dropped = dropped_from_vendor(project, &shipped, plan);
        let fresh = replay(project, plan)?;
        let vendor = Renewal { files: shipped, dropped, force: self.args.force };
        let updated = router::update_files(vendor, &fresh, plan)?;
        // A conflict, in these files or in the chart's, stops the update: only the files in
        // conflict are written, and the rest waits for the next run.
        report.stop_at_conflicts();
        scaffold::pin_the_runtime(plan, version)?;
        let from = std::mem::replace(&mut project.cli_version, version.to_string());
        plan.write(project::FILE, project.render()?)?;
        self.summary.dropped = updated.left.clone();
        report.updated(&from, updated, plan.root(), global.dry_run);
        Ok(())
    }
}

/// The files of `vendor/` that an earlier memop vendored and this one does not ship (`shipped`;
/// no module names them any more), for [`router::update_files`] to retire. The records of those
/// gone already (an update killed after it removed them) are forgotten.
fn dropped_from_vendor(project: &Project, shipped: &[(String, String)], plan: &mut Plan) -> Vec<String> {
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
    gone.iter().for_each(|path| plan.forget(Path::new(path)));
    dropped
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
