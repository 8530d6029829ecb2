//! The embedded templates and their rendering.
//!
//! `templates/` mirrors the generated tree. Under each scaffold root (`init`, `resource`,
//! `controller-operand`, `controller-skeleton`) a file
//! named `X.tera` renders to the generated file `X`, and a file named `X@MARKER.tera` renders to
//! a fragment inserted into `X` just before its `+memop:scaffold:MARKER` line (or, for a keyed
//! fragment, `{# key: … #}`, put in place of what the file has of its key: see [`Key`]). Path segments of
//! the form `__name__` are replaced with the context's string value `name` (for example
//! `src/controller/__kind_snake__.rs.tera`). `templates/_partials/` holds pieces that templates
//! include; they render to nothing on their own.

use anyhow::{Result, anyhow, bail};
use std::collections::HashMap;

use crate::embedded::{SUFFIX, TEMPLATES, collect};
use tera::{Context, Tera};

/// How a template declares whose its file is, and the properties of the file (see [`Declared`]).
const OWNER: &str = "{# owner: ";
/// How a fragment declares its key (see [`Key`]).
const KEYS: &[(&str, Key)] =
    &[("{# key: first-token", Key::FirstToken), ("{# key: image-env", Key::ImageEnv), ("{# key: sorted", Key::Sorted)];
const PARTIALS: &str = "_partials/";

/// One template of a scaffold root, already classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Renders to the whole file at `path`, which its template declares whose it is.
    File { template: String, path: String, declared: Declared },
    /// Renders to a fragment inserted before `marker` in the file at `path`; a keyed one
    /// replaces what the file has of its key instead, when it has it.
    Fragment { template: String, path: String, marker: String, key: Option<Key> },
}

/// How a fragment is keyed, as its template declares in a first-line Tera comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// `{# key: first-token … #}`: one line keyed by its first token: rendered again, it
    /// replaces the line of the file with the same first token instead of adding a second one
    /// (`STORAGE_VERSIONS` has one entry per CRD). See [`Plan::upsert`](super::Plan::upsert).
    FirstToken,
    /// `{# key: image-env … #}`: an operand image's env entry of the manager Deployment, keyed
    /// by its name, in whatever spelling the file has it. See [`super::image_env::upsert`].
    ImageEnv,
    /// `{# key: sorted … #}`: an entry of a list sorted by its text (the controllers' modules,
    /// their `register` calls, the webhooks' routes, the conversions), so that the list is a
    /// function of PROJECT, whatever order its commands ran in. See
    /// [`Plan::insert_sorted`](super::Plan::insert_sorted).
    Sorted,
}

/// Whose a generated file is, as its template declares on its first line: `{# owner: memop #}`,
/// `{# owner: user #}` or `{# owner: generated #}`, then maybe its properties (see [`Declared`]).
/// Every whole-file template declares one (a unit test sees to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// memop's (the Makefile, `config/`, `src/main.rs` and the other files commands extend at
    /// their markers): brought to this memop's text by `memop update`, merged three ways with the
    /// user's edits over what memop wrote then.
    Memop,
    /// The user's (an API's types, a controller's logic, samples, the README): written once, and
    /// never rewritten, but where the template says `refreshed while unedited`.
    User,
    /// Generated from the user's code (a CRD, the manager role, the webhook configurations): an
    /// editor of memop's writes it (see `generated`), and later `make manifests`.
    Generated,
}

/// Which commands render a file: what one that finds it there already does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One per project (its template's path names no kind: no `__name__` segment), which the
    /// user may have already (a README): kept.
    Project,
    /// One per API: refused, unless the command overwrites (`--force`).
    Api,
    /// `scope: kind`: one per kind, whatever its version (its RBAC helper roles): as [`Scope::Api`]
    /// for the kind's first version, left by a new version.
    Kind,
    /// `scope: shared`: made by the first command that renders it, then only extended at its
    /// markers by the others (a module list, a kustomization): left.
    Shared,
}

/// What a template declares of its file: its owner, its scope, and for the user's, whether memop
/// renders it again while it is as memop wrote it (`refreshed while unedited`: a controller, the
/// kind's tests, which follow the runtime's API until the user edits them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared {
    pub owner: Owner,
    pub scope: Scope,
    pub refresh: bool,
}

impl Declared {
    /// A file of `owner` in `scope`, not refreshed: what a command declares of a file it writes
    /// without a template (`vendor/`, the lock).
    pub const fn new(owner: Owner, scope: Scope) -> Self {
        Self { owner, scope, refresh: false }
    }
}

/// A file of `owner` that no template declares (one a command writes itself): one per API.
impl From<Owner> for Declared {
    fn from(owner: Owner) -> Self {
        Self::new(owner, Scope::Api)
    }
}

/// The templates a command needs, parsed once.
///
/// Parsing is most of memop's run time, so a command loads only the templates it renders, and
/// a template with no Tera syntax past an optional first-line `{% include %}` (the license
/// header) is kept as plain text instead of being parsed.
pub struct Templates {
    tera: Tera,
    /// Plain templates: the partial their first line includes, if any, and the rest verbatim.
    plain: HashMap<String, (Option<String>, &'static str)>,
    names: Vec<String>,
    /// Every loaded template's text.
    sources: HashMap<String, &'static str>,
}

impl Templates {
    /// The templates of the scaffold `roots` (`"init"`, `"resource"`, …), and the partials they
    /// include.
    pub fn load(roots: &[&str]) -> Result<Self> {
        Self::load_where(|name| {
            roots.iter().any(|root| name.strip_prefix(root).is_some_and(|rest| rest.starts_with('/')))
        })
    }

    /// The templates whose names `wanted` accepts, and the partials.
    fn load_where(wanted: impl Fn(&str) -> bool) -> Result<Self> {
        let mut sources = Vec::new();
        collect(&TEMPLATES, &mut sources);
        sources.retain(|(name, _)| name.starts_with(PARTIALS) || wanted(name));
        sources.sort();
        let mut tera = Tera::default();
        // Generated files are code and YAML, never HTML: no escaping.
        tera.autoescape_on(vec![]);
        let mut plain = HashMap::new();
        let mut parsed = Vec::new();
        for (name, text) in &sources {
            match split_plain(text) {
                Some(parts) if !name.starts_with(PARTIALS) => {
                    plain.insert(name.clone(), parts);
                }
                _ => parsed.push((name.as_str(), *text)),
            }
        }
        tera.add_raw_templates(parsed).map_err(|e| anyhow!("memop's own templates do not parse: {}", chain(&e)))?;
        let names = sources.iter().map(|(n, _)| n.clone()).collect();
        let sources = sources.into_iter().collect();
        Ok(Self { tera, plain, names, sources })
    }

    /// True for a template that renders the same text for every project (but for its license
    /// header): formatted once, in `templates/`, so its output needs no rustfmt pass.
    pub fn is_plain(&self, template: &str) -> bool {
        self.plain.contains_key(template)
    }

    /// Renders one template by its name (its path under `templates/`).
    pub fn render(&self, template: &str, ctx: &Context) -> Result<String> {
        if let Some((include, body)) = self.plain.get(template) {
            let mut out = match include {
                Some(partial) => self.render(partial, ctx)?,
                None => String::new(),
            };
            out.push_str(body);
            return Ok(out);
        }
        self.tera.render(template, ctx).map_err(|e| anyhow!("rendering template {template}: {}", chain(&e)))
    }

    /// The templates under `root/`, with their output paths resolved from `ctx`.
    pub fn entries(&self, root: &str, ctx: &Context) -> Result<Vec<Entry>> {
        let prefix = format!("{root}/");
        let mut entries = Vec::new();
        for name in self.names.iter().filter(|n| n.starts_with(&prefix)) {
            let relative = &name[prefix.len()..name.len() - SUFFIX.len()];
            let resolved = substitute(relative, ctx)?;
            let text = self.sources.get(name).copied().unwrap_or_default();
            entries.push(match resolved.rsplit_once('@') {
                Some((path, marker)) => Entry::Fragment {
                    template: name.clone(),
                    path: path.to_string(),
                    marker: marker.to_string(),
                    key: KEYS.iter().find(|(header, _)| text.starts_with(header)).map(|(_, key)| *key),
                },
                None => {
                    let scope = if relative.contains("__") { Scope::Api } else { Scope::Project };
                    let declared =
                        declared(text, scope).unwrap_or(Declared { owner: Owner::Memop, scope, refresh: false });
                    Entry::File { template: name.clone(), path: resolved, declared }
                }
            });
        }
        if entries.is_empty() {
            bail!("memop has no templates under {root}/");
        }
        Ok(entries)
    }
}

/// What `text`, a template of a whole file, declares on its first line, if anything: its owner,
/// then `, scope: kind` or `, scope: shared` (else `scope`, from the template's path), and
/// `, refreshed while unedited`.
fn declared(text: &str, scope: Scope) -> Option<Declared> {
    let rest = text.strip_prefix(OWNER)?;
    let owners = [("memop", Owner::Memop), ("user", Owner::User), ("generated", Owner::Generated)];
    let (owner, mut rest) = owners.into_iter().find_map(|(word, owner)| Some((owner, rest.strip_prefix(word)?)))?;
    let mut declared = Declared { owner, scope, refresh: false };
    loop {
        if let Some(after) = rest.strip_prefix(", scope: kind") {
            declared.scope = Scope::Kind;
            rest = after;
        } else if let Some(after) = rest.strip_prefix(", scope: shared") {
            declared.scope = Scope::Shared;
            rest = after;
        } else if let Some(after) = rest.strip_prefix(", refreshed while unedited") {
            declared.refresh = true;
            rest = after;
        } else {
            break;
        }
    }
    rest.starts_with(' ').then_some(declared)
}

/// Splits a template with no Tera syntax, except maybe a leading declaration of its owner (see
/// [`Owner`]) and then a `{% include "…" %}`, into the included template's name and the verbatim
/// rest; `None` for any other template.
fn split_plain(text: &'static str) -> Option<(Option<String>, &'static str)> {
    let text = match declared(text, Scope::Project) {
        Some(_) => &text[text.find("#}")? + 2..],
        None => text,
    };
    let (include, body) = match text.strip_prefix("{% include \"") {
        Some(rest) => {
            let (name, body) = rest.split_once("\" %}")?;
            (Some(name.to_string()), body)
        }
        None => (None, text),
    };
    let tera_syntax = ["{{", "{%", "{#"].iter().any(|tag| body.contains(tag));
    (!tera_syntax).then_some((include, body))
}

/// Replaces `__name__` path segments (or parts of segments) with context strings.
fn substitute(path: &str, ctx: &Context) -> Result<String> {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find("__") {
        let after = &rest[start + 2..];
        let Some(len) = after.find("__") else { break };
        let key = &after[..len];
        let value = ctx
            .get(key)
            .and_then(|v| v.as_str())
            .ok_or_else(|| anyhow!("template path {path} names `{key}`, which is not a string in the context"))?;
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &after[len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Tera hides the cause of a failure in the error's source chain.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    /// Every template of a whole file says whose the file is on its first line (see [`Owner`]):
    /// without it, a file would be memop's by default, and a new template of the user's would be
    /// merged over by `memop update`. Fragments (`…@marker`) go into their file, and partials
    /// into their template.
    #[test]
    fn every_template_declares_whose_its_file_is() {
        let mut sources = Vec::new();
        collect(&TEMPLATES, &mut sources);
        let files: Vec<&(String, &str)> =
            sources.iter().filter(|(name, _)| !name.starts_with(PARTIALS) && !name.contains('@')).collect();
        assert!(files.len() > 100, "{}", files.len());
        let undeclared: Vec<&str> = files
            .iter()
            .filter(|(_, text)| declared(text, Scope::Project).is_none())
            .map(|(name, _)| name.as_str())
            .collect();
        assert!(
            undeclared.is_empty(),
            "templates that declare no owner (`{OWNER}memop #}}`, `{OWNER}user #}}`, `{OWNER}generated #}}`, \
             with maybe `, scope: kind`, `, scope: shared` or `, refreshed while unedited` after it): \
             {undeclared:#?}"
        );
        let declared = |text: &str| declared(text, Scope::Project).unwrap();
        assert_eq!(
            declared("{# owner: user, refreshed while unedited (why) #}x"),
            Declared { owner: Owner::User, scope: Scope::Project, refresh: true }
        );
        assert_eq!(declared("{# owner: memop, scope: shared #}x").scope, Scope::Shared);
        assert_eq!(declared("{# owner: memop, scope: kind #}x").scope, Scope::Kind);
        assert!(super::declared("{# owner: users #}", Scope::Project).is_none(), "no owner of that name");
    }

    /// The files a kind's scaffolds make for it to fill in (its types, its controller's logic,
    /// its tests and benchmark, its webhooks and conversions: every Rust file named after the
    /// kind) are declared the user's, which `memop update` never rewrites.
    #[test]
    fn a_kinds_own_code_is_declared_the_users() {
        let mut sources = Vec::new();
        collect(&TEMPLATES, &mut sources);
        let kinds: Vec<&(String, &str)> =
            sources.iter().filter(|(name, _)| name.contains("__kind_snake__") && name.ends_with(".rs.tera")).collect();
        assert!(kinds.len() >= 8, "{kinds:?}");
        for (name, text) in kinds {
            let owner = declared(text, Scope::Api).map(|declared| declared.owner);
            assert_eq!(owner, Some(Owner::User), "{name} does not say `{OWNER}user #}}`");
        }
    }

    #[test]
    fn reserved_kind_files_are_the_fixed_files_beside_the_kinds() {
        let paths = crate::embedded::reserved_kind_files();
        for expected in ["tests/e2e.rs", "tests/manifests.rs", "tests/webhook_certs.rs", "src/controller/mod.rs"] {
            assert!(paths.iter().any(|p| p == expected), "{expected} missing from {paths:?}");
        }
        assert!(!paths.iter().any(|p| p == "src/main.rs"), "src/ holds no kind's file: {paths:?}");
    }

    use super::*;
    use crate::embedded::{dependency_crates, generated_names, locked_packages};

    #[test]
    fn the_names_a_project_cannot_take_come_from_the_templates() {
        let names = generated_names();
        // The manifests binary, the hub alias of the conversion tests, the webhook module the
        // webhook tests import, and the api module.
        for name in ["manifests", "hub", "webhook", "api"] {
            assert!(names.iter().any(|n| n == name), "{name} missing from {names:?}");
        }
        for name in ["self", "memcached_operator", "Duration", ""] {
            assert!(!names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        let packages = locked_packages();
        assert!(packages.iter().any(|p| p == "log") && packages.iter().any(|p| p == "tokio-util"), "{packages:?}");
        // The lock's own package becomes the project's.
        assert!(!packages.iter().any(|p| p == "memcached-operator"), "{packages:?}");
    }

    #[test]
    fn the_dependencies_of_generated_projects_are_known() {
        let crates = dependency_crates();
        for name in ["kube", "tokio", "serde", "anyhow", "k8s_openapi", "memop_runtime", "memop_test"] {
            assert!(crates.contains(&name.to_string()), "{name} in {crates:?}");
        }
    }

    /// Every name that a per-kind template imports or declares is refused as a kind
    /// (`names::GENERATED_NAMES`): a kind of that name would not compile.
    #[test]
    fn names_imported_by_the_templates_are_reserved() {
        let mut sources = Vec::new();
        collect(&TEMPLATES, &mut sources);
        let per_kind = [
            "controller-core/",
            "controller-external/",
            "controller-operand/",
            "controller-skeleton/",
            "resource/",
            "webhook/",
        ];
        let mut missing = std::collections::BTreeSet::new();
        for (name, text) in sources.iter().filter(|(n, _)| per_kind.iter().any(|p| n.starts_with(p))) {
            if name.contains('@') || declared(text, Scope::Api).is_some_and(|d| d.scope == Scope::Shared) {
                continue; // fragments inserted into shared files, and shared files: not per-kind files
            }
            // Template expressions make the kind's own names ({{ kind }}Spec and the like).
            let text = text.replace("{{ kind }}", "KIND");
            let text = replace_between(&replace_between(&text, "{{", "}}", "expr"), "{%", "%}", "");
            let mut statements: Vec<&str> = Vec::new();
            for (at, _) in text.match_indices("use ") {
                let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                if text[line_start..at].trim().is_empty() || text[line_start..at].trim() == "pub" {
                    statements.push(text[at..].split(';').next().unwrap_or_default());
                }
            }
            for raw in text.lines() {
                let line = raw.trim_start();
                for keyword in ["struct ", "enum ", "trait ", "type ", "const ", "static "] {
                    // An associated type or const of an impl (`type Object = KIND;`,
                    // `const CONDITIONS: …`) declares nothing at the module's level.
                    if matches!(keyword, "type " | "const ") && raw.starts_with(char::is_whitespace) {
                        continue;
                    }
                    let line = line.strip_prefix("pub ").unwrap_or(line);
                    if let Some(rest) = line.strip_prefix(keyword) {
                        statements
                            .push(rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or_default());
                    }
                }
            }
            // A file whose code names the kind only by a path (`api::KIND`) cannot clash with it.
            let code: String =
                text.lines().filter(|l| !l.trim_start().starts_with("//")).map(|l| format!("{l}\n")).collect();
            let bare = code.match_indices("KIND").any(|(at, _)| {
                let after = code[at + 4..].chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_');
                !after && !code[..at].ends_with("::")
            });
            if !bare {
                continue;
            }
            for statement in statements {
                for ident in statement.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                    // A kind is letters and digits only, and is never `KIND…` itself here.
                    let could_be_a_kind = ident.starts_with(|c: char| c.is_ascii_uppercase())
                        && !ident.contains('_')
                        && !ident.contains("KIND");
                    if could_be_a_kind && crate::names::Kind::parse(ident).is_ok() {
                        missing.insert(format!("{ident} ({name})"));
                    }
                }
            }
        }
        assert!(missing.is_empty(), "add to names::GENERATED_NAMES: {missing:?}");
    }

    /// The templates of a controller over a kind of Kubernetes' own name none of those kinds
    /// (`names::builtin`), which `Kind::parse_builtin` lets through: `Deployment` is fine for a
    /// controller over Deployments only while its files use that name for nothing else.
    #[test]
    fn controllers_of_kubernetes_kinds_use_none_of_their_names() {
        let mut sources = Vec::new();
        collect(&TEMPLATES, &mut sources);
        for (name, text) in sources.iter().filter(|(n, _)| n.starts_with("controller-core/")) {
            let text = replace_between(&replace_between(text, "{{", "}}", "expr"), "{%", "%}", "");
            let text: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
            let words: std::collections::BTreeSet<&str> =
                text.split(|c: char| !(c.is_alphanumeric() || c == '_')).collect();
            for kind in crate::names::builtin::KINDS {
                assert!(!words.contains(kind.kind), "{name} uses the name {}", kind.kind);
            }
        }
    }

    fn replace_between(text: &str, open: &str, close: &str, with: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find(open) {
            out.push_str(&rest[..start]);
            out.push_str(with);
            rest = rest[start..].split_once(close).map_or("", |(_, after)| after);
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn substitutes_placeholders_in_paths() {
        let mut ctx = Context::new();
        ctx.insert("kind_snake", "memcached");
        ctx.insert("group_module", "cache");
        assert_eq!(
            substitute("src/api/__group_module__/__kind_snake__.rs", &ctx).unwrap(),
            "src/api/cache/memcached.rs"
        );
        assert_eq!(substitute("Makefile", &ctx).unwrap(), "Makefile");
        assert!(substitute("src/__missing__.rs", &ctx).is_err());
    }

    #[test]
    fn every_embedded_template_parses() {
        let templates = Templates::load_where(|_| true).unwrap();
        assert!(templates.names.iter().any(|n| n.starts_with("init/")));
        assert!(!templates.plain.is_empty(), "the license-header-only templates are plain");
    }

    #[test]
    fn plain_templates_render_their_header_and_body_verbatim() {
        assert_eq!(split_plain("no tags {here}\n"), Some((None, "no tags {here}\n")));
        assert_eq!(
            split_plain("{% include \"_partials/h\" %}fn main() {}\n"),
            Some((Some("_partials/h".into()), "fn main() {}\n"))
        );
        assert_eq!(split_plain("{{ kind }}"), None);
        // A declaration of the file's owner is no Tera syntax for the text.
        assert_eq!(
            split_plain("{# owner: memop #}{% include \"_partials/h\" %}fn main() {}\n"),
            Some((Some("_partials/h".into()), "fn main() {}\n"))
        );
        assert_eq!(split_plain("{# owner: user #}# {{ project_name }}\n"), None);
        let templates = Templates::load(&["init"]).unwrap();
        let mut ctx = Context::new();
        ctx.insert("boilerplate", "// Copyright 2026 The p Authors.\n");
        let text = templates.render("init/src/controller/mod.rs.tera", &ctx).unwrap();
        assert!(text.starts_with("// Copyright 2026 The p Authors.\n\n//! The controllers"), "{text}");
    }

    /// Plain templates skip the rustfmt pass at generation, so they must be formatted already
    /// (`scripts/fmt-templates.py` formats them).
    #[test]
    fn plain_rust_templates_are_rustfmt_clean() {
        use std::io::Write as _;
        let templates = Templates::load_where(|_| true).unwrap();
        let mut checked = 0;
        for (name, (_, body)) in templates.plain.iter().filter(|(n, _)| n.ends_with(".rs.tera")) {
            // Outside the repository: memop's own rustfmt.toml is not the generated projects'.
            let mut child = std::process::Command::new("rustfmt")
                .current_dir(std::env::temp_dir())
                .args(["--edition", "2024", "--check"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("rustfmt on PATH");
            child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{name} is not rustfmt-clean:\n{}", String::from_utf8_lossy(&out.stdout));
            checked += 1;
        }
        assert!(checked >= 2, "checked {checked} plain Rust templates");
    }
}
