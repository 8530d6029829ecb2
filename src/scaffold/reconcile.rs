//! What becomes of a file that a command renders and that may exist already: [`reconcile`]
//! decides it from the file's owner, its text now, what memop wrote there last and memop's text
//! now, and [`plan_file`] plans it. memop's files brought to this memop's text go by
//! [`decide`] (replaced where unedited, merged three ways where edited, kept where no base is
//! found), and [`Merged`] collects what became of them for `memop update`, the Helm chart and
//! the update workflow alike.

use std::path::Path;

use anyhow::{Result, bail};

use super::merge::{Decision, as_recorded, decide};
use super::{Owner, Plan};
use crate::sum::{self, Sum};

/// Where the base of a three-way merge comes from: what memop last wrote at a path.
#[derive(Clone, Copy)]
pub enum Base<'a> {
    /// The text whose git blob id `PROJECT.sum` records, read back from the git repository of
    /// the project at `dir`.
    Recorded { record: &'a Sum, dir: &'a Path },
    /// memop's text in a replay of the project: of memop 0.1's layout (which kept no record), or
    /// of the project before a command changed it (`delete api`).
    Replayed(&'a Plan),
}

impl Base<'_> {
    /// Decides what becomes of memop's file at `path`, `current` now, which memop's templates
    /// now render as `new`, by [`decide`] over this base.
    pub fn decide(self, path: &str, current: Option<&str>, new: &str) -> Result<Decision> {
        Ok(match self {
            Base::Recorded { record, dir } => decide(path, current, new, record.get(path), |id| sum::base(dir, id)),
            Base::Replayed(replay) => {
                let base = replay.read(Path::new(path))?;
                let recorded = base.as_deref().map(sum::blob_id);
                decide(path, current, new, recorded.as_deref(), |_| base)
            }
        })
    }
}

/// Decides what becomes of the file a template of `owner` renders as `desired`, which is
/// `current` now (`None`: missing); `recorded` is the git blob id of what memop last wrote
/// there (`PROJECT.sum`). A file that is not there, or holds `desired` already, is written or
/// left; an existing one goes by its owner:
/// - shared (several APIs extend it at its markers): left, only its markers are memop's;
/// - with `force` (`--force`): replaced;
/// - the user's once edited: replaced while as memop wrote it, kept once edited, refused when
///   memop never wrote it (it is someone's);
/// - any other: kept when it is one per project (`per_project`: a README or a `.gitignore` the
///   user may have already), else refused (another kind's file, or the user's, in the way).
///
/// A refusal is the error that names `path` and `--force`.
pub fn reconcile(
    path: &str,
    owner: Owner,
    per_project: bool,
    current: Option<&str>,
    recorded: Option<&str>,
    desired: &str,
    force: bool,
) -> Result<Decision> {
    let Some(current) = current else { return Ok(Decision::Replace) };
    if current == desired {
        return Ok(Decision::Leave);
    }
    let refuse = || -> Result<Decision> {
        bail!(
            "{path} already exists and memop would change it; pass --force to overwrite it (your edits to it will \
             be lost)"
        )
    };
    let memops = recorded.is_some();
    Ok(match owner {
        Owner::Shared => Decision::Leave,
        _ if force => Decision::Replace,
        Owner::UserOnceEdited if memops && as_recorded(current, recorded) => Decision::Replace,
        Owner::UserOnceEdited if memops => Decision::Keep,
        Owner::UserOnceEdited => refuse()?,
        _ if per_project => Decision::Keep,
        _ => refuse()?,
    })
}

/// Plans the file at `path` that a template of `owner` renders as `desired` by [`reconcile`]
/// (`formatted`: `desired` needs no formatting pass), noting a file kept and refusing one in
/// the way.
pub fn plan_file(
    plan: &mut Plan,
    path: &str,
    owner: Owner,
    per_project: bool,
    desired: String,
    formatted: bool,
    force: bool,
) -> Result<()> {
    let current = plan.read(Path::new(path))?;
    let record = Sum::parse(plan.read(Path::new(sum::FILE))?.as_deref())?;
    match reconcile(path, owner, per_project, current.as_deref(), record.get(path), &desired, force)? {
        Decision::Replace if formatted => plan.write_formatted(path, desired),
        Decision::Replace => plan.write(path, desired),
        Decision::Keep => {
            plan.note(match owner {
                Owner::UserOnceEdited => {
                    format!("kept your {path}, which is not as memop wrote it; memop's new version was not written")
                }
                _ => format!("kept your {path}; memop's version was not written"),
            });
            Ok(())
        }
        // Not [`reconcile`]'s: it merges nothing.
        Decision::Leave | Decision::Merge { .. } | Decision::Unresolved => Ok(()),
    }
}

/// A file merged with conflicts: its path, the text with markers, and memop's text.
pub(crate) type Conflict = (String, String, String);

/// What [`merge_memop_files`] did with memop's files: `update`'s, and those of the commands that
/// plan memop's files of their own (the Helm chart's, the update workflow) beside theirs.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// Edited files whose edits and memop's changes were merged.
    pub(crate) merged: Vec<String>,
    /// Merged files with conflicts.
    pub(crate) conflicts: Vec<Conflict>,
    /// Edited files kept as they are, no base to merge with, and whether PROJECT.sum records that
    /// memop wrote them.
    pub(crate) kept: Vec<(String, bool)>,
    /// memop's text of each merged file, by path, to keep for the next merge.
    pub(crate) bases: Vec<(String, String)>,
    /// Files that still hold the conflict markers of an earlier merge.
    pub(crate) unresolved: Vec<String>,
}

/// Plans each of `files` (path, memop's text now) over the project's file by [`decide`]:
/// created when missing unless PROJECT.sum says memop wrote it before (then the user deleted it,
/// and it stays deleted), replaced when unedited since memop wrote it (`record`), else merged
/// three ways with what memop wrote then (read from git) as the base.
pub(crate) fn merge_memop_files(
    plan: &mut Plan,
    record: &Sum,
    dir: &Path,
    files: Vec<(String, String)>,
) -> Result<Merged> {
    let mut merged = Merged::default();
    for (path, new) in files {
        let current = plan.read(Path::new(&path))?;
        let decision = Base::Recorded { record, dir }.decide(&path, current.as_deref(), &new)?;
        merged.plan(plan, record, path, current.as_deref(), new, decision)?;
    }
    refuse_unresolved(&merged.unresolved)?;
    Ok(merged)
}

impl Merged {
    /// Plans what `decision` says of memop's file at `path`, which is `current` now and which
    /// memop's templates render as `new` (formatted: a merge keeps the user's formatting), and
    /// notes what became of it.
    pub(crate) fn plan(
        &mut self,
        plan: &mut Plan,
        record: &Sum,
        path: String,
        current: Option<&str>,
        new: String,
        decision: Decision,
    ) -> Result<()> {
        match decision {
            // Already memop's text: recorded as such, so that the next update knows it unedited.
            Decision::Leave => {
                if current == Some(new.as_str()) && record.get(&path) != Some(sum::blob_id(&new).as_str()) {
                    plan.set_unchanged(&path, new);
                }
            }
            Decision::Keep => self.kept.push((path.clone(), record.get(&path).is_some())),
            Decision::Unresolved => self.unresolved.push(path),
            Decision::Replace => plan.write_formatted(&path, new)?,
            Decision::Merge { text, conflicts } => {
                plan.write_formatted(&path, text.clone())?;
                plan.set_base(&path, new.clone());
                self.bases.push((path.clone(), new.clone()));
                match conflicts {
                    true => self.conflicts.push((path, text, new)),
                    false => self.merged.push(path),
                }
            }
        }
        Ok(())
    }
}

/// The note on a file kept as it is ([`Decision::Keep`]): edited since memop wrote it
/// (`recorded` in PROJECT.sum) while git lacks that text, or never written by memop (a file memop
/// writes now, or one of a project that lost its record); `compare`: how to see memop's text.
pub(crate) fn kept_note(path: &str, recorded: bool, compare: &str) -> String {
    let why = match recorded {
        true => {
            "changed since memop wrote it, and git has no copy of what memop wrote (it was never committed as \
                 memop left it, or this clone lacks that history: in a shallow clone, `git fetch --unshallow` and \
                 run the update again)"
        }
        false => "is not as memop writes it, and memop has no record of writing it (PROJECT.sum does not list it)",
    };
    format!("note: {path} {why}, so it was kept as it is; compare it with {compare}")
}

/// Refuses to go on while `paths` still hold the conflict markers of an earlier merge: merged
/// again, their conflicts would stay buried in a project the command calls up to date.
pub(crate) fn refuse_unresolved(paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    bail!(
        "{} still hold{} the conflict markers of an earlier merge (<<<<<<< … >>>>>>>: of memop's changes with \
         your edits, or of two branches of yours): resolve them (keep what you want of both sides and delete the \
         marker lines), commit, and run the command again",
        paths.join(", "),
        if paths.len() == 1 { "s" } else { "" }
    )
}
