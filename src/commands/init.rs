//! `memop init`: a new operator project, with no APIs yet.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::context::ProjectContext;
use super::{Global, Report};
use crate::names::{Domain, ProjectName};
use crate::project::{self, Project};
use crate::scaffold::{self, Declared, Owner, Plan, Scope, Templates};

/// Initialize a new operator project in the current directory (or -C DIR)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  mkdir memcached-operator && cd memcached-operator\n  memop init --domain example.com\n\n  # or, from anywhere:\n  memop -C memcached-operator init --domain example.com \\\n    --owner \"The Memcached Authors\""
)]
pub struct Args {
    /// Domain of the project's API groups: `create api --group cache` gives cache.<DOMAIN>
    #[arg(long, default_value = "my.domain")]
    domain: String,

    /// Project name [default: the directory's name]; names the crate, binary, image and namespace
    #[arg(long)]
    project_name: Option<String>,

    /// Copyright owner for license headers
    #[arg(long, default_value = "")]
    owner: String,

    /// License of generated sources
    #[arg(long, default_value = "apache2", value_parser = ["apache2", "none"])]
    license: String,

    /// Watch and manage only the manager's own namespace (Role instead of ClusterRole)
    #[arg(long)]
    namespaced: bool,

    /// Initialize even if the directory already holds a project (overwrites memop's files)
    #[arg(long)]
    force: bool,

    /// The project's repository, for Cargo.toml (kubebuilder's Go module path, e.g.
    /// github.com/example/memcached-operator, or a URL)
    #[arg(long, value_name = "URL")]
    repo: Option<String>,

    /// kubebuilder's plugins (go/v4, grafana/v1-alpha, ...): memop has one layout with their
    /// parts built in, and says what it does for each
    #[arg(long, value_delimiter = ',', value_name = "PLUGINS")]
    plugins: Vec<String>,
}

/// Files whose presence means the directory already holds a project.
const PROJECT_MARKERS: &[&str] = &[project::FILE, "Cargo.toml", "src/main.rs"];

pub fn run(global: &Global, args: Args, report: &mut Report) -> Result<()> {
    for note in super::plugins::answer(super::plugins::Command::Init, &args.plugins)? {
        report.answer(note);
    }
    // Not loaded: made from the flags, once they and the directory are found fit for it.
    let project = validate(&global.dir, &args, report)?;
    super::frame::run(global, report, project, args)
}

/// `init` in the frame: it plans the new project.
impl super::frame::Command for Args {
    fn plan(&mut self, _: &Global, project: &mut Project, plan: &mut Plan, report: &mut Report) -> Result<()> {
        plan_project(project, plan, self.force)?;
        report.next("\nNext: define a resource with:\n  $ memop create api --group cache --kind Memcached\n");
        Ok(())
    }
}

/// The project `args` describe in `dir`, once they and the directory are found fit for it (see
/// [`refuse_a_project_there`]).
fn validate(dir: &Path, args: &Args, report: &mut Report) -> Result<Project> {
    let domain = Domain::parse(&args.domain)?;
    crate::names::check_owner(&args.owner)?;
    let repo = args.repo.as_deref().map(crate::names::repository).transpose()?.unwrap_or_default();
    let name = match &args.project_name {
        Some(n) => ProjectName::parse(n)?,
        // Absolute, so that `.` still has a name.
        None => ProjectName::from_dir(&std::path::absolute(dir)?)?,
    };
    if dir.exists() && !dir.is_dir() {
        bail!("{} is not a directory; pass -C with a directory (it is created when missing)", dir.display());
    }
    // A project inside another would be a second crate and config/ tree that the outer
    // project's commands (run from inside, they find the outer PROJECT) would not see.
    let absolute = std::path::absolute(dir)?;
    if let Some(outer) = absolute.parent().and_then(crate::project::find_root) {
        bail!(
            "{} is inside the memop project {}; make a new project outside it (or add APIs to that one with \
             `memop create api`)",
            dir.display(),
            outer.display()
        );
    }
    refuse_a_project_there(dir, args.force)?;
    // As kubebuilder: other files are no reason to refuse, but worth a word (not under --force,
    // which says the user knows what is there).
    if let (Some(others), false) = (other_files(dir), args.force) {
        report.answer_warning(format!(
            "the directory is not empty ({others}); memop keeps files it would otherwise write, but \
             initializing in an empty directory is safer"
        ));
    }
    Ok(Project {
        // The license header of every file, kept in the project (`hack/boilerplate.rs.txt`), so
        // that a command in a later year writes the same headers.
        boilerplate: project::boilerplate(&args.license, &args.owner, name.as_str(), crate::clock::current_year()),
        code_storage: Vec::new(),
        cli_version: env!("CARGO_PKG_VERSION").to_string(),
        crate_name: name.crate_name(),
        domain: domain.to_string(),
        layout: vec![project::LAYOUT.to_string()],
        license: args.license.clone(),
        namespaced: args.namespaced,
        owner: args.owner.clone(),
        plugins: Default::default(),
        project_name: name.to_string(),
        repo,
        resources: Vec::new(),
        version: "3".to_string(),
    })
}

/// Refuses to initialize over a project (or a Cargo project) in `dir` unless `force`, and even
/// then over one with APIs, whose files would stay behind unregistered.
fn refuse_a_project_there(dir: &Path, force: bool) -> Result<()> {
    let found = PROJECT_MARKERS.iter().find(|f| dir.join(f).exists());
    if let (Some(&"Cargo.toml"), false) = (found, force) {
        bail!(
            "{} holds a Cargo project (Cargo.toml) but no memop PROJECT file; run `memop init` in a \
             new directory, or pass --force to write memop's files over it (Cargo.toml included)",
            dir.display()
        );
    }
    let loaded = Project::load(dir);
    // A project with APIs: --force would refuse too (below), so do not suggest it.
    let apis = loaded.as_ref().map_or(0, |p| p.resources.len());
    if let (Some(found), false, true) = (found, force, apis > 0) {
        bail!(
            "{} already holds a project with {apis} API(s) (found {found}); run `memop create api` to \
             extend it, or `memop update` to move it to this memop's runtime",
            dir.display()
        );
    }
    if let (Some(found), false) = (found, force) {
        bail!(
            "{} already holds a project (found {found}); run `memop create api` to extend it, \
             or pass --force to initialize over it (memop's files will be overwritten)",
            dir.display()
        );
    }
    // Even --force does not drop APIs: their files would stay, unregistered and unbuilt. A
    // PROJECT that does not load might list some: refuse rather than guess.
    let existing = match loaded {
        Err(err) if dir.join(project::FILE).exists() => {
            return Err(err.context(
                "init --force cannot tell which APIs the existing PROJECT file lists, and would \
                 drop them; fix PROJECT (or remove it, if the directory holds no memop project)",
            ));
        }
        loaded => loaded.ok(),
    };
    if let Some(existing) = existing
        && !existing.resources.is_empty()
    {
        let apis: Vec<String> = existing.resources.iter().map(|r| r.describe()).collect();
        bail!(
            "{} already has APIs ({}); init --force would unregister them and leave their files behind. \
             Initialize in a new directory instead (and copy your code over), or remove them from PROJECT first",
            dir.display(),
            apis.join(", ")
        );
    }
    Ok(())
}

/// Plans the new `project` (`force`: memop's files written over those there).
fn plan_project(project: &Project, plan: &mut Plan, force: bool) -> Result<()> {
    let ctx = tera::Context::from_serialize(ProjectContext::new(project))?;
    let templates = Templates::load(&["init", "manager-role"])?;
    // Without --force, a file the user already has (a README, a .gitignore) is kept, as
    // kubebuilder does; the project files themselves were refused above.
    scaffold::render_root(&templates, "init", &ctx, plan, force)?;
    scaffold::render_root(&templates, "manager-role", &ctx, plan, force)?;
    scaffold::vendor(plan, force)?;
    let lock = crate::scaffold::lockfile::for_project(&project.project_name);
    // memop's, one per project: a lock the user has already is kept.
    let declared = Declared::new(Owner::Memop, Scope::Project);
    scaffold::plan_files(plan, [("Cargo.lock".to_string(), lock)], declared, false, force)?;
    plan.write(project::FILE, project.render()?)
}

/// Makes `dir` and the directories above it that do not exist yet, so that `init` can hold the
/// directory's lock: of two `init`s at once, one waits for nothing and the other is refused.
/// Returns the directories made, deepest first, for [`remove_dirs`] if the command fails.
pub fn make_dir(dir: &Path) -> Vec<PathBuf> {
    let made: Vec<PathBuf> =
        dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).map(PathBuf::from).collect();
    if !made.is_empty() {
        let _ = std::fs::create_dir_all(dir);
    }
    made
}

/// Removes the directories [`make_dir`] made, deepest first, while they are empty: one that is
/// not (another `init`'s) stays, with those above it.
pub fn remove_dirs(made: &[PathBuf]) {
    for dir in made {
        if std::fs::remove_dir(dir).is_err() {
            break;
        }
    }
}

/// A short list of what `dir` already holds, ignoring hidden entries (`.git`, editor files);
/// `None` when that is nothing.
fn other_files(dir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    if names.is_empty() {
        return None;
    }
    names.sort();
    let shown = names.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    Some(if names.len() > 3 { format!("{shown}, …") } else { shown })
}
