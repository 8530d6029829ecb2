//! memop's text of every file of a project, from PROJECT alone: `memop update` merges it with
//! the project's files, and `memop delete api` plans the difference between two replays.
//!
//! PROJECT records what each command made; the project's license header is its own file
//! (`hack/boilerplate.rs.txt`, [`Project::boilerplate`]), and the lists commands extend at
//! their markers are sorted, so the order the commands ran in makes no difference. Nothing else
//! is read back from the project's files but the CRD an external kind's types are made from (a
//! PROJECT of an earlier memop is completed once by [`Project::load`]).

use anyhow::{Context as _, Result};

use crate::project::Project;
use crate::scaffold::{self, Plan, Templates};

/// memop's text of every file of the project: init's scaffold, then `create api` for each API
/// (and each of its named controllers), then `create webhook` for each kind's admission
/// webhooks and for each kind's conversion webhook, in PROJECT's order, replayed into a scratch
/// plan (which sees no disk), and formatted. `plan` is the project, which replay reads only for
/// the CRDs of external kinds.
pub fn replay(project: &Project, plan: &Plan) -> Result<Plan> {
    let mut scratch = Plan::scratch(plan.root());
    let mut replayed =
        Project { cli_version: env!("CARGO_PKG_VERSION").to_string(), resources: Vec::new(), ..project.clone() };
    let ctx = tera::Context::from_serialize(super::context::ProjectContext::new(&replayed))?;
    let templates = Templates::load(&["init", "manager-role", super::autoupdate::TEMPLATES])?;
    scaffold::render_root(&templates, "init", &ctx, &mut scratch, true)?;
    scaffold::render_root(&templates, "manager-role", &ctx, &mut scratch, true)?;
    if project.plugins.autoupdate.is_some() {
        scaffold::render_root(&templates, super::autoupdate::TEMPLATES, &ctx, &mut scratch, true)?;
    }
    for resource in &project.resources {
        // Webhooks on a kind of Kubernetes' own, with no controller: `create webhook` alone made it.
        if resource.api.is_some() || resource.controller {
            let request = super::create_api::Request::recorded(resource, &replayed, plan)?;
            super::create_api::replay(&request, &mut replayed, &mut scratch)
                .with_context(|| format!("replaying the `create api` of {}", resource.describe()))?;
        }
        for name in &resource.controllers {
            let request = super::create_api::Request::recorded_named(resource, name, &replayed)?;
            super::create_api::replay(&request, &mut replayed, &mut scratch)
                .with_context(|| format!("replaying the controller {name} of {}", resource.describe()))?;
        }
    }
    let admission = project.resources.iter().filter(|r| r.admits()).map(|r| (r, false));
    let conversion = project.resources.iter().filter(|r| r.converts()).map(|r| (r, true));
    for (resource, conversion) in admission.chain(conversion) {
        let request = super::create_webhook::Request::recorded(resource, conversion, &replayed)?;
        super::create_webhook::replay(&request, &mut replayed, &mut scratch).with_context(|| {
            let which = if conversion { "conversion webhook" } else { "admission webhooks" };
            format!("replaying the {which} of {}", resource.describe())
        })?;
    }
    scratch.format_rust_required()?;
    Ok(scratch)
}
