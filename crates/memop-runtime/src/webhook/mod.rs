//! Webhooks the API server calls over HTTPS.
//!
//! - Admission webhooks, before it stores an object: to set its defaults (mutating webhooks)
//!   and to refuse it (validating webhooks), as kubebuilder's `CustomDefaulter` and
//!   `CustomValidator` do. One module per kind holds what its webhooks do; this one serves
//!   them and describes them for `make manifests` (`config/webhook/manifests.yaml`).
//! - The conversion webhook, for kinds served in several versions: it converts objects from
//!   the version they are stored in to the version a client asks for, and back, through one
//!   hub version per kind (`From` impls in `src/api/<group>/<spoke>/<kind>_conversion.rs`).
//!
//! A project's `src/webhook/mod.rs` lists its webhooks ([`Webhook`]s and their routes) and
//! conversions ([`Conversion`]s), and starts this server with [`serve`].
//!
//! By concern: `admission` ([`defaulting`] with a [`Defaulter`], [`validating`] with a
//! [`Validator`], both given the request's [`Context`]), `refusal` (why a webhook refuses:
//! [`Refusal`], [`Invalid`] fields), `conversion` ([`converting`],
//! [`Conversion`]), `configuration` (the webhook configurations: [`Webhook`],
//! [`configurations`], [`manifests_yaml`]), `body` (reading a review, up to
//! `MAX_REQUEST_SIZE`), `server` ([`Flags`], [`serve`], `measured`), `certs` (the
//! certificate without cert-manager) and `local` (webhooks served on this machine, for
//! `make run`).

#![warn(missing_docs)]

mod admission;
mod body;
pub(crate) mod certs;
mod configuration;
mod conversion;
mod local;
mod pem;
mod refusal;
mod server;
#[cfg(test)]
mod tests;

pub use admission::{Context, Defaulter, Validator, Verdict, defaulting, validating};
#[cfg(test)]
pub(crate) use configuration::METADATA_ONLY_UPDATE;
#[cfg(test)]
pub(crate) use configuration::{SYSTEM_NAMESPACES, manager_namespace_selector};
pub use configuration::{Webhook, configurations, manifests_yaml};
pub use conversion::{CONVERT_PATH, Conversion, conversion_crds, converting};
#[cfg(test)]
pub(crate) use local::LOCAL_CONVERSION;
pub use refusal::{FieldError, Invalid, Refusal};
pub use server::{Flags, serve};
