//! The frame of every command that writes a project (`init`, `create api`, `create webhook`,
//! `delete api`, `edit`, `update`). [`run`] takes the command's project (the one `PROJECT`
//! describes, loaded and completed by [`Project::load`]; `init`'s new one, made from its flags),
//! opens the plan (with `PROJECT.sum`, the base of every merge, loaded once), runs the command's
//! plan, then the plugins `PROJECT` records as one chain, and finishes (formats, records, writes
//! or shows, reports).
//!
//! `main` finds the project's root and holds its lock around the frame.

use anyhow::Result;

use super::{Global, Report, finish, helm};
use crate::project::Project;
use crate::scaffold::Plan;

/// A command the frame runs: what it does between taking the project and finishing.
pub(crate) trait Command {
    /// Plans the command's change of `project` into `plan`, and says in `report` what it did.
    fn plan(&mut self, global: &Global, project: &mut Project, plan: &mut Plan, report: &mut Report) -> Result<()>;

    /// Whether the plugins write every file as memop makes it, over the user's edits (`edit
    /// --plugins=helm/v2-alpha --force`).
    fn remake_plugins(&self) -> bool {
        false
    }
}

/// Runs `command` on `project`, the project in `global.dir`, within the frame (see the module).
pub(crate) fn run(global: &Global, report: &mut Report, mut project: Project, mut command: impl Command) -> Result<()> {
    let mut plan = Plan::new(&global.dir)?;
    command.plan(global, &mut project, &mut plan, report)?;
    // The plugins PROJECT records, as one chain over what the command changed: the Helm chart
    // follows the project's kinds, CRDs and roles. (The update workflow depends on none of them:
    // `edit` writes it, and `update` replays it with the rest.)
    let chart = helm::plan_chart(&project, &mut plan, command.remake_plugins())?;
    report.merged(chart, helm::FRESH_CHART);
    report.planned(&plan);
    finish(global, plan, report)
}
