//! The files `create api` plans for a validated [`Request`]: the API's types, CRD, sample and
//! RBAC helper roles, its controller, and the entries of each in the files APIs share.

use std::path::Path;

use anyhow::{Context as _, Result};
use serde::Serialize;

use super::Request;
use crate::commands::context::ProjectContext;
use crate::project::{self, Api, Operand, Project, Resource};
use crate::resource::ApiNames;
use crate::scaffold::{self, Plan, Templates};

/// What the templates of an API see: the project's names, the API's spellings, and the few
/// facts `create api` decided.
#[derive(Debug, Serialize)]
struct ApiContext<'a> {
    #[serde(flatten)]
    project: ProjectContext,
    #[serde(flatten)]
    api: &'a ApiNames,
    short_name: Option<&'a str>,
    api_namespaced: bool,
    operand: Option<&'a Operand>,
}

/// Records `request`'s API in `project`: a new kind or version, or another controller of a kind
/// the project has.
fn record(request: &Request, project: &mut Project) {
    let api = &request.api;
    let existing = request.existing.as_ref();
    if let Some(name) = &request.controller_name {
        // Another controller of a kind the project has: its entry gains the name, and only the
        // controller's root is rendered, with its module and name for the kind's.
        let mut resource = existing.expect("a named controller's kind is in PROJECT").clone();
        if !resource.controllers.iter().any(|n| n == name.as_str()) {
            resource.controllers.push(name.to_string());
        }
        project.upsert(resource);
    } else {
        project.upsert(Resource {
            names: api.clone(),
            // A kind of Kubernetes' own or another project's has no types nor CRD of the project's.
            api: (!api.builtin && !api.external)
                .then(|| Api { crd_version: "v1".into(), namespaced: request.namespaced }),
            controller: request.controller || existing.is_some_and(|r| r.controller),
            operand: request.operand.clone(),
            webhooks: existing.and_then(|r| r.webhooks.clone()),
            controllers: existing.map(|r| r.controllers.clone()).unwrap_or_default(),
            storage_version: project.storage_version(api).map(str::to_string),
        });
    }
}

/// Plans `request`'s files and records the API in `project` (written with the plan). Returns
/// the notes to print once the plan is written.
pub fn scaffold(request: &Request, project: &mut Project, plan: &mut Plan) -> Result<Vec<String>> {
    let api = &request.api;
    let existing = request.existing.as_ref();
    record(request, project);

    let mut ctx = tera::Context::from_serialize(ApiContext {
        project: ProjectContext::new(project),
        api,
        short_name: request.short_name.as_deref(),
        api_namespaced: request.namespaced,
        operand: request.operand.as_ref(),
    })?;
    if let Some(name) = &request.controller_name {
        ctx.insert("kind_snake", &name.module());
        ctx.insert("controller_name", name.as_str());
        // The kind's types, whose fields the skeleton's log line and test sample use.
        ctx.insert("operand", &existing.and_then(|r| r.operand.as_ref()));
    }

    // A kind the project does not define (Kubernetes' own, another project's) gets the one
    // controller root of foreign kinds; another project's also its types (`controller-external`).
    let root = match (&request.operand, api.builtin_kind()) {
        _ if request.external.is_some() => {
            plan_external(request, plan, &mut ctx)?;
            "controller-core"
        }
        (_, Some(builtin)) => {
            // The object the controller's tests create: k8s-openapi's type, from JSON.
            // (pretty, and indented as the template's `json!` has it: rustfmt leaves macros be)
            let sample = serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(builtin.sample)?)?;
            ctx.insert("sample", &sample.replace('\n', "\n        "));
            "controller-core"
        }
        (Some(_), None) => "controller-operand",
        (None, None) => "controller-skeleton",
    };
    // What this version of a kind changes in the kind, decided before any file is rendered: the
    // stored version goes to the kind's entry of STORAGE_VERSIONS (a keyed fragment of the
    // resource root) and its CRD (a generated file, which gains this version; the kind's RBAC
    // helper roles are left as they are), and a kind that converts through a hub gains a spoke.
    let new_version = request.resource && request.new_version;
    let mut spoke = None;
    if new_version {
        let crd_file = format!("config/crd/bases/{}.yaml", api.crd_file());
        let storage = storage_version(project, plan, api, &crd_file, request.storage_version)?;
        project.set_storage_version(api, Some(&storage));
        ctx.insert("storage_version", &storage);
        spoke = join_conversion(project, &ctx, api);
    }
    let notes = spoke.iter().map(|(_, note)| note.clone()).collect();
    let roots = roots(request, root, &ctx, spoke.as_ref().map(|(ctx, _)| ctx));
    let mut names = vec!["resource", root, "controller-external", "manager-role"];
    if spoke.is_some() {
        names.extend(["webhook-conversion-spoke", "conversion-test"]);
    }
    let templates = Templates::load(&names)?;
    if request.resource {
        let sharing = project.others(api).filter(|r| r.api.is_some());
        scaffold::refuse_missing_shared(&templates, "resource", &ctx, plan, sharing)?;
    }
    for (root, ctx, force, version) in roots {
        let render = if version { scaffold::render_version } else { scaffold::render_root };
        render(&templates, root, ctx, plan, force)?;
    }
    plan.write(project::FILE, project.render()?)?;
    Ok(notes)
}

/// The roots `create api` renders for `request`, in order (`root`: its controller's): each with
/// its context (`spoke`: the context of a new version's conversion, see [`join_conversion`]),
/// whether `--force` replaces its files (the manager role and the conversion test keep theirs),
/// and whether it is a new version's, which finds the kind's files there already, as files its
/// versions share.
fn roots<'a>(
    request: &Request,
    root: &'a str,
    ctx: &'a tera::Context,
    spoke: Option<&'a tera::Context>,
) -> Vec<(&'a str, &'a tera::Context, bool, bool)> {
    let new_version = request.resource && request.new_version;
    let mut roots = Vec::new();
    if request.resource {
        roots.push(("resource", ctx, request.force, new_version));
    }
    if let Some(spoke) = spoke {
        // The spoke's conversion is one of this version's own files, which --force regenerates.
        roots.push(("webhook-conversion-spoke", spoke, request.force, true));
        roots.push(("conversion-test", spoke, false, true));
    }
    if request.controller {
        roots.push((root, ctx, request.force, new_version));
        if request.external.is_some() {
            roots.push(("controller-external", ctx, request.force, new_version));
        }
    }
    // The manager role, with this controller's rules: a generated file, which keeps the rules
    // it has, and the user's own role.yaml (see scaffold::generated).
    roots.push(("manager-role", ctx, false, new_version));
    roots
}

/// An external kind's own files: its CRD, kept in `config/external-crds/` (the user's: memop
/// writes what `--external-api-crd` gave, and `memop update` leaves it), and its Rust types,
/// kopium's from that CRD (generated: written again at every run, by `make external-types`
/// too). Puts the sample object and the CRD's path into `ctx` for the controller's templates.
fn plan_external(request: &Request, plan: &mut Plan, ctx: &mut tera::Context) -> Result<()> {
    let (api, crd) = (&request.api, request.external.as_ref().expect("an external request has its CRD"));
    let crd_path = api.external_crd_path();
    plan.write(&crd_path, crd.yaml()?)?;
    plan.set_owner(Path::new(&crd_path), scaffold::Owner::User);
    let types = api.external_types_path();
    plan.write(&types, crd.rust_types(api.version.as_str(), &crd_path)?)?;
    let sample = crd.sample(api.version.as_str(), &format!("{}-sample", api.kind.kebab()))?;
    // Indented as the template's `json!` has it: rustfmt leaves macros be.
    ctx.insert("sample", &serde_json::to_string_pretty(&sample)?.replace('\n', "\n        "));
    ctx.insert("crd_path", &crd_path);
    Ok(())
}

/// The version a kind with several versions is stored as: `this` version when `requested`
/// (--storage-version), else the one PROJECT records, else (the kind's second version) the one
/// its CRD file stores.
fn storage_version(project: &Project, plan: &Plan, api: &ApiNames, crd_file: &str, requested: bool) -> Result<String> {
    if requested {
        return Ok(api.version.to_string());
    }
    if let Some(version) = project.storage_version(api) {
        return Ok(version.to_string());
    }
    let crd = plan.read(Path::new(crd_file))?.unwrap_or_default();
    scaffold::generated::storage_version(&crd).with_context(|| {
        format!("{crd_file} names no storage version of {}; run `make manifests`, then this command again", api.kind)
    })
}

/// A new version of a kind that converts through a hub (`create webhook --conversion`) becomes
/// one of its spokes, as `create webhook --conversion --spoke` would make it: recorded in
/// PROJECT, and rendered by the roots of its `From` impls to and from the hub (a copy of the
/// types converts field by field), listed in `conversions()`, and of the kind's conversion test,
/// which round-trips every spoke (its template's owner keeps it when the user edited it, with a
/// note). Returns the context of those roots and the note to print; `None` for a kind with no
/// conversion.
fn join_conversion(project: &mut Project, ctx: &tera::Context, api: &ApiNames) -> Option<(tera::Context, String)> {
    let version = api.version.to_string();
    let converting = |r: &&mut Resource| r.names.same_kind(api) && r.names.version != api.version && r.converts();
    let hub = project.resources.iter_mut().find(converting)?;
    let webhooks = hub.webhooks.as_mut().expect("a converting resource has webhooks");
    if !webhooks.spoke.contains(&version) {
        webhooks.spoke.push(version.clone());
        webhooks.spoke.sort();
    }
    let (hub_version, spokes) = (hub.names.version.to_string(), webhooks.spoke.clone());
    let mut ctx = ctx.clone();
    ctx.insert("version", &hub_version);
    ctx.insert("spoke", &version);
    ctx.insert("spoke_sample_file", &api.sample_file());
    ctx.insert("spokes", &spokes);
    let kind = &api.kind;
    let note = format!(
        "{kind} {version} is a spoke of the hub {hub_version}: map its fields in {}; tests/{}_conversion.rs \
         round-trips it (add that yourself if memop kept your edited copy)",
        api.conversion_path(),
        kind.snake()
    );
    Some((ctx, note))
}
