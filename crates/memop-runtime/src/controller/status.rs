//! Status conditions: their types and reasons ([`condition`]), and their updates
//! ([`Conditions`]) as `meta.SetStatusCondition` makes them in Go.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The condition types and reasons the controllers report, in the vocabulary of kubebuilder's
/// deploy-image controllers, so that users and tools read them the same way.
pub mod condition {
    /// The operand is up: its Deployment rolled out with every replica available.
    pub const AVAILABLE: &str = "Available";
    /// Something needs attention: a failed rollout, a configuration error, a deletion.
    pub const DEGRADED: &str = "Degraded";

    /// Being reconciled, or reconciled and in sync.
    pub(crate) const RECONCILING: &str = "Reconciling";
    /// The size changed and the Deployment is being scaled to it.
    pub(crate) const RESIZING: &str = "Resizing";
    /// The Deployment's pods are still starting.
    pub const PROGRESSING: &str = "Progressing";
    /// The object is being deleted and its finalizer runs.
    pub const FINALIZING: &str = "Finalizing";
    /// The Deployment did not roll out (`ProgressDeadlineExceeded`, `ReplicaFailure`).
    pub(crate) const ROLLOUT_FAILED: &str = "RolloutFailed";
    /// The operator's configuration is missing something (an image variable).
    pub const MISCONFIGURED: &str = "Misconfigured";
    /// Writing the Deployment failed.
    pub(crate) const CREATE_FAILED: &str = "CreateFailed";
    /// Updating the Deployment failed.
    pub(crate) const UPDATE_FAILED: &str = "UpdateFailed";
    /// A change of the Deployment waits for other rollouts to complete
    /// (`--max-concurrent-rollouts`).
    pub(crate) const ROLLOUT_WAITING: &str = "RolloutWaiting";
}

/// The status of a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truth {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not known yet.
    Unknown,
}

impl Truth {
    /// As the API server spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

impl From<bool> for Truth {
    fn from(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

/// The status conditions of one object, being updated for one generation of its spec.
pub(crate) struct Conditions<'a> {
    list: &'a mut Vec<Condition>,
    generation: Option<i64>,
}

impl<'a> Conditions<'a> {
    /// The conditions `list` of an object at `generation` (its `metadata.generation`).
    pub fn new(list: &'a mut Vec<Condition>, generation: Option<i64>) -> Self {
        Self { list, generation }
    }

    /// Sets condition `type_`, keeping its `lastTransitionTime` unless its status changes (as
    /// `meta.SetStatusCondition` does in Go), so that setting it again changes nothing.
    pub fn set(&mut self, type_: &str, status: impl Into<Truth>, reason: &str, message: String) {
        let status = status.into().as_str();
        let last_transition_time = match self.list.iter().find(|c| c.type_ == type_) {
            Some(existing) if existing.status == status => existing.last_transition_time.clone(),
            // The API server keeps whole seconds; so do we, so that a re-read compares equal.
            _ => Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_default()),
        };
        let condition = Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.to_string(),
            message,
            observed_generation: self.generation,
            last_transition_time,
        };
        match self.list.iter_mut().find(|c| c.type_ == type_) {
            Some(existing) => *existing = condition,
            None => self.list.push(condition),
        }
    }

    /// Reports a failure: not [`condition::AVAILABLE`], and [`condition::DEGRADED`], both with
    /// `reason` and `message`.
    pub fn failing(&mut self, reason: &str, message: String) {
        self.set(condition::AVAILABLE, false, reason, message.clone());
        self.set(condition::DEGRADED, true, reason, message);
    }
}

/// The conditions of `list` whose type is one of `types`: what a controller puts in its status
/// apply, so that it owns only its own conditions and leaves other writers' alone.
pub(crate) fn owned_conditions(list: &[Condition], types: &[&str]) -> Vec<Condition> {
    list.iter()
        .filter(|c| types.contains(&c.type_.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_owned_conditions_are_kept() {
        let condition = |type_: &str| Condition {
            type_: type_.into(),
            status: "True".into(),
            reason: "R".into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
        };
        let list = [
            condition("Available"),
            condition("Backup"),
            condition("Degraded"),
        ];
        let owned = owned_conditions(&list, &[condition::AVAILABLE, condition::DEGRADED]);
        let types: Vec<_> = owned.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Available", "Degraded"]);
    }

    #[test]
    fn setting_a_condition_again_keeps_its_transition_time() {
        let long_ago = Time(Timestamp::from_second(946_684_800).unwrap()); // 2000-01-01
        let mut list = vec![Condition {
            type_: "Available".into(),
            status: "True".into(),
            reason: "Reconciling".into(),
            message: "ok".into(),
            observed_generation: Some(1),
            last_transition_time: long_ago.clone(),
        }];
        Conditions::new(&mut list, Some(2)).set("Available", true, "Reconciling", "still".into());
        assert_eq!(list.len(), 1);
        assert_eq!(
            list[0].last_transition_time, long_ago,
            "same status: time kept"
        );
        assert_eq!(list[0].message, "still");
        assert_eq!(list[0].observed_generation, Some(2));
        Conditions::new(&mut list, Some(2)).set("Available", false, "Failed", "down".into());
        assert_ne!(
            list[0].last_transition_time, long_ago,
            "status changed: time moves"
        );
        Conditions::new(&mut list, Some(2)).set("Degraded", false, "Reconciling", "fine".into());
        assert_eq!(list.len(), 2);
    }
}
