//! Serving the webhooks: the server's flags, its certificate, and its metrics.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use clap::ArgAction;

use super::{Webhook, certs, local};
use crate::Operator;
use crate::manager::tls::Certificate;
use crate::manager::{Metrics, Shared, http, parse_bind_address};

/// The webhook server's flags, part of the manager's.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "webhook")]
pub struct Flags {
    /// Serve the webhooks; ENABLE_WEBHOOKS=false turns them off
    #[arg(long, env = "ENABLE_WEBHOOKS", action = ArgAction::Set, num_args = 0..=1, default_value_t = true, default_missing_value = "true")]
    pub(crate) enable_webhooks: bool,

    /// Address the webhook server binds to
    #[arg(long, default_value = ":9443")]
    pub(crate) webhook_bind_address: String,

    /// Directory holding the webhook server's certificate and key: the Secret cert-manager
    /// issues (config/certmanager), mounted there by config/default/manager_webhook_patch.yaml.
    /// Read again when they change
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs")]
    pub(crate) webhook_cert_path: PathBuf,

    /// File name of the webhook certificate in --webhook-cert-path
    #[arg(long, default_value = "tls.crt")]
    pub(crate) webhook_cert_name: String,

    /// File name of the webhook certificate's key in --webhook-cert-path
    #[arg(long, default_value = "tls.key")]
    pub(crate) webhook_cert_key: String,

    /// Local development (`make run`): serve the webhooks on this machine, where the API server
    /// reaches them at this URL (https://HOST:PORT), with a certificate made for HOST at start.
    /// The manager points its CRDs' conversion and two webhook configurations of its own
    /// ({operator name}-local-mutating, -validating) at the URL, and undoes both when it stops
    #[arg(
        long,
        env = "WEBHOOK_URL",
        value_name = "URL",
        conflicts_with = "webhook_cert_secret"
    )]
    pub(crate) webhook_url: Option<String>,

    /// Keep the webhook server's certificate in this Secret of the manager's namespace, without
    /// cert-manager: made, written into the webhook configurations and CRDs, and renewed by the
    /// manager (config/webhook-certs). Instead of --webhook-cert-path
    #[arg(long, env = "WEBHOOK_CERT_SECRET", value_name = "NAME")]
    pub(crate) webhook_cert_secret: Option<String>,

    /// With --webhook-cert-secret: the webhook Service, whose DNS names the certificate is for
    /// [default: {operator name}-webhook-service]
    #[arg(long, value_name = "NAME")]
    pub(crate) webhook_service: Option<String>,

    /// With --webhook-cert-secret: the webhook configurations to write the CA into [default:
    /// {operator name}-mutating-webhook-configuration,{operator
    /// name}-validating-webhook-configuration]
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub(crate) webhook_configurations: Option<Vec<String>>,
}

/// Starts the webhook server of `operator` (unless --enable-webhooks=false) with `routes`, and
/// the certificate of --webhook-cert-path or --webhook-cert-secret (which also trusts it in the
/// CRDs named `conversion_crds`); HTTP/2 only with `http2` (--enable-http2). With --webhook-url
/// it serves on this machine instead, and points the API server at it: the conversion of
/// `conversion_crds`, and `webhooks` (what `config/webhook/manifests.yaml` declares).
pub async fn serve(
    operator: &Operator,
    flags: &Flags,
    http2: bool,
    shared: &Shared,
    routes: Router,
    conversion_crds: Vec<String>,
    webhooks: &[Webhook],
) -> anyhow::Result<()> {
    if !flags.enable_webhooks {
        tracing::info!("webhooks disabled (ENABLE_WEBHOOKS=false)");
        return Ok(());
    }
    let Some(addr) = parse_bind_address(&flags.webhook_bind_address)? else {
        return Ok(());
    };
    let local = (flags.webhook_url.as_deref())
        .map(|url| local::Local::new(operator, url))
        .transpose()?;
    let certificate = match (&local, &flags.webhook_cert_secret) {
        (Some(local), _) => local.certificate()?,
        (None, Some(secret)) => {
            self_managed(operator, flags, shared, secret, &conversion_crds).await?
        }
        (None, None) => mounted(flags, shared).await?,
    };
    let tls = certificate.acceptor(http2)?;
    let router = measured(routes, shared.metrics.clone());
    http::spawn_with(
        "webhooks",
        addr,
        router,
        Some(tls),
        http2,
        http::Limits::WEBHOOKS,
        shared.shutdown.clone(),
    )
    .await?;
    // Only once it serves: the API server calls the webhooks as soon as it is pointed at them.
    if let Some(local) = local {
        local.point(shared, webhooks, &conversion_crds).await?;
    }
    if !conversion_crds.is_empty() {
        // The controllers' caches of the converted kinds need this server: do not let
        // readiness (which the Service routing to it waits for) wait for them.
        shared.readiness.serving_conversions();
    }
    Ok(())
}

/// The certificate of --webhook-cert-secret: made and renewed by the manager itself, and
/// trusted in the webhook configurations and the CRDs named `conversion_crds`.
async fn self_managed(
    operator: &Operator,
    flags: &Flags,
    shared: &Shared,
    secret: &str,
    conversion_crds: &[String],
) -> anyhow::Result<Arc<Certificate>> {
    let namespace = shared.client.default_namespace().to_string();
    let name = operator.name;
    let service =
        (flags.webhook_service.clone()).unwrap_or_else(|| format!("{name}-webhook-service"));
    let configurations = flags.webhook_configurations.clone().unwrap_or_else(|| {
        vec![
            format!("{name}-mutating-webhook-configuration"),
            format!("{name}-validating-webhook-configuration"),
        ]
    });
    certs::SelfManaged {
        client: shared.client.clone(),
        ca_name: format!("{name}-webhook-ca"),
        dns_names: vec![
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ],
        namespace,
        secret: secret.to_owned(),
        configurations,
        crds: conversion_crds.to_vec(),
    }
    .start(shared.shutdown.clone())
    .await
    .context("managing the webhook certificate (--webhook-cert-secret)")
}

/// The certificate mounted at --webhook-cert-path (cert-manager's, say), reloaded as it changes.
async fn mounted(flags: &Flags, shared: &Shared) -> anyhow::Result<Arc<Certificate>> {
    let certificate = Certificate::from_files(
        &flags.webhook_cert_path,
        &flags.webhook_cert_name,
        &flags.webhook_cert_key,
    )
    .await
    .context(
        "the webhook server's certificate: deploy with cert-manager (the [CERTMANAGER] sections of \
         config/default/kustomization.yaml) or with config/webhook-certs, pass --webhook-cert-path; on \
         your machine, pass --webhook-url (make run does) or run with ENABLE_WEBHOOKS=false",
    )?;
    let certificate = Arc::new(certificate);
    certificate.watch(shared.shutdown.clone());
    Ok(certificate)
}

/// `router` with each request to a webhook counted, timed and tracked in flight by its path,
/// as controller-runtime's `controller_runtime_webhook_*` metrics do. Only requests that match
/// a route are measured, and webhook routes have no parameters, so the paths that label the
/// series are the webhooks' own: requests to other paths cannot grow them.
pub(crate) fn measured(router: Router, metrics: Arc<Metrics>) -> Router {
    router.route_layer(axum::middleware::from_fn_with_state(metrics, measure))
}

async fn measure(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let measuring = metrics.webhook(request.uri().path());
    let response = next.run(request).await;
    measuring.answered(response.status().as_u16());
    response
}
