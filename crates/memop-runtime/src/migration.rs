//! Storage version migration: the last step before a version of a kind can be removed.
//!
//! The API server keeps every object in the version it was written in, and lists in a CRD's
//! `status.storedVersions` every version objects may still be stored in. A version listed there
//! cannot be removed from the CRD. Once the storage version of a kind changes (`memop create api
//! --storage-version`), the objects written before stay stored in the old version until they are
//! written again, so the old version stays in `storedVersions` for ever, unless someone rewrites
//! them all and prunes the list.
//!
//! [`StorageMigration`] does that in the manager, for the operator's own CRDs, once this replica
//! leads (registered as any controller is: [`StorageMigration::runnable`]):
//!
//! 1. it reads the CRD; when `status.storedVersions` is the storage version alone there is
//!    nothing to do (one GET per CRD at start-up);
//! 2. otherwise it creates a `StorageVersionMigration` (`storagemigration.k8s.io`, `v1` from
//!    Kubernetes 1.37, `v1beta1` in 1.35 and 1.36: it asks discovery which the server serves)
//!    for the kind's resource, named after the CRD, the storage version and the CRD's
//!    generation, so that every replica and every restart names the same one, and waits for
//!    kube-controller-manager's storage version migrator to report it `Succeeded`;
//! 3. where the server serves no migration API (before 1.35, or with the API disabled), or
//!    nothing processes the migration for two minutes (kube-controller-manager without its
//!    `storage-version-migrator-controller`), or the migration `Failed` (its name is fixed, so
//!    every later attempt would find it failed again), it says so and rewrites every object
//!    itself: an empty merge patch of each, guarded by its
//!    `resourceVersion`, which the API server stores in the storage version (the write the
//!    migrator makes; a conflict means the object was written meanwhile, so it is migrated);
//! 4. it prunes `status.storedVersions` to the storage version, guarded by the CRD's
//!    `resourceVersion` and only if the CRD's generation is still the one it migrated for
//!    (kube-controller-manager 1.37 prunes too when nothing changed: then there is nothing
//!    left to prune);
//! 5. it says so in a log line, an Event on the CRD and the `memop_storage_migrations_total`
//!    metric.
//!
//! Running it again does nothing: the CRD lists one stored version. The permissions it needs
//! are [`role_yaml`]'s, a ClusterRole of their own since CRDs and migrations are cluster-scoped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use kube::{Client, Resource as _, ResourceExt as _};
use serde_json::json;

use crate::controller::Recorder;
use crate::manager::Runnable;
use crate::shared::Shared;

/// The name of the migration task, in logs and readiness.
pub const NAME: &str = "storage-migration";
/// The API group of `StorageVersionMigration`.
pub(crate) const GROUP: &str = "storagemigration.k8s.io";
/// The versions of [`GROUP`] this module can use, in order of preference.
const VERSIONS: [&str; 2] = ["v1", "v1beta1"];
/// The field manager of the writes this module makes.
const FIELD_MANAGER: &str = "memop-storage-migration";
/// How often a migration's progress is read, by default.
const DEFAULT_POLL: Duration = Duration::from_secs(2);
/// How long to wait before trying again after a failure (an API error, a failed migration).
const RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long a `StorageVersionMigration` may stay without any condition before the manager
/// concludes that no migrator runs, and rewrites the objects itself.
const UNPROCESSED_LIMIT: Duration = Duration::from_secs(120);
/// How many objects the rewrite lists at once.
const PAGE: u32 = 500;

/// The migration of the stored objects of some CRDs to their storage version.
#[derive(Clone, Debug)]
pub struct StorageMigration {
    crds: Vec<String>,
    poll: Duration,
    retry_after: Duration,
    unprocessed_limit: Duration,
}

/// How the objects were migrated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// By kube-controller-manager, through the `StorageVersionMigration` of this name, in this
    /// version of `storagemigration.k8s.io`.
    StorageVersionMigration {
        /// The migration's name.
        name: String,
        /// `storagemigration.k8s.io/v1` or `/v1beta1`.
        api_version: String,
    },
    /// By the manager, which wrote each object again (the server serves no migration API,
    /// nothing processed the migration, or it failed).
    Rewrite {
        /// How many objects were written.
        objects: usize,
    },
}

impl Method {
    /// The value of the metric's `method` label.
    fn label(&self) -> &'static str {
        match self {
            Self::StorageVersionMigration { .. } => "storageversionmigration",
            Self::Rewrite { .. } => "rewrite",
        }
    }
}

/// What [`StorageMigration::migrate`] did for one CRD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The CRD listed only its storage version: nothing to do.
    UpToDate,
    /// The objects stored in `from` were migrated to `to`, and `storedVersions` is `[to]`.
    Migrated {
        /// The versions pruned from `storedVersions`.
        from: Vec<String>,
        /// The storage version.
        to: String,
        /// How.
        method: Method,
    },
}

/// Why one attempt stopped short; the caller tries again.
#[derive(Debug, thiserror::Error)]
enum Retry {
    /// The CRD changed under the migration (a new generation): start again.
    #[error("the CRD changed during the migration; starting again")]
    Changed,
}

impl StorageMigration {
    /// The migration of the CRDs named `crds` (`memcacheds.cache.example.com`).
    pub fn new<S: Into<String>>(crds: impl IntoIterator<Item = S>) -> Self {
        Self {
            crds: crds.into_iter().map(Into::into).collect(),
            poll: DEFAULT_POLL,
            retry_after: RETRY_AFTER,
            unprocessed_limit: UNPROCESSED_LIMIT,
        }
    }

    /// This migration, reading progress every `poll` (tests) and waiting as long after a
    /// failure before trying again.
    pub fn with_poll_interval(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self.retry_after = poll;
        self
    }

    /// What the manager runs once this replica leads, under the name [`NAME`]: register it as
    /// any controller, `manager.register(|shared| StorageMigration::new(crds).runnable(shared))`.
    /// The controllers do not wait for it, and readiness does not depend on it.
    pub fn runnable(self, shared: Shared) -> impl Runnable {
        let run = async move {
            shared.readiness.synced(NAME);
            self.run(&shared).await;
            Ok(())
        };
        (NAME, run)
    }

    /// Migrates every CRD, trying each again after a failure, until all are done or the
    /// manager shuts down (what [`StorageMigration::runnable`] runs).
    pub(crate) async fn run(&self, shared: &Shared) {
        for crd in &self.crds {
            loop {
                let attempt = tokio::select! {
                    () = shared.shutdown().wait() => return,
                    attempt = self.migrate(shared, crd) => attempt,
                };
                match attempt {
                    Ok(_) => break,
                    Err(err) => {
                        tracing::warn!(crd = %crd, error = format!("{err:#}"), retry_after = ?self.retry_after, "storage migration did not finish; trying again");
                        tokio::select! {
                            () = shared.shutdown().wait() => return,
                            () = tokio::time::sleep(self.retry_after) => {}
                        }
                    }
                }
            }
        }
    }

    /// Migrates the objects of CRD `name` to its storage version and prunes its
    /// `storedVersions`, once; see the module's documentation.
    ///
    /// # Errors
    ///
    /// The API server's, a failed migration, or a CRD that changed meanwhile: try again.
    pub async fn migrate(&self, shared: &Shared, name: &str) -> anyhow::Result<Outcome> {
        let client = shared.client();
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crd = crds
            .get(name)
            .await
            .with_context(|| format!("reading CustomResourceDefinition {name}"))?;
        let storage = storage_version(&crd)?;
        let stale = stale_versions(&crd, &storage);
        if stale.is_empty() {
            tracing::debug!(crd = name, version = %storage, "stored versions up to date");
            return Ok(Outcome::UpToDate);
        }
        let generation = crd.metadata.generation.unwrap_or_default();
        tracing::info!(crd = name, from = ?stale, to = %storage, "migrating stored objects to the storage version");
        let result = async {
            let method = self
                .migrate_objects(client, &crd, &storage, generation)
                .await?;
            prune(&crds, name, &storage, generation).await?;
            anyhow::Ok(method)
        }
        .await;
        record(shared, &crd, &stale, &storage, &result).await;
        let method = result?;
        tracing::info!(crd = name, from = ?stale, to = %storage, method = %describe(&method), "migrated stored objects; storedVersions pruned");
        Ok(Outcome::Migrated {
            from: stale,
            to: storage,
            method,
        })
    }

    /// Migrates the objects of `crd` to `storage`: through a `StorageVersionMigration` when
    /// the server serves the API and something processes it, else by writing each object again.
    async fn migrate_objects(
        &self,
        client: &Client,
        crd: &CustomResourceDefinition,
        storage: &str,
        generation: i64,
    ) -> anyhow::Result<Method> {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        let migrated = match migration_api(client).await? {
            Some(api_version) => self
                .through_migration(client, crd, storage, generation, &api_version)
                .await?
                .map(|name| Method::StorageVersionMigration { name, api_version }),
            None => {
                tracing::info!(
                    crd = name,
                    "the API server serves no {GROUP} API (Kubernetes before 1.35, or the API disabled): rewriting every object in the storage version"
                );
                None
            }
        };
        Ok(match migrated {
            Some(method) => method,
            None => Method::Rewrite {
                objects: rewrite(client, crd, storage).await?,
            },
        })
    }

    /// Creates (or finds) the `StorageVersionMigration` of this CRD, storage version and
    /// generation, and waits until it succeeded. Returns its name; `None` when nothing
    /// processed it within the time limit (no storage version migrator runs).
    async fn through_migration(
        &self,
        client: &Client,
        crd: &CustomResourceDefinition,
        storage: &str,
        generation: i64,
        api_version: &str,
    ) -> anyhow::Result<Option<String>> {
        let crd_name = crd.metadata.name.as_deref().unwrap_or_default();
        let name = migration_name(crd_name, storage, generation);
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let resource = ApiResource {
            group: GROUP.into(),
            version: version.into(),
            api_version: api_version.into(),
            kind: "StorageVersionMigration".into(),
            plural: "storageversionmigrations".into(),
        };
        let migrations: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        create_migration(&migrations, &name, crd, api_version).await?;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let waiting = std::time::Instant::now();
        loop {
            let current = migrations
                .get(&name)
                .await
                .with_context(|| format!("reading StorageVersionMigration {name}"))?;
            if let Some(condition) = true_condition(&current, "Succeeded") {
                tracing::debug!(migration = %name, message = %condition, "migration succeeded");
                return Ok(Some(name));
            }
            if let Some(message) = true_condition(&current, "Failed") {
                // Its name is fixed by the CRD, the storage version and the generation: every
                // later attempt would find it Failed again, for ever. The rewrite is what the
                // migrator would have done.
                tracing::warn!(migration = %name, %message, "StorageVersionMigration failed; rewriting every object instead");
                return Ok(None);
            }
            // kube-controller-manager's migrator sets a condition within seconds; a migration
            // that has none for minutes is one that nothing runs (the API served, but the
            // controller not in kube-controller-manager's --controllers).
            if current.data["status"]["conditions"]
                .as_array()
                .is_none_or(Vec::is_empty)
                && waiting.elapsed() > self.unprocessed_limit
            {
                tracing::warn!(migration = %name, waited = ?self.unprocessed_limit, "nothing processed the StorageVersionMigration: kube-controller-manager runs no storage-version-migrator-controller; rewriting every object instead");
                return Ok(None);
            }
            // A CRD that changed meanwhile (its storage version again, say) needs a migration
            // of its own: this one's success would not prove the new generation's objects.
            let now = crds.get(crd_name).await?;
            if now.metadata.generation.unwrap_or_default() != generation {
                return Err(Retry::Changed.into());
            }
            tokio::time::sleep(self.poll).await;
        }
    }
}

/// Creates the `StorageVersionMigration` `name` of `crd`, in `api_version`, or finds it made
/// (by another replica, or an earlier run of this one).
async fn create_migration(
    migrations: &Api<DynamicObject>,
    name: &str,
    crd: &CustomResourceDefinition,
    api_version: &str,
) -> anyhow::Result<()> {
    let migration: DynamicObject = serde_json::from_value(json!({
        "apiVersion": api_version,
        "kind": "StorageVersionMigration",
        "metadata": { "name": name },
        "spec": { "resource": { "group": crd.spec.group, "resource": crd.spec.names.plural } },
    }))?;
    match migrations
        .create(
            &PostParams {
                dry_run: false,
                field_manager: Some(FIELD_MANAGER.into()),
            },
            &migration,
        )
        .await
    {
        Ok(_) => tracing::info!(migration = %name, "created StorageVersionMigration"),
        // Another replica, or an earlier run of this one, made it: wait for the same one.
        Err(kube::Error::Api(status)) if status.code == 409 => {
            tracing::info!(migration = %name, "StorageVersionMigration exists; waiting for it");
        }
        Err(err) => {
            return Err(err).with_context(|| format!("creating StorageVersionMigration {name}"));
        }
    }
    Ok(())
}

/// Records what the migration of `crd` from `stale` to `storage` came to: the metric and an
/// Event on the CRD.
async fn record(
    shared: &Shared,
    crd: &CustomResourceDefinition,
    stale: &[String],
    storage: &str,
    result: &anyhow::Result<Method>,
) {
    let name = crd.metadata.name.as_deref().unwrap_or_default();
    let client = shared.client();
    let (ok, method_label) = match result {
        Ok(method) => (true, method.label()),
        Err(_) => (false, "unknown"),
    };
    shared.metrics().storage_migration(name, method_label, ok);
    let note = match result {
        Ok(method) => format!(
            "Migrated the objects stored in {} to {storage} ({}) and pruned status.storedVersions to [{storage}]",
            stale.join(", "),
            describe(method)
        ),
        Err(err) => format!(
            "Migrating the objects stored in {} to {storage} failed: {err:#}",
            stale.join(", ")
        ),
    };
    let event = Event {
        type_: if ok {
            EventType::Normal
        } else {
            EventType::Warning
        },
        reason: if ok {
            "StorageMigrated"
        } else {
            "StorageMigrationFailed"
        }
        .into(),
        note: Some(note),
        action: "MigrateStorage".into(),
        secondary: None,
    };
    let recorder = Recorder::new(client.clone(), shared.reporter().clone());
    if let Err(err) = recorder.publish(&event, &crd.object_ref(&())).await {
        tracing::warn!(crd = name, error = %err, "cannot record the migration's event");
    }
}

/// The name of the `StorageVersionMigration` of CRD `crd` to `storage` at `generation`: the
/// same for every replica and run, and new when the CRD changes.
fn migration_name(crd: &str, storage: &str, generation: i64) -> String {
    let suffix = format!("-{storage}-{generation}");
    // A DNS subdomain name: at most 253 characters, ending alphanumeric.
    let room = 253 - suffix.len();
    let prefix = crd
        .get(..room.min(crd.len()))
        .unwrap_or(crd)
        .trim_end_matches(['.', '-']);
    format!("{prefix}{suffix}")
}

/// The version the CRD stores objects in.
fn storage_version(crd: &CustomResourceDefinition) -> anyhow::Result<String> {
    crd.spec
        .versions
        .iter()
        .find(|version| version.storage)
        .map(|version| version.name.clone())
        .context("the CRD has no storage version")
}

/// The versions `storedVersions` lists besides `storage`.
fn stale_versions(crd: &CustomResourceDefinition, storage: &str) -> Vec<String> {
    crd.status
        .as_ref()
        .and_then(|status| status.stored_versions.as_ref())
        .into_iter()
        .flatten()
        .filter(|version| *version != storage)
        .cloned()
        .collect()
}

/// The version of [`GROUP`] the server serves, preferred first; `None` when it serves none.
async fn migration_api(client: &Client) -> anyhow::Result<Option<String>> {
    let groups = match client.list_api_groups().await {
        Ok(groups) => groups,
        // A server without discovery (the test suite's in-memory one) serves no migrations.
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
        Err(err) => return Err(err).context("discovering the API groups"),
    };
    let served: Vec<String> = groups
        .groups
        .iter()
        .filter(|group| group.name == GROUP)
        .flat_map(|group| group.versions.iter().map(|v| v.version.clone()))
        .collect();
    Ok(VERSIONS
        .iter()
        .find(|version| served.iter().any(|served| served == *version))
        .map(|version| format!("{GROUP}/{version}")))
}

/// Writes every object of the CRD's kind again, unchanged, so that the API server stores it in
/// `storage`. Returns how many it wrote.
async fn rewrite(
    client: &Client,
    crd: &CustomResourceDefinition,
    storage: &str,
) -> anyhow::Result<usize> {
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: storage.into(),
        api_version: format!("{}/{storage}", crd.spec.group),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    };
    let namespaced = crd.spec.scope == "Namespaced";
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut written = 0;
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = match all.list_metadata(&params).await {
            Ok(page) => page,
            // The list outlived its continue token (etcd compacted the revision it began at:
            // after 5 minutes by default, some 60,000 rewrites in). The API server's 410 holds
            // a token that resumes it where it stopped, at the current revision; go on with it,
            // as kube-storage-version-migrator does, instead of starting over (and expiring
            // again). What that list may bring twice or leave out was written since the list
            // began, so it is stored in the storage version already.
            Err(kube::Error::Api(status)) if status.code == 410 => {
                let resume = (status.metadata.as_ref())
                    .and_then(|metadata| metadata.continue_.clone())
                    .filter(|token| !token.is_empty());
                let Some(token) = resume else {
                    return Err(kube::Error::Api(status)).context("listing the objects to rewrite");
                };
                tracing::info!(
                    crd = %crd.name_any(),
                    written,
                    "the rewrite's list expired; resuming it where it stopped"
                );
                params = params.continue_token(&token);
                continue;
            }
            Err(err) => return Err(err).context("listing the objects to rewrite"),
        };
        for object in &page.items {
            let name = object.metadata.name.as_deref().unwrap_or_default();
            let api: Api<DynamicObject> = match (namespaced, object.metadata.namespace.as_deref()) {
                (true, Some(namespace)) => {
                    Api::namespaced_with(client.clone(), namespace, &resource)
                }
                _ => Api::all_with(client.clone(), &resource),
            };
            // The write kube-controller-manager's migrator makes: nothing changes but the
            // version the object is stored in, and only if nobody wrote it since it was listed.
            let patch = json!({
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                "metadata": { "resourceVersion": object.metadata.resource_version },
            });
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PatchParams::default()
            };
            match api.patch(name, &params, &Patch::Merge(&patch)).await {
                Ok(_) => written += 1,
                // Written since (so stored in the storage version now) or deleted: done.
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {}
                Err(err) => {
                    return Err(err).with_context(|| format!("rewriting {} {name}", resource.kind));
                }
            }
        }
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(written),
        }
    }
}

/// Sets the CRD's `storedVersions` to `[storage]`, unless it changed since `generation`.
async fn prune(
    crds: &Api<CustomResourceDefinition>,
    name: &str,
    storage: &str,
    generation: i64,
) -> anyhow::Result<()> {
    // The resourceVersion makes the write conditional. A conflict is another write of the CRD
    // meanwhile (the API server's own status conditions, or kube-controller-manager 1.37
    // pruning them after its migration): read it and look again, a few times.
    const ATTEMPTS: u32 = 5;
    let mut attempt = 1;
    loop {
        let crd = crds.get(name).await?;
        if crd.metadata.generation.unwrap_or_default() != generation {
            return Err(Retry::Changed.into());
        }
        if stale_versions(&crd, storage).is_empty() {
            tracing::debug!(crd = name, "storedVersions already pruned");
            return Ok(());
        }
        let patch = json!({
            "metadata": { "resourceVersion": crd.metadata.resource_version },
            "status": { "storedVersions": [storage] },
        });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match crds
            .patch_status(name, &params, &Patch::Merge(&patch))
            .await
        {
            Err(kube::Error::Api(status)) if status.is_conflict() && attempt < ATTEMPTS => {
                tracing::debug!(crd = name, "the CRD changed while pruning; looking again");
                attempt += 1;
            }
            result => {
                result.with_context(|| format!("pruning status.storedVersions of {name}"))?;
                return Ok(());
            }
        }
    }
}

/// The message of the object's condition `type_` when it is `True`.
fn true_condition(object: &DynamicObject, type_: &str) -> Option<String> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == type_ && condition["status"] == "True")
        .map(|condition| condition["message"].as_str().unwrap_or_default().to_owned())
}

/// How `method` migrated, for a log line or an event.
fn describe(method: &Method) -> String {
    match method {
        Method::StorageVersionMigration { name, api_version } => {
            format!("StorageVersionMigration {name}, {api_version}")
        }
        Method::Rewrite { objects } => {
            format!("rewrote {objects} objects: no {GROUP} migration could migrate them")
        }
    }
}

/// `config/rbac/storage_migration_role.yaml`: the ClusterRole `storage-migration-role` of
/// exactly what [`StorageMigration`] does for the CRDs named `crds` (`<plural>.<group>`):
/// read them and prune their status, by name; create and read migrations; list and rewrite
/// their objects where the server has no migrations; record its events. A ClusterRole in every
/// project, a namespaced one's included: CRDs and migrations are cluster-scoped.
pub fn role_yaml(crds: &[&str]) -> String {
    let mut names: Vec<&str> = crds.to_vec();
    names.sort_unstable();
    names.dedup();
    let mut yaml = String::from(
        "# Generated by `make manifests` from the CRDs of src/api: do not edit.\n\
         ---\n\
         apiVersion: rbac.authorization.k8s.io/v1\n\
         kind: ClusterRole\n\
         metadata:\n  name: storage-migration-role\n",
    );
    if names.is_empty() {
        yaml.push_str("rules: []\n");
        return yaml;
    }
    yaml.push_str("rules:\n");
    let mut rule = |group: &str, resources: &[&str], names: &[&str], verbs: &[&str]| {
        let _ = writeln!(yaml, "- apiGroups:\n  - {group}");
        if !names.is_empty() {
            let _ = writeln!(yaml, "  resourceNames:");
            for name in names {
                let _ = writeln!(yaml, "  - {name}");
            }
        }
        let _ = writeln!(yaml, "  resources:");
        for resource in resources {
            let _ = writeln!(yaml, "  - {resource}");
        }
        let _ = writeln!(yaml, "  verbs:");
        for verb in verbs {
            let _ = writeln!(yaml, "  - {verb}");
        }
    };
    rule(
        "apiextensions.k8s.io",
        &["customresourcedefinitions"],
        &names,
        &["get"],
    );
    rule(
        "apiextensions.k8s.io",
        &["customresourcedefinitions/status"],
        &names,
        &["patch"],
    );
    // The fallback rewrite: each kind's objects, grouped by API group.
    let mut by_group: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for name in &names {
        if let Some((plural, group)) = name.split_once('.') {
            by_group.entry(group).or_default().push(plural);
        }
    }
    for (group, plurals) in &by_group {
        rule(group, plurals, &[], &["list", "patch"]);
    }
    rule("events.k8s.io", &["events"], &[], &["create", "patch"]);
    rule(
        GROUP,
        &["storageversionmigrations"],
        &[],
        &["create", "get"],
    );
    yaml
}
