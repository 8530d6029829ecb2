//! The scaffolding engine: embedded templates rendered into an in-memory [`Plan`], then applied
//! all at once or printed as a dry run. It knows no particular file: the templates under a root
//! decide what is generated and whose it is (their headers), the calling command only whether
//! to overwrite (`--force`); the files generated from the user's code have editors (`generated`).

mod format;
pub mod generated;
pub mod image_env;
pub mod lockfile;
pub mod merge;
mod plan;
pub mod reconcile;
mod templates;
mod vendor;

pub use crate::embedded::{
    dependencies, dependency_crates, generated_names, locked_packages, project_manifest, without_tera,
};
pub use generated::rbac;
pub use plan::{Applied, Plan};
pub use reconcile::{plan_file, reconcile};
pub use templates::{Entry, Key, Layout, Owner, Templates, reserved_kind_files};
pub use vendor::{RUNTIME_CRATES, VENDOR, files as vendored_files, vendor};

use std::path::Path;

use anyhow::Result;
use generated::Edit;
use tera::Context;

/// The files under `root/` that several APIs share (a module list, a kustomization), as `ctx`
/// resolves their paths.
pub fn shared_files(templates: &Templates, root: &str, ctx: &Context) -> Result<Vec<String>> {
    Ok(templates
        .entries(root, ctx)?
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::File { path, owner: Owner::Shared, .. } => Some(path),
            _ => None,
        })
        .collect())
}

/// Renders every template under `root` into `plan`.
///
/// What becomes of a file that exists already is [`reconcile::reconcile`]'s to say, from the
/// template's owner (see [`Owner`]); `force` (`--force`) lets the command replace the ones it
/// would otherwise refuse or keep. A file generated from the user's code goes to its editor
/// first (see [`generated`]). Fragments are inserted at their markers after all whole files are
/// planned, so a root may create a file and insert into it.
pub fn render_root(templates: &Templates, root: &str, ctx: &Context, plan: &mut Plan, force: bool) -> Result<()> {
    let entries = templates.entries(root, ctx)?;
    for entry in &entries {
        if let Entry::File { template, path, owner, one_per_project } = entry {
            // A file generated from the user's code is edited, not rendered over.
            let render = |ctx: &Context| templates.render(template, ctx);
            let edit = match generated::editor(path).filter(|_| *owner == Owner::Generated) {
                Some(editor) => editor(path, plan.read(Path::new(path))?.as_deref(), ctx, &render)?,
                None => Edit::Plain,
            };
            // A new version of a kind finds the kind's files there, as a file several APIs share.
            let owner = match owner {
                Owner::Kind if ctx.contains_key("storage_version") => Owner::Shared,
                owner => *owner,
            };
            let formatted = templates.is_plain(template);
            match edit {
                Edit::Write(text) => plan_file(plan, path, owner, true, text, formatted, true)?,
                // What the editor keeps is kept as a file of the project's own is.
                Edit::Keep => plan_file(plan, path, owner, true, render(ctx)?, formatted, force)?,
                Edit::Plain => plan_file(plan, path, owner, *one_per_project, render(ctx)?, formatted, force)?,
            }
            plan.set_owner(path, owner);
        }
    }
    for entry in &entries {
        if let Entry::Fragment { template, path, marker, key } = entry {
            let fragment = templates.render(template, ctx)?;
            match key {
                None => plan.insert(path, marker, &fragment)?,
                Some(Key::FirstToken) => plan.upsert(path, marker, &fragment)?,
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

    fn decide(owner: Owner, per_project: bool, current: &str, recorded: Option<&str>, force: bool) -> Option<Decision> {
        reconcile("f", owner, per_project, Some(current), recorded, "memop's\n", force).ok()
    }

    #[test]
    fn an_existing_file_is_refused_kept_or_left_as_its_owner_says() {
        let (kinds, projects) = (false, true);
        let mine = |owner, per_project, force| decide(owner, per_project, "mine\n", None, force);
        assert_eq!(mine(Owner::Memop, kinds, false), None, "refused");
        assert_eq!(mine(Owner::User, kinds, true), Some(Decision::Replace));
        assert_eq!(mine(Owner::Memop, projects, false), Some(Decision::Keep));
        assert_eq!(mine(Owner::Memop, projects, true), Some(Decision::Replace));
        assert_eq!(mine(Owner::Shared, projects, true), Some(Decision::Leave));
        assert_eq!(mine(Owner::Kind, kinds, false), None);
        // A file memop never wrote is someone's, even one the user may edit.
        assert_eq!(mine(Owner::UserOnceEdited, kinds, false), None);
        assert_eq!(mine(Owner::UserOnceEdited, kinds, true), Some(Decision::Replace));
        // Missing, or already memop's text: written, or left.
        assert_eq!(reconcile("f", Owner::Memop, kinds, None, None, "memop's\n", false).ok(), Some(Decision::Replace));
        assert_eq!(decide(Owner::Memop, kinds, "memop's\n", None, false), Some(Decision::Leave));
        let err = reconcile("a.txt", Owner::Memop, kinds, Some("mine\n"), None, "x\n", false).unwrap_err();
        assert!(err.to_string().contains("a.txt already exists and memop would change it; pass --force"), "{err}");
    }

    #[test]
    fn a_file_the_user_may_edit_is_replaced_only_as_memop_wrote_it() {
        let id = crate::sum::blob_id("memop's, then\n");
        let refresh = |current: &str, id: &str| decide(Owner::UserOnceEdited, false, current, Some(id), false);
        assert_eq!(refresh("memop's, then\n", &id), Some(Decision::Replace));
        assert_eq!(refresh("mine\n", &id), Some(Decision::Keep));
        // Recorded by an earlier memop in the `\r\n` it wrote, read in `\n`: no edit.
        let crlf = crate::sum::blob_id("memop's, then\r\n");
        assert_eq!(refresh("memop's, then\n", &crlf), Some(Decision::Replace), "line endings are no edit");
    }

    #[test]
    fn a_kept_file_is_noted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "mine\n").unwrap();
        let mut plan = Plan::new(dir.path());
        assert!(plan_file(&mut plan, "a.txt", Owner::Memop, false, "theirs\n".into(), false, false).is_err());
        plan_file(&mut plan, "a.txt", Owner::Memop, true, "theirs\n".into(), false, false).unwrap();
        assert!(plan.is_empty());
        assert_eq!(plan.notes(), ["kept your a.txt; memop's version was not written"]);
        plan_file(&mut plan, "a.txt", Owner::Memop, false, "theirs\n".into(), false, true).unwrap();
        assert_eq!(plan.read(Path::new("a.txt")).unwrap().as_deref(), Some("theirs\n"));
    }
}
