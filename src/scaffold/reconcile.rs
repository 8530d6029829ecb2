//! What becomes of a file that a command renders and that may exist already: one rule,
//! [`reconcile`], from what the file's template declares ([`Declared`]: memop's, the user's or
//! generated, and its scope), its text now, what is known of it ([`Known`]: what memop wrote
//! there last, and memop's text of it before a change) and memop's text now, and why the command
//! renders it ([`Purpose`]: to make it, to bring it to this memop, to carry a change of PROJECT
//! into it, to renew memop's copy of its runtime in `vendor/`, or to retire a file memop renders
//! no more). The rule reads neither the project's files nor its record (only git, for the base
//! of a three-way merge, when a merge needs it): the router ([`super::router`]) gathers what it
//! decides by, and plans its decisions.

use std::path::Path;

use anyhow::{Result, bail};

use super::merge::{Decision, decide};
use super::{Declared, Owner, Scope};
use crate::sum;

/// What is known of one file that the rule decides by, besides its text now: gathered once by
/// the router ([`super::router::Base::known`]).
pub struct Known<'a> {
    /// The blob id `PROJECT.sum` records: what memop last wrote into the file.
    pub(super) recorded: Option<&'a str>,
    /// Whether the file is as `PROJECT.sum` records memop wrote it (a missing one is not).
    pub(super) unedited: bool,
    /// memop's text of the file in a replay of the project before a command changed it (`delete
    /// api`), where there is one and it has the file.
    pub(super) replayed: Option<String>,
    /// The blob id of the base of a three-way merge (the replay's text where there is a replay,
    /// else the one `PROJECT.sum` names), and whether the file is that text.
    pub(super) merge_id: Option<String>,
    pub(super) merge_unedited: bool,
    /// The project's directory, whose git has the texts `PROJECT.sum` names: the base of a merge
    /// is read back from it only when a merge needs it.
    pub(super) dir: &'a Path,
}

impl Known<'_> {
    /// Decides what becomes of memop's file at `path`, `current` now, which memop's templates
    /// now render as `new`, by [`decide`] over the base.
    fn merge(self, path: &str, current: Option<&str>, new: &str) -> Decision {
        let (replayed, dir) = (self.replayed, self.dir);
        let base = move |id: &str| replayed.or_else(|| sum::base(dir, id));
        decide(path, current, new, self.merge_id.as_deref(), self.merge_unedited, base)
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
    /// To remove it: memop wrote it and renders it no more (a runtime file an earlier memop
    /// vendored, a chart template of what the project no longer has, the files of a deleted
    /// version): see [`retire`].
    Retire,
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
/// To renew a file: see [`Purpose::Renew`]; to retire one: see [`retire`].
///
/// A refusal is the error that names `path` and `--force`.
pub fn reconcile(
    path: &str,
    declared: Declared,
    current: Option<&str>,
    known: Known,
    desired: &str,
    purpose: Purpose,
) -> Result<Decision> {
    let decided = match purpose {
        Purpose::Make { force } => Some(make(path, declared, current, &known, desired, force)?),
        Purpose::Update => bring(declared, current, &known, desired),
        Purpose::Change => change(declared, current, &known, desired),
        Purpose::Renew { force } => Some(renew(current, &known, desired, force)),
        Purpose::Retire => Some(retire(current, &known)),
    };
    // Else the file goes as memop's, by its rule over the base.
    Ok(match decided {
        Some(decision) => decision,
        None => known.merge(path, current, desired),
    })
}

/// [`reconcile`] for [`Purpose::Make`].
fn make(
    path: &str,
    declared: Declared,
    current: Option<&str>,
    known: &Known,
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
    let refreshed = declared.owner == Owner::User && declared.refresh;
    Ok(match declared.scope {
        Scope::Shared => Decision::Leave,
        _ if force => Decision::Replace,
        _ if refreshed && known.unedited => Decision::Replace,
        _ if refreshed && known.recorded.is_some() => Decision::Keep,
        _ if refreshed => refuse()?,
        Scope::Project => Decision::Keep,
        Scope::Api | Scope::Kind => refuse()?,
    })
}

/// [`reconcile`] for [`Purpose::Update`]: `None` for a file that goes as memop's.
fn bring(declared: Declared, current: Option<&str>, known: &Known, desired: &str) -> Option<Decision> {
    if declared.owner == Owner::Memop {
        return None;
    }
    let recorded = known.recorded;
    let made_by_no_memop = current.is_none() && recorded.is_none() && known.replayed.is_none();
    if made_by_no_memop || (declared.owner == Owner::User && declared.refresh && known.unedited) {
        return None;
    }
    let differs = current.is_some_and(|text| text != desired);
    // memop's text of the file changed since it wrote it (unknown without a record): not only
    // the user's code, which `make manifests` already follows, makes it differ.
    let changed_since = recorded.is_none_or(|id| id != sum::blob_id(desired));
    Some(match declared.owner {
        _ if current == Some(desired) => Decision::Leave,
        Owner::User if recorded.is_some_and(|id| id != sum::blob_id(desired)) => Decision::Outdated,
        Owner::Generated if differs && changed_since => Decision::Outdated,
        _ => Decision::Leave,
    })
}

/// [`reconcile`] for [`Purpose::Renew`].
fn renew(current: Option<&str>, known: &Known, desired: &str, force: bool) -> Decision {
    match current {
        Some(text) if text == desired => Decision::Leave,
        Some(_) if !force && !known.unedited => Decision::Edited,
        _ => Decision::Replace,
    }
}

/// [`reconcile`] for [`Purpose::Change`]: `None` for a file that goes as memop's.
fn change(declared: Declared, current: Option<&str>, known: &Known, desired: &str) -> Option<Decision> {
    let before = known.replayed.as_deref();
    match declared.owner {
        // Already the text it changes to (a run killed among its renames wrote it): recorded so.
        _ if before == Some(desired) || current == Some(desired) => Some(Decision::Leave),
        Owner::Generated if current.is_some_and(|text| before != Some(text)) => Some(Decision::Outdated),
        Owner::Generated => Some(Decision::Replace),
        _ => None,
    }
}

/// [`reconcile`] for [`Purpose::Retire`]: what becomes of a file, `current` now (`None`: gone
/// already), that memop wrote and renders no more: [`Decision::Remove`] while it is
/// as memop wrote it (the replay, else `PROJECT.sum`, says what that was), [`Decision::Keep`]
/// once edited (the command says what the user does with it), and [`Decision::Leave`] where it
/// is gone.
fn retire(current: Option<&str>, known: &Known) -> Decision {
    match current {
        None => Decision::Leave,
        Some(text) if known.replayed.as_deref() == Some(text) || known.unedited => Decision::Remove,
        Some(_) => Decision::Keep,
    }
}
