//! `memop create api`: a Kubernetes API (the Rust types of a custom resource and its CRD) and
//! its controller, registered in the project at the scaffold markers.

use anyhow::{Context as _, Result, bail};
use clap::ArgAction;
use serde::Serialize;

use super::context::ProjectContext;
use super::crd;
use super::{Global, finish};
use crate::names::{ContainerCommand, ContainerPort, Group, Image, Kind, Plural, RunAsUser, Version};
use crate::project::{self, Api, Operand, Project, Resource};
use crate::resource::ApiNames;
use crate::scaffold::{self, IfExists, Plan, Templates};

/// Scaffold a Kubernetes API: its Rust types, CRD, sample and controller
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    # The Memcached operator of the kubebuilder tutorial (built-in preset):\n  \
    memop create api --group cache --kind Memcached\n\n  \
    # A controller that deploys any image:\n  \
    memop create api --group web --kind Nginx \\\n      --image nginxinc/nginx-unprivileged:1.27 --image-container-port 8080\n\n  \
    # Types and a skeleton controller to fill in:\n  \
    memop create api --group batch --version v1 --kind CronJob\n\n  \
    # A second version of Memcached, stored as v1 from now on (then: create webhook --conversion):\n  \
    memop create api --group cache --version v1 --kind Memcached \\\n      --storage-version")]
pub struct Args {
    /// API group, without the domain: `cache` gives cache.<domain>
    #[arg(long)]
    group: String,

    /// API version
    #[arg(long, default_value = "v1alpha1")]
    version: String,

    /// Kind, in PascalCase
    #[arg(long)]
    kind: String,

    /// Plural resource name [default: kubebuilder's plural of the kind]
    #[arg(long)]
    plural: Option<String>,

    /// Whether objects of the kind live in a namespace (false: cluster-scoped)
    #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1, default_missing_value = "true", value_name = "true|false")]
    namespaced: bool,

    /// Scaffold the Rust types and CRD of the kind
    #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1, default_missing_value = "true", value_name = "true|false")]
    resource: bool,

    /// Scaffold a controller for the kind [default: true, but false for a new version of a kind
    /// that has a controller: one controller reconciles a kind, in one of its versions]
    #[arg(long = "controller", action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "true|false")]
    controller_flag: Option<bool>,

    /// `--controller`, resolved against the kind's other versions.
    #[arg(skip)]
    controller: bool,

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

    /// kubebuilder's `--make`: accepted, and ignored with a note
    #[arg(long, hide = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_parser = clap::value_parser!(bool))]
    make: Option<bool>,
}

/// Kinds whose module would clash with a file of the generated `tests/` (`tests/<kind>.rs`).
const RESERVED_SNAKE: &[&str] = &["e2e", "manifests", "webhook_certs"];

/// A kind memop knows how to deploy without being told the image.
struct Preset {
    kind: &'static str,
    image: &'static str,
    port: u16,
    command: &'static [&'static str],
    run_as_user: i64,
}

/// The Memcached operand of kubebuilder's getting-started tutorial.
const PRESETS: &[Preset] = &[Preset {
    kind: "Memcached",
    image: "memcached:1.6.26-alpine3.19",
    port: 11211,
    command: &["memcached", "--memory-limit=64", "-o", "modern", "-v"],
    run_as_user: 1001,
}];

/// The per-API names the templates see, on top of the project's.
#[derive(Debug, Serialize)]
struct ApiContext {
    #[serde(flatten)]
    project: ProjectContext,
    group: String,
    version: String,
    kind: String,
    plural: String,
    singular: String,
    short_name: Option<String>,
    kind_snake: String,
    kind_kebab: String,
    kind_screaming: String,
    qualified_group: String,
    group_module: String,
    crd_file: String,
    sample_file: String,
    role_prefix: String,
    api_namespaced: bool,
    port_name: String,
    operand: Option<Operand>,
}

pub fn run(global: &Global, mut args: Args) -> Result<()> {
    let command = super::plugins::Command::CreateApi { image: args.image.is_some() };
    for note in super::plugins::answer(command, &args.plugins)? {
        crate::warn_line!("note: {note}");
    }
    if args.make.is_some() {
        crate::warn_line!(
            "note: --make is kubebuilder's; memop never runs make after scaffolding (run `make manifests` yourself)"
        );
    }
    let dir = &global.dir;
    let mut project = Project::load(dir)?;
    let domain = crate::names::Domain::parse(&project.domain)?;
    let kind = Kind::parse(&args.kind)?;
    // The kind's other versions in this group, when this is a new version of an existing kind:
    // they share one CRD (plural, scope) and one controller.
    let siblings: Vec<Resource> = project.other_versions(&args.group, kind.as_str(), &args.version).cloned().collect();
    let plural = match (&args.plural, siblings.first()) {
        (Some(p), _) => Plural::parse(p)?,
        (None, Some(sibling)) => ApiNames::of(sibling, &domain)?.plural,
        (None, None) => Plural::for_kind(&kind)?,
    };
    let sibling_controller = siblings.iter().find(|r| r.controller);
    args.controller = match (args.controller_flag, sibling_controller) {
        (Some(true), Some(other)) if args.resource => bail!(
            "{kind} already has a controller, for version {}; one controller reconciles a kind (the \
             API server converts the other versions for it), so a new version gets none: drop \
             --controller (or pass --controller=false)",
            other.version
        ),
        (Some(controller), _) => controller,
        (None, sibling) => sibling.is_none(),
    };
    let api = ApiNames::new(Group::parse(&args.group, &domain)?, Version::parse(&args.version)?, kind, plural, &domain);
    let (group, version, kind, plural) = (&api.group, &api.version, &api.kind, &api.plural);
    if !args.resource && !args.controller {
        bail!("--resource=false and --controller=false leave nothing to scaffold; drop one of them");
    }
    if !args.resource && args.storage_version {
        bail!(
            "--storage-version is about the kind's types, which --resource=false does not scaffold; drop one of them"
        );
    }

    if RESERVED_SNAKE.contains(&kind.snake().as_str()) {
        bail!(
            "invalid --kind \"{kind}\": its file name {}.rs would clash with a file every project has \
             (tests/{}.rs); choose another kind (e.g. \"{kind}Config\")",
            kind.snake(),
            kind.snake()
        );
    }
    let existing = project.find(group.as_str(), version.as_str(), kind.as_str()).cloned();
    let gvk = format!("{}/{}, Kind={}", group.as_str(), version, kind);
    // --force regenerates an API's files; another plural would be another CRD beside the first.
    if let Some(recorded) = existing.as_ref().filter(|_| args.force) {
        let served = ApiNames::of(recorded, &domain)?.plural;
        if served.as_str() != plural.as_str() {
            bail!(
                "--plural {plural}: {gvk} is served as {served} (its CRD is {served}.{}), and --force \
                 regenerates its files, it does not rename it: another plural would be a second CRD for \
                 the same kind. Drop --plural (or pass --plural {served})",
                api.qualified_group
            );
        }
    }
    // The project's other APIs, as they were before this one.
    let others = ApiNames::all(&project)?;
    check_conflicts(&project, &others, &args, &api, existing.as_ref(), &gvk)?;
    let operand = match siblings.first() {
        Some(sibling) if existing.is_none() => {
            version_refusals(&args, sibling, &ApiNames::of(sibling, &domain)?.plural)?;
            // The types of a new version start as a copy of the kind's: same fields, so that
            // converting between the two loses nothing until you change them.
            sibling.operand.clone()
        }
        _ => operand_for(&args, kind, existing.as_ref())?,
    };
    let api_namespaced = match (&existing, args.resource, siblings.first()) {
        (Some(Resource { api: Some(api), .. }), false, _) => api.namespaced,
        (_, _, Some(Resource { api: Some(api), .. })) => api.namespaced,
        _ => args.namespaced,
    };
    if operand.is_some() && args.controller && !api_namespaced {
        bail!(
            "{kind} is cluster-scoped, but an operand controller runs its Deployment in the namespace \
             of each {kind}, so {kind} must be namespaced; drop --namespaced=false (or --image)"
        );
    }
    // An operand controller reads `spec.size`, which only an operand kind's types have.
    let operand_types = existing.as_ref().is_some_and(|r| r.operand.is_some());
    if !args.resource && operand.is_some() && !operand_types {
        bail!(
            "the existing {kind} types have no spec.size, which an operand controller needs; \
             regenerate them too: memop create api --group {} --version {} --kind {kind} --image IMG --force",
            args.group,
            args.version
        );
    }
    if project.namespaced && !api_namespaced {
        bail!(
            "--namespaced=false: this project was initialized with --namespaced, and its manager's \
             Role, bound in one namespace, cannot grant access to cluster-scoped kinds; make {kind} \
             namespaced, or use a project without --namespaced"
        );
    }

    project.upsert(Resource {
        api: Some(Api { crd_version: "v1".into(), namespaced: api_namespaced }),
        controller: args.controller || existing.as_ref().is_some_and(|r| r.controller),
        domain: project.domain.clone(),
        group: group.to_string(),
        kind: kind.to_string(),
        operand: operand.clone(),
        plural: (!plural.is_regular_for(kind)).then(|| plural.to_string()),
        version: version.to_string(),
        webhooks: existing.as_ref().and_then(|r| r.webhooks.clone()),
    });

    // The manager role: generated from every controller's rules, keeping those an existing
    // generated role.yaml has (`make manifests` puts the user's own RULES there). A role.yaml
    // that memop did not generate (init kept the user's) is left alone.
    const ROLE_FILE: &str = "config/rbac/role.yaml";
    let mut plan = Plan::new(dir);
    let current_role = plan.read(std::path::Path::new(ROLE_FILE))?;
    let role_is_ours = current_role.as_deref().is_none_or(|text| text.starts_with(ROLE_HEADER));
    let mut project_ctx = ProjectContext::new(&project)?;
    if let (Some(text), true) = (&current_role, role_is_ours) {
        project_ctx.keep_rules_of(text);
    }
    let short = short_name(&others, &api);
    if let (None, Some(wanted)) = (&short, kind.short_name()) {
        crate::warn_line!(
            "note: {kind} gets no CRD short name: {wanted} is another kind's in group {group}, and two \
             CRDs with one short name are not both served"
        );
    }
    let ctx = ApiContext {
        project: project_ctx,
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        plural: plural.to_string(),
        singular: kind.lower(),
        short_name: short,
        kind_snake: kind.snake(),
        kind_kebab: kind.kebab(),
        kind_screaming: kind.screaming(),
        qualified_group: api.qualified_group.clone(),
        group_module: api.group_module(),
        crd_file: api.crd_file(),
        sample_file: api.sample_file(),
        role_prefix: api.role_prefix(),
        api_namespaced,
        port_name: kind.port_name(),
        operand: operand.clone(),
    };
    let ctx = tera::Context::from_serialize(&ctx)?;
    // What the user should know about what this command did, said after its file list.
    let mut notes: Vec<String> = Vec::new();

    // The manager role is rendered by init's template, from every API's rules.
    const ROLE: &str = "init/config/rbac/role.yaml.tera";
    let root = if operand.is_some() { "controller-operand/" } else { "controller-skeleton/" };
    let templates = Templates::load(&["resource/", root, ROLE])?;
    // The API's own files are refused when present, unless --force; the files several APIs
    // share (module files, kustomizations) are created once and then only extended at markers.
    let own = if args.force { IfExists::Overwrite } else { IfExists::Error };
    // Before the controller's fragments: an existing entry updated in place is then found.
    if let (Some(operand), true) = (&operand, args.controller) {
        set_image_env(&mut plan, kind, &operand.image)?;
    }
    if args.resource {
        let sharing = project.resources.iter().filter(|r| r.api.is_some() && !api.is(&r.group, &r.version, &r.kind));
        super::refuse_missing_shared(&templates, "resource", &ctx, &plan, sharing, &domain)?;
    }
    if args.resource && siblings.is_empty() {
        scaffold::render_root(&templates, "resource", &ctx, &mut plan, |_| own)?;
    } else if args.resource {
        // A version of a kind that has others: the kind's RBAC helper roles are there already,
        // and its CRD gains this version.
        let crd_file = format!("config/crd/bases/{}.yaml", api.crd_file());
        let shared = |path: &str| {
            if path == crd_file || path.starts_with(&format!("config/rbac/{}_", api.role_prefix())) {
                IfExists::Skip
            } else {
                own
            }
        };
        scaffold::render_root(&templates, "resource", &ctx, &mut plan, shared)?;
        let storage = storage_version(&mut plan, &api, &crd_file, args.storage_version)?;
        let rendered = templates.render("resource/config/crd/bases/__crd_file__.yaml.tera", &ctx)?;
        let current = plan.read(std::path::Path::new(&crd_file))?.with_context(|| {
            format!(
                "{crd_file} is missing; run `make manifests` to write the CRD of {kind}, then run this command again"
            )
        })?;
        plan.write(&crd_file, crd::add_version(&current, &rendered, &storage)?, IfExists::Overwrite)?;
        notes.extend(join_conversion(&mut project, &mut plan, &ctx, &api)?);
    }
    if args.controller {
        scaffold::render_root(&templates, root.trim_end_matches('/'), &ctx, &mut plan, |_| own)?;
    }
    let role = templates.render(ROLE, &ctx)?;
    let role_policy = if role_is_ours { IfExists::Overwrite } else { IfExists::Keep };
    plan.write(ROLE_FILE, role, role_policy)?;
    plan.write(project::FILE, project.render()?, IfExists::Overwrite)?;

    // Said once the plan went through, so that no success line comes before a failure.
    let recorded = existing.as_ref().is_some_and(|r| r.operand.is_some());
    let summary = match &operand {
        _ if !args.controller => String::new(),
        Some(o) if args.image.is_some() => {
            format!("{kind}: operand controller deploying {} (from --image).\n", o.image)
        }
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
    };
    // A dry run ends with its own summary line.
    if global.dry_run {
        super::say(&summary)?;
    }
    let written = finish(global, plan)?;
    if !global.dry_run {
        super::report(&summary)?;
    }
    for note in &notes {
        crate::warn_line!("note: {note}");
    }
    if written {
        let types = format!("src/api/{}/{}/{}.rs", group.module_name(), version, kind.snake());
        let next = match (args.resource, args.controller) {
            (true, true) => {
                format!("implement your API in {types} and its controller in src/controller/{}.rs", kind.snake())
            }
            (true, false) => format!("implement your API in {types}"),
            _ => format!("implement the controller in src/controller/{}.rs", kind.snake()),
        };
        super::report(&format!(
            "\nNext: {next}, then:\n  $ make manifests   # regenerate config/crd and config/rbac/role.yaml from the code\n  $ make test\n"
        ))?;
    }
    Ok(())
}

/// A new version of a kind that converts through a hub (`create webhook --conversion`) becomes
/// one of its spokes, as `create webhook --conversion --spoke` would make it: its `From` impls
/// to and from the hub (a copy of the types converts field by field), listed in
/// `conversions()`, and recorded in PROJECT. The kind's conversion test round-trips every
/// spoke: regenerated when it is as memop wrote it (PROJECT.sum), else a note says what to add.
/// Returns the notes to print.
fn join_conversion(project: &mut Project, plan: &mut Plan, ctx: &tera::Context, api: &ApiNames) -> Result<Vec<String>> {
    let version = api.version.to_string();
    let converting = |r: &&mut Resource| {
        r.group == api.group.as_str()
            && r.kind == api.kind.as_str()
            && r.version != version
            && r.webhooks.as_ref().is_some_and(|w| w.conversion)
    };
    let Some(hub) = project.resources.iter_mut().find(converting) else {
        return Ok(Vec::new());
    };
    let webhooks = hub.webhooks.as_mut().expect("a converting resource has webhooks");
    if !webhooks.spoke.contains(&version) {
        webhooks.spoke.push(version.clone());
        webhooks.spoke.sort();
    }
    let (hub_version, spokes) = (hub.version.clone(), webhooks.spoke.clone());
    const TEST: &str = "webhook-conversion/tests/__kind_snake___conversion.rs.tera";
    let templates = Templates::load(&["webhook-conversion-spoke/", TEST])?;
    let mut ctx = ctx.clone();
    ctx.insert("version", &hub_version);
    ctx.insert("spoke", &version);
    ctx.insert("spoke_sample_file", &api.sample_file());
    ctx.insert("spokes", &spokes);
    scaffold::render_root(&templates, "webhook-conversion-spoke", &ctx, plan, |_| IfExists::Error)?;

    let kind = &api.kind;
    let test = format!("tests/{}_conversion.rs", kind.snake());
    let sum = crate::sum::Sum::parse(plan.read(std::path::Path::new(crate::sum::FILE))?.as_deref())?;
    let current = plan.read(std::path::Path::new(&test))?;
    let unedited = current.as_deref().is_some_and(|text| sum.get(&test) == Some(crate::sum::blob_id(text).as_str()));
    let mut notes = vec![format!(
        "{kind} {version} is a spoke of the hub {hub_version}: map its fields in src/api/{}/{version}/{}_conversion.rs",
        api.group_module(),
        kind.snake()
    )];
    if unedited {
        plan.write(&test, templates.render(TEST, &ctx)?, IfExists::Overwrite)?;
    } else if current.is_some() {
        notes.push(format!(
            "{test} is not as memop wrote it, so it was kept: add a round trip of {version} to it, as it has for the \
             other spokes"
        ));
    }
    Ok(notes)
}

/// What a new version of an existing kind (`sibling` is one of its versions) cannot change: its
/// versions share one CRD, so one plural (`plural`, the sibling's) and one scope, and one
/// controller deploys its image.
fn version_refusals(args: &Args, sibling: &Resource, plural: &Plural) -> Result<()> {
    let (kind, version) = (&args.kind, &sibling.version);
    let image_flags = [
        ("--image", args.image.is_some()),
        ("--image-container-port", args.image_container_port.is_some()),
        ("--image-container-command", args.image_container_command.is_some()),
        ("--run-as-user", args.run_as_user.is_some()),
    ];
    if let Some((flag, _)) = image_flags.iter().find(|(_, set)| *set) {
        bail!(
            "{flag}: {kind} exists in version {version}, and a new version of a kind gets no controller \
             of its own, so no image; drop {flag} (the image is the controller's: \
             memop create api --group {} --version {version} --kind {kind} --image IMG --force)",
            args.group
        );
    }
    let namespaced = sibling.api.as_ref().is_some_and(|a| a.namespaced);
    if !args.namespaced && namespaced {
        bail!(
            "--namespaced=false: {kind} is namespaced in version {version}, and all versions of a kind \
             share one CRD, so one scope; drop --namespaced=false"
        );
    }
    if let Some(given) = &args.plural
        && given != plural.as_str()
    {
        bail!(
            "--plural {given}: {kind} has the plural {plural} in version {version}, and all versions of a \
             kind share one CRD, so one plural; drop --plural"
        );
    }
    Ok(())
}

/// The version a kind with several versions is stored as, from `STORAGE_VERSIONS` in
/// src/api/mod.rs, which this plans to update: `this` version when `requested`
/// (--storage-version), else the one the table names, else the one its CRD file stores.
fn storage_version(plan: &mut Plan, api: &ApiNames, crd_file: &str, requested: bool) -> Result<String> {
    const TABLE: &str = "src/api/mod.rs";
    let crd_name = format!("{}.{}", api.plural, api.qualified_group);
    let text = plan.read(std::path::Path::new(TABLE))?.with_context(|| format!("{TABLE} is missing"))?;
    let entry_start = format!("(\"{crd_name}\", \"");
    let entry = text.lines().find(|line| line.trim_start().starts_with(&entry_start));
    let recorded = entry.and_then(|line| line.trim().strip_prefix(&entry_start)?.split('"').next());
    let current = match recorded {
        Some(version) => version.to_string(),
        None => {
            let crd = plan.read(std::path::Path::new(crd_file))?.unwrap_or_default();
            crd::storage_version(&crd).with_context(|| {
                format!(
                    "{crd_file} names no storage version of {}; run `make manifests`, then this command again",
                    api.kind
                )
            })?
        }
    };
    let wanted = if requested { api.version.to_string() } else { current };
    let line = format!("(\"{crd_name}\", \"{wanted}\"),");
    match entry {
        None => plan.insert(TABLE, "storage-versions", &line)?,
        Some(old) if old.trim() != line => {
            let updated = text.replacen(old.trim(), &line, 1);
            plan.write(TABLE, updated, IfExists::Overwrite)?;
        }
        Some(_) => {}
    }
    Ok(wanted)
}

fn check_conflicts(
    project: &Project,
    others: &[ApiNames],
    args: &Args,
    api: &ApiNames,
    existing: Option<&Resource>,
    gvk: &str,
) -> Result<()> {
    let kind = &api.kind;
    match existing {
        Some(r) if args.resource && r.api.is_some() && !args.force => bail!(
            "API resource {gvk} already exists; pass --force to regenerate its own files \
             (its types, controller, tests and sample: your edits to them are lost; other files are kept)"
        ),
        Some(r) if !args.resource && args.controller && r.controller && !args.force => {
            bail!("a controller for {gvk} already exists; pass --force to regenerate it (your edits to it are lost)")
        }
        None if !args.resource => bail!(
            "{gvk} has no API in this project, so --resource=false has no types to control; \
             run `memop create api --group {} --version {} --kind {kind}` first",
            args.group,
            args.version
        ),
        _ => {}
    }
    let others = others.iter().zip(&project.resources).filter(|(o, _)| !o.is(&args.group, &args.version, &args.kind));
    for (other, resource) in others {
        let webhooks = resource.webhooks.clone().unwrap_or_default();
        if other
            .webhook_file_names(webhooks.defaulting || webhooks.validation, webhooks.conversion)
            .contains(&kind.snake())
        {
            bail!(
                "invalid --kind \"{kind}\": its files would be named {}, as the webhook files of the kind {} \
                 already are; choose another kind",
                kind.snake(),
                other.kind
            );
        }
        let (same_group, same_kind) = (other.group == api.group, other.kind == api.kind);
        // The CRD's singular name and the webhook paths are the kind in lowercase: kinds that
        // differ only in case would share them (the API server refuses the second CRD, and the
        // manager's webhook router panics on the duplicate path).
        if same_group && !same_kind && other.kind.lower() == kind.lower() {
            bail!(
                "{kind} and the existing kind {} of group {} differ only in case, but Kubernetes spells a kind's \
                 singular name and its webhook paths in lowercase ({}), so they would share them; choose another kind",
                other.kind,
                other.group,
                kind.lower()
            );
        }
        if same_group && !same_kind && other.kind.snake() == kind.snake() {
            bail!(
                "{kind} and the existing kind {} of group {} would share the module and file name {}; \
                 choose another kind name",
                other.kind,
                other.group,
                kind.snake()
            );
        }
        // The API module of one version re-exports each kind with its Spec and Status types.
        let shadows = |x: &Kind, y: &Kind| x.as_str() == format!("{y}Spec") || x.as_str() == format!("{y}Status");
        if same_group && other.version == api.version && (shadows(kind, &other.kind) || shadows(&other.kind, kind)) {
            bail!(
                "{kind} and the existing kind {} of {}/{} would clash: the types of one are named \
                 like the Spec or Status type of the other; choose another kind name",
                other.kind,
                other.group,
                other.version
            );
        }
        // The API server serves the kinds of a group by their plural, singular and short names,
        // and by Kind and KindList: each must be unique in the group, or it refuses the new CRD.
        if same_group && !same_kind {
            let theirs = [Some(other.plural.to_string()), Some(other.kind.lower()), other.kind.short_name()];
            let ours = [("plural", api.plural.to_string()), ("singular name", kind.lower())];
            if let Some((what, name)) = ours.iter().find(|(_, name)| theirs.iter().flatten().any(|t| t == name))
                && other.plural != api.plural
            {
                bail!(
                    "{kind} would have the {what} {name}, which the existing kind {} of group {} already has as a \
                     name (plural {}, singular {}{}), and the API server serves each name of a group once; choose \
                     another kind, or another plural with --plural",
                    other.kind,
                    other.group,
                    other.plural,
                    other.kind.lower(),
                    other.kind.short_name().map(|s| format!(", short name {s}")).unwrap_or_default()
                );
            }
            let list = |k: &Kind| format!("{k}List");
            if list(&other.kind) == kind.as_str() || list(kind) == other.kind.as_str() {
                bail!(
                    "{kind} and the existing kind {} of group {} clash: the list of one is named like the other \
                     ({}List), as the API server names lists; choose another kind",
                    other.kind,
                    other.group,
                    if list(&other.kind) == kind.as_str() { other.kind.as_str() } else { kind.as_str() }
                );
            }
        }
        if same_group && !same_kind && other.plural == api.plural {
            bail!(
                "{kind} would have the plural {}, which the existing kind {} of group {} already has; \
                 choose another kind, or another plural with --plural",
                api.plural,
                other.kind,
                other.group
            );
        }
        if !same_group && args.controller && resource.controller && other.kind.snake() == kind.snake() {
            bail!(
                "a controller for kind {} already exists (group {}), and controller modules are named \
                 after the kind ({}); use another kind name, or pass --controller=false",
                other.kind,
                other.group,
                kind.snake()
            );
        }
        // Different APIs whose files would have the same names: the group's module
        // (`a-b` and `a.b` are both `a_b`), or the RBAC helper roles (`<group>_<kind>`).
        if !same_group && other.group_module() == api.group_module() {
            bail!(
                "group {} would share the Rust module src/api/{}/ with the existing group {}; \
                 choose another group name",
                api.group,
                api.group_module(),
                other.group
            );
        }
        if !(same_group && same_kind) && other.role_prefix() == api.role_prefix() {
            bail!(
                "{kind} of group {} and the existing kind {} of group {} would share the files \
                 config/rbac/{}_*_role.yaml; choose another kind or group name",
                api.group,
                other.kind,
                other.group,
                api.role_prefix()
            );
        }
    }
    Ok(())
}

/// The first line of the `config/rbac/role.yaml` that memop and `make manifests` write.
const ROLE_HEADER: &str = "# Generated by `make manifests`";

/// The CRD short name of `kind`, unless another kind of its group already has it: the API
/// server would refuse to serve the second CRD (`ShortNamesConflict`).
fn short_name(others: &[ApiNames], api: &ApiNames) -> Option<String> {
    let short = api.kind.short_name()?;
    let taken = others.iter().filter(|o| o.group == api.group && o.kind != api.kind).any(|o| {
        [o.kind.short_name(), Some(o.plural.to_string()), Some(o.kind.lower())].contains(&Some(short.clone()))
    });
    (!taken).then_some(short)
}

/// The operand a controller deploys: `--image` wins, then the kind's preset, then none (skeleton).
fn operand_for(args: &Args, kind: &Kind, existing: Option<&Resource>) -> Result<Option<Operand>> {
    let preset = PRESETS.iter().find(|p| p.kind == kind.as_str());
    // Regenerating an operand kind keeps what PROJECT recorded, unless flags change it.
    let kept = existing.and_then(|r| r.operand.clone());
    let mut operand = match (&args.image, kept, preset) {
        // A new image for an operand kind: the rest (command, port, user) stays as recorded.
        (Some(image), Some(kept), _) => Operand { image: Image::parse(image)?.to_string(), ..kept },
        (Some(image), None, _) => Operand {
            container_command: Vec::new(),
            container_port: 0,
            image: Image::parse(image)?.to_string(),
            run_as_user: None,
        },
        (None, Some(kept), _) => kept,
        (None, None, Some(p)) => Operand {
            container_command: p.command.iter().map(|s| s.to_string()).collect(),
            container_port: p.port,
            image: p.image.to_string(),
            run_as_user: Some(p.run_as_user),
        },
        (None, None, None) => {
            let given = [
                ("--image-container-port", args.image_container_port.is_some()),
                ("--image-container-command", args.image_container_command.is_some()),
                ("--run-as-user", args.run_as_user.is_some()),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, set)| *set) {
                bail!(
                    "{flag} describes the image a controller deploys, so it needs --image IMG (e.g. --image nginx:1.27)"
                );
            }
            return Ok(None);
        }
    };
    if let Some(port) = &args.image_container_port {
        operand.container_port = ContainerPort::parse(port)?.get();
    }
    if let Some(cmd) = &args.image_container_command {
        operand.container_command = ContainerCommand::parse(cmd)?.into_vec();
    }
    if let Some(uid) = &args.run_as_user {
        operand.run_as_user = Some(RunAsUser::parse(uid)?.get());
    }
    if operand.container_port == 0 {
        bail!(
            "--image {} needs --image-container-port PORT: the port the container listens on (e.g. --image-container-port 8080)",
            operand.image
        );
    }
    Ok(Some(operand))
}

/// Points an existing `<KIND>_IMAGE` entry of the manager Deployment at `image`, so that
/// regenerating with another `--image` updates it instead of adding a second entry.
fn set_image_env(plan: &mut Plan, kind: &Kind, image: &str) -> Result<()> {
    let path = std::path::Path::new("config/manager/manager.yaml");
    let Some(text) = plan.read(path)? else { return Ok(()) };
    let name = format!("- name: {}_IMAGE", kind.screaming());
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let Some(at) = lines.iter().position(|l| l.trim() == name) else { return Ok(()) };
    match lines.get_mut(at + 1) {
        Some(value) if value.trim_start().starts_with("value: ") => {
            let indent: String = value.chars().take_while(|c| c.is_whitespace()).collect();
            *value = format!("{indent}value: \"{image}\"");
        }
        _ => {
            plan.note(format!(
                "{}_IMAGE in {} is yours (not a `value:`), so it was kept; the image {image} is the controller's \
                 default (DEFAULT_IMAGE) only",
                kind.screaming(),
                path.display()
            ));
            return Ok(());
        }
    }
    let mut updated = lines.join("\n");
    updated.push('\n');
    plan.write(path, updated, IfExists::Overwrite)
}
