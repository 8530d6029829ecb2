//! What replay needs beyond the commands PROJECT lists, read once out of the files of a project
//! whose PROJECT an earlier memop wrote without it: the version each kind served in several is
//! stored in (`STORAGE_VERSIONS`), the year each command wrote its files in (their license
//! headers), and the order the controllers and webhooks were made in (the lines of
//! `src/controller/mod.rs` and `src/webhook/mod.rs`). Once recorded, PROJECT is the truth: a
//! file the user edits since changes nothing memop replays (but a `STORAGE_VERSIONS` that
//! disagrees with PROJECT is refused, see [`refuse_storage_disagreement`]).

use std::path::Path;

use anyhow::{Result, bail};

use crate::project::Project;
use crate::resource::ApiNames;
use crate::scaffold::Plan;

/// The file that lists the controllers' modules, in the order they were made.
const CONTROLLER_MODULES: &str = "src/controller/mod.rs";

/// The file whose routes and conversions list the kinds' webhooks in the order they were made.
const WEBHOOK_SERVER: &str = "src/webhook/mod.rs";

/// Records in `project` what replay reads and an earlier memop's PROJECT left out, from the
/// project's files as `plan` sees them: the storage version of each kind served in several
/// versions (see [`record_storage_versions`]); and, when PROJECT has no
/// `year`, the years and orders. A file that says nothing (no license header, a line the user
/// removed) gives PROJECT's default: the project's year, PROJECT's order.
pub fn record(project: &mut Project, plan: &Plan) -> Result<()> {
    record_storage_versions(project, plan)?;
    if project.year.is_some() {
        return Ok(());
    }
    let now = crate::clock::current_year();
    let year_of =
        |path: &str| -> Result<Option<i64>> { Ok(plan.read(Path::new(path))?.as_deref().and_then(copyright_year)) };
    let year = match year_of("src/main.rs")? {
        Some(year) => year,
        None => year_of("src/lib.rs")?.unwrap_or(now),
    };
    project.year = Some(year);
    for at in 0..project.resources.len() {
        let resource = &project.resources[at];
        let names = &resource.names;
        // The first file of the kind's `create api`: its types, or its controller.
        let made = match resource.api.is_some() {
            true => year_of(&names.types_path())?,
            false => year_of(&names.controller_path())?,
        };
        let mut controller_years = std::collections::BTreeMap::new();
        for name in &resource.controllers {
            if let Some(made) = year_of(&format!("src/controller/{}.rs", name.replace('-', "_")))? {
                controller_years.insert(name.clone(), made);
            }
        }
        let admission = match resource.admits() {
            true => year_of(&names.webhook_path())?,
            false => None,
        };
        // A spoke's conversion, which the hub's `create webhook --conversion` made.
        let conversion = match resource.webhooks.as_ref().filter(|w| w.conversion).and_then(|w| w.spoke.first()) {
            Some(spoke) => year_of(&names.in_version(crate::names::Version::parse(spoke)?).conversion_path())?,
            None => None,
        };
        let differs = |made: Option<i64>| made.and_then(|made| project.year_unless_the_projects(made));
        let (made, admission, conversion) = (differs(made), differs(admission), differs(conversion));
        let controller_years = (controller_years.into_iter())
            .filter_map(|(name, y)| Some((name, project.year_unless_the_projects(y)?)))
            .collect();
        let resource = &mut project.resources[at];
        resource.year = made;
        resource.controller_years = controller_years;
        if let Some(w) = resource.webhooks.as_mut() {
            w.year = admission;
            w.conversion_year = conversion;
        }
    }
    let modules = plan.read(Path::new(CONTROLLER_MODULES))?.unwrap_or_default();
    let mut controllers = project.controller_order();
    controllers.sort_by_key(|module| position(&modules, &format!("pub mod {module};")));
    project.set_controller_order(controllers);
    let server = plan.read(Path::new(WEBHOOK_SERVER))?.unwrap_or_default();
    let (admission, conversion) = webhook_orders(project, &server);
    project.set_webhook_order(admission, false);
    project.set_webhook_order(conversion, true);
    Ok(())
}

/// The file whose `STORAGE_VERSIONS` says which version of each kind the code stores.
const STORAGE_TABLE: &str = "src/api/mod.rs";

/// The version of `api`'s kind that the code stores, as `STORAGE_VERSIONS` in src/api/mod.rs
/// (the user's to change) lists it: one entry per CRD, written by the keyed fragment
/// `resource/src/api/mod.rs@storage-versions.tera`; `None` when it has no entry (a kind served
/// in one version) or the file is gone.
fn code_storage_version(plan: &Plan, api: &ApiNames) -> Result<Option<String>> {
    let text = plan.read(Path::new(STORAGE_TABLE))?.unwrap_or_default();
    let entry_start = format!("(\"{}\", \"", api.crd_name());
    let recorded = text.lines().find_map(|line| line.trim().strip_prefix(&entry_start)?.split('"').next());
    Ok(recorded.map(str::to_string))
}

/// Records in `project` the storage version of each kind with several versions that a PROJECT of
/// an older memop left out, read once from the code's `STORAGE_VERSIONS`.
pub fn record_storage_versions(project: &mut Project, plan: &Plan) -> Result<()> {
    let unrecorded: Vec<ApiNames> = project
        .resources
        .iter()
        .filter(|r| r.api.is_some() && project.other_versions(&r.names).next().is_some())
        .filter(|r| project.storage_version(&r.names).is_none())
        .map(|r| r.names.clone())
        .collect();
    for api in unrecorded {
        if let Some(version) = code_storage_version(plan, &api)? {
            project.set_storage_version(&api, Some(&version));
        }
    }
    Ok(())
}

/// Refuses to go on when the code stores `api`'s kind in another version than PROJECT records:
/// what memop would do depends on which one is right, and only the user knows.
pub fn refuse_storage_disagreement(project: &Project, plan: &Plan, api: &ApiNames) -> Result<()> {
    let (Some(recorded), Some(code)) = (project.storage_version(api), code_storage_version(plan, api)?) else {
        return Ok(());
    };
    if recorded != code {
        bail!(
            "PROJECT records storageVersion {recorded} for {kind}, but {STORAGE_TABLE} stores it as {code} \
             (its entry of STORAGE_VERSIONS); memop cannot tell which is right. If the code stores the kind \
             as you want, set `storageVersion: {code}` in each of {kind}'s entries in PROJECT; else change the \
             entry of STORAGE_VERSIONS back to {recorded}. Then run this command again",
            kind = api.kind
        );
    }
    Ok(())
}

/// The year of a license header (`// Copyright 2026 …` in the first lines), if the text has one.
fn copyright_year(text: &str) -> Option<i64> {
    let line = text.lines().take(3).find_map(|line| line.strip_prefix("// Copyright "))?;
    let year = line.split(' ').next()?;
    (year.len() == 4 && year.bytes().all(|b| b.is_ascii_digit())).then(|| year.parse().ok()).flatten()
}

/// The kinds with admission webhooks and those with a conversion webhook (`group/version Kind`),
/// each in the order the project's [`WEBHOOK_SERVER`] (`server`) lists them: the kinds'
/// admission webhooks in the order of their routes there, their conversion webhooks in the order
/// of their conversions. Each `create webhook` adds its kind's lines at the server's markers, so
/// that is the order they were made in; a kind the server does not name (an edited server) comes
/// after those it names, in PROJECT's order.
fn webhook_orders(project: &Project, server: &str) -> (Vec<String>, Vec<String>) {
    let mut admission: Vec<_> = project.resources.iter().filter(|r| r.admits()).collect();
    admission.sort_by_key(|r| position(server, &format!("{}::routes()", r.names.kind.snake())));
    let mut conversion: Vec<_> = project.resources.iter().filter(|r| r.converts()).collect();
    // The hub's type is the first of its conversions' (`Conversion::between::<Hub, Spoke>`).
    conversion.sort_by_key(|r| {
        let api = &r.names;
        position(server, &format!("crate::api::{}::{}::{},", api.group_module(), api.version, api.kind))
    });
    let shown = |rs: Vec<&crate::project::Resource>| rs.into_iter().map(|r| r.describe()).collect();
    (shown(admission), shown(conversion))
}

/// Where `text` first names `path` (not as the tail of a longer path), or after every place
/// it could.
fn position(text: &str, path: &str) -> usize {
    text.match_indices(path)
        .map(|(at, _)| at)
        .find(|&at| !text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::{Resource, Webhooks};

    /// The webhooks are made in the order the server lists them, not PROJECT's: CronJob's
    /// admission webhook was made before Memcached's, and its conversion after every admission
    /// webhook, as a command of its own.
    #[test]
    fn webhooks_are_read_in_the_order_the_server_lists_them() {
        let resource = |group: &str, version: &str, kind: &str, webhooks: Option<Webhooks>| Resource {
            names: crate::resource::ApiNames::parse(group, version, kind, None, "example.com").unwrap(),
            api: Some(crate::project::Api { crd_version: "v1".into(), namespaced: true }),
            controller: false,
            operand: None,
            webhooks,
            controllers: Vec::new(),
            storage_version: None,
            year: None,
            controller_years: Default::default(),
        };
        let text = "cliVersion: 0.2.0\ncrateName: p\ndomain: example.com\nlayout:\n- memop.rs/rust/v2\nlicense: \
                    apache2\nprojectName: p\nversion: '3'\n";
        let mut project = Project::parse(text).unwrap();
        project.resources = vec![
            resource("cache", "v1alpha1", "Memcached", Some(Webhooks { defaulting: true, ..Webhooks::default() })),
            resource(
                "batch",
                "v1",
                "CronJob",
                Some(Webhooks { conversion: true, validation: true, spoke: vec!["v2".into()], ..Webhooks::default() }),
            ),
            resource("batch", "v2", "CronJob", None),
        ];
        let server = "let router = Router::new().route(CONVERT_PATH, converting(conversions()));\n\
                      let router = router.merge(cron_job::routes());\n\
                      let router = router.merge(memcached::routes());\n\
                      Conversion::between::<crate::api::batch::v1::CronJob, crate::api::batch::v2::CronJob>(),\n";
        let (admission, conversion) = webhook_orders(&project, server);
        assert_eq!(admission, ["batch/v1 CronJob", "cache/v1alpha1 Memcached"]);
        assert_eq!(conversion, ["batch/v1 CronJob"]);
        project.set_webhook_order(admission, false);
        assert_eq!(project.webhook_order, ["batch/v1 CronJob", "cache/v1alpha1 Memcached"], "not PROJECT's");
        // A server that names none of them: PROJECT's order, which PROJECT leaves implicit.
        let (admission, _) = webhook_orders(&project, "");
        project.set_webhook_order(admission, false);
        assert!(project.webhook_order.is_empty());
        // `job::routes()` is not the tail of `cron_job::routes()`.
        assert_eq!(position(server, "job::routes()"), usize::MAX);
    }

    #[test]
    fn a_license_header_gives_its_year() {
        assert_eq!(copyright_year("// Copyright 2024 The p Authors.\n//\n"), Some(2024));
        assert_eq!(copyright_year("//! no header\n"), None);
    }
}
