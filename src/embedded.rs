//! The text memop ships with itself: the templates (`templates/`, embedded) and what other
//! modules read out of them without rendering them: the crates and names a generated project
//! uses, which `names` reserves, and the packages of the lock every project ships.

use include_dir::{Dir, include_dir};

/// Every template, by its path under `templates/`.
pub(crate) static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// The ending of a template's file name.
pub(crate) const SUFFIX: &str = ".tera";

/// The name of the example project's own package in the lock every project ships
/// (`templates/_lock/Cargo.lock`, the example's), which `init` renames to the project's.
pub(crate) const EXAMPLE: &str = "memcached-operator";

/// Every template under `dir`, as (name, text).
pub(crate) fn collect(dir: &'static Dir<'static>, out: &mut Vec<(String, &'static str)>) {
    for file in dir.files() {
        let name = file.path().to_string_lossy().replace('\\', "/");
        if let (true, Some(text)) = (name.ends_with(SUFFIX), file.contents_utf8()) {
            out.push((name, text));
        }
    }
    for sub in dir.dirs() {
        collect(sub, out);
    }
}

/// The files a kind may not be named like: the fixed files of the directories where each kind
/// gets a file named after it (`tests/e2e.rs` beside `tests/<kind>.rs`, for instance). A kind
/// named like one would overwrite it, or be refused as existing. Paths as generated.
pub fn reserved_kind_files() -> &'static [String] {
    static PATHS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    PATHS.get_or_init(|| {
        let mut templates = Vec::new();
        collect(&TEMPLATES, &mut templates);
        // The output path of each whole-file template: without its root and suffix.
        let outputs: Vec<&str> = templates
            .iter()
            .filter_map(|(path, _)| path.split_once('/')?.1.strip_suffix(SUFFIX))
            .filter(|path| !path.contains('@'))
            .collect();
        let dir = |path: &str| path.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
        let file = |path: &str| path.rsplit('/').next().unwrap_or(path).to_string();
        let per_kind: std::collections::BTreeSet<String> =
            outputs.iter().filter(|p| file(p).starts_with("__kind_snake__")).map(|p| dir(p)).collect();
        let mut paths: Vec<String> = outputs
            .iter()
            .filter(|p| per_kind.contains(&dir(p)) && !file(p).contains("__") && p.ends_with(".rs"))
            .map(|p| p.to_string())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    })
}

/// The `Cargo.toml` template every generated project starts from.
pub fn project_manifest() -> &'static str {
    TEMPLATES.get_file("init/Cargo.toml.tera").and_then(|f| f.contents_utf8()).unwrap_or_default()
}

/// The crates a generated project depends on, from the `[dependencies]` and
/// `[dev-dependencies]` of its `Cargo.toml` template, as it names them: sorted, each once (a crate
/// in both sections, with more features for tests, is one dependency).
pub fn dependencies() -> Vec<&'static str> {
    let mut in_dependencies = false;
    let mut crates = Vec::new();
    for line in project_manifest().lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = matches!(line, "[dependencies]" | "[dev-dependencies]");
        } else if let Some((name, _)) = line.split_once('=').filter(|_| in_dependencies) {
            let name = name.trim();
            if !name.is_empty() && !name.starts_with('#') {
                crates.push(name);
            }
        }
    }
    crates.sort();
    crates.dedup();
    crates
}

/// The crate names (`-` as `_`) that a generated project depends on (see [`dependencies`]): a
/// project may not be named like one.
pub fn dependency_crates() -> Vec<String> {
    dependencies().into_iter().map(|name| name.replace('-', "_")).collect()
}

/// The lowercase names the generated code brings into scope itself: its binaries
/// (`src/bin/<name>.rs`) and every module a template imports (`use x::y::name;`, `use … as
/// name;`, `use x::{self, …}`). A project's crate named like one would make `use <crate>::…`
/// ambiguous beside the import, or clash with the binary: a project may not be named like one.
pub fn generated_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(scan_generated_names)
}

fn scan_generated_names() -> Vec<String> {
    let mut sources = Vec::new();
    collect(&TEMPLATES, &mut sources);
    let mut names = Vec::new();
    let mut add = |name: &str| {
        let name = name.trim();
        let is_module = name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if is_module && !matches!(name, "self" | "super" | "crate") && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    };
    for (path, template) in &sources {
        // Tera's expressions stand for the project's own names: not names of the templates.
        let text = without_tera(template, "Tera");
        if let Some(bin) = path.strip_prefix("init/src/bin/").and_then(|name| name.strip_suffix(".rs.tera")) {
            add(bin);
        }
        let statements = text.split(';').filter_map(|chunk| {
            // The statement starts on a line of its own, after any comments before it.
            let at = chunk.lines().position(|line| line.trim_start().starts_with("use "))?;
            let statement: Vec<&str> = chunk.lines().skip(at).collect();
            Some(statement.join(" ").trim_start().trim_start_matches("use ").to_string())
        });
        for statement in statements {
            // `a::b::{c, d as e, f::{self, g}}`: every imported item's last segment or alias.
            let statement = statement.replace(['{', '}'], ",");
            let mut parent = "";
            for item in statement.split(',') {
                let item = item.trim();
                let name = match item.rsplit_once(" as ") {
                    Some((_, alias)) => alias,
                    None => {
                        let last = item.rsplit("::").next().unwrap_or_default();
                        if last == "self" { parent } else { last }
                    }
                };
                add(name);
                if let Some((before, _)) = item.rsplit_once("::") {
                    parent = before.rsplit("::").next().unwrap_or_default();
                }
            }
        }
    }
    names
}

/// The packages of the `Cargo.lock` memop ships with every project (`templates/_lock`), but its
/// own (the example's, which memop renames to the project's): a project's package named like one
/// would not resolve with `--locked`.
pub fn locked_packages() -> &'static [String] {
    static PACKAGES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    PACKAGES.get_or_init(scan_locked_packages)
}

fn scan_locked_packages() -> Vec<String> {
    let lock = TEMPLATES.get_file("_lock/Cargo.lock").and_then(|f| f.contents_utf8()).unwrap_or_default();
    lock.lines()
        .filter_map(|line| line.strip_prefix("name = \""))
        .filter_map(|rest| rest.strip_suffix('"'))
        .filter(|name| *name != EXAMPLE)
        .map(String::from)
        .collect()
}

/// `template` with each Tera tag (`{{ … }}`, `{% … %}`, `{# … #}`) replaced by `stand_in`: the
/// text the template always renders, for scans of the names it uses.
pub fn without_tera(template: &str, stand_in: &str) -> String {
    let mut text = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = ["{{", "{%", "{#"].iter().filter_map(|open| rest.find(open)).min() {
        text.push_str(&rest[..start]);
        let close = match &rest[start..start + 2] {
            "{{" => "}}",
            "{%" => "%}",
            _ => "#}",
        };
        let end = rest[start..].find(close).map_or(rest.len(), |at| start + at + 2);
        text.push_str(stand_in);
        rest = &rest[end..];
    }
    text.push_str(rest);
    text
}
