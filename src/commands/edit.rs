//! `memop edit`: adds kubebuilder's plugins to a project. It records them in PROJECT (with the
//! directory of the Helm chart, the repository the update workflow installs memop from), and
//! plans the update workflow ([`super::autoupdate`]); the frame's plugin chain then writes the
//! chart ([`super::helm`]).

use std::path::Path;

use anyhow::{Result, bail};

use super::context::ProjectContext;
use super::helm::CHART;
use super::{Global, Report};
use crate::project::{self, AutoUpdatePlugin, HelmPlugin, Project};
use crate::scaffold::router::Merged;
use crate::scaffold::{Entry, Plan, Templates};

/// Change the project's scaffolding with kubebuilder's plugins: helm/v2-alpha writes a Helm chart
/// of the project, which later `create api` and `create webhook` runs keep up to date;
/// autoupdate/v1-alpha a weekly workflow that runs `memop update` and opens a pull request
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  memop edit --plugins=helm/v2-alpha && helm lint dist/chart\n  memop edit \
                  --plugins=autoupdate/v1-alpha --memop-git https://github.com/<owner>/memop")]
pub struct Args {
    /// The plugins to add: helm/v2-alpha (a Helm chart), autoupdate/v1-alpha (a weekly workflow
    /// that runs `memop update` and opens a pull request); kubebuilder's full keys too
    /// (helm.kubebuilder.io/v2-alpha)
    #[arg(long, value_delimiter = ',', value_name = "PLUGINS")]
    plugins: Vec<String>,

    /// autoupdate/v1-alpha: the git repository its workflow installs the newest memop from
    /// (`cargo install --git URL memop`), recorded in PROJECT [default: the one PROJECT records]
    #[arg(long, value_name = "URL")]
    memop_git: Option<String>,

    /// Directory the chart is written in, as <DIR>/chart [default: dist, or the one PROJECT records]
    #[arg(long, value_name = "DIR")]
    output_dir: Option<String>,

    /// Write every file of the chart as memop makes it, Chart.yaml and values.yaml included (your
    /// edits of them are lost; files you added are kept)
    #[arg(long)]
    force: bool,

    /// kubebuilder's `edit --multigroup` and `--namespaced`: answered with what memop does instead
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "true")]
    multigroup: Option<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "true")]
    namespaced: Option<String>,
}

pub fn run(global: &Global, args: Args, report: &mut Report) -> Result<()> {
    if args.multigroup.is_some() || args.namespaced.is_some() {
        bail!(
            "memop's `edit` only adds plugins (--plugins=helm/v2-alpha, autoupdate/v1-alpha): a memop project always supports \
             several groups and keeps its settings in PROJECT, Cargo.toml and config/; change them there"
        );
    }
    if args.plugins.iter().all(|p| p.trim().is_empty()) {
        bail!(
            "`memop edit` needs the plugin to add: `memop edit --plugins=helm/v2-alpha` writes a Helm chart of the \
             project in dist/chart (--output-dir to put it elsewhere), and `memop edit --plugins=autoupdate/v1-alpha \
             --memop-git URL` a weekly workflow that runs `memop update` and opens a pull request; those are the \
             plugins `edit` adds, as memop's layout has kubebuilder's others built in"
        );
    }
    for note in super::plugins::answer(super::plugins::Command::Edit, &args.plugins)? {
        report.answer(note);
    }
    let helm = args.plugins.iter().any(|p| super::plugins::is_helm(p));
    let autoupdate = args.plugins.iter().any(|p| super::plugins::is_autoupdate(p));
    if args.memop_git.is_some() && !autoupdate {
        bail!("--memop-git belongs to --plugins=autoupdate/v1-alpha: the repository its workflow installs memop from");
    }
    if !helm && !autoupdate {
        // Only plugins whose parts every memop project has (each answered).
        super::print_answers(report);
        return super::say("Nothing to do: the project already has what these plugins add.\n");
    }
    let project = Project::load(&global.dir)?;
    super::frame::run(global, report, project, Edit { args, helm, autoupdate })
}

/// `edit` in the frame: it records the plugins in PROJECT (and plans the workflow), and the
/// frame's plugin chain writes the chart.
struct Edit {
    args: Args,
    /// Whether it adds the Helm chart, and the update workflow.
    helm: bool,
    autoupdate: bool,
}

impl super::frame::Command for Edit {
    fn plan(&mut self, _: &Global, project: &mut Project, plan: &mut Plan, report: &mut Report) -> Result<()> {
        if self.helm {
            add_helm(&self.args, project, plan)?;
        }
        let workflow = match self.autoupdate {
            true => add_autoupdate(&self.args, project, plan)?,
            false => Merged::default(),
        };
        plan.write(project::FILE, project.render()?)?;
        if let Some(helm) = project.plugins.helm.as_ref().filter(|_| self.helm) {
            report.next(format!(
                "\nThe Helm chart of {name} is in {output}/{CHART}. Next:\n  $ helm lint {output}/{CHART}\n  \
                 $ helm install {name} {output}/{CHART} -n {name}-system --create-namespace \\\n      \
                 --set manager.image.repository=<registry>/{name} --set manager.image.tag=<tag>\n",
                name = project.project_name,
                output = helm.output
            ));
        }
        if self.autoupdate {
            report.next(AUTOUPDATE_NEXT);
        }
        report.merged(workflow, FRESH_WORKFLOW);
        Ok(())
    }

    fn remake_plugins(&self) -> bool {
        self.helm && self.args.force
    }
}

/// Records the Helm plugin in `project`, with the directory of its chart, once the project is
/// found to have something to deploy and the directory free for memop's chart.
fn add_helm(args: &Args, project: &mut Project, plan: &mut Plan) -> Result<()> {
    let output = chart_home(args, project)?;
    // (a controller over a kind of Kubernetes' own reconciles without an API of the project's)
    if project.resources.iter().all(|r| r.api.is_none() && !r.controller) {
        bail!(
            "the project has no API yet, and a chart of it would deploy a manager with nothing to reconcile; \
             run `memop create api` first (later `create api` runs update the chart)"
        );
    }
    // A chart moved by --output-dir: memop keeps only the new one up to date.
    if let Some(old) = project.plugins.helm.as_ref().map(|helm| &helm.output).filter(|old| **old != output) {
        let old_chart = format!("{old}/{CHART}");
        if plan.read(Path::new(&format!("{old_chart}/Chart.yaml")))?.is_some() {
            plan.note(format!(
                "the chart was in {old_chart}, and memop now writes and updates {output}/{CHART} instead; it leaves \
                 {old_chart} as it is, with any edits of yours: carry them over, then delete it"
            ));
        }
    }
    let new_home = project.plugins.helm.as_ref().is_none_or(|helm| helm.output != output);
    project.plugins.helm = Some(HelmPlugin { output: output.clone() });
    if new_home {
        refuse_a_foreign_chart(project, plan, &output)?;
    }
    Ok(())
}

/// The directory the chart goes in: `--output-dir`, else where PROJECT records it, else `dist`.
fn chart_home(args: &Args, project: &Project) -> Result<String> {
    let output = match (&args.output_dir, &project.plugins.helm) {
        (Some(dir), _) => dir.trim_end_matches('/').to_string(),
        (None, Some(helm)) => helm.output.clone(),
        (None, None) => "dist".to_string(),
    };
    project::check_output_dir(&output).map_err(|err| anyhow::anyhow!("--output-dir {err}"))?;
    project::check_chart_home(&output).map_err(|err| anyhow::anyhow!("--output-dir {err}"))?;
    Ok(output)
}

/// Refuses to write the chart into `<output>/chart` when a chart is there already that memop did
/// not write (one kubebuilder left, say), as `init` refuses an existing project: mixing memop's
/// templates into it would break both. A `Chart.yaml` that `PROJECT.sum` lists, or that is memop's
/// own text (a first `edit` interrupted before it recorded the chart), is memop's.
fn refuse_a_foreign_chart(project: &Project, plan: &Plan, output: &str) -> Result<()> {
    let chart_yaml = format!("{output}/{CHART}/Chart.yaml");
    let Some(current) = plan.read(Path::new(&chart_yaml))? else { return Ok(()) };
    if plan.record().get(&chart_yaml).is_some() {
        return Ok(());
    }
    let templates = Templates::load(&["helm"])?;
    let ctx = tera::Context::from_serialize(ProjectContext::new(project))?;
    let ours = templates.entries("helm", &ctx)?.into_iter().find_map(|entry| match entry {
        Entry::File { template, path, .. } if path == "Chart.yaml" => Some(template),
        _ => None,
    });
    if let Some(template) = ours
        && current == templates.render(&template, &ctx)?
    {
        return Ok(());
    }
    bail!(
        "{output}/{CHART} already holds a chart memop did not write ({chart_yaml} is not memop's), and memop's \
         templates mixed into it would render neither chart; give memop a directory of its own with `--output-dir`, \
         or move that chart away and run the command again"
    )
}

/// What to do once the workflow is written.
const AUTOUPDATE_NEXT: &str = "\nThe update workflow is .github/workflows/auto-update.yml: every Monday (and when run by \
     hand) it installs the newest memop, runs `memop update` on a branch and opens a pull request listing what \
     changed. Commit and push it; it needs the repository's Actions to have \"Read and write permissions\" and to be \
     allowed to create pull requests (Settings > Actions > General).\n";

/// Where to see memop's text of the workflow when it could not be merged.
const FRESH_WORKFLOW: &str = "`memop edit --plugins=autoupdate/v1-alpha --force` in a copy of the project";

/// Records the autoupdate plugin in `project`, with the repository memop is installed from, and
/// plans its workflow.
fn add_autoupdate(args: &Args, project: &mut Project, plan: &mut Plan) -> Result<Merged> {
    let memop_git = match (&args.memop_git, &project.plugins.autoupdate) {
        (Some(url), _) => url.trim().to_string(),
        (None, Some(recorded)) => recorded.memop_git.clone(),
        (None, None) => bail!(
            "--plugins=autoupdate/v1-alpha needs the git repository its workflow installs the newest memop from \
             (memop is not on crates.io): give it with --memop-git URL, e.g. `memop edit \
             --plugins=autoupdate/v1-alpha --memop-git https://github.com/<owner>/memop`; PROJECT records it"
        ),
    };
    project::check_memop_git(&memop_git).map_err(|err| anyhow::anyhow!("--memop-git {err}"))?;
    project.plugins.autoupdate = Some(AutoUpdatePlugin { memop_git });
    super::autoupdate::plan_workflow(project, plan, args.force)
}
