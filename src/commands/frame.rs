//! The frame of every command that writes a project (`init`, `create api`, `create webhook`,
//! `delete api`, `edit`, `update`). [`run`] takes the command's project (the one `PROJECT`
//! describes; `init` makes a new one from its flags, as there is none to load yet), opens the
//! plan (with `PROJECT.sum`, the base of every merge, loaded once), completes what an earlier
//! memop's `PROJECT` left out ([`super::facts`]), runs the command's plan, then the plugins
//! `PROJECT` records as one chain, and finishes (formats, records, writes or shows, reports).
//!
//! `main` finds the project's root and holds its lock around the frame.

use anyhow::Result;

use super::{Global, Report, finish};
use crate::project::Project;
use crate::scaffold::Plan;
use crate::scaffold::reconcile::Merged;

/// A command the frame runs: what it does between loading the project and finishing.
pub(crate) trait Command {
    /// The project the command works on: the one in `global.dir`. `init`, which makes a new
    /// project from its flags, says here why it can (every refusal of the directory is there).
    fn project(&mut self, global: &Global, report: &mut Report) -> Result<Project> {
        let _ = report;
        Project::load(&global.dir)
    }

    /// Plans the command's change of `project` into `plan`, and says in `report` what it did.
    fn plan(&mut self, global: &Global, project: &mut Project, plan: &mut Plan, report: &mut Report) -> Result<()>;

    /// Whether the plugins write every file as memop makes it, over the user's edits (`edit
    /// --plugins=helm/v2-alpha --force`).
    fn remake_plugins(&self) -> bool {
        false
    }

    /// Finishes once the plugins are planned too (`plugins`, what became of their files):
    /// [`finish`]. `update` stops at conflicts first, and writes only the files in them.
    fn finish(self, global: &Global, project: Project, plan: Plan, plugins: Merged, report: &mut Report) -> Result<()>
    where
        Self: Sized,
    {
        let _ = project;
        report.merged(plugins, super::helm::FRESH_CHART);
        finish(global, plan, report)
    }
}

/// Runs `command` on the project in `global.dir` within the frame (see the module).
pub(crate) fn run(global: &Global, report: &mut Report, mut command: impl Command) -> Result<()> {
    let mut project = command.project(global, report)?;
    let mut plan = Plan::new(&global.dir)?;
    super::facts::record(&mut project, &plan)?;
    command.plan(global, &mut project, &mut plan, report)?;
    let plugins = plan_plugins(&project, &mut plan, command.remake_plugins())?;
    command.finish(global, project, plan, plugins, report)
}

/// Plans the plugins `PROJECT` records over a project the command changed in `plan`, as one
/// chain (`force`: their files as memop makes them): the Helm chart follows the project's kinds,
/// CRDs and roles. The update workflow depends on none of them: `edit` writes it, and `update`
/// replays it with the rest.
fn plan_plugins(project: &Project, plan: &mut Plan, force: bool) -> Result<Merged> {
    super::helm::plan_chart(project, plan, force)
}
