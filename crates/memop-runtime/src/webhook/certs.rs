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
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::manager::Shutdown;
use crate::manager::tls::Certificate;

/// How long a CA and a certificate made here are valid.
const VALIDITY: SignedDuration = SignedDuration::from_hours(365 * 24);
/// A certificate with less than this left is renewed, with a new CA.
const RENEW_BEFORE: SignedDuration = SignedDuration::from_hours(90 * 24);
/// How often the Secret is read again: to serve what another replica renewed, to renew, and
/// to write the CA again where a `kubectl apply` removed it.
const CHECK_EVERY: Duration = Duration::from_secs(60);
/// The Secret's annotation that records when its certificate expires.
pub const NOT_AFTER: &str = "memop.rs/webhook-cert-not-after";

/// What the manager needs to keep its own webhook certificate.
pub struct SelfManaged {
    /// The manager's client.
    pub client: Client,
    /// The common name of the CA, e.g. `memcached-operator-webhook-ca`.
    pub ca_name: String,
    /// The Secret, in `namespace` (the manager's): it must exist, as config/webhook-certs
    /// creates it, so that the manager needs no right to create Secrets.
    pub namespace: String,
    /// The Secret's name (`--webhook-cert-secret`).
    pub secret: String,
    /// The names the certificate is for: the webhook Service's DNS names.
    pub dns_names: Vec<String>,
    /// The webhook configurations, mutating or validating, to write the CA into; one that does
    /// not exist is skipped.
    pub configurations: Vec<String>,
    /// The CRDs whose conversion webhook this manager serves.
    pub crds: Vec<String>,
}

/// A certificate, its key, and the CA bundle that clients trust it with, as the Secret holds
/// them (PEM).
#[derive(Debug, Clone)]
pub(super) struct Pem {
    pub(super) ca: String,
    pub(super) cert: String,
    pub(super) key: String,
    not_after: Option<Timestamp>,
}

impl SelfManaged {
    /// Makes sure the Secret holds a certificate not due for renewal and that the API server
    /// trusts it, and returns it, served; then checks again every minute until
    /// shutdown.
    pub async fn start(self, shutdown: Shutdown) -> anyhow::Result<Arc<Certificate>> {
        let pem = self.ensure().await?;
        self.inject(&pem.ca).await?;
        let certificate = Arc::new(Certificate::from_pem(
            pem.cert.as_bytes(),
            pem.key.as_bytes(),
        )?);
        let served = certificate.clone();
        tokio::spawn(async move {
            let mut current = pem;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(CHECK_EVERY) => {}
                    () = shutdown.wait() => return,
                }
                match self.refresh(&served, &current).await {
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

    async fn refresh(&self, served: &Certificate, current: &Pem) -> anyhow::Result<Pem> {
        let pem = self.ensure().await?;
        self.inject(&pem.ca).await?;
        if pem.cert != current.cert {
            served.replace(pem.cert.as_bytes(), pem.key.as_bytes())?;
            tracing::info!("serving the renewed webhook certificate");
        }
        Ok(pem)
    }

    /// The Secret's certificate, made first when it has none or it expires within
    /// [`RENEW_BEFORE`].
    async fn ensure(&self) -> anyhow::Result<Pem> {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let what = format!("Secret {}/{}", self.namespace, self.secret);
        let mut secret = secrets.get(&self.secret).await.with_context(|| {
            format!("reading {what}, which config/webhook-certs creates for the manager to fill")
        })?;
        let kept = read(&secret);
        if let Some(pem) = &kept
            && pem
                .not_after
                .is_some_and(|not_after| not_after > Timestamp::now() + RENEW_BEFORE)
        {
            return Ok(pem.clone());
        }
        // Clients keep trusting the previous CA until it expires: a replica that has not read
        // the new certificate yet still serves the previous one.
        let previous_ca = kept.as_ref().and_then(|pem| first_certificate(&pem.ca));
        let made = make(&self.ca_name, &self.dns_names, previous_ca)?;
        // The CA goes where the API server reads it before any replica serves its certificate.
        self.inject(&made.ca).await?;
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
        // Replacing with the resourceVersion read: if another replica renewed meanwhile, this
        // fails with a conflict, and its certificate is the one to serve.
        match secrets
            .replace(&self.secret, &PostParams::default(), &secret)
            .await
        {
            Ok(_) => {
                tracing::info!(secret = %what, not_after, "made a new webhook certificate");
                Ok(made)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let theirs = secrets.get(&self.secret).await?;
                let pem = read(&theirs).with_context(|| format!("{what} after a conflict"))?;
                self.inject(&pem.ca).await?;
                Ok(pem)
            }
            Err(error) => Err(error).with_context(|| format!("writing {what}")),
        }
    }

    /// Writes `ca` into the webhook configurations and CRDs where it is not already.
    async fn inject(&self, ca: &str) -> anyhow::Result<()> {
        let bundle = ByteString(ca.as_bytes().to_vec());
        let mutating = Api::<MutatingWebhookConfiguration>::all(self.client.clone());
        let validating = Api::<ValidatingWebhookConfiguration>::all(self.client.clone());
        for name in &self.configurations {
            inject_into(&mutating, name, &bundle, |configuration| {
                configuration
                    .webhooks
                    .iter_mut()
                    .flatten()
                    .map(|w| &mut w.client_config)
                    .collect()
            })
            .await?;
            inject_into(&validating, name, &bundle, |configuration| {
                configuration
                    .webhooks
                    .iter_mut()
                    .flatten()
                    .map(|w| &mut w.client_config)
                    .collect()
            })
            .await?;
        }
        let crds = Api::<CustomResourceDefinition>::all(self.client.clone());
        for name in &self.crds {
            let crd = crds.get(name).await?;
            let client_config = crd
                .spec
                .conversion
                .as_ref()
                .and_then(|conversion| conversion.webhook.as_ref())
                .and_then(|webhook| webhook.client_config.as_ref());
            // A CRD whose conversion is not a webhook (yet) has no CA to hold.
            if client_config.is_some_and(|config| config.ca_bundle.as_ref() != Some(&bundle)) {
                let change = json!({ "spec": { "conversion": { "webhook": { "clientConfig": { "caBundle": bundle } } } } });
                patch(&crds, &crd, change).await?;
            }
        }
        Ok(())
    }
}

/// Writes `bundle` into every webhook of the configuration `name` (mutating or validating:
/// `client_configs` finds its webhooks' client configurations), unless it does not exist or
/// has it already.
async fn inject_into<K>(
    api: &Api<K>,
    name: &str,
    bundle: &ByteString,
    client_configs: impl Fn(&mut K) -> Vec<&mut WebhookClientConfig>,
) -> anyhow::Result<()>
where
    K: kube::Resource
        + Clone
        + PartialEq
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let Some(configuration) = api.get_opt(name).await? else {
        return Ok(());
    };
    let mut injected = configuration.clone();
    for client_config in client_configs(&mut injected) {
        client_config.ca_bundle = Some(bundle.clone());
    }
    if injected != configuration {
        let webhooks = serde_json::to_value(&injected)?["webhooks"].take();
        patch(api, &configuration, json!({ "webhooks": webhooks })).await?;
    }
    Ok(())
}

/// Merge-patches `change` into `object`, as of the version read: a concurrent change makes it
/// fail, and the next check tries again.
async fn patch<K>(api: &Api<K>, object: &K, mut change: serde_json::Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    change["metadata"] = json!({ "resourceVersion": object.resource_version() });
    let name = object.name_any();
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&change))
        .await
        .with_context(|| format!("writing the webhook CA into {name}"))?;
    tracing::info!(name, "wrote the webhook CA");
    Ok(())
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

/// A new CA and a certificate it signs for `dns_names` (IP addresses too), both valid for
/// [`VALIDITY`]; the CA bundle is the new CA, then `previous_ca`.
pub(super) fn make(
    ca_name: &str,
    dns_names: &[String],
    previous_ca: Option<String>,
) -> anyhow::Result<Pem> {
    // Certificates are valid from the start of a day (UTC) to the start of another.
    let (today, expiry) = {
        let today = Timestamp::now().to_zoned(TimeZone::UTC).date();
        (
            today,
            (Timestamp::now() + VALIDITY).to_zoned(TimeZone::UTC).date(),
        )
    };
    let rcgen_date = |date: k8s_openapi::jiff::civil::Date| {
        rcgen::date_time_ymd(date.year().into(), date.month() as u8, date.day() as u8)
    };
    let (not_before, not_after) = (rcgen_date(today), rcgen_date(expiry));
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, ca_name);
    (ca.not_before, ca.not_after) = (not_before, not_after);
    let ca = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate()?)?;
    let mut serving = rcgen::CertificateParams::new(dns_names.to_vec())?;
    (serving.not_before, serving.not_after) = (not_before, not_after);
    let key = rcgen::KeyPair::generate()?;
    let cert = serving.signed_by(&key, &ca)?;
    let mut bundle = ca.pem();
    bundle.extend(previous_ca);
    Ok(Pem {
        ca: bundle,
        cert: cert.pem(),
        key: key.serialize_pem(),
        not_after: Some(expiry.to_zoned(TimeZone::UTC)?.timestamp()),
    })
}

/// The first PEM certificate of a bundle.
fn first_certificate(bundle: &str) -> Option<String> {
    let end = "-----END CERTIFICATE-----";
    bundle
        .find(end)
        .map(|at| format!("{}\n", &bundle[..at + end.len()]))
}
