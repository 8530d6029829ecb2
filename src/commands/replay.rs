//! memop's text of every file of a project, from PROJECT alone: `memop update` merges it with
//! the project's files, and `memop delete api` plans the difference between two replays.
//!
//! PROJECT records every command that made the project, and what replay needs to make each as
//! it was: the year each ran in, the order of the controllers and webhooks where it is not
//! PROJECT's. Nothing is read back from the project's files but the CRD an external kind's
//! types are made from (a PROJECT of an earlier memop is completed once by [`super::facts`]).

use anyhow::{Context as _, Result};

use crate::project::{Project, Resource};
use crate::scaffold::{self, Layout, Plan, Templates};

/// memop's text of every file of the project: init's scaffold, then `create api` for each API
/// and `create webhook` for each kind with webhooks, replayed as PROJECT records them into a
/// scratch plan (which sees no disk), and formatted. `plan` is the project, which replay reads
/// only for the CRDs of external kinds.
///
/// Each command is replayed with the year it ran in (PROJECT's `year`, or a resource's own), so
/// every license header is as that command wrote it. The named controllers are replayed in the
/// order their modules were made ([`Project::controller_order`]), among the kinds' own; the
/// webhooks after every API, as a kind's spokes are then all there, in the order they were made
/// ([`Project::webhook_order`], [`Project::conversion_order`]).
pub fn replay(project: &Project, plan: &Plan, layout: Layout) -> Result<Plan> {
    let mut scratch = Plan::scratch(plan.root(), layout);
    let made = project.year.unwrap_or_else(crate::clock::current_year);
    let mut replayed =
        Project { cli_version: env!("CARGO_PKG_VERSION").to_string(), resources: Vec::new(), ..project.clone() };
    let ctx = super::context::ProjectContext { year: made, ..super::context::ProjectContext::new(&replayed) };
    let ctx = tera::Context::from_serialize(ctx)?;
    let templates = Templates::load(layout, &["init", "manager-role", super::autoupdate::TEMPLATES])?;
    scaffold::render_root(&templates, "init", &ctx, &mut scratch, true)?;
    scaffold::render_root(&templates, "manager-role", &ctx, &mut scratch, true)?;
    if project.plugins.autoupdate.is_some() {
        scaffold::render_root(&templates, super::autoupdate::TEMPLATES, &ctx, &mut scratch, true)?;
    }
    let order = project.controller_order();
    let place = |module: &str| order.iter().position(|m| m == module).unwrap_or(usize::MAX);
    let mut named: Vec<Named> = Vec::new();
    for (kind_at, resource) in project.resources.iter().enumerate() {
        for name in &resource.controllers {
            named.push(Named { resource, name, kind_at, place: place(&name.replace('-', "_")) });
        }
    }
    named.sort_by_key(|n| n.place);
    let mut named = named.into_iter().peekable();
    for (at, resource) in project.resources.iter().enumerate() {
        // The named controllers made before this kind's controller, once their own kind is replayed.
        let before = resource.controller.then(|| place(&resource.names.kind.snake()));
        while let Some(next) = named.next_if(|n| n.kind_at < at && before.is_some_and(|b| n.place < b)) {
            next.replay(&mut replayed, &mut scratch, made)?;
        }
        // Webhooks on a kind of Kubernetes' own, with no controller: `create webhook` alone made it.
        if resource.api.is_none() && !resource.controller {
            continue;
        }
        let request = super::create_api::Request::replay(resource, &replayed, plan)?;
        super::create_api::replay(&request, &mut replayed, &mut scratch, resource.year.unwrap_or(made))
            .with_context(|| format!("replaying the `create api` of {}", resource.describe()))?;
    }
    for next in named {
        next.replay(&mut replayed, &mut scratch, made)?;
    }
    let admission = project.webhook_order().into_iter().map(|r| (r, false));
    let commands: Vec<(&Resource, bool, i64)> = admission
        .chain(project.conversion_order().into_iter().map(|r| (r, true)))
        .map(|(which, conversion)| {
            let resource = project.resources.iter().find(|r| r.describe() == which).expect("a resource of PROJECT's");
            let webhooks = resource.webhooks.as_ref().expect("a resource with webhooks");
            let year = if conversion { webhooks.conversion_year } else { webhooks.year };
            (resource, conversion, year.unwrap_or(made))
        })
        .collect();
    // The webhook server's files are the first `create webhook`'s: of the earliest year (admission
    // webhooks are replayed before conversions, whichever came first).
    let server_year = commands.iter().map(|(_, _, year)| *year).min();
    for (resource, conversion, year) in commands {
        let mut request = super::create_webhook::Request::replay(resource, conversion, &replayed)?;
        request.server_year = server_year;
        super::create_webhook::replay(&request, &mut replayed, &mut scratch, year).with_context(|| {
            let which = if conversion { "conversion webhook" } else { "admission webhooks" };
            format!("replaying the {which} of {}", resource.describe())
        })?;
    }
    scratch.format_rust_required()?;
    Ok(scratch)
}

/// A named controller to replay (`create api --controller-name`): its kind's entry and index in
/// PROJECT, and its place among the controllers' modules.
struct Named<'a> {
    resource: &'a Resource,
    name: &'a str,
    kind_at: usize,
    place: usize,
}

impl Named<'_> {
    fn replay(&self, replayed: &mut Project, scratch: &mut Plan, made: i64) -> Result<()> {
        let request = super::create_api::Request::replay_named(self.resource, self.name, replayed)?;
        let year = self.resource.controller_years.get(self.name).copied().unwrap_or(made);
        super::create_api::replay(&request, replayed, scratch, year)
            .with_context(|| format!("replaying the controller {} of {}", self.name, self.resource.describe()))
    }
}
