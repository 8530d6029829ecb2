//! One shutdown signal shared by everything the manager runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;

/// Cloneable; [`Shutdown::trigger`] on any clone wakes [`Shutdown::wait`] on all of them.
#[derive(Clone)]
pub struct Shutdown {
    sender: watch::Sender<bool>,
    /// What [`Shutdown::run_deferred`] runs, in the order it was deferred.
    deferred: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self {
            sender: watch::channel(false).0,
            deferred: Arc::default(),
        }
    }
}

impl Shutdown {
    /// Signals shutdown to everything waiting on it.
    pub fn trigger(&self) {
        self.sender.send_replace(true);
    }

    /// Resolves once shutdown was triggered (at once if it already was).
    pub async fn wait(&self) {
        let mut receiver = self.sender.subscribe();
        // An error means every sender is gone, which cannot happen while `self` lives.
        let _ = receiver.wait_for(|&down| down).await;
    }

    /// Has [`Shutdown::run_deferred`] run `cleanup` once everything has stopped: to undo
    /// what a task changed in the cluster for as long as it runs (`make run`'s webhooks).
    pub fn defer(&self, cleanup: impl Future<Output = ()> + Send + 'static) {
        self.deferred
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(Box::pin(cleanup));
    }

    /// Runs what was deferred, one after the other, each within `timeout` (a cluster that
    /// does not answer must not keep the process from exiting); what times out is logged.
    pub async fn run_deferred(&self, timeout: Duration) {
        let deferred = std::mem::take(
            &mut *self
                .deferred
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        for cleanup in deferred {
            if tokio::time::timeout(timeout, cleanup).await.is_err() {
                tracing::warn!(?timeout, "a cleanup at shutdown did not finish in time");
            }
        }
    }
}

/// Triggers `shutdown` on SIGTERM (what Kubernetes sends) or SIGINT (Ctrl-C).
pub fn listen_for_signals(shutdown: Shutdown) {
    tokio::spawn(async move {
        let terminate = async {
            #[cfg(unix)]
            if let Ok(mut sigterm) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            {
                sigterm.recv().await;
                return;
            }
            std::future::pending::<()>().await;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = terminate => {}
        }
        tracing::info!("shutdown signal received; stopping controllers");
        shutdown.trigger();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wait_resolves_after_trigger_on_any_clone() {
        let shutdown = Shutdown::default();
        let waiter = tokio::spawn({
            let s = shutdown.clone();
            async move { s.wait().await }
        });
        shutdown.clone().trigger();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        // Already triggered: resolves at once.
        tokio::time::timeout(std::time::Duration::from_secs(5), shutdown.wait())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn deferred_cleanups_run_once_in_order_and_a_stuck_one_is_cut_short() {
        let shutdown = Shutdown::default();
        let ran = Arc::new(Mutex::new(Vec::new()));
        for step in ["first", "second"] {
            let ran = ran.clone();
            shutdown
                .clone()
                .defer(async move { ran.lock().unwrap().push(step) });
        }
        shutdown.defer(std::future::pending());
        let timeout = Duration::from_millis(50);
        tokio::time::timeout(Duration::from_secs(5), shutdown.run_deferred(timeout))
            .await
            .unwrap();
        shutdown.run_deferred(timeout).await;
        assert_eq!(*ran.lock().unwrap(), ["first", "second"]);
    }
}
