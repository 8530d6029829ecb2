//! What becomes of one of memop's files when memop brings it to its current text (`memop
//! update`, or any command that re-renders a file the user may have edited): the one rule that
//! never loses an edit, for every caller.

use std::borrow::Cow;

/// What to do with a file, from [`decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to write: the file has memop's new text already, or memop's text did not change
    /// since it wrote the file and the user's edits are all that differs, or the user deleted it.
    Leave,
    /// Write memop's new text: the file is as memop wrote it, or is new.
    Replace,
    /// Write `text`: the user's edits and memop's changes merged three ways over what memop wrote
    /// then; with `conflicts`, git's markers show where both changed the same lines.
    Merge { text: String, conflicts: bool },
    /// Keep the file as it is: the user edited it, and what memop wrote then is unknown.
    Keep,
    /// Refuse: the file still holds the conflict markers of an earlier merge, which the user has
    /// not resolved (merging over them would bury the conflict in a project called updated).
    Unresolved,
}

/// `text` with the line endings memop writes, `\n`: git checks files out with `\r\n` where
/// `core.autocrlf` says so, which is no edit (`Plan::write` gives a file its `\r\n` back).
pub fn unix_endings(text: &str) -> Cow<'_, str> {
    match text.contains("\r\n") {
        true => Cow::Owned(text.replace("\r\n", "\n")),
        false => Cow::Borrowed(text),
    }
}

/// Whether `current` is the text whose git blob id `recorded` is, in either line endings: as
/// memop wrote it, or as git checked it out.
pub fn as_recorded(current: &str, recorded: Option<&str>) -> bool {
    let is = |text: &str| recorded == Some(crate::sum::blob_id(text).as_str());
    is(current) || (current.contains("\r\n") && is(&unix_endings(current)))
}

/// The lines [`diffy::merge`] opens and closes a conflict with.
const OURS: &str = "<<<<<<< ours";
const THEIRS: &str = ">>>>>>> theirs";

/// Decides what becomes of a file that is `current` now (`None`: missing) and that memop's
/// templates now render as `new`. `recorded` is the git blob id of what memop last wrote there
/// (`PROJECT.sum`), and `base` reads that text back from its id, where it can.
///
/// An unedited file (its blob id is the recorded one, in either line endings: see
/// [`unix_endings`]) is replaced; an edited one is merged with
/// memop's changes over the recorded text, or kept when that text cannot be read; a file memop
/// wrote and the user deleted stays deleted; one that still holds a conflict of an earlier merge
/// is [`Decision::Unresolved`].
pub fn decide(
    current: Option<&str>,
    new: &str,
    recorded: Option<&str>,
    base: impl FnOnce(&str) -> Option<String>,
) -> Decision {
    let Some(current) = current else {
        return if recorded.is_some() { Decision::Leave } else { Decision::Replace };
    };
    let mut lines = current.lines();
    if lines.any(|line| line == OURS) && lines.any(|line| line == THEIRS) {
        return Decision::Unresolved;
    }
    if unix_endings(current) == new {
        return Decision::Leave;
    }
    if as_recorded(current, recorded) {
        return Decision::Replace;
    }
    let current = unix_endings(current);
    let Some(base) = recorded.and_then(base) else {
        return Decision::Keep;
    };
    let base = unix_endings(&base);
    if base == new {
        return Decision::Leave;
    }
    let (text, conflicts) = match diffy::merge(&base, &current, new) {
        Ok(text) => (text, false),
        Err(text) => (text, true),
    };
    Decision::Merge { text, conflicts }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sum::blob_id;

    const OLD: &str = "a\nb\nc\nd\ne\n";
    const NEW: &str = "a\nB\nc\nd\ne\n";

    #[test]
    fn unedited_files_are_replaced_and_missing_ones_made_unless_deleted() {
        let never = |_: &str| -> Option<String> { panic!("no base needed") };
        assert_eq!(decide(Some(OLD), NEW, Some(&blob_id(OLD)), never), Decision::Replace);
        assert_eq!(decide(Some(NEW), NEW, Some(&blob_id(OLD)), never), Decision::Leave);
        assert_eq!(decide(None, NEW, None, never), Decision::Replace);
        assert_eq!(decide(None, NEW, Some(&blob_id(OLD)), never), Decision::Leave, "deleted by the user");
    }

    #[test]
    fn edited_files_are_merged_over_the_base_or_kept_without_it() {
        let edited = "a\nb\nc\nd\ne\nmine\n";
        let base = |_: &str| Some(OLD.to_string());
        let merged = decide(Some(edited), NEW, Some(&blob_id(OLD)), base);
        assert_eq!(merged, Decision::Merge { text: "a\nB\nc\nd\ne\nmine\n".into(), conflicts: false });
        assert_eq!(decide(Some(edited), NEW, Some(&blob_id(OLD)), |_| None), Decision::Keep);
        assert_eq!(decide(Some(edited), NEW, None, base), Decision::Keep, "never memop's");
        assert_eq!(decide(Some(edited), OLD, Some(&blob_id(OLD)), base), Decision::Leave, "memop's text is the same");
        let Decision::Merge { text, conflicts: true } = decide(Some("a\nmine\nc\nd\ne\n"), NEW, Some("x"), base) else {
            panic!("a change of the same line conflicts")
        };
        assert!(text.contains("<<<<<<< ours\nmine\n"), "{text}");
        assert_eq!(decide(Some(&text), NEW, Some(&blob_id(NEW)), base), Decision::Unresolved, "not resolved yet");
    }

    #[test]
    fn windows_line_endings_are_no_edit() {
        let crlf = |text: &str| text.replace('\n', "\r\n");
        let never = |_: &str| -> Option<String> { panic!("no base needed") };
        assert_eq!(decide(Some(&crlf(OLD)), NEW, Some(&blob_id(OLD)), never), Decision::Replace);
        assert_eq!(decide(Some(&crlf(NEW)), NEW, Some(&blob_id(OLD)), never), Decision::Leave);
        let edited = crlf("a\nb\nc\nd\ne\nmine\n");
        let merged = decide(Some(&edited), NEW, Some(&blob_id(OLD)), |_| Some(OLD.to_string()));
        assert_eq!(merged, Decision::Merge { text: "a\nB\nc\nd\ne\nmine\n".into(), conflicts: false });
    }
}
