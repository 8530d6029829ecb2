//! `memop edit --plugins=autoupdate/v1-alpha`: kubebuilder's plugin under its name, a scheduled
//! workflow, `.github/workflows/auto-update.yml`, that installs the newest memop from the git
//! repository PROJECT records (`--memop-git`), runs `memop update --summary` on a branch and
//! opens a pull request with the summary as its body. The workflow is memop's file: `memop
//! update` keeps it current (merged with your edits) while PROJECT records the plugin.

use anyhow::Result;

use crate::project::Project;
use crate::scaffold::router::{Merged, Router};
use crate::scaffold::{Entry, Plan, Purpose, Templates};

/// The templates of the workflow.
pub const TEMPLATES: &str = "autoupdate";

/// The workflow's path.
pub const WORKFLOW: &str = ".github/workflows/auto-update.yml";

/// Plans the workflow of a project whose PROJECT records the plugin: created, or merged with your
/// edits as `memop update` merges memop's files (`force`: replaced).
pub(crate) fn plan_workflow(project: &Project, plan: &mut Plan, force: bool) -> Result<Merged> {
    let templates = Templates::load(&[TEMPLATES])?;
    let ctx = tera::Context::from_serialize(super::context::ProjectContext::new(project))?;
    let purpose = if force { Purpose::Make { force } } else { Purpose::Update };
    let mut router = Router::new(None);
    for entry in templates.entries(TEMPLATES, &ctx)? {
        if let Entry::File { template, path, declared } = entry {
            router.route(plan, purpose, &path, declared, templates.render(&template, &ctx)?, true)?;
        }
    }
    router.finish()
}
