//! What `create webhook` will do, decided from its flags and PROJECT alone (every refusal).

use anyhow::{Result, bail};

use super::Args;
use crate::names::Version;
use crate::names::builtin::{self, BuiltinKind};
use crate::project::{Project, Resource, Webhooks};
use crate::resource::ApiNames;

/// A validated `create webhook`.
#[derive(Debug)]
pub struct Request {
    /// The API, as PROJECT records it.
    pub api: ApiNames,
    /// PROJECT's entry for it, before this command.
    pub existing: Resource,
    /// Admission webhooks were asked for now (`--defaulting`, `--programmatic-validation`).
    pub admission: bool,
    /// A conversion webhook was asked for now.
    pub conversion: bool,
    /// The kind's webhooks once this command ran: those asked for and those it had.
    pub webhooks: Webhooks,
    /// The spoke versions of the conversion webhook.
    pub spokes: Vec<Version>,
    /// Regenerate the kind's webhook files.
    pub force: bool,
}

/// Decides what `args` ask of `project`, or refuses with what to do instead.
pub fn validate(args: &Args, project: &Project) -> Result<Request> {
    let admission = args.defaulting || args.programmatic_validation;
    if !admission && !args.conversion {
        bail!("no webhook to scaffold: pass --defaulting, --programmatic-validation, --conversion, or several");
    }
    let existing = match builtin_kind(args, project)? {
        Some(builtin) => builtin_resource(args, project, builtin)?,
        None => own_resource(args, project)?,
    };
    let api = existing.names.clone();
    let gvk = api.gvk();
    let recorded = existing.webhooks.clone().unwrap_or_default();
    if admission && existing.admits() && !args.force {
        let what = [(recorded.defaulting, "defaulting"), (recorded.validation, "validation")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| *name)
            .collect::<Vec<_>>()
            .join(" and ");
        bail!(
            "{gvk} already has webhooks ({what}); pass --force to regenerate {} and its test \
             with the webhooks asked for now and those it has (your edits to those two files are lost)",
            api.webhook_path()
        );
    }
    let spokes = match args.conversion {
        true => spokes(project, args, &api, &recorded)?,
        false => recorded.spoke.iter().map(|s| Version::parse(s)).collect::<Result<_>>()?,
    };
    refuse_file_clashes(project, &api, admission, args.conversion)?;
    let webhooks = Webhooks {
        defaulting: args.defaulting || recorded.defaulting,
        validation: args.programmatic_validation || recorded.validation,
        conversion: args.conversion || recorded.conversion,
        spoke: spokes.iter().map(Version::to_string).collect(),
        webhook_version: "v1".into(),
    };
    let conversion = args.conversion;
    Ok(Request { api, existing, admission, conversion, webhooks, spokes, force: args.force })
}

/// Refuses webhooks of `api` (`admission`, `conversion`) whose files would have the names of
/// another kind's or controller's files, or whose module another kind (or version) has already.
fn refuse_file_clashes(project: &Project, api: &ApiNames, admission: bool, conversion: bool) -> Result<()> {
    let (gvk, kind) = (api.gvk(), &api.kind);
    // Webhook modules and tests are named after the kind alone: `tests/<kind>_webhook.rs` and
    // `<kind>_conversion.rs` (and `src/api/<group>/<spoke>/<kind>_conversion.rs`) beside other
    // kinds' files.
    let file_names = api.webhook_file_names(admission, conversion);
    for resource in &project.resources {
        let other = &resource.names;
        if file_names.contains(&other.kind.snake()) {
            bail!(
                "{kind}'s webhook files would be named {}, as the files of the kind {} of group {} already are; \
                 rename one of the two kinds",
                other.kind.snake(),
                other.kind,
                other.group
            );
        }
        // A named controller's files (`src/controller/<name>.rs`, `tests/<name>.rs`) are its own.
        if let Some(name) = resource.controllers.iter().find(|n| file_names.contains(&n.replace('-', "_"))) {
            bail!(
                "{kind}'s webhook files would be named {}, as the files of the controller {name} of {} already are \
                 (src/controller/{0}.rs, tests/{0}.rs); rename that controller (its files, and its name in PROJECT's \
                 controllers) first",
                name.replace('-', "_"),
                other.gvk()
            );
        }
        if admission && resource.admits() && !other.same_kind(api) && other.kind.snake() == kind.snake() {
            bail!(
                "{} in group {} already has webhooks in {}, which {gvk}'s would need too; memop names webhook \
                 modules after kinds, so only one of them can have webhooks",
                other.kind,
                other.group,
                api.webhook_path()
            );
        }
        if admission && resource.admits() && other.same_kind(api) && other.version != api.version {
            bail!(
                "{kind} already has webhooks in version {} ({}), and memop names webhook modules after kinds, so \
                 one version of a kind has admission webhooks; they see every version's objects, converted to \
                 theirs: add to those (memop create webhook --group {} --version {} --kind {kind} ... --force)",
                other.version,
                api.webhook_path(),
                api.group,
                other.version
            );
        }
    }
    Ok(())
}

impl Request {
    /// The `create webhook` that gave `resource` (as PROJECT records it) its admission webhooks,
    /// or with `conversion` its conversion webhook, as `memop update` replays it into `project`
    /// (the commands replayed before it). Typed: PROJECT was validated when it was read, so
    /// there are no flags to parse and nothing to refuse.
    pub fn recorded(resource: &Resource, conversion: bool, project: &Project) -> Result<Self> {
        let api = resource.names.clone();
        let asked = resource.webhooks.clone().unwrap_or_default();
        let existing = project.find(&api).cloned().unwrap_or_else(|| Resource {
            names: api.clone(),
            api: None,
            controller: false,
            operand: None,
            webhooks: None,
            controllers: Vec::new(),
            storage_version: None,
        });
        let recorded = existing.webhooks.clone().unwrap_or_default();
        let (defaulting, validation) = if conversion { (false, false) } else { (asked.defaulting, asked.validation) };
        let mut spokes: Vec<Version> = match conversion {
            true if !asked.spoke.is_empty() => asked.spoke.iter().map(|s| Version::parse(s)).collect::<Result<_>>()?,
            // Every other version of the kind, as `--conversion` without `--spoke` takes them.
            true => project.other_versions(&api).map(|r| r.names.version.clone()).collect(),
            false => recorded.spoke.iter().map(|s| Version::parse(s)).collect::<Result<_>>()?,
        };
        spokes.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        spokes.dedup();
        let webhooks = Webhooks {
            defaulting: defaulting || recorded.defaulting,
            validation: validation || recorded.validation,
            conversion: conversion || recorded.conversion,
            spoke: spokes.iter().map(Version::to_string).collect(),
            webhook_version: "v1".into(),
        };
        Ok(Self { api, existing, admission: !conversion, conversion, webhooks, spokes, force: false })
    }
}

/// PROJECT's entry of the project's own kind `args` name, which must have types.
fn own_resource(args: &Args, project: &Project) -> Result<Resource> {
    if let Some(theirs) = args.gvk.theirs(project).filter(|r| r.names.external) {
        // Admission webhooks of the project's own, as kubebuilder scaffolds them for external
        // types: the API server calls them for that kind's objects too.
        if args.conversion {
            bail!(
                "--conversion: {} is another project's kind (its CRD is kept in {}), and that project converts                  between its versions; drop --conversion",
                theirs.names.gvk(),
                theirs.names.external_crd_path()
            );
        }
        return Ok(theirs.clone());
    }
    let named = args.gvk.names(project, None).map_err(|err| {
        // A kind no project may define (`Event`), in a group of Kubernetes' own: what memop
        // knows of that group says more than the kind's name rule.
        let gvk = &args.gvk;
        match builtin::group(&gvk.group).map(|group| builtin::find(group, &gvk.version, &gvk.kind)) {
            Some(Err(theirs)) => theirs,
            _ => err,
        }
    })?;
    let (gvk, kind) = (named.gvk(), &named.kind);
    let Some(existing) = project.find(&named).cloned() else {
        bail!(
            "{gvk} has no API in this project; create it first: memop create api --group {} --version {} --kind {kind}",
            named.group,
            named.version
        );
    };
    if existing.api.is_none() {
        bail!(
            "{gvk} has a controller but no types in this project (create api --resource=false); webhooks need its types"
        );
    }
    let api = &existing.names;
    crate::names::check_file_names(&api.domain, &api.group, &api.version, &api.kind, &api.plural)?;
    Ok(existing)
}

/// The kind of Kubernetes' own that `args` name (kubebuilder's spelling of its group, or the
/// full API group), unless the project has a kind of that group, version and kind (`--group
/// apps` is also `apps.<domain>`). `Err` for a kind of Kubernetes' own named with another
/// group or version, with the right flags.
fn builtin_kind(args: &Args, project: &Project) -> Result<Option<&'static BuiltinKind>> {
    let gvk = &args.gvk;
    let Some(group) = builtin::group(&gvk.group) else { return Ok(None) };
    let own = project.resources.iter().any(|r| {
        let n = &r.names;
        !n.builtin && n.group.as_str() == gvk.group && n.version.as_str() == gvk.version && n.kind.as_str() == gvk.kind
    });
    if own || !builtin::KINDS.iter().any(|k| k.kind == gvk.kind) {
        return Ok(None);
    }
    builtin::find(group, &gvk.version, &gvk.kind).map(Some)
}

/// PROJECT's entry of a kind of Kubernetes' own, with or without a controller over it (as
/// kubebuilder, which needs no `create api` before a webhook on a core type), and what its
/// webhooks cannot be.
fn builtin_resource(args: &Args, project: &Project, builtin: &'static BuiltinKind) -> Result<Resource> {
    let api = ApiNames::builtin(builtin);
    if args.conversion {
        bail!(
            "--conversion: {} {} is Kubernetes' own, and the API server converts between its versions itself; \
             drop --conversion",
            builtin.api_version(),
            builtin.kind
        );
    }
    Ok(project.find(&api).cloned().unwrap_or(Resource {
        names: api,
        api: None,
        controller: false,
        operand: None,
        webhooks: None,
        controllers: Vec::new(),
        storage_version: None,
    }))
}

/// The spoke versions of the conversion webhook whose hub is `--version`: `--spoke`, or every
/// other version of the kind.
fn spokes(project: &Project, args: &Args, hub: &ApiNames, recorded: &Webhooks) -> Result<Vec<Version>> {
    let (group, kind, hub) = (&hub.group, &hub.kind, hub);
    let hub_version = &hub.version;
    if recorded.conversion && !args.force {
        bail!(
            "{kind} {hub_version} already has a conversion webhook (spokes {}); pass --force to regenerate its \
             conversions and test (your edits to them are lost)",
            recorded.spoke.join(", ")
        );
    }
    let others: Vec<&Resource> = project.other_versions(hub).collect();
    if let Some(other) = others.iter().find(|r| r.converts()) {
        let version = &other.names.version;
        bail!(
            "{kind} already converts through the hub version {version}, and a kind has one hub; add spokes to it: \
             memop create webhook --group {group} --version {version} --kind {kind} --conversion --spoke V1,V2 --force"
        );
    }
    let versions: Vec<&str> = others.iter().map(|r| r.names.version.as_str()).collect();
    if versions.is_empty() {
        bail!(
            "{kind} is served in one version ({hub_version}), so a conversion webhook has nothing to convert; \
             create another version first: memop create api --group {group} --version V --kind {kind}"
        );
    }
    let given: Vec<&str> = args.spoke.iter().map(String::as_str).collect();
    let mut spokes = Vec::new();
    for spoke in if given.is_empty() { &versions } else { &given } {
        let spoke = Version::parse(spoke)?;
        if &spoke == hub_version {
            bail!("invalid spoke version \"{spoke}\": it is the hub (--version); a spoke is another version of {kind}");
        }
        if !versions.contains(&spoke.as_str()) {
            bail!(
                "invalid spoke version \"{spoke}\": {kind} has no version {spoke} (it has {hub_version}, {}); create it \
                 first: memop create api --group {group} --version {spoke} --kind {kind}",
                versions.join(", ")
            );
        }
        spokes.push(spoke);
    }
    spokes.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    spokes.dedup();
    Ok(spokes)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// A project with Memcached in v1alpha1 (an operand kind) and v1, and what `extra` adds to
    /// v1alpha1's entry.
    fn project(extra: &str) -> Project {
        let resource = |version: &str, extra: &str| {
            format!(
                "- api:\n    crdVersion: v1\n    namespaced: true\n  domain: example.com\n  group: cache\n  kind: \
                 Memcached\n  version: {version}\n{extra}"
            )
        };
        let text = format!(
            "cliVersion: 0.2.0\ncrateName: p\ndomain: example.com\nlayout:\n- memop.rs/rust/v2\nlicense: apache2\n\
             projectName: p\nresources:\n{}{}version: '3'\n",
            resource("v1alpha1", extra),
            resource("v1", "")
        );
        Project::parse(&text).unwrap()
    }

    fn request(project: &Project, args: &str) -> Result<Request> {
        let cli = Cli::try_parse_from(std::iter::once("create-webhook").chain(args.split_whitespace()))?;
        validate(&cli.args, project)
    }

    #[test]
    fn a_conversion_takes_every_other_version_as_spoke() {
        let req = request(&project(""), "--group cache --version v1 --kind Memcached --conversion").unwrap();
        assert_eq!(req.spokes, [Version::parse("v1alpha1").unwrap()]);
        assert!(req.webhooks.conversion && !req.webhooks.defaulting && req.conversion && !req.admission);
    }

    #[test]
    fn refusals_name_the_way_out() {
        let admits = "  webhooks:\n    defaulting: true\n    webhookVersion: v1\n";
        #[rustfmt::skip]
        let cases = [
            ("", "--group cache --kind Memcached", "no webhook to scaffold"),
            ("", "--group cache --kind Redis --defaulting", "has no API in this project; create it first"),
            ("", "--group cache --version v1 --kind Memcached --conversion --spoke v1", "it is the hub"),
            ("", "--group cache --version v1 --kind Memcached --conversion --spoke v2", "has no version v2"),
            (admits, "--group cache --kind Memcached --defaulting", "already has webhooks (defaulting); pass --force"),
            (admits, "--group cache --version v1 --kind Memcached --defaulting", "already has webhooks in version v1alpha1"),
        ];
        for (extra, args, expected) in cases {
            let error = format!("{:#}", request(&project(extra), args).unwrap_err());
            assert!(error.contains(expected), "{args}: {error}");
        }
        // Kubernetes' own kinds: no API needed, no conversion, their own group and version.
        let pod = request(&project(""), "--group core --version v1 --kind Pod --defaulting").unwrap();
        assert!(pod.api.builtin && pod.existing.webhooks.is_none() && !pod.existing.controller);
        assert_eq!(pod.api.qualified_group, "");
        for (args, expected) in [
            ("--group core --version v1 --kind Pod --conversion", "the API server converts between its versions"),
            ("--group apps --version v1 --kind Pod --defaulting", "pass --group core --version v1"),
        ] {
            let error = format!("{:#}", request(&project(""), args).unwrap_err());
            assert!(error.contains(expected), "{args}: {error}");
        }
        // With --force, the webhooks it had are kept.
        let req =
            request(&project(admits), "--group cache --kind Memcached --programmatic-validation --force").unwrap();
        assert!(req.webhooks.defaulting && req.webhooks.validation);
    }
}
