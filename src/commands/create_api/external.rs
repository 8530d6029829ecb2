//! `create api --external-api-crd FILE`: a controller over another project's kind (an operator's
//! CRD, as cert-manager's `Certificate`), kubebuilder's "external APIs". kubebuilder imports the
//! kind's Go types from their module (`--external-api-path`); memop has no Rust crate to import,
//! so it writes the types from the CRD with kopium and keeps the CRD in the project. Every
//! refusal of such a request is made here, from the flags, PROJECT and the CRD file.

use std::path::Path;

use anyhow::{Result, bail};

use super::validate::{Foreign, refuse_foreign_flags};
use super::{Args, Request, validate};
use crate::names::external::ExternalCrd;
use crate::project::Project;
use crate::resource::ApiNames;

/// The longest `--external-api-crd` file memop reads: a CRD the API server takes is at most a few
/// MiB (etcd's limit), and a file of many of them (cert-manager's) far less than this.
const MAX_CRD_FILE: u64 = 64 << 20;

/// Decides what `args` ask of `project` (in `dir`, which a relative `--external-api-crd` is
/// read from, as every path memop is given): an external kind's controller with
/// `--external-api-crd`, else what [`validate`] decides.
pub fn request(args: &Args, project: &Project, dir: &Path) -> Result<Request> {
    for (flag, set) in
        [("--external-api-path", &args.external_api_path), ("--external-api-module", &args.external_api_module)]
    {
        if let Some(value) = set {
            bail!(
                "{flag} {value}: kubebuilder imports an external kind's Go types from there; memop writes the kind's \
                 Rust types from its CRD instead: pass --external-api-crd FILE (the kind's CustomResourceDefinition, as \
                 its project publishes it) and drop {flag}"
            );
        }
    }
    // A named controller is over a kind the project has: `validate` refuses --external-api-crd.
    let (Some(file), None) = (&args.external_api_crd, &args.controller_name) else {
        if let Some(domain) = &args.external_api_domain {
            bail!(
                "--external-api-domain {domain} is the domain of another project's kind, whose CRD memop needs: pass it \
                 with --external-api-crd FILE (with --resource=false --controller=true)"
            );
        }
        return validate(args, project);
    };
    validate_external(args, project, dir, file)
}

/// A controller over the kind of another project's that the CRD in `file` defines.
fn validate_external(args: &Args, project: &Project, dir: &Path, file: &Path) -> Result<Request> {
    let gvk = &args.gvk;
    let shown = file.display();
    if args.resource {
        bail!(
            "--external-api-crd: {} is another project's kind, whose types and CRD that project defines; pass \
             --resource=false (with --controller=true) to scaffold a controller over it",
            gvk.kind
        );
    }
    if args.controller != Some(true) {
        bail!(
            "--external-api-crd scaffolds a controller over {}, and nothing else: pass --controller=true (with \
             --resource=false)",
            gvk.kind
        );
    }
    let group = match &args.external_api_domain {
        Some(domain) => format!("{}.{domain}", gvk.group),
        None => gvk.group.clone(),
    };
    let text = crate::fs::read_given(&dir.join(file), &shown.to_string(), "--external-api-crd", MAX_CRD_FILE)?;
    let crd = ExternalCrd::find(&text, &shown.to_string(), &group, &gvk.version, &gvk.kind)?;
    let api = ApiNames::external(&crd.group, &gvk.version, &crd.kind, &crd.plural)?;
    let (kind, theirs) = (&api.kind, format!("{} is another project's kind ({}/{})", gvk.kind, crd.group, gvk.version));
    let storage_version = args.storage_version.then_some("--storage-version");
    if let Some(flag) = args.image_flag(true).or(storage_version) {
        bail!(
            "{flag}: {theirs}, whose project deploys and stores it; drop {flag}, and write what the controller does \
             in its reconcile"
        );
    }
    let foreign = Foreign { theirs: &theirs, plural: &crd.plural, namespaced: crd.namespaced, by_crd: true };
    refuse_foreign_flags(args, project, &foreign)?;
    // The project's own kind of that group and kind: its types are the ones to control.
    if let Some(own) = project.resources.iter().find(|r| {
        let n = &r.names;
        !n.builtin && !n.external && n.qualified_group == crd.group && n.kind == api.kind
    }) {
        bail!(
            "{kind} of {} is this project's own kind (its types are {}), not another project's; for a controller \
             over it, drop --external-api-crd: memop create api --group {} --version {} --kind {kind} --resource=false \
             --controller=true",
            crd.group,
            own.names.types_path(),
            own.names.group,
            own.names.version
        );
    }
    let existing = project.find(&api).cloned();
    if existing.is_some() && !args.force {
        bail!(
            "a controller for {} already exists; pass --force to regenerate it and the kind's types (your edits to \
             its controller and tests are lost)",
            api.gvk()
        );
    }
    super::validate::refuse_shared_crd(project, &api)?;
    super::validate::refuse_module_clashes(project, &api)?;
    let mut notes = Vec::new();
    if crd.group.strip_suffix(&project.domain).is_some_and(|g| g.ends_with('.')) {
        notes.push(format!(
            "{kind}'s group {} is in this project's domain ({}), as the project's own kinds' groups are: if {kind} is \
             this project's to define, define it with `memop create api --group {} --version {} --kind {kind}` \
             instead (its types, CRD and sample then the project's); the API server serves one CRD of each name, \
             so the project cannot define {kind} (nor a kind of its plural) beside this one",
            crd.group, project.domain, api.group, api.version
        ));
    }
    Ok(Request {
        api,
        resource: false,
        controller: true,
        force: args.force,
        storage_version: false,
        namespaced: crd.namespaced,
        operand: None,
        image_flag: false,
        existing,
        new_version: false,
        short_name: None,
        notes,
        external: Some(crd),
        controller_name: None,
    })
}
