//! The scaffolding engine: embedded templates rendered into an in-memory [`Plan`], then applied
//! all at once or printed as a dry run. It knows no particular file: the templates under a root
//! decide what is generated, and the calling command decides what may be overwritten.

mod format;
pub mod generated;
pub mod image_env;
pub mod merge;
mod plan;
mod templates;
mod vendor;

pub use generated::rbac;
pub use plan::{Applied, IfExists, Plan};
pub use templates::{
    Entry, Key, Layout, Owner, Templates, dependency_crates, generated_names, locked_packages, reserved_kind_files,
    with_layout, without_tera,
};
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
/// Whole files go through `if_exists(path)`, which lets the command say, per path, whether an
/// existing file is the user's (error or keep) or may be replaced; a file generated from the
/// user's code goes to its editor first (see [`generated`]). Fragments are inserted at their
/// markers after all whole files are planned, so a root may create a file and insert into it.
pub fn render_root(
    templates: &Templates,
    root: &str,
    ctx: &Context,
    plan: &mut Plan,
    if_exists: impl Fn(&str) -> IfExists,
) -> Result<()> {
    let entries = templates.entries(root, ctx)?;
    for entry in &entries {
        if let Entry::File { template, path, owner } = entry {
            // A file generated from the user's code is edited, not rendered over.
            let render = |ctx: &Context| templates.render(template, ctx);
            let edit = match generated::editor(path).filter(|_| *owner == Owner::Generated) {
                Some(editor) => editor(path, plan.read(Path::new(path))?.as_deref(), ctx, &render)?,
                None => Edit::Plain,
            };
            let (contents, if_exists) = match edit {
                Edit::Write(text) => (text, IfExists::Overwrite),
                Edit::Keep => match if_exists(path) {
                    IfExists::Overwrite => (render(ctx)?, IfExists::Overwrite),
                    _ => (render(ctx)?, IfExists::Keep),
                },
                Edit::Plain => (render(ctx)?, if_exists(path)),
            };
            // A file several APIs extend is never rewritten: only its markers are.
            let if_exists = if *owner == Owner::Shared { IfExists::Skip } else { if_exists };
            plan.write(path, contents, if_exists)?;
            plan.set_owner(path, *owner);
            if templates.is_plain(template) {
                plan.mark_formatted(path);
            }
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
