//! What `create api` will do, decided from its flags and PROJECT alone: every refusal is made
//! here, before a file is read, so each is a unit test that needs no binary.

use anyhow::{Result, bail};

use super::Args;
use crate::names::builtin::BuiltinKind;
use crate::names::{ContainerCommand, ContainerPort, ControllerName, Image, Kind, RunAsUser};
use crate::project::{Operand, Project, Resource};
use crate::resource::ApiNames;

/// A validated `create api`: the API, what to scaffold for it, and where its operand comes from.
#[derive(Debug)]
pub struct Request {
    pub api: ApiNames,
    /// Scaffold the kind's types and CRD (`--resource`).
    pub resource: bool,
    /// Scaffold a controller (`--controller`, resolved against the kind's other versions).
    pub controller: bool,
    /// Regenerate the API's own files.
    pub force: bool,
    /// Store the kind in this version.
    pub storage_version: bool,
    /// Whether objects of the kind live in a namespace (as its other versions, when it has some).
    pub namespaced: bool,
    /// The operand its controller deploys, when it has one.
    pub operand: Option<Operand>,
    /// `--image` was given.
    pub image_flag: bool,
    /// PROJECT's entry for this API, when it exists.
    pub existing: Option<Resource>,
    /// This is a new version of a kind that has others: they share its CRD.
    pub new_version: bool,
    /// The CRD short name, unless another kind of the group has it.
    pub short_name: Option<String>,
    /// What the user should know, said once the command succeeded.
    pub notes: Vec<String>,
    /// The CRD of another project's kind (`--external-api-crd`), which the project keeps.
    pub external: Option<crate::names::external::ExternalCrd>,
    /// Another controller of a kind the project has (`--controller-name`).
    pub controller_name: Option<ControllerName>,
}

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

/// Decides what `args` ask of `project`, or refuses with what to do instead.
pub fn validate(args: &Args, project: &Project) -> Result<Request> {
    if let Some(name) = &args.controller_name {
        return validate_named(args, project, name);
    }
    if let Some(builtin) = builtin_kind(args, project)? {
        return validate_builtin(args, project, builtin);
    }
    let api = api_names(args, project)?;
    let kind = &api.kind;
    // The kind's other versions in this group, when this is a new version of an existing kind:
    // they share one CRD (plural, scope) and one controller.
    let siblings: Vec<&Resource> = project.other_versions(&api).collect();
    let controller = controller(args, &api, &siblings)?;
    refuse_a_reserved_file_name(kind)?;
    let existing = project.find(&api).cloned();
    refuse_another_plural(args, &api, existing.as_ref())?;
    check_conflicts(project, args, &api, controller, existing.as_ref())?;
    if controller {
        refuse_named_module(project, kind)?;
    }
    let (operand, namespaced) = operand_and_scope(args, project, &api, controller, existing.as_ref(), &siblings)?;
    let short_name = short_name(project, &api);
    let mut notes = Vec::new();
    if let (None, Some(wanted)) = (&short_name, kind.short_name()) {
        notes.push(format!(
            "{kind} gets no CRD short name: {wanted} is another kind's in group {}, and two CRDs with one \
             short name are not both served",
            api.group
        ));
    }
    Ok(Request {
        resource: args.resource,
        controller,
        force: args.force,
        storage_version: args.storage_version,
        namespaced,
        operand,
        image_flag: args.image.is_some(),
        existing,
        new_version: !siblings.is_empty(),
        short_name,
        notes,
        api,
        external: None,
        controller_name: None,
    })
}

/// What the controller deploys (the operand, if any) and whether the kind is namespaced (as its
/// types are, where they exist), refused where they do not fit together or the project.
fn operand_and_scope(
    args: &Args,
    project: &Project,
    api: &ApiNames,
    controller: bool,
    existing: Option<&Resource>,
    siblings: &[&Resource],
) -> Result<(Option<Operand>, bool)> {
    let kind = &api.kind;
    let operand = match siblings.first() {
        Some(sibling) if existing.is_none() => {
            version_refusals(args, sibling)?;
            // The types of a new version start as a copy of the kind's: same fields, so that
            // converting between the two loses nothing until you change them.
            sibling.operand.clone()
        }
        _ => operand_for(args, kind, existing)?,
    };
    let namespaced = match (existing, args.resource, siblings.first()) {
        (Some(Resource { api: Some(api), .. }), false, _) => api.namespaced,
        (_, _, Some(Resource { api: Some(api), .. })) => api.namespaced,
        _ => args.namespaced,
    };
    if operand.is_some() && controller && !namespaced {
        bail!(
            "{kind} is cluster-scoped, but an operand controller runs its Deployment in the namespace \
             of each {kind}, so {kind} must be namespaced; drop --namespaced=false (or --image)"
        );
    }
    // An operand controller reads `spec.size`, which only an operand kind's types have.
    let operand_types = existing.is_some_and(|r| r.operand.is_some());
    if !args.resource && operand.is_some() && !operand_types {
        bail!(
            "the existing {kind} types have no spec.size, which an operand controller needs; \
             regenerate them too: memop create api --group {} --version {} --kind {kind} --image IMG --force",
            api.group,
            api.version
        );
    }
    if project.namespaced && !namespaced {
        bail!(
            "--namespaced=false: this project was initialized with --namespaced, and its manager's \
             Role, bound in one namespace, cannot grant access to cluster-scoped kinds; make {kind} \
             namespaced, or use a project without --namespaced"
        );
    }
    Ok((operand, namespaced))
}

/// The names of the kind `args` give, refused where one is not fit for its files (with the way to
/// a controller over Kubernetes' own kind where it is one).
fn api_names(args: &Args, project: &Project) -> Result<ApiNames> {
    let api = args.gvk.names(project, args.plural.as_deref()).map_err(|err| {
        // `Deployment` and the like: a name the generated code of a kind of the project uses.
        match crate::names::builtin::KINDS.iter().find(|k| k.kind == args.gvk.kind) {
            Some(k) if crate::names::Kind::parse(k.kind).is_err() => err.context(format!(
                "to reconcile Kubernetes' own {kind} ({}), scaffold a controller over k8s-openapi's type: \
                 memop create api --group {} --version {} --kind {kind} --resource=false --controller=true",
                k.api_version(),
                k.group,
                k.version,
                kind = k.kind
            )),
            _ => err,
        }
    })?;
    crate::names::check_file_names(&api.domain, &api.group, &api.version, &api.kind, &api.plural)?;
    Ok(api)
}

/// Whether the kind of `api` gets a controller (a new version of a kind with `siblings` gets
/// none by default: one controller reconciles a kind), refused with the flags it contradicts.
fn controller(args: &Args, api: &ApiNames, siblings: &[&Resource]) -> Result<bool> {
    let kind = &api.kind;
    let controller = match (args.controller, siblings.iter().find(|r| r.controller)) {
        (Some(true), Some(other)) if args.resource => bail!(
            "{kind} already has a controller, for version {}; one controller reconciles a kind (the \
             API server converts the other versions for it), so a new version gets none: drop \
             --controller (or pass --controller=false)",
            other.names.version
        ),
        (Some(controller), _) => controller,
        (None, sibling) => sibling.is_none(),
    };
    if !args.resource && !controller {
        bail!("--resource=false and --controller=false leave nothing to scaffold; drop one of them");
    }
    if !args.resource && args.storage_version {
        bail!(
            "--storage-version is about the kind's types, which --resource=false does not scaffold; drop one of them"
        );
    }
    if args.storage_version && siblings.is_empty() {
        bail!(
            "--storage-version: {} is {kind}'s only version, so it is stored in it already; the flag chooses \
             between the versions of a kind (drop it, or pass it when you create another version)",
            api.version
        );
    }
    Ok(controller)
}

/// Refuses a kind whose file name is that of a file every project has.
fn refuse_a_reserved_file_name(kind: &Kind) -> Result<()> {
    let file = format!("{}.rs", kind.snake());
    if let Some(path) =
        crate::scaffold::reserved_kind_files().iter().find(|p| p.rsplit('/').next() == Some(file.as_str()))
    {
        bail!(
            "invalid --kind \"{kind}\": its file name {file} would clash with a file every project has \
             ({path}); choose another kind (e.g. \"{kind}Config\")"
        );
    }
    Ok(())
}

/// Refuses `--force` with another plural than the one `existing` is served as.
fn refuse_another_plural(args: &Args, api: &ApiNames, existing: Option<&Resource>) -> Result<()> {
    // --force regenerates an API's files; another plural would be another CRD beside the first.
    if let Some(recorded) = existing.filter(|_| args.force)
        && recorded.names.plural != api.plural
    {
        let served = &recorded.names.plural;
        bail!(
            "--plural {}: {} is served as {served} (its CRD is {served}.{}), and --force \
             regenerates its files, it does not rename it: another plural would be a second CRD for \
             the same kind. Drop --plural (or pass --plural {served})",
            api.plural,
            api.gvk(),
            api.qualified_group
        );
    }
    Ok(())
}

impl Request {
    /// The `create api` that made `resource` (as PROJECT records it), as `memop update` replays it
    /// into `project` (the commands replayed before it). Typed: PROJECT was validated when it was
    /// read, so there are no flags to parse and nothing to refuse. An external kind's types are
    /// made from the CRD the project keeps, as `plan` (the project's files) has it.
    pub fn recorded(resource: &Resource, project: &Project, plan: &crate::scaffold::Plan) -> Result<Self> {
        let api = resource.names.clone();
        let siblings: Vec<&Resource> = project.other_versions(&api).collect();
        let mut request = Request {
            resource: resource.api.is_some(),
            controller: resource.controller,
            force: false,
            // A new version of a kind stored in it (create api --storage-version), as its entry
            // records (`project` holds only the versions replayed so far).
            storage_version: !siblings.is_empty() && resource.storage_version.as_deref() == Some(api.version.as_str()),
            namespaced: resource.namespaced(),
            // A new version of a kind takes its operand from the kind's first version.
            operand: match siblings.first() {
                Some(sibling) => sibling.operand.clone(),
                None => resource.operand.clone(),
            },
            image_flag: false,
            existing: project.find(&api).cloned(),
            new_version: !siblings.is_empty(),
            short_name: None,
            notes: Vec::new(),
            external: None,
            controller_name: None,
            api,
        };
        let api = &request.api;
        if api.external {
            let path = api.external_crd_path();
            let Some(text) = plan.read(std::path::Path::new(&path))? else {
                bail!("{path} is missing, and {}'s types are made from it; restore it from version control", api.kind);
            };
            let names = (api.qualified_group.as_str(), api.version.as_str(), api.kind.as_str(), api.plural.as_str());
            let crd = crate::names::external::ExternalCrd::kept(&text, &path, names, project.namespaced)?;
            request.namespaced = crd.namespaced;
            request.external = Some(crd);
        } else if !api.builtin {
            request.short_name = short_name(project, api);
        }
        Ok(request)
    }

    /// The `create api --controller-name NAME` that added the controller `name` to `resource`'s
    /// kind, as [`Request::recorded`] gives the kind's own.
    pub fn recorded_named(resource: &Resource, name: &str, project: &Project) -> Result<Self> {
        let api = resource.names.clone();
        let existing = project.find(&api).cloned().unwrap_or_else(|| resource.clone());
        Ok(Request {
            resource: false,
            controller: true,
            force: false,
            storage_version: false,
            namespaced: existing.namespaced(),
            operand: None,
            image_flag: false,
            existing: Some(existing),
            new_version: false,
            short_name: None,
            notes: Vec::new(),
            api,
            external: None,
            controller_name: Some(ControllerName::parse(name)?),
        })
    }
}

/// The kind of Kubernetes' own that `args` ask a controller for, as kubebuilder decides it:
/// `--resource=false`, a group of Kubernetes' own (kubebuilder's spelling or the full API
/// group), and no API of this project of that group, version and kind (whose types would be
/// the ones to control). `Err` when the group is Kubernetes' but memop knows no such kind.
fn builtin_kind(args: &Args, project: &Project) -> Result<Option<&'static BuiltinKind>> {
    let gvk = &args.gvk;
    let Some(group) = crate::names::builtin::group(&gvk.group) else { return Ok(None) };
    if args.resource {
        return Ok(None);
    }
    let own = project.resources.iter().any(|r| {
        let n = &r.names;
        !n.builtin
            && r.api.is_some()
            && n.group.as_str() == gvk.group
            && n.version.as_str() == gvk.version
            && n.kind.as_str() == gvk.kind
    });
    if own {
        return Ok(None);
    }
    crate::names::builtin::find(group, &gvk.version, &gvk.kind).map(Some)
}

/// A kind the project does not define (Kubernetes' own, or another project's), as it is served.
pub(super) struct Foreign<'a> {
    /// Whose it is, as the refusals say it.
    pub(super) theirs: &'a str,
    pub(super) plural: &'a str,
    pub(super) namespaced: bool,
    /// Whether its CRD says how it is served (another project's kind), not Kubernetes.
    pub(super) by_crd: bool,
}

/// Refuses the flags that name or scope a `foreign` kind otherwise than it is served (a plural,
/// `--namespaced=false`), and a cluster-scoped one in a project initialized with `--namespaced`.
pub(super) fn refuse_foreign_flags(args: &Args, project: &Project, foreign: &Foreign) -> Result<()> {
    let Foreign { theirs, plural: served, namespaced, by_crd } = foreign;
    if let Some(plural) = args.plural.as_deref().filter(|p| p != served) {
        let says = if *by_crd { " (its CRD says so)" } else { "" };
        bail!("--plural {plural}: {theirs}, served as {served}{says}; drop --plural");
    }
    if !args.namespaced && *namespaced {
        let scope = if *by_crd { "its CRD makes it namespaced" } else { "it is namespaced" };
        bail!("--namespaced=false: {theirs}, and {scope}; drop --namespaced=false");
    }
    if project.namespaced && !namespaced {
        bail!(
            "{theirs}, and it is cluster-scoped: this project was initialized with --namespaced, and its manager's \
             Role, bound in one namespace, cannot grant access to cluster-scoped kinds; use a project without \
             --namespaced"
        );
    }
    Ok(())
}

/// A controller over a kind of Kubernetes' own: no types, CRD, sample nor operand; the names,
/// plural and scope are Kubernetes'.
fn validate_builtin(args: &Args, project: &Project, builtin: &'static BuiltinKind) -> Result<Request> {
    let api = ApiNames::builtin(builtin);
    let (kind, gvk, api_version) = (&api.kind, api.gvk(), builtin.api_version());
    if args.controller == Some(false) {
        bail!("--resource=false and --controller=false leave nothing to scaffold; drop one of them");
    }
    let theirs = format!("{kind} is Kubernetes' own ({api_version}, k8s-openapi's type)");
    if args.storage_version {
        bail!("--storage-version: {theirs}, and Kubernetes chooses how it stores it; drop --storage-version");
    }
    if let Some(flag) = args.image_flag(true) {
        bail!(
            "{flag}: {theirs}, and an operand controller deploys an image for each object of a kind the project \
             defines (it reads its spec.size); drop {flag}, and write what the controller does in its reconcile"
        );
    }
    let foreign = Foreign { theirs: &theirs, plural: builtin.plural, namespaced: builtin.namespaced, by_crd: false };
    refuse_foreign_flags(args, project, &foreign)?;
    let existing = project.find(&api).cloned();
    if existing.as_ref().is_some_and(|r| r.controller) && !args.force {
        bail!("a controller for {gvk} already exists; pass --force to regenerate it (your edits to it are lost)");
    }
    refuse_module_clashes(project, &api)?;
    Ok(Request {
        api,
        resource: false,
        controller: true,
        force: args.force,
        storage_version: false,
        namespaced: builtin.namespaced,
        operand: None,
        image_flag: false,
        existing,
        new_version: false,
        short_name: None,
        notes: Vec::new(),
        external: None,
        controller_name: None,
    })
}

/// Refuses a controller over a kind the project does not define (Kubernetes' own, or another
/// project's) whose module, named after the kind, a named controller or another kind's
/// controller or webhook files have.
pub(super) fn refuse_module_clashes(project: &Project, api: &ApiNames) -> Result<()> {
    let kind = &api.kind;
    refuse_named_module(project, kind)?;
    for resource in project.others(api) {
        let other = &resource.names;
        if resource.controller && other.kind.snake() == kind.snake() {
            bail!(
                "a controller for kind {} already exists ({}), and controller modules are named after the kind \
                 ({}); memop scaffolds one controller per kind name",
                other.kind,
                other.gvk(),
                kind.snake()
            );
        }
        let webhooks = resource.webhooks.clone().unwrap_or_default();
        if other
            .webhook_file_names(webhooks.defaulting || webhooks.validation, webhooks.conversion)
            .contains(&kind.snake())
        {
            bail!(
                "{kind}'s files would be named {}, as the webhook files of the kind {} already are",
                kind.snake(),
                other.kind
            );
        }
    }
    Ok(())
}

/// Refuses an API whose CRD would be another kind's, where one of the two is another project's
/// kind (the project's own kinds are held to the same rule in [`check_conflicts`]): the API
/// server serves a group's kinds by their plural and singular names (a CRD is named
/// `<plural>.<group>`), each once, and the project keeps an external kind's CRD in a file named
/// after them. Said before anything is written, whichever of the two came first.
pub(super) fn refuse_shared_crd(project: &Project, api: &ApiNames) -> Result<()> {
    let whose = |names: &ApiNames| if names.external { "another project's kind" } else { "the project's own kind" };
    for resource in project.others(api) {
        let other = &resource.names;
        if other.builtin || other.qualified_group != api.qualified_group || !(other.external || api.external) {
            continue;
        }
        let (kind, group) = (&api.kind, &api.qualified_group);
        if other.kind == api.kind {
            if other.external == api.external {
                continue;
            }
            if api.external {
                bail!(
                    "{kind} of group {group} is this project's own kind (its types are {}), and the API server serves \
                     one CRD of each name: drop --external-api-crd, and add a controller over the project's own \
                     kind: memop create api --group {} --version {} --kind {kind} --resource=false --controller=true",
                    other.types_path(),
                    other.group,
                    other.version
                );
            }
            bail!(
                "{kind} of group {group} is another project's kind in this project (its CRD {} is kept in {}), and \
                 the API server serves one CRD of each name, so the project cannot define {kind} too: choose another \
                 kind or group (the project's controller over {kind} is src/controller/{}.rs)",
                other.crd_name(),
                other.external_crd_path(),
                other.kind.snake()
            );
        }
        let names = |n: &ApiNames| [n.plural.to_string(), n.kind.lower()];
        if let Some(name) = names(api).into_iter().find(|name| names(other).contains(name)) {
            bail!(
                "{kind} of group {group} ({}) would be served as {name}, as {} {} of that group already is (CRD \
                 {}, plural {}, singular {}), and the API server serves each name of a group once, so the two CRDs \
                 cannot both be installed: {}",
                whose(api),
                whose(other),
                other.kind,
                other.crd_name(),
                other.plural,
                other.kind.lower(),
                if api.external {
                    "the project controls one of the two kinds only; pass --external-api-crd a CRD whose names no \
                     other kind of the group has"
                        .to_string()
                } else {
                    format!("choose another kind, or another plural with --plural (not {})", api.plural)
                }
            );
        }
    }
    Ok(())
}

/// A kind's controller module, `src/controller/<kind>.rs`, must not be a named controller's.
fn refuse_named_module(project: &Project, kind: &Kind) -> Result<()> {
    for resource in &project.resources {
        for name in &resource.controllers {
            let module = name.replace('-', "_");
            if module == kind.snake() {
                bail!(
                    "invalid --kind \"{kind}\": its controller's module {module} is the controller {name}'s (of {}); \
                     choose another kind name",
                    resource.names.gvk()
                );
            }
        }
    }
    Ok(())
}

/// Another controller of a kind the project has (`--controller-name`): a skeleton (over the
/// project's kind) or a controller over Kubernetes' kind, in its own module, named `name`.
fn validate_named(args: &Args, project: &Project, name: &str) -> Result<Request> {
    let name = ControllerName::parse(name)?;
    let (g, v, k) = (&args.gvk.group, &args.gvk.version, &args.gvk.kind);
    let retry = format!(
        "memop create api --group {g} --version {v} --kind {k} --resource=false --controller=true --controller-name {name}"
    );
    refuse_kind_flags(args, &retry)?;
    let api = match builtin_kind(args, project)? {
        Some(builtin) => ApiNames::builtin(builtin),
        None => args.gvk.names(project, None)?,
    };
    let gvk = api.gvk();
    let Some(existing) = project.find(&api).filter(|r| !r.names.external) else {
        bail!(
            "--controller-name {name}: {gvk} is not a kind of this project's; create it first (memop create api \
             --group {g} --version {v} --kind {k}{}), then add controllers to it",
            if api.builtin { " --resource=false --controller=true" } else { "" }
        );
    };
    for resource in &project.resources {
        let other = &resource.names;
        if resource.controllers.iter().any(|n| n == name.as_str()) {
            if resource.names.same_gvk(&api) && args.force {
                continue;
            }
            bail!(
                "a controller named \"{name}\" already exists (of {}); choose another --controller-name{}",
                other.gvk(),
                if resource.names.same_gvk(&api) { " (or pass --force to regenerate it)" } else { "" }
            );
        }
    }
    // Its files beside every other file: a kind's webhook files count even where the kind has no
    // webhooks yet (`create webhook` would write them over the controller's later).
    if let Some((reason, example)) = project.named_controller_clash(&api, name.as_str(), true) {
        bail!(
            "invalid --controller-name \"{name}\": {reason}; choose another --controller-name{}",
            example.map(|e| format!(" (e.g. \"{e}\")")).unwrap_or_default()
        );
    }
    let namespaced = match (&existing.api, api.builtin_kind()) {
        (Some(found), _) => found.namespaced,
        (None, Some(builtin)) => builtin.namespaced,
        (None, None) => args.namespaced,
    };
    Ok(Request {
        resource: false,
        controller: true,
        force: args.force,
        storage_version: false,
        namespaced,
        operand: None,
        image_flag: false,
        existing: Some(existing.clone()),
        new_version: false,
        short_name: None,
        notes: Vec::new(),
        api,
        external: None,
        controller_name: Some(name),
    })
}

/// Refuses the flags that describe a kind to `--controller-name`, which adds a controller to a
/// kind the project has, as it is (`retry`: the command without them).
fn refuse_kind_flags(args: &Args, retry: &str) -> Result<()> {
    if args.resource || args.controller == Some(false) {
        bail!(
            "--controller-name adds a controller to a kind the project has, and scaffolds no types: pass \
             --resource=false --controller=true ({retry})"
        );
    }
    if let Some(flag) = args.image_flag(true) {
        bail!(
            "{flag}: a controller added with --controller-name is a skeleton, it deploys no image (the kind's \
             operand controller does); drop {flag}"
        );
    }
    for (flag, given) in [
        ("--storage-version", args.storage_version),
        ("--external-api-crd", args.external_api_crd.is_some()),
        ("--external-api-domain", args.external_api_domain.is_some()),
        ("--plural", args.plural.is_some()),
    ] {
        if given {
            bail!("{flag}: --controller-name adds a controller to a kind the project has, as it is; drop {flag}");
        }
    }
    Ok(())
}

/// What a new version of an existing kind (`sibling` is one of its versions) cannot change: its
/// versions share one CRD, so one plural and one scope, and one controller deploys its image.
fn version_refusals(args: &Args, sibling: &Resource) -> Result<()> {
    let (kind, version, group) = (&args.gvk.kind, &sibling.names.version, &args.gvk.group);
    if let Some(flag) = args.image_flag(true) {
        bail!(
            "{flag}: {kind} exists in version {version}, and a new version of a kind gets no controller \
             of its own, so no image; drop {flag} (the image is the controller's: \
             memop create api --group {group} --version {version} --kind {kind} --image IMG --force)"
        );
    }
    let namespaced = sibling.api.as_ref().is_some_and(|a| a.namespaced);
    if !args.namespaced && namespaced {
        bail!(
            "--namespaced=false: {kind} is namespaced in version {version}, and all versions of a kind \
             share one CRD, so one scope; drop --namespaced=false"
        );
    }
    let plural = &sibling.names.plural;
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

/// Refuses what clashes with the project: an API or controller it has already (without
/// `--force`), a controller over types it does not have, a CRD shared with another project's
/// kind, and names that another kind of the project has.
fn check_conflicts(
    project: &Project,
    args: &Args,
    api: &ApiNames,
    controller: bool,
    existing: Option<&Resource>,
) -> Result<()> {
    refuse_existing(args, api, controller, existing)?;
    refuse_shared_crd(project, api)?;
    for resource in project.others(api) {
        refuse_a_clash(resource, api, controller)?;
    }
    Ok(())
}

/// Refuses to make again, without `--force`, the API or controller `existing` has; and a
/// controller over types that do not exist.
fn refuse_existing(args: &Args, api: &ApiNames, controller: bool, existing: Option<&Resource>) -> Result<()> {
    let (kind, gvk) = (&api.kind, api.gvk());
    match existing {
        Some(r) if args.resource && r.api.is_some() && !args.force => bail!(
            "API resource {gvk} already exists; pass --force to regenerate its own files \
             (its types, controller, tests and sample: your edits to them are lost; other files are kept)"
        ),
        Some(r) if !args.resource && controller && r.controller && !args.force => {
            bail!("a controller for {gvk} already exists; pass --force to regenerate it (your edits to it are lost)")
        }
        None if !args.resource => bail!(
            "{gvk} has no API in this project, so --resource=false has no types to control; \
             run `memop create api --group {} --version {} --kind {kind}` first{}",
            api.group,
            api.version,
            crate::names::builtin::KINDS.iter().find(|k| k.kind == kind.as_str()).map_or(String::new(), |k| format!(
                " (or, for Kubernetes' own {kind}, a controller over k8s-openapi's type: --group {} --version {} \
                 --resource=false --controller=true)",
                k.group, k.version
            ))
        ),
        _ => {}
    }
    Ok(())
}

/// Refuses `api` (with a `controller`) where its names clash with those of `resource`, another
/// kind (or version) of the project.
fn refuse_a_clash(resource: &Resource, api: &ApiNames, controller: bool) -> Result<()> {
    let kind = &api.kind;
    let other = &resource.names;
    // A controller over a kind of Kubernetes' own or another project's shares only the
    // controller's module name (and its CRD's names, above).
    if other.builtin || other.external {
        if controller && resource.controller && other.kind.snake() == kind.snake() {
            bail!(
                "a controller for kind {} already exists ({} {}), and controller modules are named \
                 after the kind ({}); use another kind name, or pass --controller=false",
                other.kind,
                if other.builtin { "Kubernetes'" } else { "another project's" },
                other.gvk(),
                kind.snake()
            );
        }
        return Ok(());
    }
    let webhooks = resource.webhooks.clone().unwrap_or_default();
    if other.webhook_file_names(webhooks.defaulting || webhooks.validation, webhooks.conversion).contains(&kind.snake())
    {
        bail!(
            "invalid --kind \"{kind}\": its files would be named {}, as the webhook files of the kind {} \
             already are; choose another kind",
            kind.snake(),
            other.kind
        );
    }
    let (same_group, same_kind) = (other.group == api.group, other.kind == api.kind);
    if same_group && !same_kind {
        refuse_a_name_clash_in_group(other, api)?;
    }
    if !same_group {
        refuse_a_clash_across_groups(resource, api, controller)?;
    }
    // Different APIs whose RBAC helper roles would have the same names (`<group>_<kind>`).
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
    Ok(())
}

/// Refuses `api` where a name of its kind is taken by `other`, another kind of its group.
fn refuse_a_name_clash_in_group(other: &ApiNames, api: &ApiNames) -> Result<()> {
    let kind = &api.kind;
    // The CRD's singular name and the webhook paths are the kind in lowercase: kinds that
    // differ only in case would share them (the API server refuses the second CRD, and the
    // manager's webhook router panics on the duplicate path).
    if other.kind.lower() == kind.lower() {
        bail!(
            "{kind} and the existing kind {} of group {} differ only in case, but Kubernetes spells a kind's \
             singular name and its webhook paths in lowercase ({}), so they would share them; choose another kind",
            other.kind,
            other.group,
            kind.lower()
        );
    }
    if other.kind.snake() == kind.snake() {
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
    if other.version == api.version && (shadows(kind, &other.kind) || shadows(&other.kind, kind)) {
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
    if other.plural == api.plural {
        bail!(
            "{kind} would have the plural {}, which the existing kind {} of group {} already has; \
             choose another kind, or another plural with --plural",
            api.plural,
            other.kind,
            other.group
        );
    }
    Ok(())
}

/// Refuses `api` (with a `controller`) where its files would have the names of those of
/// `resource`, a kind of another group.
fn refuse_a_clash_across_groups(resource: &Resource, api: &ApiNames, controller: bool) -> Result<()> {
    let (kind, other) = (&api.kind, &resource.names);
    if controller && resource.controller && other.kind.snake() == kind.snake() {
        bail!(
            "a controller for kind {} already exists (group {}), and controller modules are named \
             after the kind ({}); use another kind name, or pass --controller=false",
            other.kind,
            other.group,
            kind.snake()
        );
    }
    // Different groups whose module would have the same name (`a-b` and `a.b` are both `a_b`).
    if other.group_module() == api.group_module() {
        bail!(
            "group {} would share the Rust module src/api/{}/ with the existing group {}; \
             choose another group name",
            api.group,
            api.group_module(),
            other.group
        );
    }
    Ok(())
}

/// The CRD short name of the kind, unless another kind of its group already has it: the API
/// server would refuse to serve the second CRD (`ShortNamesConflict`).
fn short_name(project: &Project, api: &ApiNames) -> Option<String> {
    let short = api.kind.short_name()?;
    let taken = project.others(api).map(|r| &r.names).filter(|o| o.group == api.group && o.kind != api.kind).any(|o| {
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
            if let Some(flag) = args.image_flag(false) {
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

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    /// `memop create api ARGS`, parsed as the binary parses it.
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn project(resources: &str) -> Project {
        let text = format!(
            "cliVersion: 0.2.0\ncrateName: p\ndomain: example.com\nlayout:\n- memop.rs/rust/v2\nlicense: apache2\n\
             projectName: p\n{resources}version: '3'\n"
        );
        Project::parse(&text).unwrap()
    }

    const MEMCACHED: &str = "resources:\n- api:\n    crdVersion: v1\n    namespaced: true\n  controller: true\n  \
                             domain: example.com\n  group: cache\n  kind: Memcached\n  operand:\n    containerPort: \
                             11211\n    image: memcached:1.6\n  version: v1alpha1\n";

    fn request(project: &Project, args: &str) -> Result<Request> {
        let cli = Cli::try_parse_from(std::iter::once("create-api").chain(args.split_whitespace()))?;
        validate(&cli.args, project)
    }

    fn refusal(project: &Project, args: &str) -> String {
        format!("{:#}", request(project, args).unwrap_err())
    }

    #[test]
    fn the_tutorials_kind_gets_the_preset_operand() {
        let req = request(&project(""), "--group cache --kind Memcached").unwrap();
        let operand = req.operand.unwrap();
        assert_eq!((operand.image.as_str(), operand.container_port), ("memcached:1.6.26-alpine3.19", 11211));
        assert!(req.controller && req.resource && req.namespaced && !req.new_version);
        assert_eq!(req.short_name.as_deref(), Some("mc"));
    }

    #[test]
    fn a_new_version_shares_the_kinds_crd_and_controller() {
        let project = project(MEMCACHED);
        let req = request(&project, "--group cache --version v1 --kind Memcached --storage-version").unwrap();
        assert!(req.new_version && !req.controller, "{req:?}");
        assert_eq!(req.operand.unwrap().image, "memcached:1.6", "copied from v1alpha1");
        let error = refusal(&project, "--group cache --version v1 --kind Memcached --plural mems");
        assert!(error.contains("share one CRD, so one plural"), "{error}");
        let error = refusal(&project, "--group cache --version v1 --kind Memcached --controller");
        assert!(error.contains("already has a controller, for version v1alpha1"), "{error}");
    }

    #[test]
    fn storage_version_needs_another_version() {
        let error = refusal(&project(""), "--group cache --kind Memcached --storage-version");
        assert!(error.contains("is Memcached's only version"), "{error}");
    }

    #[test]
    fn flags_that_contradict_each_other_are_refused() {
        let project = project(MEMCACHED);
        #[rustfmt::skip]
        let cases = [
            ("--group cache --kind Memcached", "already exists; pass --force"),
            ("--group cache --kind Memcached --force --plural mems", "it does not rename it"),
            ("--group web --kind Nginx --image-container-port 80", "needs --image IMG"),
            ("--group web --kind Nginx --image nginx:1", "needs --image-container-port PORT"),
            ("--group web --kind Nginx --resource=false", "has no API in this project"),
            ("--group web --kind Nginx --resource=false --controller=false", "leave nothing to scaffold"),
            ("--group cache --kind Manifests", "would clash with a file every project has"),
            ("--group cache --kind MemcachedSpec", "named like the Spec or Status type"),
            ("--group cache --kind MemCached", "differ only in case"),
            ("--group cache --kind MemcachedList", "the list of one is named like the other"),
            ("--group cache --kind Mc", "which the existing kind Memcached of group cache already has"),
            ("--group web --kind Memcached", "a controller for kind Memcached already exists (group cache)"),
            ("--group web --kind Foo --namespaced=false --image nginx:1 --image-container-port 80", "must be namespaced"),
        ];
        for (args, expected) in cases {
            let error = refusal(&project, args);
            assert!(error.contains(expected), "{args}: {error}");
        }
    }

    #[test]
    fn a_short_name_another_kind_has_is_left_out_with_a_note() {
        let project = project(MEMCACHED);
        let req = request(&project, "--group cache --kind MemoryCache").unwrap();
        assert_eq!(req.short_name, None);
        assert!(req.notes[0].contains("mc is another kind's in group cache"), "{:?}", req.notes);
    }
}
