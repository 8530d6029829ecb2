//! What becomes of one of memop's files when memop brings it to its current text (`memop
//! update`, or any command that re-renders a file the user may have edited): the one rule that
//! never loses an edit, for every caller.

/// What to do with a file: [`super::reconcile::reconcile`]'s answer; for memop's files
/// [`decide`] gives it, but for [`Decision::Outdated`], [`Decision::Edited`] (a file of
/// `vendor/`) and [`Decision::Remove`].
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
    /// Leave the file to its owner, though memop's text of it changed: the user's (that memop now
    /// writes otherwise than when it wrote it), or generated (`make manifests`' to write).
    Outdated,
    /// Remove the file: memop wrote it, renders it no more, and it is as memop wrote it
    /// ([`super::reconcile::Purpose::Retire`]).
    Remove,
    /// Refuse to write over the file, which the user edited though it is memop's alone: the
    /// command names every such file ([`super::reconcile::Purpose::Renew`]).
    Edited,
}

/// The lines [`diffy::merge`] opens and closes a conflict with.
const OURS: &str = "<<<<<<< ours";
const THEIRS: &str = ">>>>>>> theirs";

/// Decides what becomes of a file that is `current` now (`None`: missing) and that memop's
/// templates now render as `new`, all in `\n` line endings. `recorded` is the git blob id of
/// what memop last wrote there (`PROJECT.sum`), `unedited` whether `current` is that text (in
/// either line endings: see [`as_recorded`](crate::sum::as_recorded)), and `base` reads that text
/// back from its id, where it can.
///
/// An unedited file is replaced; an edited one is merged with
/// memop's changes over the recorded text, or kept when that text cannot be read; a file memop
/// wrote and the user deleted stays deleted; one that still holds a conflict of an earlier merge
/// is [`Decision::Unresolved`].
pub fn decide(
    path: &str,
    current: Option<&str>,
    new: &str,
    recorded: Option<&str>,
    unedited: bool,
    base: impl FnOnce(&str) -> Option<String>,
) -> Decision {
    let Some(current) = current else {
        return if recorded.is_some() { Decision::Leave } else { Decision::Replace };
    };
    // memop's markers, or git's of a merge the user committed unresolved (`<<<<<<< HEAD`).
    let marker =
        |line: &str, sign: &str| line.strip_prefix(sign).is_some_and(|rest| rest.is_empty() || rest.starts_with(' '));
    let mut lines = current.lines();
    if lines.any(|line| marker(line, "<<<<<<<")) && lines.any(|line| marker(line, ">>>>>>>")) {
        return Decision::Unresolved;
    }
    if current == new {
        return Decision::Leave;
    }
    if unedited {
        return Decision::Replace;
    }
    let Some(base) = recorded.and_then(base) else {
        return Decision::Keep;
    };
    if base == new {
        return Decision::Leave;
    }
    let (text, conflicts) = match diffy::merge(&base, current, new) {
        Ok(text) => (text, false),
        Err(text) => keep_both_additions(path, &text),
    };
    // Lines both sides touched in Rust: merged by item, where only an item both changed is
    // merged by lines (an item one side added beside one the other removed is no conflict).
    if conflicts
        && path.ends_with(".rs")
        && let Some((text, conflicts)) = super::items::merge(&base, current, new)
    {
        return Decision::Merge { text, conflicts };
    }
    Decision::Merge { text, conflicts }
}

/// The lines diffy's conflicts (in diff3 style) are made of.
const BASE: &str = "||||||| original";
const SPLIT: &str = "=======";

/// `text`, a merge with conflicts, with each conflict where both sides only added lines at the
/// same place (nothing of the base in between) resolved by keeping both, the user's first, where
/// the order of such lines does not matter in a file like `path`: whole items of Rust (`mod`
/// lines, functions, constants), list items of YAML (a kustomization's resources), whole rules of
/// a Makefile. Whether conflicts
/// remain comes with it.
fn keep_both_additions(path: &str, text: &str) -> (String, bool) {
    let unordered: fn(&[&str]) -> bool = match path.rsplit('/').next().unwrap_or(path) {
        // Whole items (a `mod` line, a function, a constant with its doc comment), whose order in
        // a module or an impl does not matter; statements, fields or match arms do not parse so.
        name if name.ends_with(".rs") => |lines| {
            let text = lines.join("\n");
            let code = text.lines().any(|line| !line.trim().is_empty() && !line.trim_start().starts_with("//"));
            !code || syn::parse_file(&text).is_ok_and(|file| !file.items.is_empty() && file.attrs.is_empty())
        },
        name if name.ends_with(".yaml") || name.ends_with(".yml") => |lines| {
            let indent = |line: &&str| line.len() - line.trim_start().len();
            let items: Vec<_> = lines.iter().filter(|line| !line.trim().is_empty()).collect();
            items.iter().all(|line| line.trim_start().starts_with("- "))
                && items.windows(2).all(|w| indent(w[0]) == indent(w[1]))
        },
        "Makefile" => |lines| {
            let mut lines = lines.iter().skip_while(|line| line.trim().is_empty());
            lines.next().is_some_and(|first| !first.starts_with('\t') && !first.starts_with(' '))
        },
        _ => return (text.to_string(), true),
    };
    let mut out = String::with_capacity(text.len());
    let mut conflicts = false;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim_end_matches('\n') != OURS {
            out.push_str(line);
            continue;
        }
        // One conflict: ours, the base, theirs.
        let mut parts: [Vec<&str>; 3] = Default::default();
        let mut part = 0;
        let mut closed = false;
        for line in lines.by_ref() {
            match line.trim_end_matches('\n') {
                BASE if part == 0 => part = 1,
                SPLIT if part <= 1 => part = 2,
                THEIRS if part == 2 => {
                    closed = true;
                    break;
                }
                _ => parts[part].push(line),
            }
        }
        let [ours, base, theirs] = &parts;
        let bare = |side: &[&'_ str]| unordered(&side.iter().map(|l| l.trim_end_matches('\n')).collect::<Vec<_>>());
        if closed && base.is_empty() && bare(ours) && bare(theirs) {
            out.extend(ours.iter().copied());
            let theirs: Vec<&str> = theirs.iter().filter(|line| !ours.contains(line)).copied().collect();
            // A Makefile's rules stay apart by a blank line.
            let blank = |line: Option<&&str>| line.is_none_or(|line| line.trim().is_empty());
            if path.ends_with("Makefile") && !blank(ours.last()) && !blank(theirs.first()) {
                out.push('\n');
            }
            out.extend(theirs);
            continue;
        }
        conflicts = true;
        out.push_str(line);
        out.extend(ours.iter().copied());
        if part >= 1 {
            out.push_str(BASE);
            out.push('\n');
            out.extend(base.iter().copied());
        }
        out.push_str(SPLIT);
        out.push('\n');
        out.extend(theirs.iter().copied());
        if closed {
            out.push_str(THEIRS);
            out.push('\n');
        }
    }
    (out, conflicts)
}

#[cfg(test)]
mod tests {
    use super::Decision;
    use crate::sum::{as_recorded, blob_id};

    /// [`super::decide`], with whether `current` is unedited read from `recorded`.
    fn decide(
        path: &str,
        current: Option<&str>,
        new: &str,
        recorded: Option<&str>,
        base: impl FnOnce(&str) -> Option<String>,
    ) -> Decision {
        let unedited = current.is_some_and(|text| as_recorded(text, recorded));
        super::decide(path, current, new, recorded, unedited, base)
    }

    const OLD: &str = "a\nb\nc\nd\ne\n";
    const NEW: &str = "a\nB\nc\nd\ne\n";

    #[test]
    fn unedited_files_are_replaced_and_missing_ones_made_unless_deleted() {
        let never = |_: &str| -> Option<String> { panic!("no base needed") };
        assert_eq!(decide("f", Some(OLD), NEW, Some(&blob_id(OLD)), never), Decision::Replace);
        assert_eq!(decide("f", Some(NEW), NEW, Some(&blob_id(OLD)), never), Decision::Leave);
        assert_eq!(decide("f", None, NEW, None, never), Decision::Replace);
        assert_eq!(decide("f", None, NEW, Some(&blob_id(OLD)), never), Decision::Leave, "deleted by the user");
    }

    #[test]
    fn edited_files_are_merged_over_the_base_or_kept_without_it() {
        let edited = "a\nb\nc\nd\ne\nmine\n";
        let base = |_: &str| Some(OLD.to_string());
        let merged = decide("f", Some(edited), NEW, Some(&blob_id(OLD)), base);
        assert_eq!(merged, Decision::Merge { text: "a\nB\nc\nd\ne\nmine\n".into(), conflicts: false });
        assert_eq!(decide("f", Some(edited), NEW, Some(&blob_id(OLD)), |_| None), Decision::Keep);
        assert_eq!(decide("f", Some(edited), NEW, None, base), Decision::Keep, "never memop's");
        assert_eq!(
            decide("f", Some(edited), OLD, Some(&blob_id(OLD)), base),
            Decision::Leave,
            "memop's text is the same"
        );
        let Decision::Merge { text, conflicts: true } = decide("f", Some("a\nmine\nc\nd\ne\n"), NEW, Some("x"), base)
        else {
            panic!("a change of the same line conflicts")
        };
        assert!(text.contains("<<<<<<< ours\nmine\n"), "{text}");
        assert_eq!(decide("f", Some(&text), NEW, Some(&blob_id(NEW)), base), Decision::Unresolved, "not resolved yet");
        // git's markers of a merge of branches, committed unresolved.
        let committed = "a\n<<<<<<< HEAD\nb\n=======\nB\n>>>>>>> topic\nc\nd\ne\n";
        assert_eq!(decide("f", Some(committed), NEW, Some("x"), base), Decision::Unresolved);
    }

    /// The team's most common edit, a module added at the end of `src/lib.rs`, and memop's own
    /// there: both kept, as both only added lines where order does not matter; a real conflict
    /// (a line both changed) stays one, and other files keep git's conflicts.
    #[test]
    fn additions_at_the_same_place_are_kept_both_where_order_does_not_matter() {
        let base = "//! docs\n\npub mod controller;\n";
        let ours = "//! docs\n\npub mod controller;\npub mod mine;\n";
        let theirs = "//! docs\n\npub mod controller;\npub mod webhook;\n";
        let merge = |path: &str, base: &str, ours: &str, theirs: &str| {
            decide(path, Some(ours), theirs, Some(&blob_id(base)), |_| Some(base.to_string()))
        };
        let both = "//! docs\n\npub mod controller;\npub mod mine;\npub mod webhook;\n";
        assert_eq!(merge("src/lib.rs", base, ours, theirs), Decision::Merge { text: both.into(), conflicts: false });
        // The same line added by both: once.
        let same = merge("src/lib.rs", base, theirs, &format!("{theirs}pub mod metrics;\n"));
        assert_eq!(same, Decision::Merge { text: format!("{theirs}pub mod metrics;\n"), conflicts: false });
        // Whole items, as memop 0.3 adds a constant where a team added a module.
        let constant = "\n/// Who this operator is.\npub const OPERATOR: Operator = Operator { name: \"x\" };\n";
        let item = merge("src/lib.rs", base, ours, &format!("{base}{constant}"));
        assert_eq!(item, Decision::Merge { text: format!("{ours}{constant}"), conflicts: false });
        // Code, not items whose order is free: a conflict, as git's.
        let code = merge("src/main.rs", "fn f() {\n}\n", "fn f() {\n    a();\n}\n", "fn f() {\n    b();\n}\n");
        assert!(matches!(code, Decision::Merge { conflicts: true, .. }), "{code:?}");
        let Decision::Merge { text, conflicts: true } = merge("README.md", base, ours, theirs) else {
            panic!("README")
        };
        assert!(
            text.contains("<<<<<<< ours\npub mod mine;\n||||||| original\n=======\npub mod webhook;\n>>>>>>> theirs\n"),
            "{text}"
        );
        // A kustomization's resources, and a Makefile's rules.
        let list = "resources:\n- a.yaml\n";
        let yaml =
            merge("config/x/kustomization.yaml", list, &format!("{list}- mine.yaml\n"), &format!("{list}- b.yaml\n"));
        let kept = format!("{list}- mine.yaml\n- b.yaml\n");
        assert_eq!(yaml, Decision::Merge { text: kept, conflicts: false });
        let rules = "all:\n\techo\n";
        let make = merge(
            "Makefile",
            rules,
            &format!("{rules}\nmine:\n\techo mine\n"),
            &format!("{rules}\nnew:\n\techo new\n"),
        );
        let kept = format!("{rules}\nmine:\n\techo mine\n\nnew:\n\techo new\n");
        assert_eq!(make, Decision::Merge { text: kept, conflicts: false });
        // A line both changed stays a conflict even in such a file.
        let changed = merge("src/lib.rs", base, "//! docs\n\npub mod control;\n", "//! docs\n\npub mod controllers;\n");
        assert!(matches!(changed, Decision::Merge { conflicts: true, .. }), "{changed:?}");
    }

    /// Rust whose lines both sides touched, though no item both changed (a function appended
    /// where memop replaced the item before it): merged by item, with no conflict.
    #[test]
    fn rust_is_merged_by_item_where_lines_conflict() {
        let base = "use a::B;\n\nfn reconcile() {\n    old();\n}\n\n#[cfg(test)]\nmod tests {}\n";
        let mine = "\n/// Mine.\nfn helper() {}\n";
        let theirs = "use a::B;\n\nfn reconcile() {\n    new();\n}\n\n/// New.\nfn added() {}\n";
        let ours = format!("{base}{mine}");
        assert!(diffy::merge(base, &ours, theirs).is_err(), "lines both touched");
        let merged = decide("src/controller/x.rs", Some(&ours), theirs, Some(&blob_id(base)), |_| Some(base.into()));
        assert_eq!(merged, Decision::Merge { text: format!("{theirs}{mine}"), conflicts: false });
    }

    /// A file memop wrote in `\r\n` (recorded so by an earlier memop) and now in `\n`, or the
    /// other way round, is as memop wrote it: line endings are no edit.
    #[test]
    fn line_endings_are_no_edit() {
        let never = |_: &str| -> Option<String> { panic!("no base needed") };
        let crlf = OLD.replace('\n', "\r\n");
        assert_eq!(decide("f", Some(OLD), NEW, Some(&blob_id(&crlf)), never), Decision::Replace);
        assert_eq!(decide("f", Some(OLD), NEW, Some(&blob_id(OLD)), never), Decision::Replace);
    }
}
