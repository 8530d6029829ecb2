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
pub use plan::{Applied, IfExists, Plan};
pub use templates::{Entry, Key, Layout, Owner, Templates, reserved_kind_files, with_layout};
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
/// What becomes of a file that exists already is the template's to say (see [`Owner`], and
/// [`policy`]); `force` (`--force`) lets the command replace the ones it would otherwise refuse
/// or keep. A file generated from the user's code goes to its editor first (see [`generated`]).
/// Fragments are inserted at their markers after all whole files are planned, so a root may
/// create a file and insert into it.
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
            let (contents, if_exists) = match edit {
                Edit::Write(text) => (text, IfExists::Overwrite),
                Edit::Keep if force => (render(ctx)?, IfExists::Overwrite),
                Edit::Keep => (render(ctx)?, IfExists::Keep),
                Edit::Plain => (render(ctx)?, policy(*owner, *one_per_project, ctx, force)),
            };
            match templates.is_plain(template) {
                true => plan.write_formatted(path, contents, if_exists)?,
                false => plan.write(path, contents, if_exists)?,
            }
            plan.set_owner(path, *owner);
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

/// What becomes of an existing file that a template renders again, as the template says: its
/// owner, and whether its path names a kind.
fn policy(owner: Owner, one_per_project: bool, ctx: &Context, force: bool) -> IfExists {
    match owner {
        // A file several APIs extend is never rewritten: only its markers are.
        Owner::Shared => IfExists::Skip,
        // A new version of a kind finds the kind's files there.
        Owner::Kind if ctx.contains_key("storage_version") => IfExists::Skip,
        _ if force => IfExists::Overwrite,
        // Rendered again (a kind's conversion test, listing a new version) unless edited.
        Owner::UserOnceEdited => IfExists::Refresh,
        // A file of the project as a whole, which the user may have already (a README, a
        // .gitignore: kept, as kubebuilder keeps them) or an earlier command made.
        _ if one_per_project => IfExists::Keep,
        // A kind's file that is there already: another kind's, or the user's.
        _ => IfExists::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_file_is_refused_kept_or_skipped_as_its_template_says() {
        let (plain, mut version) = (Context::new(), Context::new());
        version.insert("storage_version", "v1");
        let (kinds, projects) = (false, true);
        assert_eq!(policy(Owner::Memop, kinds, &plain, false), IfExists::Error);
        assert_eq!(policy(Owner::User, kinds, &plain, true), IfExists::Overwrite);
        assert_eq!(policy(Owner::Memop, projects, &plain, false), IfExists::Keep);
        assert_eq!(policy(Owner::Memop, projects, &plain, true), IfExists::Overwrite);
        assert_eq!(policy(Owner::Shared, projects, &plain, true), IfExists::Skip);
        // A kind's RBAC helper roles: a new version of the kind leaves them, even with --force.
        assert_eq!(policy(Owner::Kind, kinds, &version, true), IfExists::Skip);
        assert_eq!(policy(Owner::Kind, kinds, &plain, false), IfExists::Error);
        assert_eq!(policy(Owner::UserOnceEdited, kinds, &plain, false), IfExists::Refresh);
        assert_eq!(policy(Owner::UserOnceEdited, kinds, &plain, true), IfExists::Overwrite);
    }
}
