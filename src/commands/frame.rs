//! The frame of the commands that change an existing project: `create api`, `create webhook`,
//! `delete api`. It loads `PROJECT` and opens the plan (with `PROJECT.sum`, the base of every
//! merge, loaded once), completes what an earlier memop's `PROJECT` left out ([`super::facts`]),
//! runs the command's plan, then the plugins `PROJECT` records, and finishes (formats, records,
//! writes or shows, reports).
//!
//! `init` has no project to load yet, `edit` plans the plugins themselves, and `update` renders
//! the whole project again; they go through the same [`super::finish`].

use anyhow::Result;

use super::{Global, Report, finish};
use crate::project::Project;
use crate::scaffold::Plan;
use crate::scaffold::reconcile::Merged;

/// Runs `command`'s plan on the project in `global.dir` within the frame (see the module).
pub fn on_project(
    global: &Global,
    report: &mut Report,
    command: impl FnOnce(&mut Project, &mut Plan, &mut Report) -> Result<()>,
) -> Result<()> {
    let mut project = Project::load(&global.dir)?;
    let mut plan = Plan::new(&global.dir)?;
    super::facts::record(&mut project, &plan)?;
    command(&mut project, &mut plan, report)?;
    let plugins = plan_plugins(&project, &mut plan)?;
    report.merged(plugins, super::helm::FRESH_CHART);
    finish(global, plan, report)
}

/// Plans the plugins `PROJECT` records over a project the command changed in `plan`, as one
/// chain: the Helm chart follows the project's kinds, CRDs and roles (the update workflow
/// depends on none of them; `update` replays it with the rest).
pub(crate) fn plan_plugins(project: &Project, plan: &mut Plan) -> Result<Merged> {
    super::helm::plan_chart(project, plan, false)
}
