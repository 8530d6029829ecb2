//! What replay needs beyond the commands PROJECT lists, read once out of the files of a project
//! whose PROJECT an earlier memop wrote without it: the version each kind served in several is
//! stored in (`STORAGE_VERSIONS`). Once recorded, PROJECT is the truth: a file the user edits
//! since changes nothing memop replays (but a `STORAGE_VERSIONS` that disagrees with PROJECT is
//! refused, see [`refuse_storage_disagreement`]).

use std::path::Path;

use anyhow::{Result, bail};

use crate::project::Project;
use crate::resource::ApiNames;
use crate::scaffold::Plan;

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
/// an older memop left out, read once from the code's `STORAGE_VERSIONS` as `plan` sees it.
pub fn record(project: &mut Project, plan: &Plan) -> Result<()> {
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
