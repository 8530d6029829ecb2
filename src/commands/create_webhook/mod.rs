//! `memop create webhook`: admission webhooks of an existing API (defaulting, validation),
//! declared in `config/webhook/manifests.yaml`, and conversion webhooks between the versions of
//! a kind, hub and spoke, all served by the manager over HTTPS.

use anyhow::{Result, bail};
use serde::Serialize;

use super::context::ProjectContext;
use super::{Global, finish};
use crate::names::{Domain, Group, Kind, Version};
use crate::project::{self, Project, Resource, Webhooks};
use crate::resource::ApiNames;
use crate::scaffold::{self, IfExists, Plan, Templates};

/// Scaffold webhooks for an existing API: defaulting, validation, conversion between versions
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    # Defaulting and validating webhooks for the Memcached API:\n  \
    memop create webhook --group cache --version v1alpha1 --kind Memcached \\\n      --defaulting --programmatic-validation\n\n  \
    # Conversion between the versions of Memcached, through the hub v1:\n  \
    memop create webhook --group cache --version v1 --kind Memcached \\\n      --conversion --spoke v1alpha1")]
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
    /// `config/crd/patches/<crd_patch_file>.yaml`, the patch that turns on the conversion webhook.
    crd_patch_file: String,
    api_namespaced: bool,
    defaulting: bool,
    validation: bool,
    /// The kind's types are an operand kind's (`spec.size`), for the conversions.
    operand: bool,
    /// The spoke versions of a conversion webhook whose hub is `version`.
    spokes: Vec<String>,
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
    let admission = args.defaulting || args.programmatic_validation;
    if !admission && !args.conversion {
        bail!("no webhook to scaffold: pass --defaulting, --programmatic-validation, --conversion, or several");
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
    let recorded = existing.webhooks.clone().unwrap_or_default();
    if admission && (recorded.defaulting || recorded.validation) && !args.force {
        let what = [(recorded.defaulting, "defaulting"), (recorded.validation, "validation")]
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
    let spokes = if args.conversion { spokes(&project, &args, &kind, &recorded)? } else { recorded.spoke.clone() };
    // Webhook modules and tests are named after the kind alone: `tests/<kind>_webhook.rs` and
    // `<kind>_conversion.rs` (and `src/api/<group>/<spoke>/<kind>_conversion.rs`) beside other
    // kinds' files.
    let file_names = api.webhook_file_names(admission, args.conversion);
    for (other, resource) in ApiNames::all(&project)?.iter().zip(&project.resources) {
        if file_names.contains(&other.kind.snake()) {
            bail!(
                "{kind}'s webhook files would be named {}, as the files of the kind {} of group {} already are; \
                 rename one of the two kinds",
                other.kind.snake(),
                other.kind,
                other.group.as_str()
            );
        }
        let admits = resource.webhooks.as_ref().is_some_and(|w| w.defaulting || w.validation);
        if admission
            && admits
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

    let defaulting = args.defaulting || recorded.defaulting;
    let validation = args.programmatic_validation || recorded.validation;
    let conversion = args.conversion || recorded.conversion;
    let mut resource = existing.clone();
    resource.webhooks =
        Some(Webhooks { defaulting, validation, conversion, spoke: spokes.clone(), webhook_version: "v1".into() });
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
        crd_patch_file: format!("webhook_in_{}", api.crd_file()),
        api_namespaced: existing.api.as_ref().is_some_and(|a| a.namespaced),
        defaulting,
        validation,
        operand: existing.operand.is_some(),
        spokes: spokes.clone(),
        mutate_path: spelling.mutate_path,
        validate_path: spelling.validate_path,
        mutating_name: spelling.mutating_name,
        validating_name: spelling.validating_name,
        webhook_configurations: configurations(&project)?,
    };
    let mut ctx = tera::Context::from_serialize(&ctx)?;

    let mut roots = vec!["webhook/", "webhook-manifests/"];
    if admission {
        roots.push("webhook-admission/");
    }
    if args.conversion {
        roots.extend(["webhook-conversion/", "webhook-conversion-spoke/"]);
    }
    let templates = Templates::load(&roots)?;
    let mut plan = Plan::new(dir);
    let own = if args.force { IfExists::Overwrite } else { IfExists::Error };
    // The webhook server and its config, which every kind's webhooks share: made by the first
    // `create webhook`, kept (and said so) when you changed them since.
    let shared = if args.force { IfExists::Overwrite } else { IfExists::Keep };
    // The other kinds with webhooks (with a conversion webhook, for `conversion`).
    let this = &api;
    let others = |conversion: bool| {
        project.resources.iter().filter(move |r| {
            !this.is(&r.group, &r.version, &r.kind) && r.webhooks.as_ref().is_some_and(|w| !conversion || w.conversion)
        })
    };
    super::refuse_missing_shared(&templates, "webhook", &ctx, &plan, others(false), &domain)?;
    if args.conversion {
        super::refuse_missing_shared(&templates, "webhook-conversion", &ctx, &plan, others(true), &domain)?;
    }
    scaffold::render_root(&templates, "webhook", &ctx, &mut plan, |_| shared)?;
    if admission {
        scaffold::render_root(&templates, "webhook-admission", &ctx, &mut plan, |_| own)?;
    }
    if args.conversion {
        scaffold::render_root(&templates, "webhook-conversion", &ctx, &mut plan, |_| own)?;
        for spoke in &spokes {
            let spoke_api =
                ApiNames::new(api.group.clone(), Version::parse(spoke)?, api.kind.clone(), api.plural.clone(), &domain);
            ctx.insert("spoke", spoke);
            ctx.insert("spoke_sample_file", &spoke_api.sample_file());
            scaffold::render_root(&templates, "webhook-conversion-spoke", &ctx, &mut plan, |_| own)?;
        }
    }
    // Written as `make manifests` would write it, from every kind's webhooks.
    scaffold::render_root(&templates, "webhook-manifests", &ctx, &mut plan, |_| IfExists::Overwrite)?;
    plan.write(project::FILE, project.render()?, IfExists::Overwrite)?;
    let written = finish(global, plan)?;
    if written {
        let mut next = Vec::new();
        if admission {
            next.push(format!("fill in src/webhook/{}.rs", kind.snake()));
        }
        // Only the spokes scaffolded now: an admission webhook on a hub does not touch them.
        let scaffolded = if args.conversion { spokes.as_slice() } else { &[] };
        for spoke in scaffolded {
            next.push(format!(
                "map the fields of {spoke} in src/api/{}/{spoke}/{}_conversion.rs",
                api.group_module(),
                kind.snake()
            ));
        }
        super::report(&format!(
            "\nNext: {}, then:\n  $ make manifests   # regenerate config/webhook/manifests.yaml from the code\n  $ make test\n\
             Deploying needs cert-manager in the cluster, which issues the webhook server's certificate, or the\n\
             manager can keep its own: see [WEBHOOK-CERTS] in config/default/kustomization.yaml.\n",
            next.join(", and ")
        ))?;
    }
    Ok(())
}

/// The spoke versions of the conversion webhook whose hub is `--version`: `--spoke`, or every
/// other version of the kind.
fn spokes(project: &Project, args: &Args, kind: &Kind, recorded: &Webhooks) -> Result<Vec<String>> {
    let (group, hub) = (&args.group, &args.version);
    if recorded.conversion && !args.force {
        bail!(
            "{kind} {hub} already has a conversion webhook (spokes {}); pass --force to regenerate its \
             conversions and test (your edits to them are lost)",
            recorded.spoke.join(", ")
        );
    }
    let others: Vec<&Resource> = project.other_versions(group, kind.as_str(), hub).collect();
    if let Some(other) = others.iter().find(|r| r.webhooks.as_ref().is_some_and(|w| w.conversion)) {
        bail!(
            "{kind} already converts through the hub version {}, and a kind has one hub; add spokes to it: \
             memop create webhook --group {group} --version {} --kind {kind} --conversion --spoke V1,V2 --force",
            other.version,
            other.version
        );
    }
    let versions: Vec<String> = others.iter().map(|r| r.version.clone()).collect();
    if versions.is_empty() {
        bail!(
            "{kind} is served in one version ({hub}), so a conversion webhook has nothing to convert; \
             create another version first: memop create api --group {group} --version V --kind {kind}"
        );
    }
    let mut spokes = if args.spoke.is_empty() { versions.clone() } else { args.spoke.clone() };
    for spoke in &spokes {
        Version::parse(spoke)?;
        if spoke == hub {
            bail!("invalid spoke version \"{spoke}\": it is the hub (--version); a spoke is another version of {kind}");
        }
        if !versions.contains(spoke) {
            bail!(
                "invalid spoke version \"{spoke}\": {kind} has no version {spoke} (it has {hub}, {}); create it \
                 first: memop create api --group {group} --version {spoke} --kind {kind}",
                versions.join(", ")
            );
        }
    }
    spokes.sort();
    spokes.dedup();
    Ok(spokes)
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
