//! The router: plans the files a command renders, or that memop renders no more, each by the
//! rule ([`reconcile`]), and collects what became of them (`Merged`) for
//! the command's report. For each file it gathers once what the rule decides by (its text now,
//! and what the [`Base`] knows of it: [`Known`]), then plans the decision. `render_root`,
//! `vendor/`, the lock, `memop update`, the Helm chart, the update workflow and `delete api` all
//! go through it.

use std::path::Path;

use anyhow::{Result, bail};

use super::merge::Decision;
use super::reconcile::{Known, Purpose, reconcile};
use super::{Declared, Owner, Plan};
use crate::sum::{self, Sum, as_recorded};

/// Where the base of a three-way merge comes from: what memop last wrote at a path
/// ([`Plan::base`]).
#[derive(Clone, Copy)]
pub struct Base<'a> {
    /// `PROJECT.sum`: the git blob id of what memop wrote, read back from the git repository of
    /// the project at `dir`.
    pub record: &'a Sum,
    pub dir: &'a Path,
    /// memop's text in a replay of the project before a command changed it (`delete api`), where
    /// `PROJECT.sum` cannot say it: the base of every merge when there is one.
    pub replay: Option<&'a Plan>,
}

impl<'a> Base<'a> {
    /// What this base says of the file at `path`, `current` now: gathered once, before the rule
    /// decides, so that the rule reads no record, replay nor git (but the base of a merge, which
    /// [`Known`] reads from git only when a merge needs it).
    pub(crate) fn known(self, path: &str, current: Option<&str>) -> Result<Known<'a>> {
        let replayed = self.replay.map(|replay| replay.read(Path::new(path))).transpose()?.flatten();
        let recorded = self.record.get(path);
        let unedited = current.is_some_and(|text| as_recorded(text, recorded));
        // The base of a merge: memop's text in the replay, where there is one, else the text
        // `PROJECT.sum` names, read back from git (only when a merge needs it).
        let (merge_id, merge_unedited) = match self.replay {
            Some(_) => {
                let id = replayed.as_deref().map(sum::blob_id);
                let unedited = current.is_some_and(|text| as_recorded(text, id.as_deref()));
                (id, unedited)
            }
            None => (recorded.map(str::to_string), unedited),
        };
        Ok(Known { recorded, unedited, replayed, merge_id, merge_unedited, dir: self.dir })
    }
}

/// Plans files a command writes without a template (`vendor/`, the lock), each a path and memop's
/// text, all declaring `declared`, by [`reconcile`] (`formatted`: the texts need no formatting
/// pass), to make them: noting a file kept, refusing one in the way.
pub fn plan_files(
    plan: &mut Plan,
    files: impl IntoIterator<Item = (String, String)>,
    declared: Declared,
    formatted: bool,
    force: bool,
) -> Result<()> {
    let mut router = Router::new(None);
    for (path, desired) in files {
        router.route(plan, Purpose::Make { force }, &path, declared, desired, formatted)?;
    }
    router.finish().map(drop)
}

/// A file merged with conflicts: its path, the text with markers, and memop's text.
pub(crate) type Conflict = (String, String, String);

/// What became of the files a [`Router`] planned, for the command's report.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// Edited files whose edits and memop's changes were merged.
    pub(crate) merged: Vec<String>,
    /// Merged files with conflicts.
    pub(crate) conflicts: Vec<Conflict>,
    /// Edited files kept as they are, no base to merge with, and whether PROJECT.sum records that
    /// memop wrote them.
    pub(crate) kept: Vec<(String, bool)>,
    /// Files that still hold the conflict markers of an earlier merge.
    pub(crate) unresolved: Vec<String>,
    /// The user's files that memop now writes otherwise than when it wrote them: the path, the
    /// id PROJECT.sum records (memop's text then), memop's text now.
    pub(crate) yours: Vec<(String, String, String)>,
    /// Generated files that differ from memop's text: `make manifests`'.
    pub(crate) generated: Vec<String>,
    /// memop's files alone that the user edited, which the command refuses to write over.
    pub(crate) edited: Vec<String>,
    /// Files memop renders no more that the user edited, left for the user to delete.
    pub(crate) left: Vec<String>,
}

/// Plans the files a command renders, each by [`reconcile`] over the plan's [`Base`] (with
/// `replay`'s text, where given), and collects what became of them.
pub(crate) struct Router<'a> {
    replay: Option<&'a Plan>,
    merged: Merged,
}

impl<'a> Router<'a> {
    pub(crate) fn new(replay: Option<&'a Plan>) -> Self {
        Self { replay, merged: Merged::default() }
    }

    /// Plans the file at `path`, which a template declaring `declared` renders as `desired`
    /// (`formatted`: needing no formatting pass), by [`reconcile`] for `purpose`, and returns the
    /// decision.
    pub(crate) fn route(
        &mut self,
        plan: &mut Plan,
        purpose: Purpose,
        path: &str,
        declared: Declared,
        desired: String,
        formatted: bool,
    ) -> Result<Decision> {
        let current = plan.read(Path::new(path))?;
        let known = plan.base(self.replay).known(path, current.as_deref())?;
        let recorded = known.recorded.map(str::to_string);
        let decision = reconcile(path, declared, current.as_deref(), known, &desired, purpose)?;
        let merged = &mut self.merged;
        match &decision {
            // Already memop's text: recorded as such, so that the next update knows it unedited.
            Decision::Leave => {
                if current.as_deref() == Some(desired.as_str()) && recorded != Some(sum::blob_id(&desired)) {
                    plan.set_unchanged(path, desired);
                }
            }
            Decision::Replace if formatted => plan.write_formatted(path, desired)?,
            Decision::Replace => plan.write(path, desired)?,
            // A merge keeps the user's formatting (and one with conflict markers would not parse).
            Decision::Merge { text, conflicts } => {
                plan.write_formatted(path, text.clone())?;
                plan.set_base(path, desired.clone());
                match conflicts {
                    true => merged.conflicts.push((path.to_string(), text.clone(), desired)),
                    false => merged.merged.push(path.to_string()),
                }
            }
            Decision::Keep => match purpose {
                Purpose::Make { .. } if declared.refresh => plan.note(format!(
                    "kept your {path}, which is not as memop wrote it; memop's new version was not written"
                )),
                Purpose::Make { .. } => plan.note(format!("kept your {path}; memop's version was not written")),
                Purpose::Retire => merged.left.push(path.to_string()),
                _ => merged.kept.push((path.to_string(), recorded.is_some())),
            },
            Decision::Edited => merged.edited.push(path.to_string()),
            Decision::Unresolved => merged.unresolved.push(path.to_string()),
            Decision::Remove => plan.remove(path)?,
            Decision::Outdated => match declared.owner {
                Owner::Generated => merged.generated.push(path.to_string()),
                _ => {
                    merged.yours.push((path.to_string(), recorded.unwrap_or_default(), desired));
                }
            },
        }
        Ok(decision)
    }

    /// Plans retiring the file at `path`, which memop wrote and renders no more (see
    /// [`Purpose::Retire`]). Returns the decision: [`Decision::Remove`], [`Decision::Keep`] for
    /// one the user edited (left as it is), [`Decision::Leave`] for one gone already.
    pub(crate) fn retire(&mut self, plan: &mut Plan, path: &str) -> Result<Decision> {
        self.route(plan, Purpose::Retire, path, Declared::from(Owner::Memop), String::new(), true)
    }

    /// What became of the files, once none of memop's alone was edited (see [`refuse_edited`])
    /// and none still holds the conflict markers of an earlier merge (see [`refuse_unresolved`]).
    pub(crate) fn finish(self) -> Result<Merged> {
        refuse_edited(&self.merged.edited)?;
        refuse_unresolved(&self.merged.unresolved)?;
        Ok(self.merged)
    }
}

/// memop's copy of its runtime crates in `vendor/`, as `memop update` renews it (see
/// [`Purpose::Renew`]).
pub(crate) struct Renewal {
    /// This memop's files, each a path and its text.
    pub(crate) files: Vec<(String, String)>,
    /// The files an earlier memop vendored that this one does not.
    pub(crate) dropped: Vec<String>,
    /// Whether edited files are replaced too (`--force`).
    pub(crate) force: bool,
}

/// Plans `memop update` over the project in `plan`, through one router: memop's copy of its
/// runtime renewed (`vendor`), and every file of `fresh`, memop's text of the project from a
/// replay of PROJECT, brought to this memop (see [`Purpose::Update`]). The user's files that
/// memop now writes otherwise get memop's text now as the base of their next merge.
pub(crate) fn update_files(vendor: Renewal, fresh: &Plan, plan: &mut Plan) -> Result<Merged> {
    // The runtime's files no longer shipped go while as memop wrote them: a module that became a
    // directory (`operand.rs` to `operand/mod.rs`) would otherwise be found twice, and the crate
    // would not build. One edited since is left, for the user to delete.
    let memop = Declared::from(Owner::Memop);
    let retired = vendor.dropped.into_iter().map(|path| (Purpose::Retire, path, memop, String::new()));
    let renew = Purpose::Renew { force: vendor.force };
    let renewed = vendor.files.into_iter().map(|(path, text)| (renew, path, memop, text));
    // Every file of the replay, but PROJECT and its record, which the update writes itself; a
    // file a command writes itself (no template declares it) is memop's.
    let brought = fresh
        .planned()
        .map(|(path, new)| (path.to_string_lossy(), new))
        .filter(|(path, _)| path != crate::project::FILE && path != sum::FILE)
        .map(|(path, new)| {
            let declared = fresh.declared(Path::new(path.as_ref())).unwrap_or(memop);
            (Purpose::Update, path.into_owned(), declared, new.to_string())
        });
    let mut router = Router::new(None);
    for (purpose, path, declared, text) in retired.chain(renewed).chain(brought) {
        router.route(plan, purpose, &path, declared, text, true)?;
    }
    let merged = router.finish()?;
    // memop's text now is the base of the next merge of the user's files that memop now writes
    // otherwise (kept where git finds it, `refs/memop/bases`).
    for (path, _, new) in &merged.yours {
        plan.set_base(path, new.clone());
    }
    Ok(merged)
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

/// Refuses to write over `paths`, memop's files alone that the user edited ([`Purpose::Renew`]:
/// `vendor/`, which an update replaces whole), saying how to keep the edits.
fn refuse_edited(paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    bail!(
        "{} changed since memop wrote {}: vendor/ is memop's copy of the runtime crates, and an \
         update replaces it whole. Move the change into your own code (or propose it to memop), \
         then run `memop update --force`, which replaces vendor/ with this memop's copy (without \
         the move, the edits are lost)",
        paths.join(", "),
        if paths.len() == 1 { "it" } else { "them" }
    )
}
