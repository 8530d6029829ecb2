//! `memop create webhook`: admission webhooks of an existing API (defaulting, validation),
//! declared in `config/webhook/manifests.yaml`, and conversion webhooks between the versions of
//! a kind, hub and spoke, all served by the manager over HTTPS.
//!
//! As `create api`: [`validate`] decides from the flags and PROJECT (every refusal), [`scaffold`]
//! plans the files, and `run` reports.

mod scaffold;
mod validate;

use anyhow::Result;

use super::Global;
use super::gvk::GvkArgs;
use crate::project::Project;
use crate::scaffold::Plan;

pub use validate::{Request, validate};

/// Scaffold webhooks for an existing API: defaulting, validation, conversion between versions
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    # Defaulting and validating webhooks for the Memcached API:\n  \
    memop create webhook --group cache --version v1alpha1 --kind Memcached \\\n      --defaulting --programmatic-validation\n\n  \
    # A defaulting webhook on Kubernetes' Pods (not called in the manager's own namespace):\n  \
    memop create webhook --group core --version v1 --kind Pod --defaulting\n\n  \
    # Conversion between the versions of Memcached, through the hub v1:\n  \
    memop create webhook --group cache --version v1 --kind Memcached \\\n      --conversion --spoke v1alpha1")]
pub struct Args {
    #[command(flatten)]
    gvk: GvkArgs,

    /// A mutating webhook that sets defaults
    #[arg(long)]
    defaulting: bool,

    /// A validating webhook that can refuse creates, updates and deletions
    #[arg(long)]
    programmatic_validation: bool,

    /// A conversion webhook between the versions of the kind, with --version as the hub
    #[arg(long)]
    conversion: bool,

    /// The versions that convert to and from the hub, comma-separated [default: every other
    /// version of the kind]
    #[arg(long, value_delimiter = ',', requires = "conversion")]
    spoke: Vec<String>,

    /// Regenerate the kind's webhook module, conversions and tests (your edits to them are lost)
    #[arg(long)]
    force: bool,
}

pub fn run(global: &Global, args: Args, report: &mut super::Report) -> Result<()> {
    let project = Project::load(&global.dir)?;
    super::frame::run(global, report, project, args)
}

impl super::frame::Command for Args {
    fn plan(&mut self, _: &Global, project: &mut Project, plan: &mut Plan, report: &mut super::Report) -> Result<()> {
        let request = validate(self, project)?;
        scaffold::scaffold(&request, project, plan)?;
        report.next(next(&request));
        Ok(())
    }
}

/// Plans into `plan` what `memop create webhook` planned for `request` (see
/// [`Request::recorded`]), and records the result in `project`: how `memop update` replays the
/// scaffolds PROJECT records.
pub fn replay(request: &Request, project: &mut Project, plan: &mut Plan) -> Result<()> {
    scaffold::scaffold(request, project, plan)
}

/// What to do once the files are written.
fn next(request: &Request) -> String {
    let api = &request.api;
    let mut next = Vec::new();
    if request.admission {
        next.push(format!("fill in {}", api.webhook_path()));
    }
    // Only the spokes scaffolded now: an admission webhook on a hub does not touch them.
    let scaffolded = if request.conversion { request.spokes.as_slice() } else { &[] };
    for spoke in scaffolded {
        next.push(format!("map the fields of {spoke} in {}", api.in_version(spoke.clone()).conversion_path()));
    }
    format!(
        "\nNext: {}, then:\n  $ make manifests   # regenerate config/webhook/manifests.yaml from the code\n  $ make test\n\
         Deploying needs cert-manager in the cluster, which issues the webhook server's certificate, or the\n\
         manager can keep its own: see [WEBHOOK-CERTS] in config/default/kustomization.yaml.\n",
        next.join(", and ")
    )
}
