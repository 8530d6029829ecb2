//! The scaffolding engine: embedded templates rendered into an in-memory [`Plan`], then applied
//! all at once or printed as a dry run. It knows no particular file: the templates under a root
//! decide what is generated and whose it is (their headers), the calling command only whether
//! to overwrite (`--force`); the files generated from the user's code have editors (`generated`).

mod format;
pub mod generated;
pub mod image_env;
mod items;
pub mod lockfile;
pub mod merge;
mod plan;
pub mod reconcile;
pub mod router;
mod templates;
mod vendor;

pub use crate::embedded::reserved_kind_files;
pub use crate::embedded::{
    dependencies, dependency_crates, generated_names, locked_packages, project_manifest, without_tera,
};
pub use generated::rbac;
pub use plan::{Applied, Plan};
pub use reconcile::{Purpose, reconcile};
pub use router::plan_files;
pub use templates::{Declared, Entry, Key, Owner, Scope, Templates};
pub use vendor::{RUNTIME_CRATES, VENDOR, files as vendored_files, pin_the_runtime, vendor};

use std::path::Path;

use anyhow::{Result, bail};
use generated::Edit;
use router::Router;
use tera::Context;

/// The files under `root/` that several APIs share (a module list, a kustomization), as `ctx`
/// resolves their paths.
fn shared_files(templates: &Templates, root: &str, ctx: &Context) -> Result<Vec<String>> {
    Ok(templates
        .entries(root, ctx)?
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::File { path, declared, .. } if declared.scope == Scope::Shared => Some(path),
            _ => None,
        })
        .collect())
}

/// Refuses when a file under `root/` that this API shares with others (`sharing`: a module list,
/// a kustomization) is missing while one of them should be in it: memop would recreate it with
/// this API alone, and the others would silently drop out of the build or of `config/`.
pub fn refuse_missing_shared<'a>(
    templates: &Templates,
    root: &str,
    ctx: &Context,
    plan: &Plan,
    sharing: impl Iterator<Item = &'a crate::project::Resource>,
) -> Result<()> {
    let missing: Vec<String> = shared_files(templates, root, ctx)?
        .into_iter()
        .filter(|path| plan.read(Path::new(path)).is_ok_and(|text| text.is_none()))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    for resource in sharing {
        // The paths as the other API spells them.
        let mut paths = ctx.clone();
        paths.extend(Context::from_serialize(&resource.names)?);
        let theirs = shared_files(templates, root, &paths)?;
        if let Some(path) = missing.iter().find(|path| theirs.contains(path)) {
            bail!(
                "{path} is missing, but it lists {} {} {} too: memop would make it again with this API alone, and \
                 the others would drop out; restore it (`git checkout -- {path}`) and run the command again",
                resource.names.group,
                resource.names.version,
                resource.names.kind
            );
        }
    }
    Ok(())
}

/// Renders every template under `root` into `plan`.
///
/// What becomes of a file that exists already is [`reconcile::reconcile`]'s to say, from what
/// its template declares (see [`Declared`]); `force` (`--force`) lets the command replace the
/// ones it would otherwise refuse or keep. A file generated from the user's code goes to its
/// editor first (see [`generated`]). Fragments are inserted at their markers after all whole
/// files are planned, so a root may create a file and insert into it.
pub fn render_root(templates: &Templates, root: &str, ctx: &Context, plan: &mut Plan, force: bool) -> Result<()> {
    render(templates, root, ctx, plan, force, false)
}

/// [`render_root`] for a new version of a kind that has others: it finds the kind's files
/// ([`Scope::Kind`]) there already, as files the kind's versions share ([`Scope::Shared`]).
pub fn render_version(templates: &Templates, root: &str, ctx: &Context, plan: &mut Plan, force: bool) -> Result<()> {
    render(templates, root, ctx, plan, force, true)
}

/// [`render_root`], the kind's files shared by its versions where `kind_shared`.
fn render(
    templates: &Templates,
    root: &str,
    ctx: &Context,
    plan: &mut Plan,
    force: bool,
    kind_shared: bool,
) -> Result<()> {
    let entries = templates.entries(root, ctx)?;
    let mut router = Router::new(None);
    for entry in &entries {
        if let Entry::File { template, path, declared } = entry {
            // A file generated from the user's code is edited, not rendered over.
            let render = |ctx: &Context| templates.render(template, ctx);
            let edit = match generated::editor(path).filter(|_| declared.owner == Owner::Generated) {
                Some(editor) => editor(path, plan.read(Path::new(path))?.as_deref(), ctx, &render)?,
                None => Edit::Plain,
            };
            let mut declared = *declared;
            if declared.scope == Scope::Kind && kind_shared {
                declared.scope = Scope::Shared;
            }
            let formatted = templates.is_plain(template);
            // What the editor keeps is kept as a file of the project's own is.
            let project = Declared { scope: Scope::Project, ..declared };
            let (purpose, routed, text) = match edit {
                Edit::Write(text) => (Purpose::Make { force: true }, project, text),
                Edit::Keep => (Purpose::Make { force }, project, render(ctx)?),
                Edit::Plain => (Purpose::Make { force }, declared, render(ctx)?),
            };
            router.route(plan, purpose, path, routed, text, formatted)?;
            plan.set_owner(path, declared);
        }
    }
    router.finish()?;
    for entry in &entries {
        if let Entry::Fragment { template, path, marker, key } = entry {
            let fragment = templates.render(template, ctx)?;
            match key {
                None => plan.insert(path, marker, &fragment)?,
                Some(Key::FirstToken) => plan.upsert(path, marker, &fragment)?,
                Some(Key::Sorted) => plan.insert_sorted(path, marker, &fragment)?,
                Some(Key::ImageEnv) => image_env::upsert(plan, path, marker, &fragment)?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaffold::merge::Decision;
    use crate::sum;

    const MEMOP: Declared = Declared { owner: Owner::Memop, scope: Scope::Api, refresh: false };
    const USER: Declared = Declared { owner: Owner::User, ..MEMOP };
    const REFRESHED: Declared = Declared { refresh: true, ..USER };
    const GENERATED: Declared = Declared { owner: Owner::Generated, ..MEMOP };

    /// [`reconcile`] of the file `f`, `current` now, whose text then PROJECT.sum records as
    /// `recorded`, to which memop now renders `memop's\n`.
    fn decide(declared: Declared, current: Option<&str>, recorded: Option<&str>, purpose: Purpose) -> Option<Decision> {
        let record = sum::Sum::parse(recorded.map(|id| format!("f {id}\n")).as_deref()).unwrap();
        let base = router::Base { record: &record, dir: Path::new("."), replay: None };
        reconcile("f", declared, current, base.known("f", current).unwrap(), "memop's\n", purpose).ok()
    }

    #[test]
    fn an_existing_file_is_refused_kept_or_left_as_its_owner_says() {
        let make = |force| Purpose::Make { force };
        let mine = |declared, force| decide(declared, Some("mine\n"), None, make(force));
        let per_project = |declared| Declared { scope: Scope::Project, ..declared };
        assert_eq!(mine(MEMOP, false), None, "refused");
        assert_eq!(mine(USER, true), Some(Decision::Replace));
        assert_eq!(mine(per_project(MEMOP), false), Some(Decision::Keep));
        assert_eq!(mine(per_project(MEMOP), true), Some(Decision::Replace));
        assert_eq!(mine(Declared { scope: Scope::Shared, ..MEMOP }, true), Some(Decision::Leave));
        assert_eq!(mine(Declared { scope: Scope::Kind, ..MEMOP }, false), None);
        // A file memop never wrote is someone's, even one the user may edit.
        assert_eq!(mine(REFRESHED, false), None);
        assert_eq!(mine(REFRESHED, true), Some(Decision::Replace));
        // Missing, or already memop's text: written, or left.
        assert_eq!(decide(MEMOP, None, None, make(false)), Some(Decision::Replace));
        assert_eq!(decide(MEMOP, Some("memop's\n"), None, make(false)), Some(Decision::Leave));
        let record = sum::Sum::default();
        let base = router::Base { record: &record, dir: Path::new("."), replay: None };
        let known = base.known("a.txt", Some("mine\n")).unwrap();
        let err = reconcile("a.txt", MEMOP, Some("mine\n"), known, "x\n", make(false)).unwrap_err();
        assert!(err.to_string().contains("a.txt already exists and memop would change it; pass --force"), "{err}");
    }

    #[test]
    fn a_file_the_user_may_edit_is_replaced_only_as_memop_wrote_it() {
        let id = sum::blob_id("memop's, then\n");
        for purpose in [Purpose::Make { force: false }, Purpose::Update] {
            let refresh = |current: &str, id: &str| decide(REFRESHED, Some(current), Some(id), purpose);
            assert_eq!(refresh("memop's, then\n", &id), Some(Decision::Replace), "{purpose:?}");
            // Recorded by an earlier memop in the `\r\n` it wrote, read in `\n`: no edit.
            let crlf = sum::blob_id("memop's, then\r\n");
            assert_eq!(refresh("memop's, then\n", &crlf), Some(Decision::Replace), "line endings are no edit");
        }
        assert_eq!(decide(REFRESHED, Some("mine\n"), Some(&id), Purpose::Make { force: false }), Some(Decision::Keep));
        let update = decide(REFRESHED, Some("mine\n"), Some(&id), Purpose::Update);
        assert_eq!(update, Some(Decision::Outdated), "edited: the user's, told of memop's change");
    }

    /// `memop update`, the chart and the workflow: memop's files merged, the user's made once and
    /// then left (outdated where memop's text changed), generated ones left to `make manifests`.
    #[test]
    fn an_update_brings_memops_files_and_leaves_the_others_to_their_owners() {
        let then = sum::blob_id("memop's, then\n");
        let update = |declared, current, recorded| decide(declared, current, recorded, Purpose::Update);
        assert_eq!(update(MEMOP, Some("memop's, then\n"), Some(&then)), Some(Decision::Replace));
        assert_eq!(update(MEMOP, None, Some(&then)), Some(Decision::Leave), "deleted by the user");
        for declared in [USER, GENERATED] {
            assert_eq!(update(declared, None, None), Some(Decision::Replace), "new to the project: made");
            assert_eq!(update(declared, Some("memop's\n"), Some(&then)), Some(Decision::Leave));
        }
        assert_eq!(update(GENERATED, None, Some(&then)), Some(Decision::Leave), "deleted: stays deleted");
        assert_eq!(update(USER, None, Some(&then)), Some(Decision::Outdated), "deleted, and memop's text changed");
        assert_eq!(update(USER, Some("memop's, then\n"), Some(&then)), Some(Decision::Outdated));
        let now = sum::blob_id("memop's\n");
        assert_eq!(update(USER, Some("mine\n"), Some(&now)), Some(Decision::Leave), "memop's text did not change");
        assert_eq!(update(USER, Some("mine\n"), None), Some(Decision::Leave), "never memop's");
        assert_eq!(update(GENERATED, Some("mine\n"), None), Some(Decision::Outdated), "`make manifests`'");
    }

    /// `delete api`: every file over memop's text before the change; a generated one replaced
    /// while as memop wrote it, else left to `make manifests`; one the change does not touch left.
    #[test]
    fn a_change_goes_over_memops_text_before_it() {
        let mut before = Plan::scratch(".");
        before.write("f", "memop's, then\n".into()).unwrap();
        let record = sum::Sum::default();
        let base = router::Base { record: &record, dir: Path::new("."), replay: Some(&before) };
        let change = |declared: Declared, current: &str, desired: &str| {
            let known = base.known("f", Some(current)).unwrap();
            reconcile("f", declared, Some(current), known, desired, Purpose::Change).unwrap()
        };
        assert_eq!(change(GENERATED, "memop's, then\n", "memop's\n"), Decision::Replace);
        assert_eq!(change(GENERATED, "mine\n", "memop's\n"), Decision::Outdated);
        assert_eq!(change(USER, "memop's, then\n", "memop's\n"), Decision::Replace, "as memop wrote it");
        assert_eq!(change(GENERATED, "mine\n", "memop's, then\n"), Decision::Leave, "untouched by the change");
        // A run killed among its renames wrote the new text already: left, and recorded as memop's.
        assert_eq!(change(GENERATED, "memop's\n", "memop's\n"), Decision::Leave, "changed already");
    }

    /// `vendor/`, memop's alone: made, replaced while as memop wrote it (or with --force), an
    /// edited copy named for the command to refuse, and a user's deletion no reason to leave it
    /// out.
    #[test]
    fn a_file_renewed_whole_is_replaced_unless_edited() {
        let then = sum::blob_id("memop's, then\n");
        let renew = |current, force| decide(MEMOP, current, Some(&then), Purpose::Renew { force });
        assert_eq!(renew(None, false), Some(Decision::Replace), "deleted: made again");
        assert_eq!(renew(Some("memop's, then\n"), false), Some(Decision::Replace));
        assert_eq!(renew(Some("memop's\n"), false), Some(Decision::Leave));
        assert_eq!(renew(Some("mine\n"), false), Some(Decision::Edited));
        assert_eq!(renew(Some("mine\n"), true), Some(Decision::Replace));
    }

    #[test]
    fn a_kept_file_is_noted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "mine\n").unwrap();
        let mut plan = Plan::new(dir.path()).unwrap();
        assert!(
            plan_files(&mut plan, [("a.txt".into(), "theirs\n".into())], MEMOP, false, false).is_err(),
            "one per API"
        );
        let per_project = Declared::new(Owner::Memop, Scope::Project);
        plan_files(&mut plan, [("a.txt".into(), "theirs\n".into())], per_project, false, false).unwrap();
        assert!(plan.is_empty());
        assert_eq!(plan.notes(), ["kept your a.txt; memop's version was not written"]);
        plan_files(&mut plan, [("a.txt".into(), "theirs\n".into())], MEMOP, false, true).unwrap();
        assert_eq!(plan.read(Path::new("a.txt")).unwrap().as_deref(), Some("theirs\n"));
    }
}
