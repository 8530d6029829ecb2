//! The files `create webhook` plans for a validated [`Request`]: the webhook server (once), the
//! kind's admission webhooks or conversion, and the webhook configurations of every kind.

use anyhow::{Result, bail};
use serde::Serialize;

use super::Request;
use crate::commands::context::ProjectContext;
use crate::names::external::ExternalCrd;
use crate::project::{self, Project};
use crate::resource::ApiNames;
use crate::scaffold::{self, Plan, Templates};

/// What the webhook templates see: the project's names, the API's spellings, and the webhooks.
#[derive(Debug, Serialize)]
struct WebhookContext<'a> {
    #[serde(flatten)]
    project: ProjectContext,
    #[serde(flatten)]
    api: &'a ApiNames,
    api_namespaced: bool,
    defaulting: bool,
    validation: bool,
    /// The kind's types are an operand kind's (`spec.size`), for the conversions.
    operand: bool,
    /// The spoke versions of a conversion webhook whose hub is `version`.
    spokes: Vec<String>,
    /// Every webhook of the project, for `config/webhook/manifests.yaml`.
    webhook_configurations: Vec<Configuration>,
    /// The names of the kind's defaulting and validating webhooks.
    mutating_name: String,
    validating_name: String,
}

#[derive(Debug, Serialize)]
struct Configuration {
    kind: &'static str,
    name: &'static str,
    webhooks: Vec<WebhookEntry>,
}

#[derive(Debug, Serialize)]
struct WebhookEntry {
    name: String,
    path: String,
    /// The API group as YAML spells it: the core group `""` quoted.
    group: String,
    version: String,
    resource: String,
    /// Not called for objects in the manager's namespace: a kind of Kubernetes' own
    /// (`memop_runtime::webhook::Webhook::skips_manager_namespace`).
    skips_manager_namespace: bool,
}

/// Plans `request`'s files and records the webhooks in `project` (written with the plan).
pub fn scaffold(request: &Request, project: &mut Project, plan: &mut Plan) -> Result<()> {
    let api = &request.api;
    let mut resource = request.existing.clone();
    resource.webhooks = Some(request.webhooks.clone());
    project.upsert(resource);

    let mut ctx = context(request, project, plan)?;

    let mut roots = vec!["webhook", "webhook-manifests"];
    if request.admission {
        roots.push("webhook-admission");
    }
    // The kustomize replacements that keep a kind of Kubernetes' own's webhooks out of the
    // manager's namespace, once per webhook configuration.
    let core_roots: Vec<&str> = [
        (request.webhooks.defaulting, "webhook-core-defaulting"),
        (request.webhooks.validation, "webhook-core-validation"),
    ]
    .into_iter()
    .filter(|(on, _)| api.builtin && *on)
    .map(|(_, root)| root)
    .collect();
    roots.extend(&core_roots);
    if request.conversion {
        roots.extend(["webhook-conversion", "webhook-conversion-spoke", "conversion-test"]);
    }
    let templates = Templates::load(&roots)?;
    // The other kinds with webhooks (with a conversion webhook, for `conversion`).
    let others =
        |conversion: bool| project.others(api).filter(move |r| r.webhooks.is_some() && (!conversion || r.converts()));
    scaffold::refuse_missing_shared(&templates, "webhook", &ctx, plan, others(false))?;
    if request.conversion {
        scaffold::refuse_missing_shared(&templates, "webhook-conversion", &ctx, plan, others(true))?;
    }
    // The webhook server's files, which the project's first `create webhook` made.
    scaffold::render_root(&templates, "webhook", &ctx, plan, request.force)?;
    if request.admission {
        scaffold::render_root(&templates, "webhook-admission", &ctx, plan, request.force)?;
    }
    for root in core_roots {
        scaffold::render_root(&templates, root, &ctx, plan, request.force)?;
    }
    if request.conversion {
        scaffold::render_root(&templates, "webhook-conversion", &ctx, plan, request.force)?;
        for spoke in &request.spokes {
            ctx.insert("spoke", spoke.as_str());
            ctx.insert("spoke_sample_file", &api.in_version(spoke.clone()).sample_file());
            scaffold::render_root(&templates, "webhook-conversion-spoke", &ctx, plan, request.force)?;
        }
        scaffold::render_root(&templates, "conversion-test", &ctx, plan, request.force)?;
    }
    // Written as `make manifests` would write it, from every kind's webhooks.
    scaffold::render_root(&templates, "webhook-manifests", &ctx, plan, request.force)?;
    plan.write(project::FILE, project.render()?)
}

/// The context of `request`'s templates in `project` (with the webhooks recorded): the kind's
/// scope and the object its webhook tests create, from Kubernetes' type or the CRD the project
/// keeps of another project's kind.
fn context(request: &Request, project: &Project, plan: &Plan) -> Result<tera::Context> {
    let api = &request.api;
    // Another project's kind: its CRD, which the project keeps, says its scope and makes the
    // object the webhook tests create.
    let external = match api.external {
        true => {
            let path = api.external_crd_path();
            let Some(text) = plan.read(std::path::Path::new(&path))? else {
                bail!("{path} is missing, and {}'s webhooks use its types; restore it from version control", api.kind);
            };
            let names = (api.qualified_group.as_str(), api.version.as_str(), api.kind.as_str(), api.plural.as_str());
            Some(ExternalCrd::kept(&text, &path, names, project.namespaced)?)
        }
        false => None,
    };
    let mut ctx = tera::Context::from_serialize(WebhookContext {
        project: ProjectContext::new(project),
        api,
        api_namespaced: match (api.builtin_kind(), &external) {
            (Some(builtin), _) => builtin.namespaced,
            (None, Some(crd)) => crd.namespaced,
            (None, None) => request.existing.api.as_ref().is_some_and(|a| a.namespaced),
        },
        defaulting: request.webhooks.defaulting,
        validation: request.webhooks.validation,
        operand: request.existing.operand.is_some(),
        spokes: request.webhooks.spoke.clone(),
        webhook_configurations: configurations(project),
        mutating_name: api.webhook_name(true, &project.domain),
        validating_name: api.webhook_name(false, &project.domain),
    })?;
    if let Some(builtin) = api.builtin_kind() {
        // The object the webhook tests create: k8s-openapi's type, from JSON (indented as the
        // template's `json!` has it: rustfmt leaves macros be).
        let sample = serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(builtin.sample)?)?;
        ctx.insert("sample", &sample.replace('\n', "\n        "));
    }
    if let Some(crd) = &external {
        let sample = crd.sample(api.version.as_str(), &format!("{}-sample", api.kind.kebab()))?;
        ctx.insert("sample", &serde_json::to_string_pretty(&sample)?.replace('\n', "\n        "));
    }
    Ok(ctx)
}

/// The webhook configurations of every kind with webhooks, their webhooks sorted by name (as
/// the generated code sorts them).
fn configurations(project: &Project) -> Vec<Configuration> {
    let (mut mutating, mut validating) = (Vec::new(), Vec::new());
    for resource in &project.resources {
        let (api, Some(webhooks)) = (&resource.names, &resource.webhooks) else { continue };
        let entry = |mutating: bool, path: String| WebhookEntry {
            name: api.webhook_name(mutating, &project.domain),
            path,
            group: match api.qualified_group.as_str() {
                "" => "\"\"".into(),
                group => group.into(),
            },
            version: api.version.to_string(),
            resource: api.plural.to_string(),
            skips_manager_namespace: api.builtin,
        };
        if webhooks.defaulting {
            mutating.push(entry(true, api.mutate_path()));
        }
        if webhooks.validation {
            validating.push(entry(false, api.validate_path()));
        }
    }
    let mut configurations = Vec::new();
    for (kind, name, mut webhooks) in [
        ("MutatingWebhookConfiguration", "mutating-webhook-configuration", mutating),
        ("ValidatingWebhookConfiguration", "validating-webhook-configuration", validating),
    ] {
        if !webhooks.is_empty() {
            webhooks.sort_by(|a, b| a.name.cmp(&b.name));
            configurations.push(Configuration { kind, name, webhooks });
        }
    }
    configurations
}
