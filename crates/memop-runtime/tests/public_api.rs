//! The public API of memop-runtime, pinned: every name a project can reach from `lib.rs`
//! (following `pub mod` and `pub use`), every `pub` method on those types and every `pub` field,
//! one a line, in `tests/snapshots/public_api__surface.snap`. A change to the surface fails this
//! test until the snapshot is updated on purpose (`INSTA_UPDATE=always cargo test -p
//! memop-runtime --test public_api`, then read the diff), and the surface stays within
//! [`LIMIT`] things.
//!
//! The walk reads the sources with `syn`, as a reader would: a name is public when it is `pub`
//! in a module reachable through `pub mod`, or re-exported by a `pub use` there. Trait
//! implementations' methods are the trait's, counted once with the trait; enum variants go with
//! their enum.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::{Fields, ImplItem, Item, TraitItem, UseTree, Visibility};

/// At most this many public things: top-level names, their `pub` methods and `pub` fields.
/// Everything here is used by a generated project, an example's own code, memop-test or memop,
/// or is a `Builder` setting or validation helper the docs offer; what only the runtime's tests
/// reached is crate-private, and those tests are in the crate (`src/tests/`), and the methods
/// of `WatchScope` and `Runnable` are sealed. Issue 50 asked for at most 180: the scenarios of
/// the runtime's own behaviour that each project used to be generated with (the self-managed
/// webhook certificate's renewal and the API server trusting it, the manager's and the system
/// namespaces kept out of the webhooks' reach) are the runtime's tests now, so
/// `webhook::certs`, `SYSTEM_NAMESPACES`, `manager_namespace_selector`,
/// `Webhook::skips_manager_namespace`, `manager::tls` and `manager::http` are the crate's own,
/// but for `manager::serve_https`, through which memop-test serves a test's webhooks as a
/// manager serves its own (one HTTPS server in the runtime, not a second in memop-test).
const LIMIT: usize = 180;

/// A definition: the module that defines it and its name there.
type Def = (Vec<String>, String);

#[derive(Default)]
struct Module {
    /// Items defined here: name → (kind, whether `pub`).
    items: BTreeMap<String, (Kind, bool)>,
    /// Names brought in by `use`: name → (absolute path, whether `pub use`).
    uses: BTreeMap<String, (Vec<String>, bool)>,
    /// Child modules: name → whether `pub mod`.
    children: BTreeMap<String, bool>,
}

#[derive(Clone, PartialEq)]
enum Kind {
    Struct(Vec<String>),
    Trait(Vec<String>),
    Other(&'static str),
}

impl Kind {
    fn word(&self) -> &'static str {
        match self {
            Kind::Struct(_) => "struct",
            Kind::Trait(_) => "trait",
            Kind::Other(word) => word,
        }
    }
}

/// What the crate defines, module by module, and the `pub` methods of its inherent impls (by the
/// type they are on, as written, with the module they are in).
#[derive(Default)]
struct Crate {
    modules: HashMap<Vec<String>, Module>,
    impls: Vec<(Vec<String>, Vec<String>, Vec<String>)>,
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Path>()
                .is_ok_and(|path| path.is_ident("test"))
    })
}

fn is_pub(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

impl Crate {
    fn read(&mut self, at: Vec<String>, items: Vec<Item>, dir: &Path) {
        let mut module = Module::default();
        for item in items {
            let (name, kind, vis) = match item {
                Item::Mod(m) if is_test(&m.attrs) => continue,
                Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let mut path = at.clone();
                    path.push(name.clone());
                    let child = match m.content {
                        Some((_, items)) => items,
                        None => parse(&[
                            dir.join(format!("{name}.rs")),
                            dir.join(&name).join("mod.rs"),
                        ]),
                    };
                    self.read(path, child, &dir.join(&name));
                    module.children.insert(name, is_pub(&m.vis));
                    continue;
                }
                Item::Use(u) => {
                    let mut found = Vec::new();
                    flatten(&u.tree, Vec::new(), &mut found);
                    for (name, path) in found {
                        let path = absolute(&at, path);
                        module.uses.insert(name, (path, is_pub(&u.vis)));
                    }
                    continue;
                }
                Item::Impl(i) if i.trait_.is_none() => {
                    let syn::Type::Path(ty) = &*i.self_ty else {
                        continue;
                    };
                    let ty = ty
                        .path
                        .segments
                        .iter()
                        .map(|s| s.ident.to_string())
                        .collect();
                    let methods = i
                        .items
                        .iter()
                        .filter_map(|item| match item {
                            ImplItem::Fn(f) if is_pub(&f.vis) => Some(f.sig.ident.to_string()),
                            ImplItem::Const(c) if is_pub(&c.vis) => Some(c.ident.to_string()),
                            _ => None,
                        })
                        .collect();
                    self.impls.push((at.clone(), ty, methods));
                    continue;
                }
                Item::Struct(s) => {
                    let fields = match &s.fields {
                        Fields::Named(named) => named
                            .named
                            .iter()
                            .filter(|f| is_pub(&f.vis))
                            .map(|f| f.ident.as_ref().unwrap().to_string())
                            .collect(),
                        _ => Vec::new(),
                    };
                    (s.ident, Kind::Struct(fields), s.vis)
                }
                Item::Trait(t) => {
                    let methods = t
                        .items
                        .iter()
                        .filter_map(|item| match item {
                            TraitItem::Fn(f) => Some(f.sig.ident.to_string()),
                            TraitItem::Const(c) => Some(c.ident.to_string()),
                            TraitItem::Type(t) => Some(t.ident.to_string()),
                            _ => None,
                        })
                        .collect();
                    (t.ident, Kind::Trait(methods), t.vis)
                }
                Item::Enum(e) => (e.ident, Kind::Other("enum"), e.vis),
                Item::Fn(f) => (f.sig.ident, Kind::Other("fn"), f.vis),
                Item::Const(c) => (c.ident, Kind::Other("const"), c.vis),
                Item::Static(s) => (s.ident, Kind::Other("static"), s.vis),
                Item::Type(t) => (t.ident, Kind::Other("type"), t.vis),
                _ => continue,
            };
            module.items.insert(name.to_string(), (kind, is_pub(&vis)));
        }
        self.modules.insert(at, module);
    }

    /// What `path` (absolute) names: a definition of this crate, a module (name `""`), or
    /// nothing (another crate's).
    fn resolve(&self, path: &[String]) -> Option<Def> {
        let (last, parent) = path.split_last()?;
        if self.modules.contains_key(path) {
            return Some((path.to_vec(), String::new()));
        }
        let module = self.modules.get(parent)?;
        if module.items.contains_key(last) {
            return Some((parent.to_vec(), last.clone()));
        }
        let (target, _) = module.uses.get(last)?;
        self.resolve(target)
    }

    /// The definition that the type `ty`, written in module `at`, is.
    fn resolve_type(&self, at: &[String], ty: &[String]) -> Option<Def> {
        let (first, rest) = ty.split_first()?;
        let module = self.modules.get(at)?;
        let mut path = if module.items.contains_key(first) || module.children.contains_key(first) {
            let mut path = at.to_vec();
            path.push(first.clone());
            path
        } else if let Some((target, _)) = module.uses.get(first) {
            target.clone()
        } else {
            absolute(at, vec![first.clone()])
        };
        path.extend(rest.iter().cloned());
        self.resolve(&path)
    }

    /// Every public thing, one line each: `kind path`.
    fn surface(&self) -> Vec<String> {
        let mut names: BTreeMap<Def, (String, Kind)> = BTreeMap::new();
        let mut walked = BTreeSet::new();
        self.walk(&[], "", &mut names, &mut walked);
        let mut lines = BTreeSet::new();
        for (def, (public, kind)) in &names {
            lines.insert(format!("{} {public}", kind.word()));
            let members: Vec<(&str, String)> = match kind {
                Kind::Struct(fields) => fields.iter().map(|f| ("field", f.clone())).collect(),
                Kind::Trait(methods) => methods.iter().map(|m| ("method", m.clone())).collect(),
                Kind::Other(_) => Vec::new(),
            };
            let inherent = self
                .impls
                .iter()
                .filter(|(at, ty, _)| self.resolve_type(at, ty).as_ref() == Some(def))
                .flat_map(|(_, _, methods)| methods.iter().map(|m| ("method", m.clone())));
            for (word, member) in members.into_iter().chain(inherent) {
                lines.insert(format!("{word} {public}::{member}"));
            }
        }
        lines.into_iter().collect()
    }

    fn walk(
        &self,
        at: &[String],
        public: &str,
        names: &mut BTreeMap<Def, (String, Kind)>,
        walked: &mut BTreeSet<Vec<String>>,
    ) {
        if !walked.insert(at.to_vec()) {
            return;
        }
        let module = &self.modules[at];
        let join = |name: &str| {
            if public.is_empty() {
                name.to_string()
            } else {
                format!("{public}::{name}")
            }
        };
        for (name, (kind, public_item)) in &module.items {
            if *public_item {
                names
                    .entry((at.to_vec(), name.clone()))
                    .or_insert_with(|| (join(name), kind.clone()));
            }
        }
        for (name, public_child) in &module.children {
            if *public_child {
                let mut child = at.to_vec();
                child.push(name.clone());
                self.walk(&child, &join(name), names, walked);
            }
        }
        for (name, (target, public_use)) in &module.uses {
            if !public_use {
                continue;
            }
            match self.resolve(target) {
                Some((module, item)) if item.is_empty() => {
                    self.walk(&module, &join(name), names, walked)
                }
                Some((module, item)) => {
                    let kind = self.modules[&module].items[&item].0.clone();
                    names
                        .entry((module, item))
                        .or_insert_with(|| (join(name), kind));
                }
                None => {
                    names
                        .entry((Vec::new(), format!("extern {}", target.join("::"))))
                        .or_insert_with(|| (join(name), Kind::Other("extern")));
                }
            }
        }
    }
}

/// The names a `use` tree brings in, with the path each stands for (as written).
fn flatten(tree: &UseTree, prefix: Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        UseTree::Path(p) => {
            let mut prefix = prefix;
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
        }
        UseTree::Name(n) if n.ident == "self" => {
            out.push((prefix.last().unwrap().clone(), prefix));
        }
        UseTree::Name(n) => {
            let mut path = prefix;
            path.push(n.ident.to_string());
            out.push((n.ident.to_string(), path));
        }
        UseTree::Rename(r) => {
            let mut path = prefix;
            path.push(r.ident.to_string());
            out.push((r.rename.to_string(), path));
        }
        UseTree::Group(g) => {
            for tree in &g.items {
                flatten(tree, prefix.clone(), out);
            }
        }
        UseTree::Glob(_) => panic!("a glob import ({prefix:?}::*): list the names"),
    }
}

/// `path`, written in module `at`, from the crate's root (`crate::`, `super::`, `self::` or a
/// child module's name; anything else is another crate's, and kept as written).
fn absolute(at: &[String], path: Vec<String>) -> Vec<String> {
    match path.first().map(String::as_str) {
        Some("crate") => path[1..].to_vec(),
        Some("self") => [at, &path[1..]].concat(),
        Some("super") => {
            let mut base = at.to_vec();
            let mut rest = &path[..];
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
            [&base[..], rest].concat()
        }
        _ => {
            // A child module or an item of `at` (edition 2018+ paths are relative in `use`).
            let mut local = at.to_vec();
            local.extend(path.iter().cloned());
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            let child = at.iter().fold(root, |dir, m| dir.join(m)).join(&path[0]);
            if child.with_extension("rs").exists() || child.join("mod.rs").exists() {
                local
            } else {
                path
            }
        }
    }
}

fn parse(candidates: &[PathBuf]) -> Vec<Item> {
    let file = candidates
        .iter()
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("none of {candidates:?}"));
    let text = std::fs::read_to_string(file).unwrap();
    syn::parse_file(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .items
}

fn surface() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut krate = Crate::default();
    krate.read(Vec::new(), parse(&[src.join("lib.rs")]), &src);
    krate.surface()
}

#[test]
fn the_public_api_is_the_one_recorded() {
    let surface = surface();
    insta::assert_snapshot!("surface", surface.join("\n"));
}

/// `lib.rs` lists every public name (what is not a method or a field) in its "What is public"
/// section, as an intra-doc link, and nothing else: the surface is read where the crate starts.
#[test]
fn lib_rs_lists_the_public_names() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let section = lib
        .split("//! ## What is public")
        .nth(1)
        .and_then(|rest| rest.split("\n//!\n").nth(2))
        .expect("lib.rs's \"What is public\" section, its list the second paragraph");
    let listed: BTreeSet<&str> = section
        .split("[`")
        .skip(1)
        .filter_map(|link| link.split_once("`]").map(|(name, _)| name))
        .filter(|name| name.contains("::") || *name == "Operator")
        .collect();
    let public: BTreeSet<String> = surface()
        .iter()
        .filter(|line| !line.starts_with("method ") && !line.starts_with("field "))
        .map(|line| line.split_once(' ').unwrap().1.to_string())
        .collect();
    let public: BTreeSet<&str> = public.iter().map(String::as_str).collect();
    let unlisted: Vec<_> = public.difference(&listed).collect();
    let not_public: Vec<_> = listed.difference(&public).collect();
    assert!(
        unlisted.is_empty() && not_public.is_empty(),
        "public but not listed in lib.rs: {unlisted:?}; listed but not public: {not_public:?}"
    );
}

#[test]
fn the_public_api_stays_small() {
    let surface = surface();
    assert!(
        surface.len() <= LIMIT,
        "{} public things, more than {LIMIT}: make what projects do not use pub(crate)",
        surface.len()
    );
}
