//! `memop delete api`: removes one version of a kind that is served in several, as kubebuilder's
//! `delete api` does: its types, conversion and sample, its entries in PROJECT and in the files
//! that register it, and its place in the CRD.
//!
//! memop knows what every file of the project is from PROJECT (see [`replay`]): the
//! command replays the project as it is and as it will be without the version, and the
//! difference is what it plans. A file only the version had goes, unless you edited it (then
//! `--force`); a file both have and that changes (the kind's module list, `src/main.rs`,
//! the webhook server, the kind's controller and tests when they move to the storage version) is
//! replaced where unedited and merged three ways over memop's text where you edited it; the CRD
//! loses the version. What it cannot do is refused before anything is written.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use super::gvk::GvkArgs;
use super::replay::replay;
use super::{Global, Report};
use crate::project::{self, Project, Webhooks};
use crate::resource::ApiNames;
use crate::scaffold::merge::Decision;
use crate::scaffold::router::Router;
use crate::scaffold::{Declared, Owner, Plan, Purpose};
use crate::sum;

/// Delete one version of a kind served in several: its types, conversion, sample, its entries in
/// PROJECT and in the files that register it, and its place in the CRD
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  \
    # Memcached is stored as v1, and the manager migrated the stored objects (storedVersions [\"v1\"]):\n  \
    memop delete api --group cache --version v1alpha1 --kind Memcached")]
pub struct Args {
    #[command(flatten)]
    gvk: GvkArgs,

    /// Delete the version's files even where you edited them (the edits are lost)
    #[arg(long)]
    force: bool,
}

pub fn run(global: &Global, args: Args, report: &mut Report) -> Result<()> {
    let project = Project::load(&global.dir)?;
    super::frame::run(global, report, project, args)
}

impl super::frame::Command for Args {
    fn plan(&mut self, global: &Global, project: &mut Project, plan: &mut Plan, report: &mut Report) -> Result<()> {
        delete(project, plan, report, self, global.dry_run)
    }
}

/// Plans deleting the version `args` names from `project`, and reports it.
fn delete(project: &mut Project, plan: &mut Plan, report: &mut Report, args: &Args, dry_run: bool) -> Result<()> {
    if let Some(theirs) = args.gvk.theirs(project) {
        bail!(
            "{} is {}, with no types of the project's (a controller over a kind that is not yours): memop \
             deletes versions of the project's own kinds only; remove the controller by hand (its module in \
             src/controller/, its line there and its registration in src/main.rs and src/manifests.rs, its tests, \
             and its entry in PROJECT{})",
            theirs.describe(),
            if theirs.names.external { "another project's kind" } else { "Kubernetes' own kind" },
            if theirs.names.external {
                ", and its types in src/external/ and CRD in config/external-crds/"
            } else {
                ""
            }
        );
    }
    let api = args.gvk.names(project, None)?;
    let target = validate(project, &api)?;

    let old = replay(project, plan)?;
    let mut notes = remove_version(project, &api, &target);
    let fresh = replay(project, plan)?;

    let changes = plan_difference(&old, &fresh, plan, args.force)?;
    notes.extend(changes);
    plan.write(project::FILE, project.render()?)?;
    refuse_code_naming(plan, &api, &target)?;

    let gvk = format!("{}/{} {}", api.group, api.version, api.kind);
    // Where the real run says what it did.
    if dry_run {
        report.say(format!("Would delete {gvk}; {} is served and stored as {}.\n", api.kind, target.storage));
    }
    for note in &notes {
        report.note(note);
    }
    report.next(format!(
        "Deleted {gvk}; {} is served and stored as {}. Next:\n  \
         $ make manifests   # config/crd from the code, which no longer has {}\n  \
         $ make test\n",
        api.kind, target.storage, api.version
    ));
    Ok(())
}

/// What the deletion leaves: the version the kind is stored as, which takes the controller and
/// the admission webhooks when the deleted version had them.
struct Target {
    storage: String,
    controller: bool,
    /// The deleted version's webhooks, when they admit (default or validate).
    admission: Option<Webhooks>,
}

/// Every refusal, before anything is planned.
fn validate(project: &Project, api: &ApiNames) -> Result<Target> {
    let (group, version, kind) = (&api.group, &api.version, &api.kind);
    let Some(resource) = project.find(api) else {
        let versions: Vec<String> =
            project.resources.iter().filter(|r| r.names.same_kind(api)).map(|r| r.names.version.to_string()).collect();
        match versions.is_empty() {
            true => bail!(
                "PROJECT has no API {group}/{version} {kind}: check --group and --kind (`grep -A3 kind: PROJECT` \
                 lists the project's APIs)"
            ),
            false => bail!(
                "PROJECT has no version {version} of {group} {kind}: it has {}; pass one of them as --version",
                versions.join(", ")
            ),
        }
    };
    if resource.api.is_none() {
        bail!(
            "{group}/{version} {kind} has no types of the project's (a controller over a kind that is not \
             yours): memop deletes versions of the project's own kinds only; remove the controller by hand"
        );
    }
    let others: Vec<String> = project.other_versions(api).map(|r| r.names.version.to_string()).collect();
    if others.is_empty() {
        bail!(
            "{version} is the only version of {kind}: deleting it deletes the API, which memop does not do yet. \
             By hand: delete the kind's objects from every cluster, then its CRD (`kubectl delete crd {}`), and \
             remove its types, controller, tests, sample, roles and its entries in PROJECT and the files that \
             register them (docs/cli.md, `memop delete api`, says which)",
            api.crd_name()
        );
    }
    project.refuse_storage_disagreement(api)?;
    let storage = project.storage_version(api).map(str::to_string).with_context(|| {
        format!(
            "neither PROJECT (storageVersion) nor src/api/mod.rs (STORAGE_VERSIONS) says which version of {kind} is \
             stored; set `storageVersion: <version>` in each of {kind}'s entries in PROJECT and run this command again"
        )
    })?;
    if storage == version.to_string() {
        let other = &others[0];
        bail!(
            "{version} is the storage version of {kind}: the API server keeps objects in it, and cannot let it go. \
             Make another version the storage version first: in src/api/mod.rs, change {kind}'s entry of \
             STORAGE_VERSIONS to (\"{}\", \"{other}\"), and its `storageVersion` in PROJECT to {other}; run \
             `make manifests`, deploy the manager and let it migrate the stored objects in every cluster (`kubectl get crd {0} -o jsonpath='{{.status.storedVersions}}'` \
             says [\"{other}\"]), then run this command again",
            api.crd_name()
        );
    }
    if let Some(webhooks) = resource.webhooks.as_ref().filter(|w| w.conversion && !w.spoke.is_empty()) {
        bail!(
            "{version} is the hub of {kind}'s conversion: {} convert{} through it. Delete those spokes first \
             (`memop delete api --version <spoke>`), or keep {version}",
            webhooks.spoke.join(", "),
            if webhooks.spoke.len() == 1 { "s" } else { "" }
        );
    }
    Ok(Target {
        storage,
        controller: resource.controller,
        admission: resource.webhooks.clone().filter(|_| resource.admits()),
    })
}

/// `project` without `api`'s version: its entry gone, the hub's spokes without it (and the
/// conversion webhook gone with the last spoke when one version is left: it would have nothing to
/// convert), and its controller (with its operand) and admission webhooks moved to the storage
/// version. Returns the notes to print.
fn remove_version(project: &mut Project, api: &ApiNames, target: &Target) -> Vec<String> {
    // The version's named controllers (`create api --controller-name`) go with its first one: to
    // the storage version, each in its module.
    let named = project.find(api).map(|r| r.controllers.clone()).unwrap_or_default();
    project.resources.retain(|r| !r.names.same_gvk(api));
    let version = api.version.to_string();
    let single = project.other_versions(api).count() == 1;
    if single {
        // A kind served in one version records no storage version.
        project.set_storage_version(api, None);
    }
    let mut notes = Vec::new();
    for resource in project.resources.iter_mut().filter(|r| r.names.same_kind(api)) {
        if let Some(webhooks) = resource.webhooks.as_mut() {
            webhooks.spoke.retain(|spoke| *spoke != version);
            if single && webhooks.conversion && webhooks.spoke.is_empty() {
                webhooks.conversion = false;
                notes.push(format!(
                    "{} is served in one version now, so its conversion webhook went with {version}; `memop create \
                     webhook --conversion` makes it again for a new version",
                    api.kind
                ));
            }
        }
        if let Some(moved) = target.admission.as_ref().filter(|_| resource.names.version.to_string() == target.storage)
        {
            let webhooks = resource.webhooks.get_or_insert_with(|| Webhooks {
                webhook_version: moved.webhook_version.clone(),
                ..Webhooks::default()
            });
            webhooks.defaulting |= moved.defaulting;
            webhooks.validation |= moved.validation;
            notes.push(format!(
                "{}'s admission webhooks moved to {}: src/webhook/{}.rs takes its types now, and the webhooks' paths \
                 name {1} (clients that called the {version} paths directly must call the new ones)",
                api.kind,
                target.storage,
                api.kind.snake()
            ));
        }
        if resource.webhooks.as_ref().is_some_and(|w| !w.conversion && !w.defaulting && !w.validation) {
            resource.webhooks = None;
        }
        if resource.names.version.to_string() == target.storage {
            resource.controller |= target.controller;
            if !named.is_empty() {
                resource.controllers.extend(named.iter().cloned());
                notes.push(format!(
                    "{}'s controller{} {} moved to {}: {} take{} its types now",
                    api.kind,
                    if named.len() == 1 { "" } else { "s" },
                    named.join(", "),
                    target.storage,
                    named
                        .iter()
                        .map(|n| format!("src/controller/{}.rs", n.replace('-', "_")))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if named.len() == 1 { "s" } else { "" },
                ));
            }
        }
    }
    notes
}

/// Plans what changes from `old` (memop's text of the project now) to `fresh` (without the
/// version): files only `old` has are removed (refused where edited, unless `force`); files that
/// change go by [`Purpose::Change`] (replaced where unedited, merged over `old`'s text where
/// edited; a generated file, the CRD, that was edited is left to `make manifests`, noted).
/// Returns the notes.
fn plan_difference(old: &Plan, fresh: &Plan, plan: &mut Plan, force: bool) -> Result<Vec<String>> {
    let skip = |path: &Path| path == Path::new(project::FILE) || path == Path::new(sum::FILE);
    let (mut edited, mut gone) = (Vec::new(), Vec::new());
    let mut router = Router::new(Some(old));
    for (path, _) in old.planned().filter(|(path, _)| !skip(path)) {
        if fresh.planned().any(|(p, _)| p == path) {
            continue;
        }
        match router.retire(plan, &path.to_string_lossy())? {
            // Gone already (a run killed among its renames): its record goes too.
            Decision::Leave => gone.push(path.to_path_buf()),
            Decision::Keep if force => plan.remove(path)?,
            Decision::Keep => edited.push(path.display().to_string()),
            _ => {}
        }
    }
    if !edited.is_empty() {
        bail!(
            "you edited {}, which delete{} with the version: commit or copy what you want to keep, then pass --force \
             to delete {}",
            edited.join(", "),
            if edited.len() == 1 { "s" } else { "" },
            if edited.len() == 1 { "it" } else { "them" }
        );
    }
    if gone.iter().any(|path| plan.record().get(&path.to_string_lossy().replace('\\', "/")).is_some()) {
        gone.iter().for_each(|path| plan.forget(path));
    }
    for (path, new) in fresh.planned().filter(|(path, _)| !skip(path)) {
        // A file the command writes itself (no template declares it) is memop's.
        let declared = fresh.declared(path).unwrap_or(Declared::from(Owner::Memop));
        router.route(plan, Purpose::Change, &path.to_string_lossy(), declared, new.to_string(), true)?;
    }
    let merged = router.finish()?;
    if !merged.conflicts.is_empty() {
        let paths: Vec<&str> = merged.conflicts.iter().map(|(path, _, _)| path.as_str()).collect();
        bail!(
            "your edits of {} touch the lines that name the deleted version: change them to the version that stays \
             (or restore memop's text with `git checkout`), then run this command again",
            paths.join(", ")
        );
    }
    let kept =
        merged.kept.iter().map(|(path, _)| (path, "was kept as it is: change it as the version's deletion needs"));
    let generated = merged
        .generated
        .iter()
        .map(|path| (path, "differs from memop's text (your types changed it): run `make manifests`"));
    let mut notes: Vec<(&String, &str)> = kept.chain(generated).collect();
    notes.sort();
    let notes = notes.into_iter().map(|(path, note)| format!("{path} {note}")).collect();
    Ok(notes)
}

/// Refuses when Rust code of the project, as the plan leaves it, still names the deleted version
/// (`api::<group>::<version>`): the user's code, or an edited file the plan kept or merged. Names
/// the files, and the version to move them to.
fn refuse_code_naming(plan: &Plan, api: &ApiNames, target: &Target) -> Result<()> {
    let needle = format!("{}::{}", api.group_module(), api.version.module_name());
    let names = |text: &str| {
        text.match_indices(&needle).any(|(at, _)| {
            let after = text[at + needle.len()..].chars().next();
            let before = text[..at].chars().next_back();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_') && !before.is_some_and(|c| c.is_alphanumeric())
        })
    };
    let removed: Vec<&Path> = plan.removed().collect();
    let mut using = Vec::new();
    for root in ["src", "tests", "benches", "examples"] {
        for path in rust_files(&plan.root().join(root), plan.root())? {
            if removed.contains(&path.as_path()) {
                continue;
            }
            if plan.read(&path)?.as_deref().is_some_and(names) {
                using.push(path.display().to_string());
            }
        }
    }
    if !using.is_empty() {
        bail!(
            "{} still use{} {} {} ({needle}): change them to {}, the version that stays (`{}::{}`), then run this \
             command again",
            using.join(", "),
            if using.len() == 1 { "s" } else { "" },
            api.kind,
            api.version,
            target.storage,
            api.group_module(),
            target.storage
        );
    }
    Ok(())
}

/// The `.rs` files under `dir`, relative to `root` (none when `dir` is missing).
fn rust_files(dir: &Path, root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(found) };
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let kind = entry.file_type().with_context(|| format!("reading {}", entry.path().display()))?;
        if kind.is_dir() {
            found.extend(rust_files(&entry.path(), root)?);
        } else if kind.is_file() && entry.path().extension().is_some_and(|e| e == "rs") {
            found.push(entry.path().strip_prefix(root).unwrap_or(&entry.path()).to_path_buf());
        }
    }
    Ok(found)
}
