//! Three-way merges of Rust files by top-level item (mergiraf's idea, written for rustfmt'ed
//! files): each side cut into its items (a function, an impl, a module, a `use`, a constant, a
//! type…, each with the comments, attributes and blank lines before it), the items matched by
//! what they declare, and merged one by one. Only an item both sides changed is merged by lines,
//! so an item one side added next to one the other removed is no conflict, as it is for a line
//! merge. The text of every item is the file's, byte for byte.

/// One piece of a file: the text before the first item (the module's docs and inner
/// attributes), keyed `""`, or one top-level item, keyed by what it declares.
struct Chunk<'a> {
    key: String,
    text: &'a str,
}

/// `base`, `ours` and `theirs` merged item by item: the text, and whether an item both sides
/// changed kept a conflict. `None` where a side cannot be cut into items (it does not parse, two
/// items declare the same thing, or an item does not start at the first column, as rustfmt puts
/// it): the caller merges by lines.
pub fn merge(base: &str, ours: &str, theirs: &str) -> Option<(String, bool)> {
    let (base, ours, theirs) = (chunks(base)?, chunks(ours)?, chunks(theirs)?);
    // An item both sides removed while both added their own: a rename on each side, perhaps,
    // which matching by name would keep twice. Left to the line merge, which marks it.
    let new = |side: &[Chunk<'_>], other: &[Chunk<'_>]| {
        side.iter().any(|c| find(&base, &c.key).is_none() && find(other, &c.key).is_none())
    };
    let both_removed = base.iter().any(|c| find(&ours, &c.key).is_none() && find(&theirs, &c.key).is_none());
    if both_removed && new(&ours, &theirs) && new(&theirs, &ours) {
        return None;
    }
    fn find<'a>(chunks: &[Chunk<'a>], key: &str) -> Option<&'a str> {
        chunks.iter().find(|c| c.key == key).map(|c| c.text)
    }
    let mut conflicts = false;
    let mut merged: Vec<(String, String)> = Vec::new();
    let mut lines = |base: &str, ours: &str, theirs: &str| match diffy::merge(base, ours, theirs) {
        Ok(text) => text,
        Err(text) => {
            conflicts = true;
            text
        }
    };
    // Ours, in our order: each item merged with theirs over the base.
    for chunk in &ours {
        let (was, is) = (find(&base, &chunk.key), find(&theirs, &chunk.key));
        let text = match (was, is) {
            // Ours alone has it, or both made it alike.
            (None, None) => chunk.text.to_string(),
            (_, Some(is)) if is == chunk.text => chunk.text.to_string(),
            // Unchanged by us: theirs, or gone with theirs.
            (Some(was), Some(is)) if was == chunk.text => is.to_string(),
            (Some(was), None) if was == chunk.text => continue,
            // Unchanged by them: ours.
            (Some(was), Some(is)) if was == is => chunk.text.to_string(),
            // Changed by both (or made by both otherwise): by lines.
            (was, is) => lines(was.unwrap_or_default(), chunk.text, is.unwrap_or_default()),
        };
        merged.push((chunk.key.clone(), text));
    }
    // Theirs that ours lacks: new ones after the item they follow in theirs; ones we removed stay
    // removed unless they changed them.
    for (at, chunk) in theirs.iter().enumerate() {
        if merged.iter().any(|(key, _)| *key == chunk.key) || find(&ours, &chunk.key).is_some() {
            continue;
        }
        let text = match find(&base, &chunk.key) {
            None => chunk.text.to_string(),
            Some(was) if was == chunk.text => continue,
            Some(was) => lines(was, "", chunk.text),
        };
        let after = theirs[..at].iter().rev().find_map(|before| merged.iter().position(|(key, _)| *key == before.key));
        let position = after.map_or(0, |position| position + 1);
        merged.insert(position, (chunk.key.clone(), text));
    }
    Some((merged.into_iter().map(|(_, text)| text).collect(), conflicts))
}

/// `text` cut into its [`Chunk`]s, or `None` (see [`merge`]).
fn chunks(text: &str) -> Option<Vec<Chunk<'_>>> {
    let file = syn::parse_file(text).ok()?;
    // Where each item starts: a line at the first column that is no comment, attribute, blank
    // line or continuation of the item before (a closing bracket, a `where` clause, a body's
    // brace, as rustfmt puts them), with the comments, attributes and blank lines before it.
    // Checked against the parse below.
    let mut starts = vec![0];
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let code = line.trim_end();
        let continuation = code.starts_with([' ', '\t', '}', ')', ']', '{']) || code.starts_with("where");
        let preamble = code.is_empty() || code.starts_with("//") || code.starts_with("#[");
        if !continuation && !preamble {
            let start = offset - leading_preamble(&text[..offset]);
            if start > *starts.last()? {
                starts.push(start);
            }
        }
        offset += line.len();
    }
    let mut chunks = Vec::new();
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    for (start, end) in starts.iter().copied().zip(ends) {
        let piece = &text[start..end];
        let parsed = syn::parse_file(piece).ok()?;
        let key = match (parsed.items.as_slice(), start) {
            // The module's docs and inner attributes, before its first item.
            ([], 0) => String::new(),
            ([item], _) if start > 0 || parsed.attrs.is_empty() => key(item, piece)?,
            _ => return None,
        };
        chunks.push(Chunk { key, text: piece });
    }
    // Each item once, and every item of the file in a chunk.
    let mut keys: Vec<&str> = chunks.iter().map(|c| c.key.as_str()).collect();
    let items = keys.iter().filter(|k| !k.is_empty()).count();
    keys.sort_unstable();
    keys.dedup();
    (keys.len() == chunks.len() && items == file.items.len()).then_some(chunks)
}

/// How many bytes at the end of `text` are the comments, attributes and blank lines that come
/// before the next item (they go with it).
fn leading_preamble(text: &str) -> usize {
    let mut length = 0;
    for line in text.split_inclusive('\n').rev() {
        let code = line.trim();
        // Not the module's own docs and attributes (`//!`, `#![`), which stay before its items.
        let inner = code.starts_with("//!") || code.starts_with("#![");
        if !inner && (code.is_empty() || code.starts_with("//") || code.starts_with("#[")) {
            length += line.len();
        } else {
            break;
        }
    }
    length
}

/// What `item` declares, as its identity among a file's items: its kind and name, an impl's
/// header, a `use` or macro call's text.
fn key(item: &syn::Item, text: &str) -> Option<String> {
    use syn::Item;
    let named = |kind: &str, ident: &syn::Ident| Some(format!("{kind} {ident}"));
    // The item's own text up to its body, without the comments and attributes before it.
    let header = || {
        let code = text.lines().skip_while(|line| {
            let line = line.trim();
            line.is_empty() || line.starts_with("//") || line.starts_with("#[")
        });
        let code: Vec<&str> = code.collect();
        let code = code.join(" ");
        let end = code.find(['{', ';']).unwrap_or(code.len());
        code[..end].split_whitespace().collect::<Vec<_>>().join(" ")
    };
    match item {
        Item::Fn(item) => named("fn", &item.sig.ident),
        Item::Struct(item) => named("struct", &item.ident),
        Item::Enum(item) => named("enum", &item.ident),
        Item::Union(item) => named("union", &item.ident),
        Item::Trait(item) => named("trait", &item.ident),
        Item::TraitAlias(item) => named("trait", &item.ident),
        Item::Type(item) => named("type", &item.ident),
        Item::Const(item) => named("const", &item.ident),
        Item::Static(item) => named("static", &item.ident),
        Item::Mod(item) => named("mod", &item.ident),
        Item::ExternCrate(item) => named("extern crate", &item.ident),
        Item::Macro(syn::ItemMacro { ident: Some(ident), .. }) => named("macro", ident),
        Item::Impl(_) | Item::Use(_) | Item::Macro(_) | Item::ForeignMod(_) => Some(header()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::merge;

    /// A controller as an older memop wrote it: a function, its tests module at the end.
    const BASE: &str = "//! The controller.\n\nuse a::B;\n\n/// Reconciles.\npub fn reconcile() {\n    old();\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";

    /// The team's edit, a function appended at the end, and memop's new text, which changed the
    /// function and put another in place of the tests module: a line merge conflicts (memop's
    /// change and the addition touch), by items each side's change is kept.
    #[test]
    fn an_item_appended_beside_one_memop_removed_merges() {
        let mine = "\n/// Mine.\nfn helper() -> u8 {\n    1\n}\n";
        let ours = format!("{BASE}{mine}");
        let theirs = "//! The controller.\n\nuse a::B;\n\n/// Reconciles.\npub fn reconcile() {\n    new();\n}\n\n/// New.\npub fn added() {}\n";
        assert!(diffy::merge(BASE, &ours, theirs).is_err(), "a line merge conflicts");
        let (text, conflicts) = merge(BASE, &ours, theirs).unwrap();
        assert!(!conflicts, "{text}");
        assert_eq!(text, format!("{theirs}{mine}"));
    }

    /// New items of memop's go after the item they follow in its text; an item both changed is
    /// merged by lines, with a conflict where both changed the same line; an item we removed stays
    /// removed unless memop changed it.
    #[test]
    fn items_are_matched_by_what_they_declare() {
        let theirs = BASE.replace("use a::B;\n", "use a::B;\n\nconst C: u8 = 1;\n");
        let (text, conflicts) = merge(BASE, BASE, &theirs).unwrap();
        assert_eq!((text.as_str(), conflicts), (theirs.as_str(), false));
        let ours = BASE.replace("    old();\n", "    old();\n    mine();\n");
        let theirs = BASE.replace("pub fn reconcile() {\n", "pub fn reconcile() {\n    first();\n");
        let (text, conflicts) = merge(BASE, &ours, &theirs).unwrap();
        assert!(!conflicts && text.contains("    first();\n    old();\n    mine();\n"), "{text}");
        let theirs = BASE.replace("    old();\n", "    new();\n");
        let (text, conflicts) = merge(BASE, &ours.replace("    mine();\n", ""), &theirs).unwrap();
        assert_eq!((text.as_str(), conflicts), (theirs.as_str(), false));
        let (text, conflicts) = merge(BASE, &BASE.replace("    old();\n", "    mine();\n"), &theirs).unwrap();
        assert!(conflicts && text.contains("<<<<<<< ours\n    mine();\n"), "{text}");
        let without_use = BASE.replace("use a::B;\n\n", "");
        assert_eq!(merge(BASE, &without_use, BASE).unwrap(), (without_use.clone(), false));
    }

    /// A file the cut cannot hold to: merged by lines.
    #[test]
    fn what_does_not_parse_or_declares_twice_is_left_to_the_line_merge() {
        assert!(merge(BASE, "fn broken(", BASE).is_none());
        let twice = format!("{BASE}\nfn reconcile() {{}}\n");
        assert!(merge(BASE, &twice, BASE).is_none());
    }
}
