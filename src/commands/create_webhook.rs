//! `memop create webhook`: admission webhooks of an existing API (defaulting, validation), served
//! by the manager over HTTPS and declared in `config/webhook/manifests.yaml`.

use anyhow::{Result, bail};
use serde::Serialize;

use super::context::ProjectContext;
use super::{Global, finish};
use crate::names::{Domain, Group, Kind, Version};
use crate::project::{self, Project, Webhooks};
use crate::resource::ApiNames;
use crate::scaffold::{self, IfExists, Plan, Templates};

/// Scaffold admission webhooks for an existing API: defaulting and validation
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    # Defaulting and validating webhooks for the Memcached API:\n  \
    memop create webhook --group cache --version v1alpha1 --kind Memcached \\\n      --defaulting --programmatic-validation")]
pub struct Args {
    /// API group of the kind, without the domain
    #[arg(long)]
    group: String,

    /// API version of the kind
    #[arg(long, default_value = "v1alpha1")]
    version: String,

    /// Kind, in PascalCase
    #[arg(long)]
    kind: String,

    /// A mutating webhook that sets defaults
    #[arg(long)]
    defaulting: bool,

    /// A validating webhook that can refuse creates, updates and deletions
    #[arg(long)]
    programmatic_validation: bool,

    /// A conversion webhook between versions (not supported yet)
    #[arg(long)]
    conversion: bool,

    /// Regenerate the kind's webhook module and test (your edits to them are lost)
    #[arg(long)]
    force: bool,
}

/// The names the webhook templates see.
#[derive(Debug, Serialize)]
struct WebhookContext {
    #[serde(flatten)]
    project: ProjectContext,
    group: String,
    version: String,
    kind: String,
    plural: String,
    singular: String,
    kind_snake: String,
    qualified_group: String,
    group_module: String,
    sample_file: String,
    api_namespaced: bool,
    defaulting: bool,
    validation: bool,
    mutate_path: String,
    validate_path: String,
    mutating_name: String,
    validating_name: String,
    /// Every webhook of the project, for `config/webhook/manifests.yaml`.
    webhook_configurations: Vec<Configuration>,
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
    group: String,
    version: String,
    resource: String,
}

/// The paths and names of one API's webhooks, as kubebuilder spells them.
struct Spelling {
    mutate_path: String,
    validate_path: String,
    mutating_name: String,
    validating_name: String,
}

impl Spelling {
    fn of(api: &ApiNames) -> Self {
        let (group, version, singular) = (api.qualified_group.replace('.', "-"), &api.version, api.kind.lower());
        Self {
            mutate_path: format!("/mutate-{group}-{version}-{singular}"),
            validate_path: format!("/validate-{group}-{version}-{singular}"),
            mutating_name: format!("m{singular}-{version}.{}", api.qualified_group),
            validating_name: format!("v{singular}-{version}.{}", api.qualified_group),
        }
    }
}

pub fn run(global: &Global, args: Args) -> Result<()> {
    let dir = &global.dir;
    let mut project = Project::load(dir)?;
    let domain = Domain::parse(&project.domain)?;
    let (group, version, kind) =
        (Group::parse(&args.group, &domain)?, Version::parse(&args.version)?, Kind::parse(&args.kind)?);
    let gvk = format!("{}/{}, Kind={}", group.as_str(), version, kind);
    if args.conversion {
        bail!(
            "--conversion: memop cannot scaffold conversion webhooks yet (a kind has one version in a \
             memop project); drop --conversion"
        );
    }
    if !args.defaulting && !args.programmatic_validation {
        bail!("no webhook to scaffold: pass --defaulting, --programmatic-validation, or both");
    }
    let Some(existing) = project.find(group.as_str(), version.as_str(), kind.as_str()).cloned() else {
        bail!(
            "{gvk} has no API in this project; create it first: memop create api --group {} --version {} --kind {kind}",
            args.group,
            args.version
        );
    };
    if existing.api.is_none() {
        bail!(
            "{gvk} has a controller but no types in this project (create api --resource=false); webhooks need its types"
        );
    }
    let api = ApiNames::of(&existing, &domain)?;
    if let (Some(webhooks), false) = (&existing.webhooks, args.force) {
        let what = [(webhooks.defaulting, "defaulting"), (webhooks.validation, "validation")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| *name)
            .collect::<Vec<_>>()
            .join(" and ");
        bail!(
            "{gvk} already has webhooks ({what}); pass --force to regenerate src/webhook/{}.rs and its test \
             with the webhooks asked for now and those it has (your edits to those two files are lost)",
            kind.snake()
        );
    }
    // Webhook modules and tests are named after the kind alone.
    for (other, resource) in ApiNames::all(&project)?.iter().zip(&project.resources) {
        if resource.webhooks.is_some()
            && !other.is(&args.group, &args.version, &args.kind)
            && other.kind.snake() == kind.snake()
        {
            bail!(
                "{} in group {} already has webhooks in src/webhook/{}.rs, which {gvk}'s would need too; \
                 memop names webhook modules after kinds, so only one of them can have webhooks",
                other.kind,
                other.group.as_str(),
                kind.snake()
            );
        }
    }

    let recorded = existing.webhooks.clone();
    let defaulting = args.defaulting || recorded.as_ref().is_some_and(|w| w.defaulting);
    let validation = args.programmatic_validation || recorded.as_ref().is_some_and(|w| w.validation);
    let mut resource = existing.clone();
    resource.webhooks = Some(Webhooks { defaulting, validation, webhook_version: "v1".into() });
    project.upsert(resource);

    let spelling = Spelling::of(&api);
    let ctx = WebhookContext {
        project: ProjectContext::new(&project)?,
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        plural: api.plural.to_string(),
        singular: kind.lower(),
        kind_snake: kind.snake(),
        qualified_group: api.qualified_group.clone(),
        group_module: api.group_module(),
        sample_file: api.sample_file(),
        api_namespaced: existing.api.as_ref().is_some_and(|a| a.namespaced),
        defaulting,
        validation,
        mutate_path: spelling.mutate_path,
        validate_path: spelling.validate_path,
        mutating_name: spelling.mutating_name,
        validating_name: spelling.validating_name,
        webhook_configurations: configurations(&project)?,
    };
    let ctx = tera::Context::from_serialize(&ctx)?;

    let templates = Templates::load(&["webhook/", "webhook-manifests/"])?;
    let mut plan = Plan::new(dir);
    let own = if args.force { IfExists::Overwrite } else { IfExists::Error };
    scaffold::render_root(&templates, "webhook", &ctx, &mut plan, own)?;
    // Written as `make manifests` would write it, from every kind's webhooks.
    scaffold::render_root(&templates, "webhook-manifests", &ctx, &mut plan, IfExists::Overwrite)?;
    plan.write(project::FILE, project.render()?, IfExists::Overwrite)?;
    let written = finish(global, plan)?;
    if written {
        super::say(&format!(
            "\nNext: fill in src/webhook/{}.rs, then:\n  $ make manifests   # regenerate config/webhook/manifests.yaml from the code\n  $ make test\n\
             Deploying needs cert-manager in the cluster: it issues the webhook server's certificate.\n",
            kind.snake()
        ))?;
    }
    Ok(())
}

/// The webhook configurations of every kind with webhooks, their webhooks sorted by name (as
/// the generated code sorts them).
fn configurations(project: &Project) -> Result<Vec<Configuration>> {
    let (mut mutating, mut validating) = (Vec::new(), Vec::new());
    for (api, resource) in ApiNames::all(project)?.iter().zip(&project.resources) {
        let Some(webhooks) = &resource.webhooks else { continue };
        let spelling = Spelling::of(api);
        let entry = |name: String, path: String| WebhookEntry {
            name,
            path,
            group: api.qualified_group.clone(),
            version: api.version.to_string(),
            resource: api.plural.to_string(),
        };
        if webhooks.defaulting {
            mutating.push(entry(spelling.mutating_name, spelling.mutate_path));
        }
        if webhooks.validation {
            validating.push(entry(spelling.validating_name, spelling.validate_path));
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
    Ok(configurations)
}
