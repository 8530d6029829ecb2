//! The webhook server's certificates as PEM text ([`Pem`]), and the making of a new CA and a
//! certificate it signs ([`make`]): what the self-managed certificates (`certs.rs`) keep in their
//! Secret, and what a local run of the webhooks (`local.rs`) serves with.

use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How long a CA and a certificate made here are valid.
const VALIDITY: SignedDuration = SignedDuration::from_hours(365 * 24);
/// A certificate, its key, and the CA bundle that clients trust it with, as the Secret holds
/// them (PEM). Its `Debug` leaves the key out.
#[derive(Clone)]
pub(super) struct Pem {
    pub(super) ca: String,
    pub(super) cert: String,
    pub(super) key: String,
    pub(super) not_after: Option<Timestamp>,
}

impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pem")
            .field("ca", &self.ca)
            .field("cert", &self.cert)
            .field("key", &"<redacted>")
            .field("not_after", &self.not_after)
            .finish()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_debug_of_a_certificate_leaves_its_key_out() {
        let pem = make("test-ca", &["webhook.default.svc".to_string()], None).unwrap();
        let debug = format!("{pem:?} {pem:#?}");
        let body = pem.key.lines().nth(1).unwrap();
        assert!(!debug.contains(body), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
        assert!(
            debug.contains(&pem.cert.lines().nth(1).unwrap()[..40]),
            "the rest is shown"
        );
    }
}
