//! Leader election through a `coordination.k8s.io/v1` Lease, with client-go's algorithm
//! (`tools/leaderelection`, which controller-runtime uses). Only the leader runs controllers; a
//! replica that loses the lease exits, as controller-runtime's managers do, so that it restarts
//! as a clean standby.
//!
//! kube-runtime has no leader election, and the crates that do it for kube 5 decide differently
//! from client-go: kube-lease-manager judges expiry by comparing the holder's wall-clock
//! `renewTime` with the local clock and releases an "expired" lease with an unconditional write;
//! kubert's lease (on kube 1.1) also judges by the wall clock. So this module implements
//! client-go's rules:
//! - A candidate judges expiry by its own monotonic clock: it notes when it last saw the Lease's
//!   spec change, and takes the Lease over only `leaseDurationSeconds` after that. A holder whose
//!   clock is behind or ahead cannot make its lease look expired early.
//! - Every write (create, acquire, renew, release) is conditional: a merge patch that carries the
//!   `resourceVersion` read, so of two writers racing from one view, one gets a 409 and loses.
//! - The leader renews every [`RETRY_PERIOD`], and stops leading when it has not renewed for
//!   [`RENEW_DEADLINE`], counted from when it sent its last successful renewal. A standby saw
//!   that renewal only after it was written, so it cannot take over until [`LEASE_DURATION`]
//!   after it: the leader has stopped 5 s before. A leader that reads another holder in the
//!   Lease stops at once (client-go waits for its deadline).
//! - A standby tries every [`RETRY_PERIOD`], so it takes a released Lease within one.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::Status;
use kube::{Api, Client};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Flags, Shutdown};
use crate::Operator;

/// How long a standby waits, from when it last saw the Lease change, before it takes it over
/// (client-go's LeaseDuration, the default of controller-runtime and kube-controller-manager).
pub(super) const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long the leader keeps leading after it sent its last successful renewal (RenewDeadline).
pub(super) const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often the leader renews, and a standby tries to acquire (RetryPeriod).
pub(super) const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// How long the release of the Lease at shutdown may take: after a graceful drain, inside the
/// pod's grace period. A release that does not make it leaves the Lease to expire.
pub(super) const RELEASE_TIMEOUT: Duration = Duration::from_secs(1);

pub struct Config {
    lease_name: String,
    namespace: Option<String>,
    name: String,
    identity: String,
}

impl Config {
    /// The Lease's name (`--leader-election-id`).
    pub fn lease_name(&self) -> &str {
        &self.lease_name
    }

    /// This replica's name: the pod's name, as logs show it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Lease of `operator`, as `flags` name it, for this process.
    pub fn from_flags(operator: &Operator, flags: &Flags) -> Self {
        Self::for_replica(operator, flags, &replica_name(operator))
    }

    /// The Lease of `operator`, as `flags` name it, for a process of replica `name`.
    pub(super) fn for_replica(operator: &Operator, flags: &Flags, name: &str) -> Self {
        Self {
            lease_name: flags
                .leader_election_id
                .clone()
                .unwrap_or_else(|| operator.leader_election_id()),
            namespace: flags
                .leader_election_namespace
                .clone()
                .filter(|ns| !ns.is_empty()),
            name: name.to_string(),
            identity: process_identity(name),
        }
    }
}

/// This replica's name: in a pod, POD_NAME (set from the downward API in config/manager) or
/// else HOSTNAME, the pod's name; outside one, the operator's name and the process id.
pub(super) fn replica_name(operator: &Operator) -> String {
    std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| format!("{}-{}", operator.name, std::process::id()))
}

/// The holder identity of a process of replica `name`: `<name>_<a random UUID>`, as
/// kube-controller-manager and controller-runtime make it (`id + "_" + uuid.NewUUID()`). A
/// name alone is not unique per process: two pods of one StatefulSet ordinal (one
/// force-deleted from a partitioned node), a `POD_NAME` fixed in a patch, or `HOSTNAME` under
/// `hostNetwork` (the node's name) give two processes one name, and a Lease held by one's own
/// identity is renewed at once, so both would lead for ever.
pub(super) fn process_identity(name: &str) -> String {
    format!("{name}_{}", uuid_v4())
}

/// A random (version 4) UUID, from the operating system's generator.
fn uuid_v4() -> String {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the operating system's random generator");
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A held lease, renewed in the background until it is released, abandoned or lost.
pub struct Lease {
    lost: watch::Receiver<bool>,
    stop: oneshot::Sender<()>,
    renewing: JoinHandle<Elector>,
}

/// Waits until this replica holds the lease; `None` if shutdown came first.
pub async fn acquire(client: Client, config: &Config, shutdown: &Shutdown) -> Option<Lease> {
    // Outside a cluster the client's default namespace comes from the kubeconfig context.
    let namespace = config
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let leases = Api::namespaced(client, &namespace);
    let mut elector = Elector::new(leases, &config.lease_name, &config.identity);
    tracing::info!(lease = %config.lease_name, %namespace, replica = %config.name, identity = %config.identity, "waiting to become the leader");
    let renewed = tokio::select! {
        renewed = elector.lead() => renewed,
        () = shutdown.wait() => return None,
    };
    tracing::info!(replica = %config.name, identity = %config.identity, "became the leader");
    Some(Lease::renew(elector, renewed))
}

impl Lease {
    fn renew(elector: Elector, renewed: Instant) -> Self {
        let (lost, lost_receiver) = watch::channel(false);
        let (stop, stopped) = oneshot::channel();
        Self {
            lost: lost_receiver,
            stop,
            renewing: tokio::spawn(elector.keep(renewed, stopped, lost)),
        }
    }

    /// Resolves when this replica must stop leading: another replica holds the Lease, or this
    /// one has not renewed it within [`RENEW_DEADLINE`].
    pub async fn lost(&self) {
        let mut lost = self.lost.clone();
        // An error means the renewing task is gone, and the lease with it.
        let _ = lost.wait_for(|&lost| lost).await;
    }

    /// Lets go of a lost lease without touching it: another replica may hold it now.
    pub fn abandon(self) {
        self.renewing.abort();
    }

    /// Stops renewing and gives the Lease up, if this replica still holds it, so that a standby
    /// takes over at its next try instead of when the lease expires. Bounded by
    /// [`RELEASE_TIMEOUT`].
    pub async fn release(self) {
        // The renewing task returns at once, dropping a renewal under way.
        let _ = self.stop.send(());
        let release = async {
            let mut elector = self.renewing.await?;
            anyhow::Ok(elector.release().await?)
        };
        match tokio::time::timeout(RELEASE_TIMEOUT, release).await {
            Ok(Ok(true)) => tracing::info!("released the leader election lease"),
            Ok(Ok(false)) => tracing::info!("the leader election lease is no longer ours"),
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "could not release the leader election lease")
            }
            Err(_) => tracing::warn!("releasing the leader election lease timed out"),
        }
    }
}

/// What one attempt to acquire or renew the Lease found.
#[derive(Debug, PartialEq)]
pub(super) enum Attempt {
    /// This replica holds it.
    Held,
    /// Another replica holds it, and it has not expired by this replica's observation.
    HeldBy(String),
    /// The attempt failed, or lost a race: it says nothing about who holds the Lease.
    Failed,
}

/// One replica's view of the Lease, and its conditional writes to it.
pub(super) struct Elector {
    leases: Api<LeaseObject>,
    name: String,
    identity: String,
    /// The Lease as this replica last read or wrote it.
    observed: Option<Observed>,
    /// The `leaseDurationSeconds` this replica writes ([`LEASE_DURATION`] but in tests).
    lease_duration: Duration,
    /// Labels and annotations every write of this replica carries (a shard's ring and
    /// claims: see `sharding.rs`), as a JSON object of `metadata`; empty for leader election.
    metadata: serde_json::Map<String, Value>,
}

pub(super) struct Observed {
    pub(super) spec: LeaseSpec,
    version: String,
    /// When this replica first saw `spec`, by its own clock.
    pub(super) seen: Instant,
}

impl Observed {
    /// Whether the lease, as seen, has expired at `now`: `leaseDurationSeconds` after it was
    /// first seen, whatever its wall-clock times say.
    pub(super) fn expired(&self, now: Instant) -> bool {
        let duration = self.spec.lease_duration_seconds.unwrap_or(0);
        now >= self.seen + Duration::from_secs(u64::try_from(duration).unwrap_or(0))
    }

    pub(super) fn holder(&self) -> Option<&str> {
        self.spec
            .holder_identity
            .as_deref()
            .filter(|h| !h.is_empty())
    }
}

impl Elector {
    pub(super) fn new(leases: Api<LeaseObject>, name: &str, identity: &str) -> Self {
        Self {
            leases,
            name: name.to_string(),
            identity: identity.to_string(),
            observed: None,
            lease_duration: LEASE_DURATION,
            metadata: serde_json::Map::new(),
        }
    }

    /// Writes `duration` as the Lease's `leaseDurationSeconds` (whole seconds, as the API has it).
    pub(super) fn with_lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// Sets the `metadata` field `field` (`"labels"` or `"annotations"`) that every write
    /// from now on carries: a merge patch, so keys not named stay as they are.
    pub(super) fn set_metadata(&mut self, field: &str, value: Value) {
        self.metadata.insert(field.to_string(), value);
    }

    /// Tries to acquire the Lease every [`RETRY_PERIOD`] until this replica holds it; returns
    /// when it sent the write that won.
    async fn lead(&mut self) -> Instant {
        loop {
            let sent = Instant::now();
            match self.try_acquire_or_renew().await {
                Attempt::Held => return sent,
                Attempt::HeldBy(holder) => tracing::debug!(%holder, "the lease is held"),
                Attempt::Failed => {}
            }
            tokio::time::sleep_until(sent + RETRY_PERIOD).await;
        }
    }

    /// Renews the Lease every [`RETRY_PERIOD`] until `stop`, or until this replica must stop
    /// leading, which it then sends to `lost`. `renewed` is when it sent its last successful
    /// renewal (or acquisition).
    async fn keep(
        mut self,
        mut renewed: Instant,
        mut stop: oneshot::Receiver<()>,
        lost: watch::Sender<bool>,
    ) -> Self {
        loop {
            let deadline = renewed + RENEW_DEADLINE;
            tokio::select! {
                () = tokio::time::sleep_until((Instant::now() + RETRY_PERIOD).min(deadline)) => {}
                _ = &mut stop => return self,
            }
            let sent = Instant::now();
            let attempt = tokio::select! {
                attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()) => attempt,
                _ = &mut stop => return self,
            };
            match attempt {
                Ok(Attempt::Held) => renewed = sent,
                Ok(Attempt::HeldBy(holder)) => {
                    tracing::warn!(%holder, "another replica holds the lease");
                    break;
                }
                Ok(Attempt::Failed) if Instant::now() < deadline => {}
                Ok(Attempt::Failed) | Err(_) => {
                    tracing::warn!(
                        deadline = ?RENEW_DEADLINE,
                        "the lease was not renewed within the renew deadline"
                    );
                    break;
                }
            }
        }
        lost.send_replace(true);
        self
    }

    /// client-go's `tryAcquireOrRenew`: renews the Lease if this replica holds it, or takes it
    /// if it is free or has expired by this replica's observation.
    pub(super) async fn try_acquire_or_renew(&mut self) -> Attempt {
        // The leader's fast path: renew from the Lease as it last wrote it, without reading it.
        if self.is_leader() && !self.expired() {
            match self.write(self.claim()).await {
                Ok(()) => return Attempt::Held,
                Err(err) => tracing::debug!(error = %err, "renewing failed; reading the lease"),
            }
        }
        match self.leases.get_opt(&self.name).await {
            Ok(Some(lease)) => self.observe(lease),
            Ok(None) => return self.create().await,
            Err(err) => {
                tracing::warn!(error = %err, "reading the leader election lease failed");
                return Attempt::Failed;
            }
        }
        if !self.is_leader()
            && !self.expired()
            && let Some(holder) = self.observed.as_ref().and_then(Observed::holder)
        {
            return Attempt::HeldBy(holder.to_string());
        }
        match self.write(self.claim()).await {
            Ok(()) => Attempt::Held,
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                tracing::debug!("another replica wrote the lease first");
                Attempt::Failed
            }
            Err(err) => {
                tracing::warn!(error = %err, "writing the leader election lease failed");
                Attempt::Failed
            }
        }
    }

    /// Gives the Lease up if this replica holds it, as client-go does: no holder, and a
    /// one-second duration. Returns whether it did.
    pub(super) async fn release(&mut self) -> kube::Result<bool> {
        if !self.is_leader() {
            return Ok(false);
        }
        match self.write(Self::vacated()).await {
            // Written since this replica last saw it: by a renewal of its own that timed out
            // but landed, or by another replica. Read it again, and release only the former.
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                match self.leases.get_opt(&self.name).await? {
                    Some(lease) => self.observe(lease),
                    None => return Ok(false),
                }
                if !self.is_leader() {
                    return Ok(false);
                }
                self.write(Self::vacated()).await?;
            }
            written => written?,
        }
        Ok(true)
    }

    /// Records the Lease as read or written now.
    fn observe(&mut self, lease: LeaseObject) {
        let spec = lease.spec.unwrap_or_default();
        let seen = match &self.observed {
            Some(observed) if observed.spec == spec => observed.seen,
            _ => Instant::now(),
        };
        self.observed = Some(Observed {
            spec,
            version: lease.metadata.resource_version.unwrap_or_default(),
            seen,
        });
    }

    /// Whether this replica holds the Lease, as it last saw it.
    fn is_leader(&self) -> bool {
        let holder = self.observed.as_ref().and_then(Observed::holder);
        holder == Some(self.identity.as_str())
    }

    fn expired(&self) -> bool {
        (self.observed.as_ref()).is_none_or(|observed| observed.expired(Instant::now()))
    }

    /// The spec with which this replica holds the Lease: renewed now, and acquired now unless
    /// it held it already.
    fn claim(&self) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        let old = self.observed.as_ref().map(|observed| &observed.spec);
        let (acquired, transitions) = match old {
            Some(old) if self.is_leader() => (old.acquire_time.clone(), old.lease_transitions),
            Some(old) => (None, Some(old.lease_transitions.unwrap_or(0) + 1)),
            None => (None, Some(0)),
        };
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.lease_duration.as_secs() as i32),
            acquire_time: acquired.or_else(|| Some(now.clone())),
            renew_time: Some(now),
            lease_transitions: transitions,
            ..LeaseSpec::default()
        }
    }

    /// The spec of a released Lease.
    fn vacated() -> Value {
        let now = MicroTime(Timestamp::now());
        json!({
            "holderIdentity": null,
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
        })
    }

    async fn create(&mut self) -> Attempt {
        let mut metadata: ObjectMeta = serde_json::from_value(Value::Object(self.metadata.clone()))
            .expect("labels and annotations of strings");
        metadata.name = Some(self.name.clone());
        let lease = LeaseObject {
            metadata,
            spec: Some(self.claim()),
        };
        let params = PostParams {
            field_manager: Some(self.field_manager()),
            ..PostParams::default()
        };
        match self.leases.create(&params, &lease).await {
            Ok(created) => {
                self.observe(created);
                Attempt::Held
            }
            Err(err) => {
                // AlreadyExists when another replica created it first.
                tracing::debug!(error = %err, "creating the leader election lease failed");
                Attempt::Failed
            }
        }
    }

    /// Patches the Lease's spec on condition that it is still the version this replica last
    /// saw: the API server answers 409 Conflict to a patch whose resourceVersion is not the
    /// object's.
    async fn write(&mut self, spec: impl serde::Serialize) -> kube::Result<()> {
        let version = self.observed.as_ref().map(|o| o.version.as_str());
        // An empty resourceVersion would make the patch unconditional.
        let Some(version) = version.filter(|v| !v.is_empty()) else {
            let status = Status::failure("no resourceVersion of the lease is known", "Conflict");
            return Err(kube::Error::Api(status.with_code(409).boxed()));
        };
        let mut metadata = self.metadata.clone();
        metadata.insert("resourceVersion".into(), version.into());
        let patch = json!({ "metadata": metadata, "spec": spec });
        let params = PatchParams {
            field_manager: Some(self.field_manager()),
            ..PatchParams::default()
        };
        let lease = (self.leases)
            .patch(&self.name, &params, &Patch::Merge(&patch))
            .await?;
        self.observe(lease);
        Ok(())
    }

    /// The field manager of this replica's Lease writes (at most 128 characters, as the API
    /// allows), which names the replica in the Lease's managedFields.
    fn field_manager(&self) -> String {
        format!("leader-election-{}", self.identity)
            .chars()
            .take(128)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::{Arc, Mutex};

    use http_body_util::BodyExt;

    use super::*;

    const NAME: &str = "example-lease";
    const PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

    /// An API server holding one Lease, that answers GET, POST and merge PATCH of it with the
    /// real one's resourceVersion preconditions. It can refuse the writes of a replica (403),
    /// and apply another writer's spec just before it handles the next patch (a racing write).
    #[derive(Clone, Default)]
    struct Fake(Arc<Mutex<State>>);

    #[derive(Default)]
    struct State {
        lease: Option<Value>,
        version: u64,
        refused: HashSet<String>,
        race: Option<Value>,
        /// When each replica's writes succeeded.
        written: Vec<(String, Instant)>,
    }

    impl State {
        fn store(&mut self, mut lease: Value) -> Value {
            self.version += 1;
            lease["metadata"]["resourceVersion"] = self.version.to_string().into();
            self.lease = Some(lease.clone());
            lease
        }

        fn answer(&mut self, who: &str, method: &http::Method, body: &[u8]) -> (u16, Value) {
            let status = |code: u16, reason: &str| {
                let status = json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": reason });
                (code, status)
            };
            if *method == http::Method::GET {
                return match &self.lease {
                    Some(lease) => (200, lease.clone()),
                    None => status(404, "NotFound"),
                };
            }
            if self.refused.contains(who) {
                return status(403, "Forbidden");
            }
            let request: Value = serde_json::from_slice(body).expect("a JSON body");
            let written = if *method == http::Method::POST {
                if self.lease.is_some() {
                    return status(409, "AlreadyExists");
                }
                self.store(request)
            } else {
                if let Some(spec) = self.race.take() {
                    self.write_spec(spec);
                }
                let Some(mut lease) = self.lease.clone() else {
                    return status(404, "NotFound");
                };
                // As the real one: a patch without a resourceVersion is unconditional.
                let version = &request["metadata"]["resourceVersion"];
                if !version.is_null() && *version != lease["metadata"]["resourceVersion"] {
                    return status(409, "Conflict");
                }
                json_patch::merge(&mut lease, &request);
                self.store(lease)
            };
            self.written.push((who.to_string(), Instant::now()));
            (200, written)
        }

        /// Another writer's update of the spec.
        fn write_spec(&mut self, spec: Value) {
            let mut lease = self.lease.clone().unwrap_or_else(|| {
                json!({ "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": { "name": NAME, "namespace": "default" } })
            });
            lease["spec"] = spec;
            self.store(lease);
        }
    }

    impl Fake {
        fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.0.lock().unwrap()
        }

        /// The elector of replica `who`.
        fn elector(&self, who: &str) -> Elector {
            self.elector_as(who, who)
        }

        /// The elector of process `who` (the name of its requests here), holding the Lease as
        /// `identity`.
        fn elector_as(&self, who: &str, identity: &str) -> Elector {
            let fake = self.clone();
            let holder = identity.to_string();
            let identity = who.to_string();
            let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
                let (fake, who) = (fake.clone(), identity.clone());
                async move {
                    let path = request.uri().path();
                    assert!(path == PATH || path == format!("{PATH}/{NAME}"), "{path}");
                    let method = request.method().clone();
                    let body = request.into_body().collect().await?.to_bytes();
                    let (code, answer) = fake.state().answer(&who, &method, &body);
                    let body = kube::client::Body::from(serde_json::to_vec(&answer)?);
                    Ok::<_, Box<dyn std::error::Error + Send + Sync>>(
                        http::Response::builder().status(code).body(body)?,
                    )
                }
            });
            let leases = Api::namespaced(Client::new(service, "default"), "default");
            Elector::new(leases, NAME, &holder)
        }

        fn spec(&self) -> Value {
            let state = self.state();
            state.lease.as_ref().map(|l| l["spec"].clone()).unwrap()
        }

        fn holder(&self) -> Value {
            self.spec()["holderIdentity"].clone()
        }

        /// When `who` last wrote the Lease.
        fn last_write(&self, who: &str) -> Instant {
            let state = self.state();
            let writes = state.written.iter().filter(|(w, _)| w == who);
            writes.map(|(_, at)| *at).max().unwrap()
        }
    }

    /// `future`'s output; a test whose future never ends fails instead of running for ever (the
    /// clock is paused: this costs no real time).
    async fn bounded<T>(future: impl Future<Output = T>) -> T {
        let limit = Duration::from_secs(600);
        let output = tokio::time::timeout(limit, future).await;
        output.expect("still waiting after 600 s")
    }

    /// A Lease held by `holder`, renewed at the wall-clock `renewed`.
    fn held_by(holder: &str, renewed: Timestamp) -> Value {
        json!({ "holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": MicroTime(renewed), "leaseTransitions": 3 })
    }

    #[tokio::test(start_paused = true)]
    async fn a_free_lease_is_created_and_held() {
        let fake = Fake::default();
        let mut elector = fake.elector("a");
        assert_eq!(elector.try_acquire_or_renew().await, Attempt::Held);
        assert_eq!(fake.holder(), "a");
        assert_eq!(fake.spec()["leaseTransitions"], 0);
        // Renewals keep the acquisition time, and count no transition.
        let acquired = fake.spec()["acquireTime"].clone();
        tokio::time::sleep(RETRY_PERIOD).await;
        assert_eq!(elector.try_acquire_or_renew().await, Attempt::Held);
        assert_eq!(fake.spec()["acquireTime"], acquired);
        assert_eq!(fake.spec()["leaseTransitions"], 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_renewed_by_a_clock_far_behind_is_taken_only_when_it_stops_changing() {
        let fake = Fake::default();
        // The holder's clock is an hour behind: by the wall clock its lease expired long ago.
        let behind = Timestamp::now() - Duration::from_secs(3600);
        fake.state().write_spec(held_by("other", behind));
        let mut elector = fake.elector("a");
        let renewing = {
            let fake = fake.clone();
            tokio::spawn(async move {
                for renewal in 1..=30 {
                    tokio::time::sleep(RETRY_PERIOD).await;
                    let renewed = behind + Duration::from_secs(renewal * 2);
                    fake.state().write_spec(held_by("other", renewed));
                }
            })
        };
        let wait = tokio::time::timeout(Duration::from_secs(55), elector.lead());
        assert!(wait.await.is_err(), "took a lease that is still renewed");
        renewing.await.unwrap();
        // Its last renewal, 60 s in: a lease duration after the elector saw it, it is expired.
        let stopped = Instant::now();
        let renewed = bounded(elector.lead()).await;
        assert!(renewed >= stopped + LEASE_DURATION - RETRY_PERIOD);
        assert!(renewed <= stopped + LEASE_DURATION + RETRY_PERIOD);
        assert_eq!(fake.holder(), "a");
        assert_eq!(fake.spec()["leaseTransitions"], 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_released_lease_is_taken_at_the_next_try() {
        let fake = Fake::default();
        let mut leader = fake.elector("a");
        bounded(leader.lead()).await;
        let mut standby = fake.elector("b");
        let standby = tokio::spawn(async move { standby.lead().await });
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!standby.is_finished());
        assert!(leader.release().await.unwrap());
        assert_eq!(fake.holder(), Value::Null);
        let released = Instant::now();
        let taken = bounded(standby).await.unwrap();
        assert!(taken <= released + RETRY_PERIOD, "{:?}", taken - released);
        assert_eq!(fake.holder(), "b");
        // The former leader, which no longer holds it, does not write it again.
        assert!(!leader.release().await.unwrap());
        assert_eq!(fake.holder(), "b");
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_from_a_stale_view_gets_a_conflict_and_does_not_lead() {
        let fake = Fake::default();
        let mut first = fake.elector("a");
        bounded(first.lead()).await;
        first.release().await.unwrap();
        // "b" reads the free Lease, but "c" writes it before b's write arrives.
        let mut b = fake.elector("b");
        fake.state().race = Some(held_by("c", Timestamp::now()));
        assert_eq!(b.try_acquire_or_renew().await, Attempt::Failed);
        assert_eq!(fake.holder(), "c");
        assert_eq!(b.try_acquire_or_renew().await, Attempt::HeldBy("c".into()));
        assert_eq!(fake.holder(), "c");
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_stops_at_its_next_renewal_when_another_replica_holds_the_lease() {
        let fake = Fake::default();
        let mut elector = fake.elector("a");
        let renewed = bounded(elector.lead()).await;
        let lease = Lease::renew(elector, renewed);
        tokio::time::sleep(Duration::from_secs(5)).await;
        // Written over without a precondition, as by an admin: the leader's renewal, from its
        // last view, conflicts, and it reads the new holder.
        fake.state().write_spec(held_by("other", Timestamp::now()));
        let usurped = Instant::now();
        bounded(lease.lost()).await;
        assert!(Instant::now() <= usurped + RETRY_PERIOD);
        assert_eq!(fake.holder(), "other");
        // Nor does its release touch it.
        lease.release().await;
        assert_eq!(fake.holder(), "other");
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_whose_renewals_are_refused_stops_before_a_standby_takes_over() {
        let fake = Fake::default();
        let mut elector = fake.elector("a");
        let renewed = bounded(elector.lead()).await;
        let lease = Lease::renew(elector, renewed);
        let mut standby = fake.elector("b");
        let standby = tokio::spawn(async move { standby.lead().await });
        tokio::time::sleep(Duration::from_secs(7)).await;
        fake.state().refused.insert("a".into());
        bounded(lease.lost()).await;
        let stopped = Instant::now();
        let renewed = fake.last_write("a");
        assert_eq!(stopped, renewed + RENEW_DEADLINE);
        let taken = bounded(standby).await.unwrap();
        assert_eq!(fake.holder(), "b");
        // The standby saw the last renewal when it polled next, and waited a lease duration.
        assert!(taken >= renewed + LEASE_DURATION, "{:?}", taken - renewed);
        assert!(taken >= stopped + (LEASE_DURATION - RENEW_DEADLINE));
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_whose_requests_hang_stops_at_the_renew_deadline() {
        let fake = Fake::default();
        let mut elector = fake.elector("a");
        let renewed = bounded(elector.lead()).await;
        // A client whose every request hangs, as on a half-open connection.
        elector.leases = Api::namespaced(
            Client::new(
                tower::service_fn(|_: http::Request<kube::client::Body>| {
                    std::future::pending::<
                        Result<http::Response<kube::client::Body>, std::convert::Infallible>,
                    >()
                }),
                "default",
            ),
            "default",
        );
        let lease = Lease::renew(elector, renewed);
        bounded(lease.lost()).await;
        assert_eq!(Instant::now(), renewed + RENEW_DEADLINE);
    }

    #[tokio::test(start_paused = true)]
    async fn a_release_is_conditional() {
        let fake = Fake::default();
        let mut elector = fake.elector("a");
        bounded(elector.lead()).await;
        // A renewal of its own that timed out, but landed: the release reads it and goes on.
        let mut landed = fake.spec();
        landed["renewTime"] = serde_json::to_value(MicroTime(Timestamp::now())).unwrap();
        fake.state().write_spec(landed);
        assert!(elector.release().await.unwrap());
        assert_eq!(fake.holder(), Value::Null);
        assert_eq!(fake.spec()["leaseDurationSeconds"], 1);
        // Another replica took it since this one last saw it: left alone.
        bounded(elector.lead()).await;
        fake.state().write_spec(held_by("other", Timestamp::now()));
        assert!(!elector.release().await.unwrap());
        assert_eq!(fake.holder(), "other");
    }

    /// Two processes of one replica name (a StatefulSet pod force-deleted from a partitioned
    /// node and its replacement, a `POD_NAME` fixed in a patch, `HOSTNAME` under hostNetwork)
    /// never both hold the Lease: the second takes it only once the first has stopped renewing
    /// it, a lease duration later, as from any other replica.
    #[tokio::test(start_paused = true)]
    async fn two_processes_of_one_name_never_both_hold_the_lease() {
        let fake = Fake::default();
        let (one, two) = (process_identity("a"), process_identity("a"));
        let mut first = fake.elector_as("first", &one);
        let mut second = fake.elector_as("second", &two);
        for round in 0..5 {
            let (a, b) = (
                first.try_acquire_or_renew().await,
                second.try_acquire_or_renew().await,
            );
            assert!(
                a != Attempt::Held || b != Attempt::Held,
                "round {round}: both processes of \"a\" hold the lease"
            );
            assert_eq!(a, Attempt::Held, "round {round}");
            tokio::time::sleep(RETRY_PERIOD).await;
        }
        // The first keeps renewing: the second waits, whatever its name.
        let lease = Lease::renew(first, Instant::now() - RETRY_PERIOD);
        let standby = tokio::spawn(async move { second.lead().await });
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(
            !standby.is_finished(),
            "took a lease held by another process"
        );
        assert_eq!(fake.holder(), one.as_str());
        // Killed: the second takes it a lease duration after the last renewal it saw.
        lease.abandon();
        let stopped = Instant::now();
        let taken = bounded(standby).await.unwrap();
        assert!(
            taken >= stopped + LEASE_DURATION - RETRY_PERIOD,
            "{:?}",
            taken - stopped
        );
        assert!(
            taken <= stopped + LEASE_DURATION + RETRY_PERIOD,
            "{:?}",
            taken - stopped
        );
        assert_eq!(fake.holder(), two.as_str());
    }

    /// The same on the real control plane: two processes of one name, each trying every retry
    /// period, never both hold the Lease, and the second never takes it while the first
    /// renews it.
    #[tokio::test]
    async fn two_processes_of_one_name_never_both_hold_the_lease_on_the_real_control_plane() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture");
        let Some(env) = memop_test::TestEnv::real_for(&fixture).await else {
            return;
        };
        let leases: Api<LeaseObject> = Api::namespaced(env.admin.clone(), &env.namespace);
        let (one, two) = (process_identity("pod-0"), process_identity("pod-0"));
        let mut first = Elector::new(leases.clone(), NAME, &one);
        let mut second = Elector::new(leases.clone(), NAME, &two);
        let mut held = [0, 0];
        for round in 0..6 {
            let a = first.try_acquire_or_renew().await;
            let b = second.try_acquire_or_renew().await;
            assert!(
                a != Attempt::Held || b != Attempt::Held,
                "round {round}: both processes of \"pod-0\" hold the lease"
            );
            held[0] += usize::from(a == Attempt::Held);
            held[1] += usize::from(b == Attempt::Held);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(held, [6, 0]);
        let lease = leases.get(NAME).await.unwrap();
        assert_eq!(
            lease.spec.unwrap().holder_identity.as_deref(),
            Some(one.as_str())
        );
    }

    #[test]
    fn a_process_identity_is_its_name_and_a_uuid_of_its_own() {
        let (one, two) = (process_identity("pod-0"), process_identity("pod-0"));
        assert_ne!(one, two);
        for identity in [&one, &two] {
            let (name, uuid) = identity.split_once('_').unwrap();
            assert_eq!(name, "pod-0");
            assert_eq!(uuid.len(), 36, "{uuid}");
            assert_eq!(uuid.as_bytes()[14], b'4', "a version 4 UUID: {uuid}");
            assert!(
                uuid.chars().all(|c| c == '-' || c.is_ascii_hexdigit()),
                "{uuid}"
            );
        }
    }
}
