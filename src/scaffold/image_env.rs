//! The image of each operand in the user's YAML: the `<KIND>_IMAGE` env entry of the manager
//! Deployment (`config/manager/manager.yaml`), and its key in the Helm chart's `values.yaml`
//! ([`add_to_values`]). The env entry is found in whatever spelling the user left it: `- name: X` then `value: …` as memop writes it, a quoted
//! name, `value:` before `name:`, extra spaces, or a flow mapping (`- {name: X, value: foo}`).
//!
//! The YAML is parsed to find the entry; the text is edited only where its value is, so every
//! other line and comment stays; and the edit is checked by parsing again: when the result is not
//! exactly the old document with that one value changed, the file is kept, with a note.

use std::path::Path;

use anyhow::{Result, bail};
use serde_yaml::Value;

use super::Plan;

/// Plans a keyed fragment `{# key: image-env #}` of `path`: one env entry, `- name: <X>_IMAGE`
/// and its `value:`. The entries of that name the file has already, in any spelling, are
/// pointed at the fragment's value, so that regenerating with another `--image` updates them
/// instead of adding a second entry; without one, the fragment is inserted at `marker`.
pub fn upsert(plan: &mut Plan, path: &str, marker: &str, fragment: &str) -> Result<()> {
    let entry: Vec<Value> = serde_yaml::from_str(fragment)
        .map_err(|e| anyhow::anyhow!("memop's image env fragment for {path} is not a YAML list: {e}"))?;
    let [entry] = entry.as_slice() else { bail!("memop's image env fragment for {path} is not one entry") };
    let (Some(name), Some(image)) =
        (entry.get("name").and_then(Value::as_str), entry.get("value").and_then(Value::as_str))
    else {
        bail!("memop's image env fragment for {path} has no `name` and `value`");
    };
    set_image_env(plan, path, name, image)?;
    // An entry the file has already, in any spelling (one the user switched to `valueFrom`, or
    // quoted, say), is theirs, and a second would be a duplicate key.
    let first = fragment.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let current = plan.read(Path::new(path))?;
    if current.as_deref().is_some_and(|text| text.lines().any(|l| l.trim() == first) || has_env(text, name)) {
        return Ok(());
    }
    plan.insert(path, marker, fragment)
}

/// Points the existing `name` entries of the manager Deployment (`path`) at `image`. An entry
/// that is not a plain `value:` (`valueFrom:`, a value over several lines) is the user's and is
/// kept, with a note; so is a file memop cannot parse.
fn set_image_env(plan: &mut Plan, path: &str, name: &str, image: &str) -> Result<()> {
    let Some(text) = plan.read(Path::new(path))? else { return Ok(()) };
    let keep = |plan: &mut Plan, why: &str| {
        plan.note(format!(
            "{name} in {path} is yours ({why}), so it was kept; the image {image} is the controller's default \
             (DEFAULT_IMAGE) only"
        ));
    };
    let Some(documents) = parse(&text) else {
        if mentions(&text, name) {
            keep(plan, "memop cannot parse the file as YAML");
        }
        return Ok(());
    };
    let entries: Vec<&Value> = documents.iter().flat_map(|doc| env_entries(doc, name)).collect();
    if entries.is_empty() {
        return Ok(());
    }
    if entries.iter().any(|entry| entry.get("value").and_then(Value::as_str).is_none()) {
        keep(plan, "not a `value:` string");
        return Ok(());
    }
    let Some(updated) = rewrite(&text, name, image) else {
        keep(plan, "memop cannot rewrite its spelling without touching other lines");
        return Ok(());
    };
    // The edit must change exactly those values.
    let mut expected = documents;
    for doc in &mut expected {
        set_values(doc, name, image);
    }
    if parse(&updated).as_ref() != Some(&expected) {
        keep(plan, "memop cannot rewrite its spelling without touching other lines");
        return Ok(());
    }
    plan.write(path, updated)
}

/// Whether `manager.yaml` (its text) already has an env entry named `name`, in any spelling, in
/// any container: the `<KIND>_IMAGE` fragment must then not be inserted, or the list would hold
/// the name twice (a duplicate key that server-side apply refuses). A file memop cannot parse has
/// one when it mentions the name at all.
fn has_env(text: &str, name: &str) -> bool {
    match parse(text) {
        Some(documents) => documents.iter().any(|doc| !env_entries(doc, name).is_empty()),
        None => mentions(text, name),
    }
}

/// Every YAML document of `text`, or `None` when it is not YAML.
fn parse(text: &str) -> Option<Vec<Value>> {
    use serde::Deserialize as _;
    serde_yaml::Deserializer::from_str(text).map(|doc| Value::deserialize(doc).ok()).collect()
}

/// Whether `name` occurs in `text` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| !text[..at].ends_with(word) && !text[at + name.len()..].starts_with(word))
}

/// The entries named `name` of every `env:` list in `doc`.
fn env_entries<'a>(doc: &'a Value, name: &str) -> Vec<&'a Value> {
    let mut found = Vec::new();
    let mut stack = vec![doc];
    while let Some(value) = stack.pop() {
        match value {
            Value::Mapping(map) => {
                for (key, child) in map {
                    if let (Some("env"), Value::Sequence(list)) = (key.as_str(), child) {
                        found.extend(list.iter().filter(|e| e.get("name").and_then(Value::as_str) == Some(name)));
                    }
                    stack.push(child);
                }
            }
            Value::Sequence(list) => stack.extend(list),
            Value::Tagged(tagged) => stack.push(&tagged.value),
            _ => {}
        }
    }
    found
}

/// Sets the `value` of every env entry named `name` in `doc` to `image`.
fn set_values(doc: &mut Value, name: &str, image: &str) {
    match doc {
        Value::Mapping(map) => {
            for (key, child) in map.iter_mut() {
                if let (Some("env"), Value::Sequence(list)) = (key.as_str(), &mut *child) {
                    for entry in list.iter_mut() {
                        if entry.get("name").and_then(Value::as_str) == Some(name)
                            && let Some(map) = entry.as_mapping_mut()
                        {
                            map.insert(Value::from("value"), Value::from(image));
                        }
                    }
                }
                set_values(child, name, image);
            }
        }
        Value::Sequence(list) => list.iter_mut().for_each(|child| set_values(child, name, image)),
        Value::Tagged(tagged) => set_values(&mut tagged.value, name, image),
        _ => {}
    }
}

/// A scalar at the start of `s`: `(its value, its length in s)`. Plain scalars end at `stop`
/// characters (`,` and `}` in a flow mapping), at ` #` or at the end of the line.
fn scalar(s: &str, stop: &[char]) -> Option<(String, usize)> {
    let mut chars = s.char_indices();
    match chars.next()?.1 {
        '"' => {
            let mut value = String::new();
            let mut escaped = false;
            for (at, c) in chars {
                match (escaped, c) {
                    (false, '\\') => escaped = true,
                    (false, '"') => return Some((value, at + 1)),
                    (true, c) => {
                        // Only the escapes a name or an image can hold.
                        value.push(match c {
                            '"' | '\\' | '/' => c,
                            _ => return None,
                        });
                        escaped = false;
                    }
                    (false, c) => value.push(c),
                }
            }
            None
        }
        '\'' => {
            let body = &s[1..];
            let mut value = String::new();
            let mut rest = body;
            loop {
                let at = rest.find('\'')?;
                value.push_str(&rest[..at]);
                if rest[at + 1..].starts_with('\'') {
                    value.push('\'');
                    rest = &rest[at + 2..];
                } else {
                    return Some((value, s.len() - rest.len() + at + 1));
                }
            }
        }
        _ => {
            let mut end = s.len();
            for (at, c) in s.char_indices() {
                if stop.contains(&c) || (c == '#' && s[..at].ends_with([' ', '\t'])) {
                    end = at;
                    break;
                }
            }
            let value = s[..end].trim_end();
            (!value.is_empty()).then(|| (value.to_string(), value.len()))
        }
    }
}

/// `key:` (plain or quoted) at the start of `s`, followed by a space or the end: what follows.
fn after_key<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let rest = [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
        .iter()
        .find_map(|spelled| s.strip_prefix(spelled.as_str()))?;
    let rest = rest.trim_start_matches([' ', '\t']).strip_prefix(':')?;
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then_some(rest)
}

/// One line of a block mapping: where its key starts (after indentation and any `- `) and whether
/// a `-` starts a list item on it.
fn key_column(line: &str) -> (usize, bool) {
    let mut at = line.len() - line.trim_start().len();
    let mut dash = false;
    while line[at..].starts_with("- ") || line[at..].starts_with("-\t") {
        dash = true;
        at += 1;
        at += line[at..].len() - line[at..].trim_start().len();
    }
    (at, dash)
}

/// `text` with the value of every env entry named `name` set to `image` (written `"image"`),
/// or `None` when an entry's value is not on one line that this can rewrite.
fn rewrite(text: &str, name: &str, image: &str) -> Option<String> {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let quoted = format!("\"{image}\"");
    let mut changed = false;
    for i in 0..lines.len() {
        let line = lines[i].clone();
        // A flow mapping on one line: `- {name: X, value: y}`, `env: [{"name": "X", "value": "y"}]`.
        if let Some(open) = line.find('{') {
            let mut spans = Vec::new();
            let mut at = open;
            while let Some(start) = line[at..].find('{').map(|s| s + at) {
                let Some(end) = line[start..].find('}').map(|e| e + start) else { break };
                spans.push((start + 1, end));
                at = end + 1;
            }
            for (start, end) in spans.into_iter().rev() {
                let body = &line[start..end];
                let mut is_entry = false;
                let mut value_at = None;
                let mut offset = 0;
                for pair in body.split(',') {
                    let trimmed = pair.trim_start();
                    let lead = pair.len() - trimmed.len();
                    if let Some(rest) = after_key(trimmed, "name") {
                        let rest_trim = rest.trim_start();
                        if scalar(rest_trim, &[',', '}']).is_some_and(|(v, _)| v == name) {
                            is_entry = true;
                        }
                    } else if let Some(rest) = after_key(trimmed, "value") {
                        let rest_trim = rest.trim_start();
                        let skip = trimmed.len() - rest_trim.len();
                        let (_, len) = scalar(rest_trim, &[',', '}'])?;
                        value_at = Some((start + offset + lead + skip, len));
                    }
                    offset += pair.len() + 1;
                }
                if let (true, Some((from, len))) = (is_entry, value_at) {
                    lines[i].replace_range(from..from + len, &quoted);
                    changed = true;
                }
            }
            continue;
        }
        // A block mapping: find `name: X`, then `value:` among the keys of the same list item.
        let (column, _) = key_column(&line);
        let Some(rest) = after_key(&line[column..], "name") else { continue };
        if scalar(rest.trim_start(), &[]).is_none_or(|(v, _)| v != name) {
            continue;
        }
        let item = item_lines(&lines, i, column);
        let mut found = false;
        for j in item {
            let (col, _) = key_column(&lines[j]);
            if col != column {
                continue;
            }
            let Some(rest) = after_key(&lines[j][col..], "value") else { continue };
            let value = rest.trim_start();
            // A value over several lines (`|`, `>`, or on the next line) is not rewritten here.
            if value.is_empty() || value.starts_with(['|', '>', '#', '&', '*', '!']) {
                return None;
            }
            let (_, len) = scalar(value, &[])?;
            let from = lines[j].len() - value.len();
            lines[j].replace_range(from..from + len, &quoted);
            found = true;
        }
        if !found {
            return None;
        }
        changed = true;
    }
    if !changed {
        return None;
    }
    let mut updated = lines.join("\n");
    if text.ends_with('\n') {
        updated.push('\n');
    }
    Some(updated)
}

/// The indices of the lines of the block list item whose key at `column` is on line `at`.
fn item_lines(lines: &[String], at: usize, column: usize) -> Vec<usize> {
    let ignorable = |line: &str| line.trim().is_empty() || line.trim_start().starts_with('#');
    let indent = |line: &str| line.len() - line.trim_start().len();
    // Back to the line with the item's `-`.
    let mut first = at;
    while !key_column(&lines[first]).1 && first > 0 {
        let previous = &lines[first - 1];
        if ignorable(previous) || indent(previous) > column {
            first -= 1;
            continue;
        }
        let (col, _) = key_column(previous);
        if col != column {
            break;
        }
        first -= 1;
    }
    // On to the last line indented past the item's `-`, or a key of the same mapping.
    let mut last = at;
    while let Some(next) = lines.get(last + 1) {
        if ignorable(next) || indent(next) > column || (indent(next) == column && !key_column(next).1) {
            last += 1;
        } else {
            break;
        }
    }
    (first..=last).collect()
}

/// Adds to the user's `values.yaml` of the Helm chart (`path`) the image of each operand
/// (`images`: the `<KIND>_IMAGE` env name, the image) that it does not list yet, at its `marker`
/// line; without the marker, a note says what to add. The file is read as YAML, so a key
/// in any spelling (quoted, in flow style) counts as listed, and an addition that would not leave
/// valid YAML with the key in it (a flow mapping above the marker, say) is named in a note instead.
pub fn add_to_values(plan: &mut Plan, path: &str, marker: &str, images: &[(String, String)]) -> Result<()> {
    let tag = format!("+memop:scaffold:{marker}");
    for (env, image) in images {
        let line = format!("{env}: \"{image}\"");
        let text = plan.read(Path::new(path))?.unwrap_or_default();
        let values = match serde_yaml::from_str::<Value>(&text) {
            Ok(values) => values,
            Err(err) => {
                plan.note(format!(
                    "{path} is yours and is not valid YAML ({err}), so memop did not add `{line}` under \
                     manager.operandImages; fix the file and add it yourself"
                ));
                continue;
            }
        };
        // Listed already, with the user's image or memop's.
        if has_key(&values, env) {
            continue;
        }
        if !text.lines().any(|l| l.trim() == format!("# {tag}")) {
            plan.note(format!(
                "{path} is yours and has no `# {tag}` line under manager.operandImages, so memop did not add \
                 `{line}` there; add it yourself (the chart's default is that image)"
            ));
            continue;
        }
        plan.insert(path, marker, &format!("{line}\n"))?;
        let after = plan.read(Path::new(path))?.unwrap_or_default();
        if !serde_yaml::from_str::<Value>(&after).is_ok_and(|v| has_key(&v, env)) {
            plan.write(path, text)?;
            plan.note(format!(
                "{path} is yours, and a line `{line}` at its `# {tag}` line would not be valid YAML there (is \
                 manager.operandImages in flow style?), so memop did not add it; add the image yourself"
            ));
        }
    }
    Ok(())
}

/// Whether `value` has a mapping with the key `key`, at any depth.
fn has_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Mapping(map) => map.iter().any(|(k, v)| k.as_str() == Some(key) || has_key(v, key)),
        Value::Sequence(items) => items.iter().any(|v| has_key(v, key)),
        Value::Tagged(tagged) => has_key(&tagged.value, key),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Kind;

    /// The manager Deployment's manifest.
    const MANAGER: &str = "config/manager/manager.yaml";

    const IMAGE: &str = "memcached:1.6.30";

    fn kind() -> Kind {
        Kind::parse("Memcached").unwrap()
    }

    /// A manager.yaml with `env` as given (indented as the template indents it).
    fn manager(env: &str) -> String {
        let env: String = env.lines().map(|l| format!("        {l}\n")).collect();
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: system\n---\napiVersion: apps/v1\nkind: Deployment\n\
             metadata:\n  name: controller-manager\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n\
             \x20       image: controller:latest\n        env:\n        # Log filter.\n        - name: RUST_LOG\n\
             \x20         value: info\n{env}        # +memop:scaffold:env\n        ports:\n        - containerPort: 8081\n"
        )
    }

    /// Runs `set_image_env` over `text`: the file after, and the plan's notes.
    fn run(text: &str) -> (String, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config/manager")).unwrap();
        std::fs::write(dir.path().join(MANAGER), text).unwrap();
        let mut plan = Plan::new(dir.path()).unwrap();
        set_image_env(&mut plan, MANAGER, &format!("{}_IMAGE", kind().screaming()), IMAGE).unwrap();
        let notes = plan.notes().to_vec();
        plan.apply().unwrap();
        (std::fs::read_to_string(dir.path().join(MANAGER)).unwrap(), notes)
    }

    #[test]
    fn every_spelling_of_a_value_is_rewritten_in_place() {
        #[rustfmt::skip]
        let cases = [
            ("- name: MEMCACHED_IMAGE\n  value: \"memcached:1.6.26\"\n",
             "- name: MEMCACHED_IMAGE\n  value: \"memcached:1.6.30\"\n"),
            ("- name: \"MEMCACHED_IMAGE\"\n  value: memcached:1.6.26 # pinned\n",
             "- name: \"MEMCACHED_IMAGE\"\n  value: \"memcached:1.6.30\" # pinned\n"),
            ("- name: 'MEMCACHED_IMAGE'\n  value: 'memcached:1.6.26'\n",
             "- name: 'MEMCACHED_IMAGE'\n  value: \"memcached:1.6.30\"\n"),
            ("- value: memcached:1.6.26\n  name: MEMCACHED_IMAGE\n",
             "- value: \"memcached:1.6.30\"\n  name: MEMCACHED_IMAGE\n"),
            ("-   name:   MEMCACHED_IMAGE\n    # the operand\n    value:    memcached:1.6.26\n",
             "-   name:   MEMCACHED_IMAGE\n    # the operand\n    value:    \"memcached:1.6.30\"\n"),
            ("- {name: MEMCACHED_IMAGE, value: foo}\n", "- {name: MEMCACHED_IMAGE, value: \"memcached:1.6.30\"}\n"),
            ("- {value: 'foo', \"name\": \"MEMCACHED_IMAGE\"}\n",
             "- {value: \"memcached:1.6.30\", \"name\": \"MEMCACHED_IMAGE\"}\n"),
        ];
        for (env, want) in cases {
            let (after, notes) = run(&manager(env));
            assert_eq!(after, manager(want), "{env}");
            assert!(notes.is_empty(), "{env}: {notes:?}");
            assert!(has_env(&after, "MEMCACHED_IMAGE"), "{env}");
            assert!(!has_env(&after, "REDIS_IMAGE") && !has_env(&after, "MEMCACHED"), "{env}");
        }
    }

    #[test]
    fn the_keyed_fragment_is_inserted_once_then_updated_in_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config/manager")).unwrap();
        std::fs::write(dir.path().join(MANAGER), manager("")).unwrap();
        let mut plan = Plan::new(dir.path()).unwrap();
        let fragment = |image: &str| format!("- name: MEMCACHED_IMAGE\n  value: \"{image}\"\n");
        upsert(&mut plan, MANAGER, "env", &fragment("memcached:1.6.26")).unwrap();
        upsert(&mut plan, MANAGER, "env", &fragment(IMAGE)).unwrap();
        let after = plan.read(Path::new(MANAGER)).unwrap().unwrap();
        assert_eq!(after, manager(&fragment(IMAGE)));
        assert!(plan.notes().is_empty(), "{:?}", plan.notes());
    }

    #[test]
    fn crlf_line_endings_are_kept() {
        let text = manager("- name: MEMCACHED_IMAGE\n  value: foo\n").replace('\n', "\r\n");
        let (after, notes) = run(&text);
        assert_eq!(after, text.replace("value: foo", "value: \"memcached:1.6.30\""), "{notes:?}");
    }

    #[test]
    fn other_entries_and_lines_are_untouched() {
        let text = manager("- name: REDIS_IMAGE\n  value: redis:7\n");
        let (after, notes) = run(&text);
        assert_eq!(after, text);
        assert!(notes.is_empty());
        // A name that only starts like it.
        let text = manager("- name: MEMCACHED_IMAGES\n  value: foo\n");
        assert_eq!(run(&text).0, text);
        assert!(!has_env(&text, "MEMCACHED_IMAGE"));
    }

    #[test]
    fn values_memop_cannot_rewrite_are_kept_with_a_note() {
        for env in [
            "- name: MEMCACHED_IMAGE\n  valueFrom:\n    configMapKeyRef: {name: images, key: memcached}\n",
            "- name: MEMCACHED_IMAGE\n  value: >-\n    memcached:1.6.26\n",
            "- name: MEMCACHED_IMAGE\n  value:\n    memcached:1.6.26\n",
        ] {
            let text = manager(env);
            let (after, notes) = run(&text);
            assert_eq!(after, text, "{env}");
            assert_eq!(notes.len(), 1, "{env}: {notes:?}");
            assert!(notes[0].starts_with("MEMCACHED_IMAGE in config/manager/manager.yaml is yours"), "{notes:?}");
            assert!(has_env(&text, "MEMCACHED_IMAGE"), "{env}");
        }
    }

    #[test]
    fn a_file_that_is_not_yaml_is_kept() {
        let text = "env:\n- name: MEMCACHED_IMAGE\n  value: [unclosed\n";
        let (after, notes) = run(text);
        assert_eq!(after, text);
        assert!(notes[0].contains("cannot parse the file as YAML"), "{notes:?}");
        assert!(has_env(text, "MEMCACHED_IMAGE"));
        assert!(!has_env(text, "REDIS_IMAGE"));
    }

    #[test]
    fn a_missing_entry_is_no_change() {
        let text = manager("");
        let (after, notes) = run(&text);
        assert_eq!((after.as_str(), notes.len()), (text.as_str(), 0));
        assert!(!has_env(&text, "MEMCACHED_IMAGE"));
        assert!(has_env(&text, "RUST_LOG"));
    }

    #[test]
    fn the_operand_image_of_a_new_kind_goes_into_values_at_the_marker() {
        let dir = tempfile::tempdir().unwrap();
        let path = "dist/chart/values.yaml";
        let values =
            "manager:\n  operandImages:\n    MEMCACHED_IMAGE: \"mine:1\"\n    # +memop:scaffold:operand-images\n";
        std::fs::create_dir_all(dir.path().join("dist/chart")).unwrap();
        std::fs::write(dir.path().join(path), values).unwrap();
        let images = [("MEMCACHED_IMAGE", "memcached:1"), ("REDIS_IMAGE", "redis:7")];
        let images: Vec<(String, String)> =
            images.iter().map(|(env, image)| (env.to_string(), image.to_string())).collect();
        let mut plan = Plan::new(dir.path()).unwrap();
        add_to_values(&mut plan, path, "operand-images", &images).unwrap();
        // The user's image of Memcached is kept; Redis's is added once.
        let text = plan.read(Path::new(path)).unwrap().unwrap();
        assert_eq!(
            text,
            "manager:\n  operandImages:\n    MEMCACHED_IMAGE: \"mine:1\"\n    REDIS_IMAGE: \"redis:7\"\n    # \
             +memop:scaffold:operand-images\n"
        );
        // Without the marker: a note, and the file as it is.
        let mut plan = Plan::new(dir.path()).unwrap();
        let bare = "manager:\n  operandImages:\n    MEMCACHED_IMAGE: \"mine:1\"\n";
        std::fs::write(dir.path().join(path), bare).unwrap();
        add_to_values(&mut plan, path, "operand-images", &images).unwrap();
        assert!(plan.is_empty());
        assert!(plan.notes()[0].contains("REDIS_IMAGE: \"redis:7\""), "{:?}", plan.notes());
    }
}
