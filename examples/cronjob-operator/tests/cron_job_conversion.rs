// Copyright 2026 The cronjob-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! The conversion webhook of CronJob called by a real kube-apiserver over TLS (skipped
//! without `KUBEBUILDER_ASSETS`): the webhook server runs here with a certificate of a test
//! CA, and the CRD of CronJob is pointed at it, as `config/crd/patches` points it at the
//! manager in a cluster. An object written in one version is read back in the other, converted
//! by the `From` impls of `src/api/batch/<spoke>/cron_job_conversion.rs`.
//! Then the last step before a version can go (`memop delete api`): objects stored in an older
//! version are migrated to the storage version by the operator's own storage migration (the one
//! `src/main.rs` runs once the manager leads), and the CRD's `storedVersions` pruned.
//!
//! Both tests point the CRD's conversion at a webhook server of their own, so they take turns.
//! The in-memory server has no versions to convert between, so nothing here runs on it; the
//! migration's fallback (a rewrite of every object) is tested in memory by memop-runtime.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::json;
// The versions by their paths only, so that no kind can clash with the names imported here.
use cronjob_operator::api::batch::v1 as hub;
use cronjob_operator::api::batch::v2;
use cronjob_operator::{OPERATOR, api, webhook};
use memop_runtime::manager::{Shared, Shutdown};
use memop_runtime::migration::{Outcome, StorageMigration};
use memop_test::TestEnv;
use memop_test::https::serve_with_test_ca;

/// The CRD of CronJob is the test binary's own, and each test points its conversion at a
/// webhook server of its own: one test at a time.
static CRD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// The CRD's name.
const CRD_NAME: &str = "cronjobs.batch.tutorial.kubebuilder.io";

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_api_server_converts_between_versions_through_the_webhook() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _turn = CRD.lock().await;
    let (shutdown, conversions) = serve_conversions(&env).await;
    let hub_objects = objects::<hub::CronJob>(&env);

    // Written as v2, read as the hub v1.
    let written = objects::<v2::CronJob>(&env)
        .create(&PostParams::default(), &sample(&env, "v2", "v2-to-hub"))
        .await
        .unwrap();
    let read = hub_objects.get(&written.name_any()).await.unwrap();
    assert_eq!(read.spec, hub::CronJob::from(written).spec);
    // The book's v2 sample: `minute: "*/1"`.
    assert_eq!(read.spec.schedule, "*/1 * * * *");

    // Written as the hub, read as v2.
    let written = hub_objects
        .create(&PostParams::default(), &sample(&env, "v1", "hub-to-v2"))
        .await
        .unwrap();
    let read = objects::<v2::CronJob>(&env)
        .get(&written.name_any())
        .await
        .unwrap();
    assert_eq!(read.spec, v2::CronJob::from(written).spec);
    let schedule = &read.spec.schedule;
    assert_eq!(schedule.minute.as_deref(), Some("*/1"));
    assert_eq!((&schedule.hour, &schedule.day_of_week), (&None, &None));

    // A schedule v2's fields do not spell, written back through v2 unchanged, is v1's still.
    let mut hourly = sample::<hub::CronJob>(&env, "v1", "hourly");
    hourly.spec.schedule = "@hourly".into();
    hub_objects
        .create(&PostParams::default(), &hourly)
        .await
        .unwrap();
    let v2_objects = objects::<v2::CronJob>(&env);
    let mut read = v2_objects.get(&hourly.name_any()).await.unwrap();
    assert_eq!(read.spec.schedule.minute.as_deref(), Some("0"));
    read.labels_mut()
        .insert("edited".into(), "through-v2".into());
    v2_objects
        .replace(&hourly.name_any(), &PostParams::default(), &read)
        .await
        .unwrap();
    let stored = hub_objects.get(&hourly.name_any()).await.unwrap();
    assert_eq!(stored.spec.schedule, "@hourly");
    assert_eq!(stored.labels()["edited"], "through-v2");
    assert!(
        conversions.load(Ordering::SeqCst) > 0,
        "the API server converted without calling the webhook"
    );
    shutdown.trigger();
}

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_operator_migrates_objects_stored_in_an_older_version() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _turn = CRD.lock().await;
    let (shutdown, _) = serve_conversions(&env).await;
    let crds = Api::<CustomResourceDefinition>::all(env.admin.clone());
    let installed = crds.get(CRD_NAME).await.unwrap().spec.versions;

    // Objects written while v2 was the storage version stay stored in it.
    store_in(&crds, "v2").await;
    let mut written = Vec::new();
    for i in 0..3 {
        let object = sample::<v2::CronJob>(&env, "v2", &format!("stored-{i}"));
        written.push(
            objects::<v2::CronJob>(&env)
                .create(&PostParams::default(), &object)
                .await
                .unwrap(),
        );
    }
    store_in(&crds, "v1").await;
    let stored = stored_versions(&crds).await;
    assert!(
        stored.len() == 2 && stored.contains(&"v2".into()),
        "{stored:?}"
    );

    // The operator's migration, as its ServiceAccount with the role of
    // config/rbac/storage_migration_role.yaml: kube-controller-manager's storage version
    // migrator rewrites the objects, calling the conversion webhook, and the operator prunes.
    assert!(api::crd_names().iter().any(|name| name == CRD_NAME));
    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let migration =
        StorageMigration::new(api::crd_names()).with_poll_interval(Duration::from_millis(300));
    // As the manager does, a run that did not finish is tried again: its last step, pruning
    // `storedVersions`, fails with a conflict when kube-controller-manager's migrator or the API
    // server wrote the CRD meanwhile; the next finds the objects migrated (up to date).
    let (outcome, retried) = tokio::time::timeout(Duration::from_secs(180), async {
        let mut retried = false;
        loop {
            match migration.migrate(&shared, CRD_NAME).await {
                Ok(outcome) => break (outcome, retried),
                Err(error) => eprintln!("the migration did not finish, trying again: {error:#}"),
            }
            retried = true;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    })
    .await
    .expect("the migration finishes within 3 minutes");
    match outcome {
        Outcome::Migrated { from, to, .. } => {
            assert_eq!((from, to), (vec!["v2".to_string()], "v1".to_string()));
        }
        Outcome::UpToDate if retried => {}
        outcome => panic!("nothing migrated: {outcome:?}"),
    }
    assert_eq!(stored_versions(&crds).await, ["v1"]);

    // v2 can go now (the API server refuses while `storedVersions` lists it), and
    // every object still reads in v1, every field kept.
    change_versions(&crds, |versions| versions.retain(|v| v.name != "v2")).await;
    for object in written {
        let read = objects::<hub::CronJob>(&env)
            .get(&object.name_any())
            .await
            .unwrap();
        assert_eq!(read.spec, hub::CronJob::from(object).spec);
    }
    // A second run finds nothing to do.
    assert_eq!(
        migration.migrate(&shared, CRD_NAME).await.unwrap(),
        Outcome::UpToDate
    );

    // The versions as installed, for the other test.
    change_versions(&crds, |versions| *versions = installed.clone()).await;
    shutdown.trigger();
}

/// The book gives v2 admission webhooks of its own; memop gives a kind's in one version, and the
/// API server sends v1's every version's objects converted to v1: a v2 CronJob gets the defaults,
/// and an unparseable v2 schedule is refused as v1 spells it.
#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn v2_cronjobs_are_defaulted_and_validated_by_v1s_webhooks() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _turn = CRD.lock().await;
    let (shutdown, _, port, ca) = serve_webhooks(&env).await;
    let names = [
        format!("{}-mutating", env.namespace),
        format!("{}-validating", env.namespace),
    ];
    let (mut mutating, mut validating) = memop_runtime::webhook::configurations(
        &webhook::webhooks(),
        [&names[0], &names[1]],
        |hook: &webhook::Webhook| WebhookClientConfig {
            url: Some(format!("https://localhost:{port}{}", hook.path)),
            ca_bundle: Some(k8s_openapi::ByteString(ca.as_bytes().to_vec())),
            service: None,
        },
    );
    // Only for the test's namespace.
    let selector = LabelSelector {
        match_labels: Some([("kubernetes.io/metadata.name".into(), env.namespace.clone())].into()),
        ..LabelSelector::default()
    };
    for hook in mutating.webhooks.iter_mut().flatten() {
        hook.namespace_selector = Some(selector.clone());
    }
    for hook in validating.webhooks.iter_mut().flatten() {
        hook.namespace_selector = Some(selector.clone());
    }
    let mutating_api = Api::<MutatingWebhookConfiguration>::all(env.admin.clone());
    let validating_api = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone());
    mutating_api
        .create(&PostParams::default(), &mutating)
        .await
        .unwrap();
    validating_api
        .create(&PostParams::default(), &validating)
        .await
        .unwrap();

    let v2_objects = objects::<v2::CronJob>(&env);
    let bare = |name: &str, minute: &str| {
        let mut object = sample::<v2::CronJob>(&env, "v2", name);
        object.spec.schedule.minute = Some(minute.into());
        object.spec.concurrency_policy = None;
        object.spec.suspend = None;
        object.spec.successful_jobs_history_limit = None;
        object.spec.failed_jobs_history_limit = None;
        object
    };
    // The API server loads new webhook configurations asynchronously.
    let mut created = None;
    for attempt in 0..100 {
        let object = v2_objects
            .create(
                &PostParams::default(),
                &bare(&format!("defaulted-{attempt}"), "5"),
            )
            .await
            .unwrap();
        if object.spec.successful_jobs_history_limit.is_some() {
            created = Some(object);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let created = created.expect("the API server calls the defaulting webhook");
    assert_eq!(created.spec.schedule.minute.as_deref(), Some("5"));
    assert_eq!(created.spec.suspend, Some(false));
    assert_eq!(created.spec.successful_jobs_history_limit, Some(3));
    assert_eq!(created.spec.failed_jobs_history_limit, Some(1));

    let refused = v2_objects
        .create(&PostParams::default(), &bare("refused", "61"))
        .await
        .expect_err("an unparseable v2 schedule is refused")
        .to_string();
    assert!(
        refused.contains(r#"spec.schedule: Invalid value: "61 * * * *""#),
        "{refused}"
    );

    let _ = mutating_api.delete(&names[0], &Default::default()).await;
    let _ = validating_api.delete(&names[1], &Default::default()).await;
    shutdown.trigger();
}

/// Makes `version` the CRD's storage version.
async fn store_in(crds: &Api<CustomResourceDefinition>, version: &str) {
    change_versions(crds, |versions| {
        for served in versions {
            served.storage = served.name == version;
        }
    })
    .await;
}

/// Changes the CRD's versions with `change`, reading it again when it was written meanwhile
/// (the API server's controllers and kube-controller-manager write it too).
async fn change_versions(
    crds: &Api<CustomResourceDefinition>,
    change: impl Fn(&mut Vec<CustomResourceDefinitionVersion>),
) {
    for _ in 0..20 {
        let mut crd = crds.get(CRD_NAME).await.unwrap();
        change(&mut crd.spec.versions);
        match crds.replace(CRD_NAME, &PostParams::default(), &crd).await {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("changing the versions of {CRD_NAME}: {error}"),
        }
    }
    panic!("changing the versions of {CRD_NAME}: a conflict each time");
}

/// The versions the CRD's objects may be stored in, as the API server lists them.
async fn stored_versions(crds: &Api<CustomResourceDefinition>) -> Vec<String> {
    let crd = crds.get(CRD_NAME).await.unwrap();
    crd.status
        .and_then(|status| status.stored_versions)
        .unwrap_or_default()
}

/// Serves the project's webhooks on a free port with a certificate of a test CA, and points
/// the CRD's conversion at them; returns the server's shutdown and its count of conversions,
/// once the API server calls it.
async fn serve_conversions(env: &TestEnv) -> (Shutdown, Arc<AtomicUsize>) {
    let (shutdown, conversions, _, _) = serve_webhooks(env).await;
    (shutdown, conversions)
}

/// [`serve_conversions`], with the port the webhook server listens on and its CA, to point
/// admission webhooks at it too.
async fn serve_webhooks(env: &TestEnv) -> (Shutdown, Arc<AtomicUsize>, u16, String) {
    let conversions = Arc::new(AtomicUsize::new(0));
    let counted = conversions.clone();
    let router = webhook::routes(&env.operator).layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            if request.uri().path() == webhook::CONVERT_PATH {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            next.run(request)
        },
    ));
    let shutdown = Shutdown::default();
    let (port, ca) = serve_with_test_ca(router, &shutdown).await;

    let conversion = json!({
        "spec": {
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "url": format!("https://localhost:{port}{}", webhook::CONVERT_PATH),
                        "caBundle": k8s_openapi::ByteString(ca.clone().into_bytes()),
                    },
                    "conversionReviewVersions": ["v1"],
                },
            },
        },
    });
    Api::<CustomResourceDefinition>::all(env.admin.clone())
        .patch(
            CRD_NAME,
            &PatchParams::default(),
            &Patch::Merge(&conversion),
        )
        .await
        .unwrap();

    // The API server loads the new conversion asynchronously: probe until it calls the webhook.
    let probe = objects::<hub::CronJob>(env)
        .create(&PostParams::default(), &sample(env, "v1", "probe"))
        .await
        .unwrap();
    let spoke_objects = objects::<v2::CronJob>(env);
    for _ in 0..100 {
        if spoke_objects.get(&probe.name_any()).await.is_ok()
            && conversions.load(Ordering::SeqCst) > 0
        {
            return (shutdown, conversions, port, ca);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the API server never called the conversion webhook");
}

/// The sample of `version` in `config/samples`, named `name` after the test's namespace (so
/// that names of cluster-scoped objects do not clash between tests).
fn sample<K: kube::Resource + DeserializeOwned>(env: &TestEnv, version: &str, name: &str) -> K {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("config/samples/batch_{version}_cronjob.yaml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut sample: K = serde_saphyr::from_str(&text).unwrap();
    sample.meta_mut().name = Some(format!("{}-{name}", env.namespace));
    sample.meta_mut().namespace = None;
    sample
}

/// Where the test's cronjobs live, in version `K`.
fn objects<K>(env: &TestEnv) -> Api<K>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    Api::namespaced(env.admin.clone(), &env.namespace)
}
