//! `memop external-types`: writes the Rust types of the project's external kinds (`create api
//! --external-api-crd`) again from the CRDs the project keeps, with kopium, as `create api` wrote
//! them. The generated project's `make external-types` runs it: after you replace a CRD in
//! `config/external-crds/` with a newer one of its project, or to check that the types are
//! current (the second run writes nothing).
//!
//! memop runs kopium rather than the project's own code because kopium is a generator of memop's,
//! not a dependency of the operator: a project that built it would compile a second kube and
//! k8s-openapi into its tests and CI for a file that changes once per CRD release.

use std::path::Path;

use anyhow::{Context as _, Result};

use super::{Global, Report, finish};
use crate::names::external::ExternalCrd;
use crate::project::Project;
use crate::scaffold::Plan;

/// Write the Rust types of the project's external kinds (src/external/) again from their CRDs
/// (config/external-crds/), with kopium
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  cp ~/Downloads/cert-manager.io_certificates.yaml config/external-crds/ && memop external-types"
)]
pub struct Args {}

pub fn run(global: &Global, _args: Args) -> Result<()> {
    let project = Project::load(&global.dir)?;
    let mut plan = Plan::new(&global.dir)?;
    let mut kinds = Vec::new();
    for resource in project.resources.iter().filter(|r| r.names.external) {
        let api = &resource.names;
        let path = api.external_crd_path();
        let text = plan.read(Path::new(&path))?.with_context(|| {
            format!(
                "{path}, the CRD of {}, is missing; put the kind's CRD there (or run the `memop create api \
                 --external-api-crd` that scaffolded it again)",
                api.kind
            )
        })?;
        let names = (api.qualified_group.as_str(), api.version.as_str(), api.kind.as_str(), api.plural.as_str());
        let crd = ExternalCrd::kept(&text, &path, names, project.namespaced)?;
        // A CRD copied in as its project publishes it is kept as `create api` keeps one: the
        // kind's CRD alone, without that project's labels and annotations.
        plan.write(&path, crd.yaml()?)?;
        plan.write(api.external_types_path(), crd.rust_types(api.version.as_str(), &path)?)?;
        kinds.push(api.kind.to_string());
    }
    if kinds.is_empty() {
        return super::tell(
            "The project has no external kinds: `memop create api --external-api-crd FILE --resource=false \
             --controller=true` adds one.\n",
        );
    }
    finish(global, plan, &mut Report::default())
}
