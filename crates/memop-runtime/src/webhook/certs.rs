//! Webhook certificates without cert-manager (`--webhook-cert-secret`). The manager keeps a CA
//! and a serving certificate for the webhook Service in a Secret of its namespace, so that its
//! replicas serve the same one. It writes the CA into its webhook configurations and into the
//! CRDs whose conversion it serves, so that the API server trusts the certificate, and it
//! renews both before they expire. `config/webhook-certs` grants exactly that, on those named
//! objects only. cert-manager (`config/certmanager`) remains the alternative, wired as
//! kubebuilder wires it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::local;
use super::pem::{Pem, make};
use crate::manager::Shutdown;
use crate::manager::tls::Certificate;

/// A certificate with less than this left is renewed, with a new CA.
const RENEW_BEFORE: SignedDuration = SignedDuration::from_hours(90 * 24);
/// How often the Secret is read again: to serve what another replica renewed, to renew, and
/// to write the CA again where a `kubectl apply` removed it.
const CHECK_EVERY: Duration = Duration::from_secs(60);
/// How many times a check starts over when another writer got in first (a write that
/// conflicts, HTTP 409, or a Secret renewed meanwhile), each time from what is stored then,
/// before it gives up until the next check.
const ATTEMPTS: usize = 5;
/// The Secret's annotation that records when its certificate expires.
pub(crate) const NOT_AFTER: &str = "memop.rs/webhook-cert-not-after";

/// What the manager needs to keep its own webhook certificate.
///
/// Every replica runs one, and they agree through the Secret without a lease:
/// - only one replica makes or renews the certificate: it writes the Secret as of the version
///   it read, so that of two replicas renewing at once the second fails with a conflict, and
///   serves the first one's certificate instead of its own;
/// - the CA bundle written where the API server reads it is always the Secret's: a renewal
///   puts the new CA in front of the previous one (which stays until the next renewal, long
///   after the previous certificate expired), and each replica serves a certificate only once
///   every configuration and CRD trusts its CA;
/// - a bundle is written into an object only as the Secret holds it after the object was
///   read, and as of the version read: so no replica that read the Secret before a renewal can
///   write the bundle without the new CA back over the one with it.
pub(crate) struct SelfManaged {
    /// The manager's client.
    pub(crate) client: Client,
    /// The common name of the CA, e.g. `memcached-operator-webhook-ca`.
    pub(crate) ca_name: String,
    /// The Secret, in `namespace` (the manager's): it must exist, as config/webhook-certs
    /// creates it, so that the manager needs no right to create Secrets.
    pub(crate) namespace: String,
    /// The Secret's name (`--webhook-cert-secret`).
    pub(crate) secret: String,
    /// The names the certificate is for: the webhook Service's DNS names.
    pub(crate) dns_names: Vec<String>,
    /// The webhook configurations, mutating or validating, to write the CA into; one that does
    /// not exist is skipped.
    pub(crate) configurations: Vec<String>,
    /// The CRDs whose conversion webhook this manager serves.
    pub(crate) crds: Vec<String>,
}

impl SelfManaged {
    /// Makes sure the Secret holds a certificate not due for renewal and that the API server
    /// trusts it, and returns it, served; then checks again every minute until shutdown.
    pub(crate) async fn start(self, shutdown: Shutdown) -> anyhow::Result<Arc<Certificate>> {
        self.start_checking_every(CHECK_EVERY, shutdown).await
    }

    /// [`SelfManaged::start`], reading the Secret again every `every` instead of every minute
    /// (for tests, which renew certificates within seconds).
    pub(crate) async fn start_checking_every(
        self,
        every: Duration,
        shutdown: Shutdown,
    ) -> anyhow::Result<Arc<Certificate>> {
        let pem = self.trusted().await?;
        let certificate = Arc::new(Certificate::from_pem(
            pem.cert.as_bytes(),
            pem.key.as_bytes(),
        )?);
        let served = certificate.clone();
        tokio::spawn(async move {
            let mut current = pem;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = shutdown.wait() => return,
                }
                let renewed = self.trusted().await.and_then(|pem| {
                    if pem.cert != current.cert {
                        served.replace(pem.cert.as_bytes(), pem.key.as_bytes())?;
                        tracing::info!("serving the renewed webhook certificate");
                    }
                    Ok(pem)
                });
                match renewed {
                    Ok(pem) => current = pem,
                    Err(error) => tracing::warn!(
                        error = format!("{error:#}"),
                        "keeping the webhook certificate"
                    ),
                }
            }
        });
        Ok(certificate)
    }

    /// The Secret's certificate (made or renewed first when due), once every webhook
    /// configuration and CRD trusts its CA: the certificate to serve.
    async fn trusted(&self) -> anyhow::Result<Pem> {
        for _ in 0..ATTEMPTS {
            let pem = self.ensure().await?;
            if self.inject(&pem).await? {
                return Ok(pem);
            }
            // Another replica renewed meanwhile: trust and serve its certificate instead.
        }
        anyhow::bail!("{} kept changing while its CA was written", self.what())
    }

    /// The Secret's certificate, made first when it has none or it expires within
    /// [`RENEW_BEFORE`].
    async fn ensure(&self) -> anyhow::Result<Pem> {
        let secrets = self.secrets();
        for _ in 0..ATTEMPTS {
            let mut secret = self.read_secret().await?;
            let kept = read(&secret);
            if let Some(pem) = &kept
                && pem
                    .not_after
                    .is_some_and(|not_after| not_after > Timestamp::now() + RENEW_BEFORE)
            {
                return Ok(pem.clone());
            }
            // Clients keep trusting the previous CA: replicas serve the previous certificate
            // until they read this one.
            let previous_ca = kept.as_ref().and_then(|pem| first_certificate(&pem.ca));
            let made = make(&self.ca_name, &self.dns_names, previous_ca)?;
            let data = [
                ("ca.crt", &made.ca),
                ("tls.crt", &made.cert),
                ("tls.key", &made.key),
            ];
            secret.data = Some(
                data.into_iter()
                    .map(|(key, value)| (key.to_string(), ByteString(value.as_bytes().to_vec())))
                    .collect(),
            );
            let not_after = made.not_after.map(|t| t.to_string()).unwrap_or_default();
            secret
                .annotations_mut()
                .insert(NOT_AFTER.into(), not_after.clone());
            // Replacing as of the resourceVersion read: if another replica made or renewed
            // the certificate meanwhile, this fails with a conflict, and the next read finds
            // theirs, not due, to serve.
            match secrets
                .replace(&self.secret, &PostParams::default(), &secret)
                .await
            {
                Ok(_) => {
                    let secret = self.what();
                    tracing::info!(%secret, not_after, "made a new webhook certificate");
                    return Ok(made);
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    tracing::info!(
                        secret = %self.what(),
                        "another replica wrote the webhook certificate first: using theirs"
                    );
                }
                Err(error) => {
                    return Err(error).with_context(|| format!("writing {}", self.what()));
                }
            }
        }
        anyhow::bail!("{} kept changing while it was renewed", self.what())
    }

    /// Writes `pem`'s CA bundle into the webhook configurations and CRDs where it is not
    /// already; false, with nothing more written, once the Secret no longer holds `pem`.
    async fn inject(&self, pem: &Pem) -> anyhow::Result<bool> {
        let mutating = Api::<MutatingWebhookConfiguration>::all(self.client.clone());
        let validating = Api::<ValidatingWebhookConfiguration>::all(self.client.clone());
        let crds = Api::<CustomResourceDefinition>::all(self.client.clone());
        for name in &self.configurations {
            if !(self.inject_into(&mutating, name, pem).await?
                && self.inject_into(&validating, name, pem).await?)
            {
                return Ok(false);
            }
        }
        for name in &self.crds {
            // A CRD that a local manager (`make run`) points at itself: left alone while its
            // lease holds (writing this CA would break that manager's conversions), and put
            // back as it was once the lease has run out (a manager killed without its
            // cleanup), before the CA is written into it.
            if let Some(held) = (crds.get_opt(name).await?).as_ref().and_then(local::held) {
                if !held.expired(local::now()) {
                    tracing::info!(
                        crd = name,
                        "the CRD's conversion points at a local manager (make run): leaving it alone until its lease runs out"
                    );
                    continue;
                }
                local::restore(&crds, name, &held.restore)
                    .await
                    .with_context(|| format!("restoring the conversion of {name}, which a local manager left pointing at itself"))?;
                tracing::info!(
                    crd = name,
                    "restored the conversion a local manager left pointing at itself"
                );
            }
            if !self.inject_into(&crds, name, pem).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Writes `pem`'s CA bundle into the object `name`, unless it does not exist or has it
    /// already; a write that another one beat is tried again from the object as it is then.
    /// False, with nothing written, when the Secret, read after the object, no longer holds
    /// `pem`: then the bundle stored in each object only ever moves on to a newer version of
    /// the Secret, and keeps the CA of every certificate a replica serves.
    async fn inject_into<K: HoldsCa>(
        &self,
        api: &Api<K>,
        name: &str,
        pem: &Pem,
    ) -> anyhow::Result<bool> {
        let bundle = ByteString(pem.ca.as_bytes().to_vec());
        for _ in 0..ATTEMPTS {
            let Some(object) = api.get_opt(name).await? else {
                return Ok(true);
            };
            let mut injected = object.clone();
            let mut bundles = injected.bundles();
            if bundles.iter().all(|held| held.as_ref() == Some(&bundle)) {
                return Ok(true);
            }
            for held in &mut bundles {
                **held = Some(bundle.clone());
            }
            let stored = read(&self.read_secret().await?);
            if !stored.is_some_and(|stored| stored.ca == pem.ca && stored.cert == pem.cert) {
                return Ok(false);
            }
            let mut change = injected.change();
            change["metadata"] = json!({ "resourceVersion": object.resource_version() });
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(&change))
                .await
            {
                Ok(_) => {
                    tracing::info!(name, "wrote the webhook CA");
                    return Ok(true);
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("writing the webhook CA into {name}"));
                }
            }
        }
        anyhow::bail!("{name} kept changing while the webhook CA was written into it")
    }

    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    async fn read_secret(&self) -> anyhow::Result<Secret> {
        self.secrets().get(&self.secret).await.with_context(|| {
            format!(
                "reading {}, which config/webhook-certs creates for the manager to fill",
                self.what()
            )
        })
    }

    /// The Secret, for messages.
    fn what(&self) -> String {
        format!("Secret {}/{}", self.namespace, self.secret)
    }
}

/// An object that holds CA bundles for the API server to trust webhooks with.
trait HoldsCa:
    kube::Resource<DynamicType = ()>
    + Clone
    + serde::Serialize
    + serde::de::DeserializeOwned
    + std::fmt::Debug
{
    /// Its CA bundles: one per webhook of a configuration; a CRD's, if its conversion is a
    /// webhook (one that is not yet has no CA to hold).
    fn bundles(&mut self) -> Vec<&mut Option<ByteString>>;

    /// The merge patch that writes its bundles as they are.
    fn change(&self) -> serde_json::Value;
}

impl HoldsCa for MutatingWebhookConfiguration {
    fn bundles(&mut self) -> Vec<&mut Option<ByteString>> {
        let webhooks = self.webhooks.iter_mut().flatten();
        webhooks.map(|w| &mut w.client_config.ca_bundle).collect()
    }

    fn change(&self) -> serde_json::Value {
        json!({ "webhooks": self.webhooks })
    }
}

impl HoldsCa for ValidatingWebhookConfiguration {
    fn bundles(&mut self) -> Vec<&mut Option<ByteString>> {
        let webhooks = self.webhooks.iter_mut().flatten();
        webhooks.map(|w| &mut w.client_config.ca_bundle).collect()
    }

    fn change(&self) -> serde_json::Value {
        json!({ "webhooks": self.webhooks })
    }
}

impl HoldsCa for CustomResourceDefinition {
    fn bundles(&mut self) -> Vec<&mut Option<ByteString>> {
        let conversion = self.spec.conversion.as_mut();
        let webhook = conversion.and_then(|conversion| conversion.webhook.as_mut());
        let client_config = webhook.and_then(|webhook| webhook.client_config.as_mut());
        client_config
            .map(|c| &mut c.ca_bundle)
            .into_iter()
            .collect()
    }

    fn change(&self) -> serde_json::Value {
        let client_config = (self.spec.conversion.as_ref())
            .and_then(|conversion| conversion.webhook.as_ref())
            .and_then(|webhook| webhook.client_config.as_ref());
        let bundle = client_config.and_then(|c| c.ca_bundle.as_ref());
        let webhook = json!({ "clientConfig": { "caBundle": bundle } });
        json!({ "spec": { "conversion": { "webhook": webhook } } })
    }
}

/// The certificate in a Secret, if it holds a whole one.
fn read(secret: &Secret) -> Option<Pem> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| {
        let bytes = &data.get(key)?.0;
        (!bytes.is_empty()).then(|| String::from_utf8(bytes.clone()).ok())?
    };
    Some(Pem {
        ca: text("ca.crt")?,
        cert: text("tls.crt")?,
        key: text("tls.key")?,
        not_after: secret
            .annotations()
            .get(NOT_AFTER)
            .and_then(|t| t.parse().ok()),
    })
}

/// The first PEM certificate of a bundle.
fn first_certificate(bundle: &str) -> Option<String> {
    let end = "-----END CERTIFICATE-----";
    bundle
        .find(end)
        .map(|at| format!("{}\n", &bundle[..at + end.len()]))
}
