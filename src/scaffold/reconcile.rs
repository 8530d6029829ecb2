//! What becomes of a file that a command renders and that may exist already: one rule,
//! [`reconcile`], from what the file's template declares ([`Declared`]: memop's, the user's or
//! generated, and its scope), its text now, its base (what memop wrote there last) and memop's
//! text now, and why the command renders it ([`Purpose`]: to make it, to bring it to this memop,
//! to carry a change of PROJECT into it, or to renew memop's copy of its runtime in `vendor/`). `Router` plans each decision and collects what
//! became of the files (`Merged`) for the command's report: `render_root`, `vendor/`, the lock,
//! `memop update`'s replay, the Helm chart, the update workflow and `delete api` all go through
//! it.

use std::path::Path;

use anyhow::{Result, bail};

use super::merge::{Decision, decide};
use super::{Declared, Owner, Plan, Scope};
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

impl Base<'_> {
    /// Whether `current`, the file at `path`, is as `PROJECT.sum` records memop wrote it.
    fn unedited(self, path: &str, current: &str) -> bool {
        as_recorded(current, self.record.get(path))
    }

    /// Decides what becomes of memop's file at `path`, `current` now, which memop's templates
    /// now render as `new`, by [`decide`] over this base: memop's text in the replay, where
    /// there is one, else the text `PROJECT.sum` names, read back from git.
    fn decide(self, path: &str, current: Option<&str>, new: &str) -> Result<Decision> {
        let replayed = self.replayed(path)?;
        let recorded = match self.replay {
            Some(_) => replayed.as_deref().map(sum::blob_id),
            None => self.record.get(path).map(str::to_string),
        };
        let unedited = current.is_some_and(|text| as_recorded(text, recorded.as_deref()));
        let base = move |id: &str| replayed.or_else(|| sum::base(self.dir, id));
        Ok(decide(path, current, new, recorded.as_deref(), unedited, base))
    }

    /// memop's text of `path` in the replay, if there is one and it has the file.
    fn replayed(self, path: &str) -> Result<Option<String>> {
        Ok(self.replay.map(|replay| replay.read(Path::new(path))).transpose()?.flatten())
    }
}

/// Why a command renders a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// To make it (`init`, `create api`, `create webhook`, `edit --force`): one there already is
    /// left, kept or refused as its scope says, or replaced with `force` (`--force`).
    Make { force: bool },
    /// To bring it to this memop's text (`memop update`, and the chart and workflow that later
    /// commands render again): memop's merged three ways over its base; the user's and generated
    /// files left to their owners.
    Update,
    /// To carry a change of PROJECT into it (`delete api`), over memop's text before the change
    /// (the base's replay): every file merged as memop's, but a generated one, replaced while as
    /// memop wrote it and else left to `make manifests`.
    Change,
    /// To replace it whole with this memop's text (`memop update`'s `vendor/`, memop's copy of
    /// its runtime crates, which the user does not edit): made where missing, replaced where as
    /// memop wrote it or with `force`; an edited one is [`Decision::Edited`].
    Renew { force: bool },
}

/// Decides what becomes of the file at `path` that a template declaring `declared` renders as
/// `desired`, which is `current` now (`None`: missing), for `purpose`.
///
/// To make a file: a file that is not there is written, one that holds `desired` already left;
/// an existing one goes by its scope and owner:
/// - shared (several commands extend it at its markers): left, only its markers are memop's;
/// - with `force`: replaced;
/// - the user's refreshed while unedited: replaced while as memop wrote it, kept once edited,
///   refused when memop never wrote it (it is someone's);
/// - one per project: kept (a README or a `.gitignore` the user may have already);
/// - else refused (another kind's file, or the user's, in the way).
///
/// To bring a file to this memop's text:
/// - memop's: by [`decide`] over the base (replaced where unedited, merged three ways over the
///   base where edited, kept without a base, left where the user deleted it);
/// - one no memop wrote (missing, and neither recorded nor replayed), or the user's refreshed
///   while as memop wrote it: as memop's (made, or replaced);
/// - else the user's: left, [`Decision::Outdated`] where memop now writes it otherwise than it
///   wrote it then;
/// - generated: left to `make manifests`, [`Decision::Outdated`] where memop's text differs
///   from the file and from what memop wrote there last (the same text as then: the difference
///   is the user's code, which `make manifests` already follows).
///
/// To carry a change into a file: left where the change does not touch it; a generated one
/// replaced where it is missing or as memop wrote it before, else [`Decision::Outdated`]; any
/// other by [`decide`] over the base.
///
/// To renew a file: see [`Purpose::Renew`].
///
/// A refusal is the error that names `path` and `--force`.
pub fn reconcile(
    path: &str,
    declared: Declared,
    current: Option<&str>,
    base: Base,
    desired: &str,
    purpose: Purpose,
) -> Result<Decision> {
    let decided = match purpose {
        Purpose::Make { force } => Some(make(path, declared, current, base, desired, force)?),
        Purpose::Update => bring(path, declared, current, base, desired)?,
        Purpose::Change => change(path, declared, current, base, desired)?,
        Purpose::Renew { force } => Some(renew(path, current, base, desired, force)),
    };
    // Else the file goes as memop's, by its rule over the base.
    match decided {
        Some(decision) => Ok(decision),
        None => base.decide(path, current, desired),
    }
}

/// [`reconcile`] for [`Purpose::Make`].
fn make(
    path: &str,
    declared: Declared,
    current: Option<&str>,
    base: Base,
    desired: &str,
    force: bool,
) -> Result<Decision> {
    let recorded = base.record.get(path);
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
    let refreshed = declared.owner == Owner::User && declared.refresh;
    Ok(match declared.scope {
        Scope::Shared => Decision::Leave,
        _ if force => Decision::Replace,
        _ if refreshed && base.unedited(path, current) => Decision::Replace,
        _ if refreshed && recorded.is_some() => Decision::Keep,
        _ if refreshed => refuse()?,
        Scope::Project => Decision::Keep,
        Scope::Api | Scope::Kind => refuse()?,
    })
}

/// [`reconcile`] for [`Purpose::Update`]: `None` for a file that goes as memop's.
fn bring(path: &str, declared: Declared, current: Option<&str>, base: Base, desired: &str) -> Result<Option<Decision>> {
    if declared.owner == Owner::Memop {
        return Ok(None);
    }
    let recorded = base.record.get(path);
    let made_by_no_memop = current.is_none() && recorded.is_none() && base.replayed(path)?.is_none();
    let unedited = current.is_some_and(|text| base.unedited(path, text));
    if made_by_no_memop || (declared.owner == Owner::User && declared.refresh && unedited) {
        return Ok(None);
    }
    let differs = current.is_some_and(|text| text != desired);
    // memop's text of the file changed since it wrote it (unknown without a record): not only
    // the user's code, which `make manifests` already follows, makes it differ.
    let changed_since = recorded.is_none_or(|id| id != sum::blob_id(desired));
    Ok(Some(match declared.owner {
        _ if current == Some(desired) => Decision::Leave,
        Owner::User if recorded.is_some_and(|id| id != sum::blob_id(desired)) => Decision::Outdated,
        Owner::Generated if differs && changed_since => Decision::Outdated,
        _ => Decision::Leave,
    }))
}

/// [`reconcile`] for [`Purpose::Renew`].
fn renew(path: &str, current: Option<&str>, base: Base, desired: &str, force: bool) -> Decision {
    match current {
        Some(text) if text == desired => Decision::Leave,
        Some(text) if !force && !base.unedited(path, text) => Decision::Edited,
        _ => Decision::Replace,
    }
}

/// [`reconcile`] for [`Purpose::Change`]: `None` for a file that goes as memop's.
fn change(
    path: &str,
    declared: Declared,
    current: Option<&str>,
    base: Base,
    desired: &str,
) -> Result<Option<Decision>> {
    let before = base.replayed(path)?;
    Ok(match declared.owner {
        // Already the text it changes to (a run killed among its renames wrote it): recorded so.
        _ if before.as_deref() == Some(desired) || current == Some(desired) => Some(Decision::Leave),
        Owner::Generated if current.is_some_and(|text| before.as_deref() != Some(text)) => Some(Decision::Outdated),
        Owner::Generated => Some(Decision::Replace),
        _ => None,
    })
}

/// Decides what becomes of the file at `path`, `current` now (`None`: gone already), that memop
/// wrote and renders no more (a runtime file an earlier memop vendored, a chart template of what
/// the project no longer has, the files of a deleted version): [`Decision::Remove`] while it is
/// as memop wrote it (the base's replay, else `PROJECT.sum`, says what that was),
/// [`Decision::Keep`] once edited (the command says what the user does with it), and
/// [`Decision::Leave`] where it is gone.
pub fn retire(path: &str, current: Option<&str>, base: Base) -> Result<Decision> {
    let Some(current) = current else { return Ok(Decision::Leave) };
    let replayed = base.replayed(path)?;
    Ok(match replayed.as_deref() == Some(current) || base.unedited(path, current) {
        true => Decision::Remove,
        false => Decision::Keep,
    })
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
    /// (`formatted`: needing no formatting pass), by [`reconcile`] for `purpose`.
    pub(crate) fn route(
        &mut self,
        plan: &mut Plan,
        purpose: Purpose,
        path: &str,
        declared: Declared,
        desired: String,
        formatted: bool,
    ) -> Result<()> {
        let current = plan.read(Path::new(path))?;
        let decision = reconcile(path, declared, current.as_deref(), plan.base(self.replay), &desired, purpose)?;
        let merged = &mut self.merged;
        let recorded = plan.record().get(path).map(str::to_string);
        match decision {
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
                    true => merged.conflicts.push((path.to_string(), text, desired)),
                    false => merged.merged.push(path.to_string()),
                }
            }
            Decision::Keep => match purpose {
                Purpose::Make { .. } if declared.refresh => plan.note(format!(
                    "kept your {path}, which is not as memop wrote it; memop's new version was not written"
                )),
                Purpose::Make { .. } => plan.note(format!("kept your {path}; memop's version was not written")),
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
        Ok(())
    }

    /// Plans retiring the file at `path`, which memop wrote and renders no more, by [`retire`]:
    /// removed while as memop wrote it. Returns the decision: [`Decision::Keep`] for one the user
    /// edited (left as it is), [`Decision::Leave`] for one gone already.
    pub(crate) fn retire(&self, plan: &mut Plan, path: &str) -> Result<Decision> {
        let current = plan.read(Path::new(path))?;
        let decision = retire(path, current.as_deref(), plan.base(self.replay))?;
        if decision == Decision::Remove {
            plan.remove(path)?;
        }
        Ok(decision)
    }

    /// What became of the files, once none still holds the conflict markers of an earlier merge
    /// (see [`refuse_unresolved`]).
    pub(crate) fn finish(self) -> Result<Merged> {
        refuse_unresolved(&self.merged.unresolved)?;
        Ok(self.merged)
    }
}

/// Plans every file of `fresh`, memop's text of the project from a replay of PROJECT, over the
/// project in `plan`, to bring it to this memop (see [`Purpose::Update`]).
pub(crate) fn update_files(fresh: &Plan, plan: &mut Plan) -> Result<Merged> {
    let mut router = Router::new(None);
    for (path, new) in fresh.planned() {
        let shown = path.to_string_lossy();
        if shown == crate::project::FILE || shown == sum::FILE {
            continue;
        }
        // A file a command writes itself (no template declares it) is memop's.
        let declared = fresh.declared(path).unwrap_or(Declared::from(Owner::Memop));
        router.route(plan, Purpose::Update, &shown, declared, new.to_string(), true)?;
    }
    router.finish()
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
