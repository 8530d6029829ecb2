//! Why a webhook refuses a change ([`Refusal`]), and the status the API server
//! relays to the client: a message (403 Forbidden, controller-runtime's `admission.Denied`),
//! or the fields that are invalid (422 Invalid with a cause per field, apimachinery's
//! `apierrors.NewInvalid`, as kubebuilder's validators return it).

use std::fmt;

use kube::Resource;
use kube::core::Status;
use kube::core::response::{StatusCause, StatusDetails};
use serde::Serialize;

/// Why a webhook refuses a change (a validating one, or a defaulter that cannot default). A message converts into one (`Err("...".into())`),
/// and so does [`Invalid`].
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// Refused with a message: the client sees `403 Forbidden` and the message.
    Denied(String),
    /// Refused because fields of the object are invalid: the client sees `422 Invalid`, with
    /// one cause per field in the status's details.
    Invalid(Invalid),
}

impl Refusal {
    /// The status of the AdmissionResponse, which the API server relays to the client with
    /// its code, reason and details (it prefixes the message with the webhook's name).
    pub(super) fn status(&self) -> Status {
        match self {
            Self::Denied(message) => Status::failure(message, "Forbidden").with_code(403),
            Self::Invalid(invalid) => Status {
                details: Some(StatusDetails {
                    group: invalid.group.clone(),
                    kind: invalid.kind.clone(),
                    name: invalid.name.clone(),
                    uid: String::new(),
                    causes: invalid.errors.iter().map(FieldError::cause).collect(),
                    retry_after_seconds: 0,
                }),
                ..Status::failure(&invalid.to_string(), "Invalid").with_code(422)
            },
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Denied(message) => f.write_str(message),
            Self::Invalid(invalid) => invalid.fmt(f),
        }
    }
}

impl std::error::Error for Refusal {}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Self::Denied(message)
    }
}

impl From<&str> for Refusal {
    fn from(message: &str) -> Self {
        Self::Denied(message.to_string())
    }
}

impl From<Invalid> for Refusal {
    fn from(invalid: Invalid) -> Self {
        Self::Invalid(invalid)
    }
}

/// The fields of an object that are invalid, as apimachinery's `apierrors.NewInvalid(groupKind,
/// name, fieldErrors)` says it: the message `<Kind>.<group> "<name>" is invalid: <errors>`
/// (several errors in brackets), and a cause per error.
///
/// ```
/// # use memop_runtime::webhook::{FieldError, Invalid, Verdict};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// fn validate(config: &ConfigMap) -> Verdict {
///     let mut invalid = Invalid::of(config);
///     if config.data.is_none() {
///         invalid.push(FieldError::required("data", "a ConfigMap of this operator holds data"));
///     }
///     invalid.verdict()
/// }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    group: String,
    kind: String,
    name: String,
    errors: Vec<FieldError>,
}

impl Invalid {
    /// No invalid field yet, of `object` (its kind, group and name are the status's details).
    pub fn of<K: Resource<DynamicType = ()>>(object: &K) -> Self {
        Self {
            group: K::group(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            name: object.meta().name.clone().unwrap_or_default(),
            errors: Vec::new(),
        }
    }

    /// Adds an invalid field.
    pub fn push(&mut self, error: FieldError) {
        self.errors.push(error);
    }

    /// The invalid fields.
    pub fn errors(&self) -> &[FieldError] {
        &self.errors
    }

    /// Allowed (with no warning) when no field is invalid, refused otherwise.
    pub fn verdict(self) -> super::Verdict {
        if self.errors.is_empty() {
            Ok(Vec::new())
        } else {
            Err(self.into())
        }
    }
}

impl fmt::Display for Invalid {
    /// `<Kind>.<group> "<name>" is invalid: <errors>`, the errors as apimachinery's aggregate
    /// lists them: one alone, several in brackets, each message once.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.group.as_str() {
            "" => self.kind.clone(),
            group => format!("{}.{group}", self.kind),
        };
        write!(f, "{kind} {:?} is invalid", self.name)?;
        let mut messages: Vec<String> = Vec::new();
        for message in self.errors.iter().map(FieldError::to_string) {
            if !messages.contains(&message) {
                messages.push(message);
            }
        }
        match messages.as_slice() {
            [] => Ok(()),
            [one] => write!(f, ": {one}"),
            several => write!(f, ": [{}]", several.join(", ")),
        }
    }
}

/// A field that is invalid, and why: apimachinery's `field.Error`, which a cause of the
/// status carries (`field`, `reason`, `message`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path, as the object's JSON names it: `spec.schedule`, `metadata.name`,
    /// `spec.items[0].name`.
    pub field: String,
    /// What is wrong, for programs: `FieldValueInvalid`, `FieldValueRequired`,
    /// `FieldValueForbidden`.
    pub reason: &'static str,
    /// What is wrong, for people, without the field: `Invalid value: "x": <detail>`.
    pub message: String,
}

impl FieldError {
    /// A value that is not valid (`field.Invalid`): the value is shown as Go's `%q` and `%v`
    /// show it (strings quoted, numbers and booleans as they are, anything else as JSON).
    pub fn invalid(field: &str, value: &impl Serialize, detail: &str) -> Self {
        let value = serde_json::to_string(value).unwrap_or_default();
        Self::new(
            field,
            "FieldValueInvalid",
            format!("Invalid value: {value}"),
            detail,
        )
    }

    /// A value that is required and missing (`field.Required`).
    pub fn required(field: &str, detail: &str) -> Self {
        Self::new(field, "FieldValueRequired", "Required value".into(), detail)
    }

    /// A value that is not permitted here (`field.Forbidden`).
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::new(field, "FieldValueForbidden", "Forbidden".into(), detail)
    }

    fn new(field: &str, reason: &'static str, what: String, detail: &str) -> Self {
        let message = match detail {
            "" => what,
            detail => format!("{what}: {detail}"),
        };
        Self {
            field: field.to_string(),
            reason,
            message,
        }
    }

    fn cause(&self) -> StatusCause {
        StatusCause {
            reason: self.reason.to_string(),
            message: self.message.clone(),
            field: self.field.clone(),
        }
    }
}

impl fmt::Display for FieldError {
    /// `<field>: <message>`, as `field.Error` says itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
