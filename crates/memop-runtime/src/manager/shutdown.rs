//! One shutdown signal shared by everything the manager runs.

use tokio::sync::watch;

/// Cloneable; [`Shutdown::trigger`] on any clone wakes [`Shutdown::wait`] on all of them.
#[derive(Clone)]
pub struct Shutdown {
    sender: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self {
            sender: watch::channel(false).0,
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
}
