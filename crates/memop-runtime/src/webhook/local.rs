//! `make run`'s webhooks (`--webhook-url`): a manager on a developer's machine serves its
//! webhooks there and points the API server at them for as long as it runs, so that the local
//! loop works after `memop create webhook`, conversion included. In a cluster the API server
//! calls the manager through its webhook Service, with a certificate cert-manager issues or
//! `--webhook-cert-secret` keeps; neither reaches a process outside the cluster.
//!
//! At start the manager makes a CA and a certificate for the URL's host, in memory, and then
//! - points the conversion of each CRD it converts at `<url>/convert`, with that CA;
//! - applies its admission webhooks as two configurations of its own,
//!   `<name>-local-mutating` and `<name>-local-validating`, calling `<url><path>`.
//!
//! At shutdown it puts each CRD's conversion back as it found it (what `make install` applied)
//! and deletes those configurations. A manager killed before it could leaves them; `make run`
//! again replaces them, and `make uninstall` deletes them. Meanwhile they fail open
//! (`failurePolicy: Ignore`, unlike the deployed configurations): a laptop that went to sleep
//! must not block every write of the kind in the cluster.
//!
//! A conversion cannot fail open: while a CRD's conversion points at a dead laptop, the API
//! server cannot read the kind in any version but the stored one (LIST and WATCH of the others
//! fail, and with them the garbage and namespace collectors). So each CRD it points here
//! carries the annotation [`LOCAL_CONVERSION`]: the conversion to put back (`restore`) and
//! until when this manager answers for it (`expires`, Unix seconds), which it renews every
//! [`RENEW_EVERY`] to [`LEASE`] from then. A local manager killed without its cleanup thus
//! leaves a lease that runs out within [`LEASE`], and then
//! - an operator deployed in the cluster with `--webhook-cert-secret` puts the conversion
//!   back when it next writes its CA into the CRD (every minute), instead of overwriting the
//!   laptop's CA while the lease holds (which broke a running `make run`);
//! - `make run` again takes the conversion to put back from the annotation, not from the CRD
//!   as the killed manager left it (which it would otherwise restore at its own exit).
//!
//! Without either, patching the CRD's `spec.conversion` back to the annotation's `restore`
//! (`kubectl patch crd <name> --type=merge`) repairs it by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, Resource};
use serde_json::{Value, json};

use super::pem::{self, Pem};
use super::{CONVERT_PATH, Webhook};
use crate::Operator;
use crate::manager::shutdown::Shutdown;
use crate::manager::tls::Certificate;
use crate::shared::Shared;

/// The webhooks of `operator`, served at `url` on this machine.
pub(super) struct Local {
    name: String,
    /// `https://host:port`, without a trailing slash.
    url: String,
    pem: Pem,
}

impl Local {
    /// Checks `url` (`https://HOST:PORT`, the address the API server reaches this machine at)
    /// and makes a CA and a certificate for its host.
    pub(super) fn new(operator: &Operator, url: &str) -> anyhow::Result<Self> {
        let host = host_of(url)?;
        let pem = pem::make(
            &format!("{}-local-webhook-ca", operator.name),
            &[host],
            None,
        )?;
        Ok(Self {
            name: operator.name.to_string(),
            url: url.trim_end_matches('/').to_string(),
            pem,
        })
    }

    /// The certificate to serve.
    pub(super) fn certificate(&self) -> anyhow::Result<Arc<Certificate>> {
        let certificate = Certificate::from_pem(self.pem.cert.as_bytes(), self.pem.key.as_bytes())?;
        Ok(Arc::new(certificate))
    }

    /// The configurations of `webhooks`, named `names` (mutating, validating), calling this
    /// machine with the CA `bundle`, and failing open: a manager killed without its cleanup
    /// leaves them, and they must not block the cluster's writes once nothing answers them.
    fn configurations(
        &self,
        webhooks: &[Webhook],
        names: [&str; 2],
        bundle: &ByteString,
    ) -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
        let (mut mutating, mut validating) =
            super::configurations(webhooks, names, |webhook| WebhookClientConfig {
                url: Some(format!("{}{}", self.url, webhook.path)),
                ca_bundle: Some(bundle.clone()),
                service: None,
            });
        let ignore = || Some("Ignore".to_string());
        for webhook in mutating.webhooks.iter_mut().flatten() {
            webhook.failure_policy = ignore();
        }
        for webhook in validating.webhooks.iter_mut().flatten() {
            webhook.failure_policy = ignore();
        }
        (mutating, validating)
    }

    /// Points the CRDs named `crds` and the admission `webhooks` at this machine, and defers
    /// undoing it to the manager's shutdown.
    pub(super) async fn point(
        &self,
        shared: &Shared,
        webhooks: &[Webhook],
        crds: &[String],
    ) -> anyhow::Result<()> {
        let bundle = ByteString(self.pem.ca.as_bytes().to_vec());
        self.point_admission(shared, webhooks, &bundle).await?;
        let api = Api::<CustomResourceDefinition>::all(shared.client.clone());
        // Set by the cleanup before it restores the CRDs: the lease is no longer renewed.
        let done = Arc::new(AtomicBool::new(false));
        for name in crds {
            self.point_conversion(shared, &api, name, &bundle, &done)
                .await?;
        }
        tracing::info!(
            url = self.url,
            crds = ?crds,
            "serving the webhooks on this machine (--webhook-url): the API server calls them there until the manager stops"
        );
        Ok(())
    }

    /// Applies the local admission webhook configurations (or deletes those left with no
    /// webhook), and defers deleting them to the manager's shutdown.
    async fn point_admission(
        &self,
        shared: &Shared,
        webhooks: &[Webhook],
        bundle: &ByteString,
    ) -> anyhow::Result<()> {
        let manager = format!("{}-local-webhooks", self.name);
        let [mutating_name, validating_name] = [
            format!("{}-local-mutating", self.name),
            format!("{}-local-validating", self.name),
        ];
        let (mutating, validating) =
            self.configurations(webhooks, [&mutating_name, &validating_name], bundle);
        let client = shared.client.clone();
        let has = |mutating: bool| webhooks.iter().any(|webhook| webhook.mutating == mutating);
        apply_or_delete(&client, &manager, mutating, has(true)).await?;
        apply_or_delete(&client, &manager, validating, has(false)).await?;
        shared.shutdown.defer(async move {
            for (kind, result) in [
                (
                    "mutating",
                    delete::<MutatingWebhookConfiguration>(&client, &mutating_name).await,
                ),
                (
                    "validating",
                    delete::<ValidatingWebhookConfiguration>(&client, &validating_name).await,
                ),
            ] {
                if let Err(error) = result {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "could not delete the local {kind} webhook configuration"
                    );
                }
            }
        });
        Ok(())
    }

    /// Points the conversion of the CRD `name` at this machine under a lease that a task
    /// renews, and defers restoring the conversion it found to the manager's shutdown.
    async fn point_conversion(
        &self,
        shared: &Shared,
        api: &Api<CustomResourceDefinition>,
        name: &str,
        bundle: &ByteString,
        done: &Arc<AtomicBool>,
    ) -> anyhow::Result<()> {
        let crd = api.get(name).await.with_context(|| {
            format!("reading the CRD {name}, whose conversion this manager serves: install the CRDs first (make install)")
        })?;
        // A local manager killed before its cleanup left the CRD pointed at it: what to
        // put back is what it found.
        let original = match held(&crd) {
            Some(held) => {
                tracing::info!(
                    crd = name,
                    "the CRD's conversion was left pointing at a local manager: taking the one to restore from its annotation"
                );
                held.restore
            }
            None => serde_json::to_value(&crd.spec.conversion)?,
        };
        let local = json!({
            "metadata": { "annotations": { LOCAL_CONVERSION: lease(&original) } },
            "spec": { "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {
                        "service": null,
                        "url": format!("{}{CONVERT_PATH}", self.url),
                        "caBundle": bundle,
                    },
                },
            } },
        });
        api.patch(name, &PatchParams::default(), &Patch::Merge(&local))
            .await
            .with_context(|| {
                format!("pointing the conversion of the CRD {name} at {}", self.url)
            })?;
        tokio::spawn(renew(
            api.clone(),
            name.to_owned(),
            original.clone(),
            done.clone(),
            shared.shutdown.clone(),
        ));
        let (api, name, done) = (api.clone(), name.to_owned(), done.clone());
        shared.shutdown.defer(async move {
            done.store(true, Ordering::SeqCst);
            match restore(&api, &name, &original).await {
                Ok(()) => tracing::info!(crd = name, "restored the CRD's conversion"),
                Err(error) => tracing::warn!(crd = name, %error, "could not restore the CRD's conversion; make install restores it"),
            }
        });
        Ok(())
    }
}

/// Renews the lease on the conversion of the CRD `name` every [`RENEW_EVERY`], until `done`
/// (the cleanup is restoring it) or the servers stop.
async fn renew(
    api: Api<CustomResourceDefinition>,
    name: String,
    original: Value,
    done: Arc<AtomicBool>,
    shutdown: Shutdown,
) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(RENEW_EVERY) => {}
            () = shutdown.servers_stop() => return,
        }
        if done.load(Ordering::SeqCst) {
            return;
        }
        let renewed =
            json!({ "metadata": { "annotations": { LOCAL_CONVERSION: lease(&original) } } });
        if let Err(error) = api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&renewed))
            .await
        {
            tracing::warn!(crd = name, %error, "could not renew the local conversion's lease");
        }
    }
}

/// The annotation of a CRD whose conversion a local manager points at itself: JSON, with the
/// conversion to put back (`restore`, `spec.conversion` as that manager found it) and until when
/// the manager answers for it (`expires`, Unix seconds). See the module's documentation.
pub(crate) const LOCAL_CONVERSION: &str = "memop.dev/local-conversion";

/// How long a local manager's lease on a CRD's conversion lasts from its last renewal.
pub const LEASE: Duration = Duration::from_secs(120);

/// How often a local manager renews its lease on the CRDs it points at itself.
pub const RENEW_EVERY: Duration = Duration::from_secs(30);

/// A CRD's [`LOCAL_CONVERSION`] annotation, read.
#[derive(Debug, PartialEq)]
pub(super) struct Held {
    /// The conversion to put back.
    pub(super) restore: Value,
    /// Until when, in Unix seconds, the local manager answers for it.
    pub(super) expires: u64,
}

impl Held {
    /// Whether the lease has run out at `now` (Unix seconds).
    pub(super) fn expired(&self, now: u64) -> bool {
        self.expires <= now
    }
}

/// The [`LOCAL_CONVERSION`] annotation of `crd`, if it has one that reads.
pub(super) fn held(crd: &CustomResourceDefinition) -> Option<Held> {
    let text = crd.metadata.annotations.as_ref()?.get(LOCAL_CONVERSION)?;
    let value: Value = serde_json::from_str(text).ok()?;
    Some(Held {
        restore: value.get("restore")?.clone(),
        expires: value.get("expires")?.as_u64()?,
    })
}

/// Now, in Unix seconds.
pub(super) fn now() -> u64 {
    (SystemTime::now().duration_since(UNIX_EPOCH)).map_or(0, |since| since.as_secs())
}

/// The [`LOCAL_CONVERSION`] annotation that holds `original` for [`LEASE`] from now.
fn lease(original: &Value) -> String {
    json!({ "restore": original, "expires": now() + LEASE.as_secs() }).to_string()
}

/// Puts back `original` as the conversion of the CRD `name`, and removes its
/// [`LOCAL_CONVERSION`] annotation.
pub(super) async fn restore(
    api: &Api<CustomResourceDefinition>,
    name: &str,
    original: &Value,
) -> kube::Result<()> {
    let restore = json!({
        "metadata": { "annotations": { LOCAL_CONVERSION: null } },
        "spec": { "conversion": restoring(original.clone()) },
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&restore))
        .await
        .map(drop)
}

/// The host of `url`, which must be `https://HOST:PORT` with no path.
fn host_of(url: &str) -> anyhow::Result<String> {
    let refuse = |why: &str| {
        anyhow::anyhow!(
            "--webhook-url {url:?} {why}: give https://HOST:PORT, where HOST is the address the API server reaches this machine at (127.0.0.1 for an API server on this machine; kind's network gateway, e.g. 172.18.0.1, for a kind cluster) and PORT the one of --webhook-bind-address"
        )
    };
    let uri: http::Uri = url.parse().map_err(|_| refuse("is not a URL"))?;
    if uri.scheme_str() != Some("https") {
        return Err(refuse(
            "is not https (the API server calls webhooks over TLS only)",
        ));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(refuse("has a path (each webhook's path is added to it)"));
    }
    let host = uri.host().ok_or_else(|| refuse("has no host"))?;
    // An IPv6 address is written in brackets in a URL, and without them in a certificate.
    Ok(host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string())
}

/// What puts back `conversion` (a CRD's `spec.conversion`, as read) with a merge patch: the
/// fields the local conversion sets and `conversion` lacks are removed.
fn restoring(mut conversion: Value) -> Value {
    if conversion.is_null() {
        return json!({ "strategy": "None", "webhook": null });
    }
    if conversion["webhook"].is_null() {
        conversion["webhook"] = Value::Null;
        return conversion;
    }
    let client_config = &mut conversion["webhook"]["clientConfig"];
    for field in ["url", "service", "caBundle"] {
        if client_config.get(field).is_none() {
            client_config[field] = Value::Null;
        }
    }
    conversion
}

/// Server-side applies `configuration` as `manager`, or deletes it when it has no webhooks
/// (the API server refuses nothing, and a configuration left from an earlier run must go).
async fn apply_or_delete<K>(
    client: &Client,
    manager: &str,
    configuration: K,
    has_webhooks: bool,
) -> anyhow::Result<()>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>,
    K: Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = configuration.meta().name.clone().unwrap_or_default();
    if !has_webhooks {
        return delete::<K>(client, &name).await;
    }
    Api::<K>::all(client.clone())
        .patch(
            &name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(&configuration),
        )
        .await
        .with_context(|| format!("applying the webhook configuration {name}"))?;
    Ok(())
}

async fn delete<K>(client: &Client, name: &str) -> anyhow::Result<()>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>,
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match Api::<K>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => {
            Err(error).with_context(|| format!("deleting the webhook configuration {name}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_webhooks_fail_open_and_deployed_ones_closed() {
        let operator = Operator {
            name: "memcached-operator",
            domain: "example.com",
        };
        let local = Local::new(&operator, "https://127.0.0.1:9443").unwrap();
        let webhooks = [true, false].map(|mutating| Webhook {
            mutating,
            name: if mutating {
                "m.example.com"
            } else {
                "v.example.com"
            },
            path: if mutating { "/mutate" } else { "/validate" },
            group: "example.com",
            version: "v1",
            resource: "things",
            operations: &["CREATE", "UPDATE"],
        });
        let bundle = ByteString(local.pem.ca.as_bytes().to_vec());
        let (mutating, validating) = local.configurations(&webhooks, ["m", "v"], &bundle);
        let policies = |mutating: &MutatingWebhookConfiguration,
                        validating: &ValidatingWebhookConfiguration| {
            let m = mutating
                .webhooks
                .iter()
                .flatten()
                .map(|w| w.failure_policy.clone());
            let v = validating
                .webhooks
                .iter()
                .flatten()
                .map(|w| w.failure_policy.clone());
            m.chain(v).collect::<Vec<_>>()
        };
        let ignore = Some("Ignore".to_string());
        assert_eq!(policies(&mutating, &validating), [ignore.clone(), ignore]);
        let url = mutating.webhooks.as_ref().unwrap()[0]
            .client_config
            .url
            .clone();
        assert_eq!(url.as_deref(), Some("https://127.0.0.1:9443/mutate"));
        // The deployed configurations (a Service) still fail closed.
        let (mutating, validating) =
            super::super::configurations(&webhooks, ["m", "v"], |_| WebhookClientConfig::default());
        let fail = Some("Fail".to_string());
        assert_eq!(policies(&mutating, &validating), [fail.clone(), fail]);
    }

    #[test]
    fn the_url_must_be_https_to_a_host_without_a_path() {
        assert_eq!(host_of("https://127.0.0.1:9443").unwrap(), "127.0.0.1");
        assert_eq!(host_of("https://172.18.0.1:9443/").unwrap(), "172.18.0.1");
        assert_eq!(host_of("https://[::1]:9443").unwrap(), "::1");
        assert_eq!(
            host_of("https://host.docker.internal:9443").unwrap(),
            "host.docker.internal"
        );
        for (url, why) in [
            ("http://127.0.0.1:9443", "is not https"),
            ("https://127.0.0.1:9443/webhooks", "has a path"),
            ("127.0.0.1:9443", "is not https"),
            ("https://", "is not a URL"),
        ] {
            let error = host_of(url).unwrap_err().to_string();
            assert!(error.contains(why), "{url}: {error}");
            assert!(error.contains("give https://HOST:PORT"), "{error}");
        }
    }

    #[test]
    fn restoring_removes_what_the_local_conversion_added() {
        // What `make install` applies: a Service, no CA.
        let installed = json!({
            "strategy": "Webhook",
            "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": { "service": { "name": "webhook-service", "namespace": "system", "path": "/convert" } },
            },
        });
        let mut restored = json!({ "strategy": "Webhook", "webhook": { "clientConfig": {
            "url": "https://127.0.0.1:9443/convert", "caBundle": "Q0E=" } } });
        json_patch::merge(&mut restored, &restoring(installed.clone()));
        assert_eq!(restored, installed);

        // A CRD without a conversion webhook gets none back.
        let mut restored = json!({ "strategy": "Webhook", "webhook": { "clientConfig": { "url": "https://127.0.0.1:9443/convert" } } });
        json_patch::merge(&mut restored, &restoring(Value::Null));
        assert_eq!(restored, json!({ "strategy": "None" }));
    }

    #[test]
    fn the_lease_of_a_local_conversion_reads_back_and_runs_out() {
        let installed = json!({ "strategy": "Webhook", "webhook": { "clientConfig": { "service": { "name": "webhook-service" } } } });
        let mut crd = CustomResourceDefinition::default();
        assert_eq!(held(&crd), None);
        crd.metadata.annotations = Some([(LOCAL_CONVERSION.to_string(), lease(&installed))].into());
        let lease = held(&crd).unwrap();
        assert_eq!(lease.restore, installed);
        assert!(!lease.expired(now()));
        assert!(lease.expired(now() + LEASE.as_secs()));
        assert!(
            RENEW_EVERY * 3 < LEASE,
            "a renewal may fail and the next still be in time"
        );
    }
}
