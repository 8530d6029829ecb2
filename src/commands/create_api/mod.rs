//! `memop create api`: a Kubernetes API (the Rust types of a custom resource and its CRD) and
//! its controller, registered in the project at the scaffold markers.
//!
//! In three steps, as kubebuilder's scaffolders run: [`validate`] decides everything from the
//! flags and PROJECT (every refusal is there), [`scaffold`] plans the files, and [`report`]
//! says what was made and what to do next.

mod external;
mod scaffold;
mod validate;

use anyhow::Result;
use clap::ArgAction;

use super::Global;
use super::gvk::GvkArgs;
use crate::project::Project;
use crate::scaffold::Plan;

pub use validate::{Request, validate};

/// Scaffold a Kubernetes API: its Rust types, CRD, sample and controller
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    # The Memcached operator of the kubebuilder tutorial (built-in preset):\n  \
    memop create api --group cache --kind Memcached\n\n  \
    # A controller that deploys any image:\n  \
    memop create api --group web --kind Nginx \\\n      --image nginxinc/nginx-unprivileged:1.27 --image-container-port 8080\n\n  \
    # Types and a skeleton controller to fill in:\n  \
    memop create api --group batch --version v1 --kind CronJob\n\n  \
    # A controller over Kubernetes' Deployments (no types nor CRD of yours):\n  \
    memop create api --group apps --version v1 --kind Deployment \\\n      --resource=false --controller=true\n\n  \
    # A controller over cert-manager's Certificates (types from its CRD, by kopium):\n  \
    memop create api --group cert-manager.io --version v1 --kind Certificate \\\n      --external-api-crd certificates.yaml --resource=false --controller=true\n\n  \
    # A second version of Memcached, stored as v1 from now on (then: create webhook --conversion):\n  \
    memop create api --group cache --version v1 --kind Memcached \\\n      --storage-version")]
pub struct Args {
    #[command(flatten)]
    gvk: GvkArgs,

    /// Plural resource name [default: kubebuilder's plural of the kind]
    #[arg(long)]
    plural: Option<String>,

    /// Whether objects of the kind live in a namespace (false: cluster-scoped)
    #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1, default_missing_value = "true", value_name = "true|false")]
    namespaced: bool,

    /// Scaffold the Rust types and CRD of the kind (false: a controller over types that exist:
    /// the project's, or Kubernetes' own with its group, as `--group apps --version v1 --kind
    /// Deployment`)
    #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1, default_missing_value = "true", value_name = "true|false")]
    resource: bool,

    /// Scaffold a controller for the kind [default: true, but false for a new version of a kind
    /// that has a controller: one controller reconciles a kind, in one of its versions]
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "true|false")]
    controller: Option<bool>,

    /// Add another controller, named NAME (in logs and metrics; its module is NAME snake_cased),
    /// to a kind the project has: its own kind or Kubernetes' (with `--resource=false
    /// --controller=true`)
    #[arg(long, value_name = "NAME")]
    controller_name: Option<String>,

    /// Store the kind in this version (kubebuilder's `+kubebuilder:storageversion`), for a kind
    /// served in several versions. Without it, a new version of a kind is served, and the kind
    /// stays stored as before
    #[arg(long)]
    storage_version: bool,

    /// Image the controller deploys (an operand controller, as kubebuilder's deploy-image plugin)
    #[arg(long, value_name = "IMG")]
    image: Option<String>,

    /// Container port of the image
    #[arg(long, value_name = "PORT")]
    image_container_port: Option<String>,

    /// Command of the image's container, comma-separated: "memcached,--memory-limit=64"
    #[arg(long, value_name = "CMD")]
    image_container_command: Option<String>,

    /// User ID the image's container runs as
    #[arg(long, value_name = "UID")]
    run_as_user: Option<String>,

    /// Regenerate the files of an API that already exists (only that API's own files)
    #[arg(long)]
    force: bool,

    /// kubebuilder's plugins (deploy-image/v1-alpha, ...): memop has one layout with their parts
    /// built in, and says what it does for each
    #[arg(long, value_delimiter = ',', value_name = "PLUGINS")]
    plugins: Vec<String>,

    /// The CRD (YAML) of another project's kind to scaffold a controller over, with
    /// `--resource=false --controller=true` and the CRD's group (`--group cert-manager.io`): memop
    /// keeps it in config/external-crds/ and writes the kind's Rust types with kopium (a relative
    /// FILE is relative to -C DIR, as every path memop is given)
    #[arg(long, value_name = "FILE")]
    external_api_crd: Option<std::path::PathBuf>,

    /// The domain of an external kind's group, kubebuilder's way of splitting it: `--group
    /// cert-manager --external-api-domain io` is `--group cert-manager.io`
    #[arg(long, value_name = "DOMAIN")]
    external_api_domain: Option<String>,

    /// kubebuilder's Go import path of an external kind's types: refused, with what memop does
    #[arg(long, hide = true, value_name = "PATH")]
    external_api_path: Option<String>,

    /// kubebuilder's Go module of an external kind's types: refused, with what memop does
    #[arg(long, hide = true, value_name = "MODULE")]
    external_api_module: Option<String>,

    /// kubebuilder's `--make`: accepted, and ignored with a note
    #[arg(long, hide = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_parser = clap::value_parser!(bool))]
    make: Option<bool>,
}

impl Args {
    /// The first flag given that describes the image an operand controller deploys, if any:
    /// `--image` itself first (`with_image`), or only the flags that need it.
    fn image_flag(&self, with_image: bool) -> Option<&'static str> {
        [
            ("--image", with_image && self.image.is_some()),
            ("--image-container-port", self.image_container_port.is_some()),
            ("--image-container-command", self.image_container_command.is_some()),
            ("--run-as-user", self.run_as_user.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}

pub fn run(global: &Global, args: Args, report: &mut super::Report) -> Result<()> {
    let command = super::plugins::Command::CreateApi { image: args.image.is_some() };
    for note in super::plugins::answer(command, &args.plugins)? {
        report.answer(note);
    }
    if args.make.is_some() {
        report
            .answer("--make is kubebuilder's; memop never runs make after scaffolding (run `make manifests` yourself)");
    }
    let project = Project::load(&global.dir)?;
    super::frame::run(global, report, project, args)
}

impl super::frame::Command for Args {
    fn plan(
        &mut self,
        global: &Global,
        project: &mut Project,
        plan: &mut Plan,
        report: &mut super::Report,
    ) -> Result<()> {
        let request = external::request(self, project, &global.dir)?;
        if request.new_version {
            project.refuse_storage_disagreement(&request.api)?;
        }
        let mut notes = scaffold::scaffold(&request, project, plan)?;
        notes.splice(0..0, request.notes.iter().cloned());
        report.say(summary(&request));
        for note in &notes {
            report.note(note);
        }
        report.next(next(&request));
        Ok(())
    }
}

/// The line that says which controller the kind got.
fn summary(request: &Request) -> String {
    let kind = &request.api.kind;
    let recorded = request.existing.as_ref().is_some_and(|r| r.operand.is_some());
    if let Some(name) = &request.controller_name {
        return format!(
            "{kind}: another controller, {name} (src/controller/{}.rs), a skeleton beside the kind's others.\n",
            name.module()
        );
    }
    match &request.operand {
        _ if !request.controller => String::new(),
        _ if request.api.external => format!(
            "{kind}: a controller over another project's {} (its CRD kept in {}, kopium's types in {}).\n",
            request.api.gvk(),
            request.api.external_crd_path(),
            request.api.external_types_path()
        ),
        _ if request.api.builtin => format!(
            "{kind}: a controller over Kubernetes' own {} (k8s-openapi's type: no types, CRD nor sample of the \
             project's).\n",
            request.api.gvk()
        ),
        Some(o) if request.image_flag => format!("{kind}: operand controller deploying {} (from --image).\n", o.image),
        Some(o) if recorded => format!("{kind}: operand controller deploying {} (as recorded in PROJECT).\n", o.image),
        Some(o) => format!(
            "{kind}: operand controller from the built-in {kind} preset (image {}, port {}); \
             pass --image to deploy another image.\n",
            o.image, o.container_port
        ),
        None => format!(
            "{kind}: skeleton controller (no --image, and memop has no preset for {kind}); \
             fill in its reconcile, or rerun with --force --image IMG --image-container-port PORT \
             to get one that deploys an image.\n"
        ),
    }
}

/// Plans into `plan` what `memop create api` planned for `request` (see
/// [`Request::recorded`]), and records the result in `project`: how `memop update` replays the
/// scaffolds PROJECT records.
pub fn replay(request: &Request, project: &mut Project, plan: &mut Plan) -> Result<()> {
    scaffold::scaffold(request, project, plan)?;
    Ok(())
}

/// What to do once the files are written.
fn next(request: &Request) -> String {
    let api = &request.api;
    let (types, controller) = match &request.controller_name {
        Some(name) => (api.types_path(), format!("src/controller/{}.rs", name.module())),
        None => (api.types_path(), api.controller_path()),
    };
    let next = match (request.resource, request.controller) {
        (true, true) => format!("implement your API in {types} and its controller in {controller}"),
        (true, false) => format!("implement your API in {types}"),
        _ => format!("implement the controller in {controller}"),
    };
    format!(
        "\nNext: {next}, then:\n  $ make manifests   # regenerate config/crd and config/rbac/role.yaml from the code\n  $ make test\n"
    )
}
