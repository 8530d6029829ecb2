//! The time a controller goes by ([`Clock`]): the system's, or one a test sets and moves.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::runtime::controller::Action;

/// The time a controller goes by: the system's ([`Clock::system`]), or, in tests, one that
/// stands still until the test moves it ([`Clock::manual`]). The book's CronJob
/// controller has the same (`Clock` with `Now()`, a `realClock` in `main.go`), so that its
/// tests can say "it is now 10:05" instead of waiting. Cloning it is cheap: a manual clock's
/// clones move together.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    manual: Option<Arc<Mutex<Timestamp>>>,
}

impl Clock {
    /// The system's clock.
    pub fn system() -> Self {
        Self::default()
    }

    /// A clock that says `now` until [`Self::advance`] moves it.
    pub fn manual(now: Timestamp) -> Self {
        Self {
            manual: Some(Arc::new(Mutex::new(now))),
        }
    }

    /// The time now.
    pub fn now(&self) -> Timestamp {
        match &self.manual {
            Some(now) => *now.lock().expect("clock lock"),
            None => Timestamp::now(),
        }
    }

    /// Moves a manual clock on by `by`.
    ///
    /// # Panics
    /// On the system clock, which nothing moves.
    pub fn advance(&self, by: Duration) {
        let mut now = self.time();
        *now = now
            .checked_add(SignedDuration::try_from(by).expect("a duration a clock can move by"))
            .expect("a time a clock can show");
    }

    /// How long from now until `when` (zero once it has passed).
    pub(crate) fn until(&self, when: Timestamp) -> Duration {
        Duration::try_from(when.duration_since(self.now())).unwrap_or_default()
    }

    /// Come back at `when`: a reconcile's answer when the next thing to do is due then (the
    /// next scheduled run of a CronJob). At once when `when` has passed.
    pub fn requeue_at(&self, when: Timestamp) -> Action {
        Action::requeue(self.until(when))
    }

    fn time(&self) -> std::sync::MutexGuard<'_, Timestamp> {
        self.manual
            .as_ref()
            .expect("only a manual clock (Clock::manual) can be moved")
            .lock()
            .expect("clock lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_stands_still_until_moved_and_its_clones_move_with_it() {
        let start: Timestamp = "2026-12-05T10:00:00Z".parse().unwrap();
        let clock = Clock::manual(start);
        let seen_by_controller = clock.clone();
        assert_eq!(seen_by_controller.now(), start);
        clock.advance(Duration::from_secs(300));
        assert_eq!(
            seen_by_controller.now(),
            "2026-12-05T10:05:00Z".parse().unwrap()
        );
    }

    #[test]
    fn a_requeue_at_a_time_waits_until_then_or_not_at_all_once_past() {
        let clock = Clock::manual("2026-12-05T10:00:00Z".parse().unwrap());
        let next = "2026-12-05T10:01:30Z".parse().unwrap();
        assert_eq!(clock.until(next), Duration::from_secs(90));
        assert_eq!(
            clock.requeue_at(next),
            Action::requeue(Duration::from_secs(90))
        );
        clock.advance(Duration::from_secs(120));
        assert_eq!(clock.until(next), Duration::ZERO);
    }

    #[test]
    fn the_system_clock_goes_by_the_system_time() {
        let before = Timestamp::now();
        let now = Clock::system().now();
        assert!(before <= now && now <= Timestamp::now());
    }

    #[test]
    #[should_panic(expected = "only a manual clock")]
    fn the_system_clock_cannot_be_moved() {
        Clock::system().advance(Duration::from_secs(1));
    }
}
