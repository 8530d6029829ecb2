//! What a command tells the user: one [`Report`], filled while the command plans and printed once
//! by [`super::finish`], after the files are written and the merge bases kept (the plan holds
//! them).
//!
//! A dry run builds the same report as the real run and prints it in the same order; it only
//! leaves out what follows the writing (the next steps, the files merged), which it did not do.
//!
//! The answers to flags (kubebuilder's plugins, `--make`, `init` in a directory that is not
//! empty) come first. They show on a refusal too: `main` prints the answers that `finish` did
//! not, before the error.
//!
//! The frame adds the files of the command's plan, as it hands it to `finish`, so that the
//! report holds all that the command did: `update --summary` is written from it.

use std::path::Path;

use anyhow::{Result, bail};

use crate::scaffold::Plan;
use crate::scaffold::router::{Conflict, Merged, kept_note};

/// What a command did, or in a dry run would do, beyond the files: filled in order as the
/// command goes, printed by [`super::finish`].
#[derive(Debug, Default)]
pub struct Report {
    /// The answers to the command's flags, as printed on standard error: first, and also when
    /// the command then fails.
    answers: Vec<String>,
    items: Vec<Item>,
    /// Whether conflicts stop the command before anything else is written (see
    /// [`Report::stop_at_conflicts`]).
    stops: bool,
    /// The files of the command's plan, once it is whole (see [`Report::planned`]).
    files: Option<Files>,
}

/// The files a plan writes and removes, as the command planned them (before formatting).
#[derive(Debug, Default)]
pub(super) struct Files {
    pub(super) written: Vec<String>,
    pub(super) removed: Vec<String>,
}

#[derive(Debug)]
enum Item {
    /// Said on standard output, in a dry run as in a real one.
    Say(String),
    /// Said on standard output once the files are written: what to do next.
    Next(String),
    /// A note on standard error.
    Note(String),
    /// Files of memop's merged with the user's edits, kept as they are, or in conflict.
    Merged { merged: Merged, compare: &'static str },
}

/// One line (or lines) of a report, and its stream.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    Out(String),
    Err(String),
}

impl Report {
    /// Notes `text`, which answers a flag, as `note: …`: before anything else the command prints,
    /// on a refusal too.
    pub fn answer(&mut self, text: impl std::fmt::Display) {
        self.answers.push(format!("note: {text}"));
    }

    /// [`Report::answer`] as a warning, `warning: …`.
    pub fn answer_warning(&mut self, text: impl std::fmt::Display) {
        self.answers.push(format!("warning: {text}"));
    }

    /// The answers not printed yet, as lines of standard error: each is printed once.
    pub(super) fn take_answers(&mut self) -> Vec<String> {
        std::mem::take(&mut self.answers)
    }

    /// Says `text` after the files, in a dry run too.
    pub fn say(&mut self, text: impl Into<String>) {
        self.items.push(Item::Say(text.into()));
    }

    /// Says `text` once the files are written (a dry run wrote none).
    pub fn next(&mut self, text: impl Into<String>) {
        self.items.push(Item::Next(text.into()));
    }

    /// Notes `text` on standard error, as `note: …`.
    pub fn note(&mut self, text: impl std::fmt::Display) {
        self.items.push(Item::Note(format!("note: {text}")));
    }

    /// Reports what became of memop's files that `merged` planned (`compare`: how the user sees
    /// memop's text of a file kept as it is). Conflicts fail the command,
    /// once the whole report is printed.
    pub(crate) fn merged(&mut self, merged: Merged, compare: &'static str) {
        self.items.push(Item::Merged { merged, compare });
    }

    /// Says what `memop update` of a project of memop `from` did with memop's files (`updated`):
    /// what to do next, a note on each of the user's files that memop now writes otherwise (see
    /// [`yours_note`]; `root`: the project, whose git has memop's texts), the generated files to
    /// write again, the merges, and the runtime's files no longer shipped that the user edited.
    pub(crate) fn updated(&mut self, from: &str, mut updated: Merged, root: &Path, dry_run: bool) {
        let version = env!("CARGO_PKG_VERSION");
        let from = if from.is_empty() { "an earlier memop".to_string() } else { format!("memop {from}") };
        self.next(format!(
            "\nUpdated from {from} to memop {version}: its runtime, and memop's files. Next:\n  \
             $ make manifests   # config/crd, config/rbac/role.yaml, config/webhook from your code\n  \
             $ cargo test       # the lock follows the new runtime's dependencies on the first build\n"
        ));
        for (path, then, new) in std::mem::take(&mut updated.yours) {
            self.note(yours_note(&path, then, &new, root, dry_run));
        }
        if !updated.generated.is_empty() {
            self.note(format!(
                "{} are generated from your code, and memop now generates them otherwise than when it wrote them: \
                 run `make manifests` to write them again with this memop's runtime",
                updated.generated.join(", ")
            ));
        }
        let dropped = std::mem::take(&mut updated.left);
        self.merged(updated, "`memop init` in an empty directory");
        if !dropped.is_empty() {
            self.next(format!(
                "The runtime no longer has these files, which you edited; delete them:\n  $ git rm {}\n",
                dropped.join(" ")
            ));
        }
    }

    /// Makes conflicts stop the command (`memop update`): where memop's changes and the user's
    /// edits touch the same lines of any file, only the files in conflict are written, with
    /// their markers, and the command fails saying to resolve them and run it again for the rest.
    pub(crate) fn stop_at_conflicts(&mut self) {
        self.stops = true;
    }

    /// The files in conflict at which the command stops, in the order they were reported: none
    /// unless it stops at conflicts.
    pub(super) fn stopped_at(&self) -> Vec<&Conflict> {
        match self.stops {
            true => self.all_merged().flat_map(|merged| &merged.conflicts).collect(),
            false => Vec::new(),
        }
    }

    /// What each planning of memop's files reported, in order.
    fn all_merged(&self) -> impl Iterator<Item = &Merged> {
        self.items.iter().filter_map(|item| match item {
            Item::Merged { merged, .. } => Some(merged),
            _ => None,
        })
    }

    /// The files in conflict, and those merged with the user's edits, in the order they were
    /// reported.
    pub(super) fn merges(&self) -> (Vec<String>, Vec<String>) {
        let conflicts = self.all_merged().flat_map(|m| &m.conflicts).map(|(path, ..)| path.clone()).collect();
        (conflicts, self.all_merged().flat_map(|m| m.merged.iter().cloned()).collect())
    }

    /// Takes the files of `plan`, the command's whole plan (its plugins' files too), as it goes
    /// to [`super::finish`].
    pub(super) fn planned(&mut self, plan: &Plan) {
        let shown = |path: &std::path::Path| path.display().to_string();
        let written = plan.planned().map(|(path, _)| shown(path)).collect();
        self.files = Some(Files { written, removed: plan.removed().map(shown).collect() });
    }

    /// The files of the plan, once the command planned them all: `None` for a command that failed
    /// before.
    pub(super) fn files(&self) -> Option<&Files> {
        self.files.as_ref()
    }

    /// The notes, in order, as printed (without their `note: `), for `update --summary`.
    pub(super) fn notes(&self) -> impl Iterator<Item = String> + '_ {
        self.lines(true).into_iter().filter_map(|line| match line {
            Line::Err(text) => Some(text.trim_start_matches("note: ").to_string()),
            Line::Out(_) => None,
        })
    }

    /// The report's lines, in one order whether the files were `written` or not: a dry run has
    /// the same lines, less the ones that follow the writing. A command stopped at conflicts
    /// has none: it wrote nothing else.
    pub(super) fn lines(&self, written: bool) -> Vec<Line> {
        let mut lines = Vec::new();
        if !self.stopped_at().is_empty() {
            return lines;
        }
        for item in &self.items {
            match item {
                Item::Say(text) => lines.push(Line::Out(text.clone())),
                Item::Next(text) if written => lines.push(Line::Out(text.clone())),
                Item::Next(_) => {}
                Item::Note(text) => lines.push(Line::Err(text.clone())),
                Item::Merged { merged, compare, .. } => {
                    if written && !merged.merged.is_empty() {
                        let paths = merged.merged.join(", ");
                        lines.push(Line::Out(format!("Merged memop's changes with your edits in: {paths}\n")));
                    }
                    for (path, recorded) in &merged.kept {
                        lines.push(Line::Err(kept_note(path, *recorded, compare)));
                    }
                }
            }
        }
        lines
    }

    /// The error of the first files in conflict, if any: the files to resolve, and what became
    /// of the rest (written, or in a dry run what the real run does with them). A command that
    /// stops at conflicts names them all, and says that nothing else was written.
    pub(super) fn conflicts(&self, dry_run: bool) -> Result<()> {
        if self.stops {
            return stopped(&self.stopped_at(), dry_run);
        }
        let Some(merged) = self.all_merged().find(|merged| !merged.conflicts.is_empty()) else { return Ok(()) };
        let paths: Vec<&str> = merged.conflicts.iter().map(|(path, _, _)| path.as_str()).collect();
        let written = match dry_run {
            true => "would be written, as shown above; this dry run wrote nothing",
            false => "is written",
        };
        bail!(
            "memop's changes and your edits touch the same lines of {}: resolve the conflicts between the \
             <<<<<<< ours (yours) and >>>>>>> theirs (memop's) markers there (the rest {written}), then \
             run `make test` and commit",
            paths.join(", ")
        )
    }
}

/// The note on `path`, a file of the user's that memop now writes otherwise than it wrote it
/// (`then`: the id PROJECT.sum records; `new`: memop's text now), with how to see and merge the
/// change: by git, where the repository at `root` has memop's text then.
fn yours_note(path: &str, then: String, new: &str, root: &Path, dry_run: bool) -> String {
    let ids = crate::sum::base(root, &then).is_some().then(|| (then, crate::sum::blob_id(new)));
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
    format!(
        "{path} is yours, so it was left as it is, but memop now writes it otherwise than when it made \
         your copy (its code, or the runtime's API it calls, changed): {see}, and bring into your file what \
         you need"
    )
}

/// What `memop update --summary` writes, in Markdown, rendered from the update's report: with the
/// memop the project was made with, and this one; the runtime's files no longer shipped that the
/// user edited, left to delete.
#[derive(Debug, Default)]
pub(super) struct Summary {
    pub(super) from: String,
    pub(super) to: String,
    pub(super) dropped: Vec<String>,
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
        let news = |path: &&String| *path != crate::project::FILE && *path != crate::sum::FILE;
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
    pub(super) fn render(&self, report: &Report, dry_run: bool, error: Option<&anyhow::Error>) -> String {
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
            match path.strip_prefix(&format!("{}/", crate::scaffold::VENDOR)).and_then(|rest| rest.split_once('/')) {
                Some((krate, _)) => *vendored.entry(format!("{}/{krate}/", crate::scaffold::VENDOR)).or_default() += 1,
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

/// The error of `memop update` stopped at `conflicts` (none: no error): it wrote the files in
/// them, with their markers, and nothing else; a dry run fails the same way, its exit code telling
/// a script that the update will stop.
fn stopped(conflicts: &[&Conflict], dry_run: bool) -> Result<()> {
    if conflicts.is_empty() {
        return Ok(());
    }
    let paths: Vec<&str> = conflicts.iter().map(|(path, _, _)| path.as_str()).collect();
    if dry_run {
        bail!(
            "memop's changes and your edits touch the same lines of {}: `memop update` would write {} with conflict \
             markers, <<<<<<< ours (yours) and >>>>>>> theirs (memop's), as shown above, and stop there (nothing \
             else changed); you would resolve them, commit, and run `memop update` again for the rest of the \
             update. This dry run wrote nothing",
            paths.join(", "),
            if paths.len() == 1 { "it" } else { "them" }
        );
    }
    bail!(
        "memop's changes and your edits touch the same lines of {}: resolve the conflicts between the \
         <<<<<<< ours (yours) and >>>>>>> theirs (memop's) markers there, commit, and run `memop update` again \
         for the rest of the update (nothing else was changed)",
        paths.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::{Line, Report};
    use crate::scaffold::router::Merged;

    fn report() -> Report {
        let mut report = Report::default();
        report.say("Memcached: a controller.\n");
        report.note("the kind is new");
        report.next("Next: make test\n");
        let merged = Merged {
            merged: vec!["Makefile".into()],
            conflicts: vec![("src/main.rs".into(), "<<<<<<<".into(), "fn main() {}".into())],
            kept: vec![("README.md".into(), false)],
            ..Merged::default()
        };
        report.merged(merged, "a fresh project");
        report.next("Then commit.\n");
        report
    }

    /// A dry run prints the real run's report in the same order, less what follows the writing.
    #[test]
    fn a_dry_run_reports_in_the_real_runs_order() {
        let report = report();
        let real = report.lines(true);
        let kept = "note: README.md is not as memop writes it, and memop has no record of writing it (PROJECT.sum \
                    does not list it), so it was kept as it is; compare it with a fresh project";
        assert_eq!(
            real,
            [
                Line::Out("Memcached: a controller.\n".into()),
                Line::Err("note: the kind is new".into()),
                Line::Out("Next: make test\n".into()),
                Line::Out("Merged memop's changes with your edits in: Makefile\n".into()),
                Line::Err(kept.into()),
                Line::Out("Then commit.\n".into()),
            ]
        );
        // The real run's lines, less the next steps and the files merged.
        let after_writing = ["Next", "Merged", "Then"];
        let dry: Vec<Line> = real
            .into_iter()
            .filter(|line| !matches!(line, Line::Out(text) if after_writing.iter().any(|s| text.starts_with(s))))
            .collect();
        assert_eq!(report.lines(false), dry);
        assert_eq!(report.notes().collect::<Vec<_>>(), ["the kind is new", &kept["note: ".len()..]]);
    }

    /// The answers to flags are printed apart from the lines, first (by `finish`, or by `main`
    /// before an error), and once: taking them leaves none.
    #[test]
    fn answers_to_flags_are_taken_once_apart_from_the_lines() {
        let mut report = report();
        report.answer("--make is kubebuilder's");
        report.answer_warning("the directory is not empty (notes.txt)");
        let lines = report.lines(true);
        assert!(!lines.iter().any(|line| matches!(line, Line::Err(text) if text.contains("kubebuilder's"))));
        assert!(!report.notes().any(|note| note.contains("kubebuilder's")), "not update's notes");
        let answers = ["note: --make is kubebuilder's", "warning: the directory is not empty (notes.txt)"];
        assert_eq!(report.take_answers(), answers);
        assert!(report.take_answers().is_empty(), "printed once");
        assert_eq!(report.lines(true), lines);
    }

    /// `update` stops at conflicts: its report names those of every planning (its own files',
    /// the chart's), prints nothing else (nothing else is written), and fails in a dry run as in
    /// the real run.
    #[test]
    fn a_report_that_stops_at_conflicts_names_them_all_and_says_nothing_else() {
        let mut report = report();
        let chart = Merged {
            conflicts: vec![("dist/chart/values.yaml".into(), "<<<<<<<".into(), "x: 1\n".into())],
            ..Merged::default()
        };
        report.merged(chart, "a fresh chart");
        assert!(report.stopped_at().is_empty(), "only a command that says so stops");
        report.stop_at_conflicts();
        let paths: Vec<&str> = report.stopped_at().iter().map(|(path, _, _)| path.as_str()).collect();
        assert_eq!(paths, ["src/main.rs", "dist/chart/values.yaml"]);
        assert!(report.lines(true).is_empty() && report.lines(false).is_empty());
        let real = report.conflicts(false).unwrap_err().to_string();
        assert!(real.contains("same lines of src/main.rs, dist/chart/values.yaml: resolve"), "{real}");
        assert!(real.ends_with("(nothing else was changed)"), "{real}");
        let dry = report.conflicts(true).unwrap_err().to_string();
        assert!(dry.contains("`memop update` would write them with conflict markers"), "{dry}");
    }

    /// Both runs end with the same conflict, each saying what became of the rest.
    #[test]
    fn conflicts_fail_a_dry_run_as_the_real_run() {
        let report = report();
        let (real, dry) =
            (report.conflicts(false).unwrap_err().to_string(), report.conflicts(true).unwrap_err().to_string());
        assert!(real.starts_with("memop's changes and your edits touch the same lines of src/main.rs:"), "{real}");
        assert!(real.contains("(the rest is written), then run `make test` and commit"), "{real}");
        assert_eq!(dry, real.replace("is written", "would be written, as shown above; this dry run wrote nothing"));
        assert!(Report::default().conflicts(false).is_ok());
    }
}
