//! The manager end to end on the real control plane (skipped without `KUBEBUILDER_ASSETS`):
//! the example manager (`examples/manager/`) started as `make run` would start a project's,
//! but with the kubeconfig of its own ServiceAccount, bound to the RBAC of
//! `tests/fixture/config/rbac`, and leader election on. It must answer its probes, serve
//! metrics over HTTPS to metrics readers only, reconcile with its controller, hold the Lease,
//! and on SIGTERM exit within the pod's grace period, releasing the Lease for the next leader.
//! It must also stop at once when another replica takes the Lease, fail visibly when its caches
//! cannot sync, stop on SIGTERM even then, and not let idle connections tie up its probes.

#[path = "../examples/manager/configmaps.rs"]
#[allow(dead_code)] // the example's controller: here for its RULES and names
mod configmaps;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::Role;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use memop_runtime::rbac::{Scope, role_yaml};
use memop_test::envtest::{apply, free_port, http_get};
use memop_test::https::{Trust, https_get, write_serving_certificate};
use memop_test::{Backend, TestEnv, eventually};
use serde_json::{Value, json};

/// The example's leader election Lease: `<name>.<domain>` of its `Operator`, the default of
/// `--leader-election-id`.
const LEASE: &str = "example-operator.example.com";
/// How long a test waits for what the manager does in the background.
const WAIT: Duration = Duration::from_secs(60);
/// The example's `Operator::name`: who its events are reported by.
const OPERATOR_NAME: &str = "example-operator";
/// The manager's replica name (in a pod, the pod's name): its lease holder identity is this
/// name and a UUID of the process, `<name>_<uuid>`.
const IDENTITY: &str = "manager-under-test";
/// The name of a second replica.
const STANDBY: &str = "standby-replica";
/// How long a lease lasts without renewal, from when a standby last saw it renewed (client-go's
/// default, which the manager uses).
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// The manager pod's termination grace period (`terminationGracePeriodSeconds` of a project's
/// `config/manager/manager.yaml`), which the default `--graceful-shutdown-timeout` (8 s) fits.
const GRACE_PERIOD: Duration = Duration::from_secs(10);
/// One manager at a time: a manager watching all namespaces would reconcile the objects of
/// another test's namespace too.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn the_manager_leads_reconciles_and_stops_on_sigterm() {
    let Some((env, _one)) = real().await else {
        return;
    };
    let mut manager = Manager::start(&env, &kubeconfig(&env), &["--leader-elect"]);
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    eventually("/healthz", WAIT, || async {
        manager.probe("/healthz") == Some((200, "ok".into()))
    })
    .await;
    eventually("/readyz", WAIT, || async {
        manager.probe("/readyz") == Some((200, "ok".into()))
    })
    .await;
    // (A standby is ready too: /readyz does not wait for the Lease.)
    eventually("the Lease held", WAIT, || async {
        holder(&env).await.as_deref() == Some(IDENTITY)
    })
    .await;
    // Written as a field manager of this process's own (its name and UUID), so that two
    // standbys racing for a free Lease cannot both win.
    let lease = Api::<Lease>::namespaced(env.admin.clone(), &env.namespace);
    let lease = lease.get(LEASE).await.unwrap();
    let managers: Vec<_> = lease
        .managed_fields()
        .iter()
        .filter_map(|f| f.manager.clone())
        .collect();
    assert!(
        !managers.is_empty()
            && managers
                .iter()
                .all(|m| replica_of(m) == format!("leader-election-{IDENTITY}")),
        "{managers:?}"
    );

    // The controller reconciles a ConfigMap it watches, as its ServiceAccount, and the
    // manager counts the successful reconcile.
    let (selector, value) = configmaps::SELECTOR.split_once('=').unwrap();
    let sample = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": "sample", "namespace": env.namespace, "labels": { selector: value } },
        "data": { "a": "1", "b": "2" },
    });
    apply(&env.admin, &sample).await;
    let maps = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    eventually("the sample reconciled", WAIT, || async {
        let sample = maps.get("sample").await.unwrap();
        sample
            .annotations()
            .get(configmaps::KEYS)
            .map(String::as_str)
            == Some("2")
    })
    .await;
    eventually("a successful reconcile counted", WAIT, || async {
        manager.reconciles(&reader, "success").await >= 1
    })
    .await;
    assert_eq!(manager.reconciles(&reader, "error").await, 0);
    // Its event comes from the operator, as this replica.
    let events = Api::<Event>::namespaced(env.admin.clone(), &env.namespace);
    let counted = |e: &Event| {
        e.reason.as_deref() == Some(configmaps::REASON)
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("sample")
    };
    eventually("the reconcile's event", WAIT, || async {
        let list = events.list(&ListParams::default()).await.unwrap();
        list.items.iter().any(counted)
    })
    .await;
    let list = events.list(&ListParams::default()).await.unwrap();
    let event = list.items.iter().find(|e| counted(e)).unwrap();
    assert_eq!(event.note.as_deref(), Some("2 keys"));
    assert_eq!(event.reporting_controller.as_deref(), Some(OPERATOR_NAME));
    assert_eq!(event.reporting_instance.as_deref(), Some(IDENTITY));
    // kube's event recorder names no field manager: the API server takes the User-Agent's
    // first part, which names the operator.
    let managers: Vec<_> = (event.managed_fields().iter())
        .filter_map(|f| f.manager.clone())
        .collect();
    assert_eq!(managers, [OPERATOR_NAME], "the manager's User-Agent");

    let (exited, took) = manager.terminate().await;
    println!("stopped {took:?} after SIGTERM");
    assert_eq!(exited.code(), Some(0), "{exited}\n{}", manager.log());
    assert_ne!(
        holder(&env).await.as_deref(),
        Some(IDENTITY),
        "the Lease was released"
    );
}

#[tokio::test]
async fn the_manager_stops_at_once_when_another_replica_takes_the_lease() {
    let Some((env, _one)) = real().await else {
        return;
    };
    let mut manager = Manager::leading(&env).await;
    // Another replica holds it now (as after a network partition that outlasted the lease).
    let now = serde_json::to_value(MicroTime(Timestamp::now())).unwrap();
    let usurper = json!({ "spec": { "holderIdentity": "another-replica", "renewTime": now, "acquireTime": now } });
    Api::<Lease>::namespaced(env.admin.clone(), &env.namespace)
        .patch(LEASE, &PatchParams::default(), &Patch::Merge(usurper))
        .await
        .unwrap();
    let started = Instant::now();
    let exited = manager.wait(Duration::from_secs(15)).await;
    println!("exited {:?} after losing the lease", started.elapsed());
    // Losing leadership is a failure: main returns the error, and the process exits with 1.
    assert_eq!(exited.code(), Some(1), "{exited}\n{}", manager.log());
    assert!(
        manager
            .log()
            .contains("Error: lost leadership; exiting so that another replica takes over"),
        "{}",
        manager.log()
    );
    assert_eq!(
        holder(&env).await.as_deref(),
        Some("another-replica"),
        "the Lease was left alone"
    );
}

#[tokio::test]
async fn only_one_replica_leads_and_a_standby_takes_over_soon_after_a_release() {
    let Some((env, _one)) = real().await else {
        return;
    };
    let mut leader = Manager::leading(&env).await;
    let mut standby = Manager::standing_by(&env, &kubeconfig(&env)).await;
    // For longer than a lease lasts, the leader keeps it renewed and the standby waits.
    let waited = Instant::now();
    while waited.elapsed() < LEASE_DURATION + Duration::from_secs(2) {
        assert_eq!(holder(&env).await.as_deref(), Some(IDENTITY));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        !standby.log().contains("became the leader"),
        "{}",
        standby.log()
    );

    // The leader releases the Lease as it stops; the standby, which tries every 2 s, takes it
    // over long before the released lease would have expired.
    leader.stop().await;
    let released = Instant::now();
    let taken = tokio::time::timeout(Duration::from_secs(5), async {
        while holder(&env).await.as_deref() != Some(STANDBY) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert!(
        taken.await.is_ok(),
        "the standby did not take the released Lease within 5 s:\n{}",
        standby.log()
    );
    println!("the standby led {:?} after the release", released.elapsed());
    standby.stop().await;
}

/// A standby is warm (as controller-runtime's, whose informers run on every replica): while it waits for the Lease it lists what
/// its controller watches and follows the changes, and once it leads it reconciles from that
/// cache, objects changed while nobody led included, without listing again.
#[tokio::test]
async fn a_standby_keeps_its_cache_synced_and_takes_over_without_listing_again() {
    let Some((env, _one)) = real().await else {
        return;
    };
    const LISTED: &str = "listed; the cache is synced controller=\"configmaps\"";
    let mut leader = Manager::leading(&env).await;
    let mut standby = Manager::standing_by(&env, &kubeconfig(&env)).await;
    eventually(
        "the standby's cache synced while it waits",
        WAIT,
        || async { standby.log().contains(LISTED) },
    )
    .await;

    // A ConfigMap created while the standby waits: the leader reconciles it.
    let (selector, value) = configmaps::SELECTOR.split_once('=').unwrap();
    let sample = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": "warm", "namespace": env.namespace, "labels": { selector: value } },
        "data": { "a": "1", "b": "2" },
    });
    apply(&env.admin, &sample).await;
    let maps = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let keys = |count: &'static str| {
        let maps = maps.clone();
        move || {
            let maps = maps.clone();
            async move {
                let map = maps.get("warm").await.unwrap();
                map.annotations().get(configmaps::KEYS).map(String::as_str) == Some(count)
            }
        }
    };
    eventually("the leader's reconcile", WAIT, keys("2")).await;
    assert!(
        !standby.log().contains("became the leader"),
        "{}",
        standby.log()
    );

    // The leader goes; the ConfigMap changes; the standby leads and reconciles the change.
    leader.stop().await;
    let change = json!({ "data": { "c": "3" } });
    maps.patch("warm", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    eventually("the standby's reconcile", WAIT, keys("3")).await;
    let log = standby.log();
    assert!(log.contains("became the leader"), "{log}");
    assert_eq!(
        log.matches(LISTED).count(),
        1,
        "the standby listed again:\n{log}"
    );
    standby.stop().await;
}

#[tokio::test]
async fn a_lease_renewed_by_a_clock_far_behind_is_not_taken_over() {
    let Some((env, _one)) = real().await else {
        return;
    };
    // Another replica holds the Lease and renews it every 2 s, but its clock is an hour behind:
    // by comparing renewTime with its own clock, a candidate would think it expired long ago.
    let leases = Api::<Lease>::namespaced(env.admin.clone(), &env.namespace);
    let behind = Timestamp::now() - Duration::from_secs(3600);
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": { "name": LEASE, "namespace": env.namespace },
        "spec": {
            "holderIdentity": "another-replica",
            "leaseDurationSeconds": 15,
            "acquireTime": MicroTime(behind),
            "renewTime": MicroTime(behind),
        },
    });
    apply(&env.admin, &lease).await;
    let renewing = {
        let leases = leases.clone();
        tokio::spawn(async move {
            for renewal in 1.. {
                tokio::time::sleep(Duration::from_secs(2)).await;
                let renewed = MicroTime(behind + Duration::from_secs(2 * renewal));
                let renewal = json!({ "spec": { "renewTime": renewed } });
                (leases
                    .patch(LEASE, &PatchParams::default(), &Patch::Merge(renewal))
                    .await)
                    .unwrap();
            }
        })
    };
    let mut manager = Manager::start(&env, &kubeconfig(&env), &["--leader-elect"]);
    eventually("the manager waiting", WAIT, || async {
        manager.log().contains("waiting to become the leader")
    })
    .await;
    let waited = Instant::now();
    while waited.elapsed() < LEASE_DURATION + Duration::from_secs(5) {
        assert_eq!(
            holder(&env).await.as_deref(),
            Some("another-replica"),
            "a renewed lease was taken over:\n{}",
            manager.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Once it is no longer renewed, it expires a lease duration later, and the manager leads.
    renewing.abort();
    eventually("the manager leading", WAIT, || async {
        holder(&env).await.as_deref() == Some(IDENTITY)
    })
    .await;
    manager.stop().await;
}

#[tokio::test]
async fn a_leader_whose_renewals_are_refused_stops_before_another_replica_leads() {
    let Some((env, _one)) = real().await else {
        return;
    };
    let Backend::Real { plane, .. } = &env.backend else {
        unreachable!("TestEnv::real_for is the real control plane")
    };
    let mut leader = Manager::leading(&env).await;
    // A standby whose rights nobody takes away.
    let mut standby = Manager::standing_by(&env, &plane.admin_kubeconfig()).await;

    // Right after a renewal, the leader may no longer write the Lease (as when an admission
    // rule rejects its writes, or the API server throttles them); 9 s later, it may not even
    // read it (as when it is cut off). It must stop leading 10 s after its last successful
    // renewal, however its reads fare, and before the standby, 15 s after it saw that renewal.
    let leases = Api::<Lease>::namespaced(env.admin.clone(), &env.namespace);
    let version = |lease: Lease| lease.metadata.resource_version;
    let renewed = version(leases.get(LEASE).await.unwrap());
    eventually("a renewal", WAIT, || async {
        version(leases.get(LEASE).await.unwrap()) != renewed
    })
    .await;
    let roles = Api::<Role>::namespaced(env.admin.clone(), &env.namespace);
    let role = format!("{}-leader-election-role", env.namespace);
    let read_only = json!({ "rules": [{ "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"] }] });
    (roles
        .patch(&role, &PatchParams::default(), &Patch::Merge(read_only))
        .await)
        .unwrap();
    let revoked = Instant::now();
    let mut stopped = None;
    let mut cut_off = false;
    let taken = loop {
        if !cut_off && revoked.elapsed() >= Duration::from_secs(9) {
            roles.delete(&role, &Default::default()).await.unwrap();
            cut_off = true;
        }
        if stopped.is_none() && leader.child.try_wait().unwrap().is_some() {
            stopped = Some(revoked.elapsed());
        }
        if holder(&env).await.as_deref() == Some(STANDBY) {
            break revoked.elapsed();
        }
        assert!(
            revoked.elapsed() < Duration::from_secs(60),
            "the standby never led:\n{}",
            standby.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let stopped = stopped.unwrap_or_else(|| {
        panic!(
            "the standby led {taken:?} after the revocation, while the leader still ran:\n{}",
            leader.log()
        )
    });
    println!(
        "the leader stopped {stopped:?} after its rights were revoked, the standby led {taken:?} after"
    );
    let exited = leader.wait(Duration::ZERO).await;
    assert_eq!(exited.code(), Some(1), "{exited}\n{}", leader.log());
    assert!(
        leader
            .log()
            .contains("the lease was not renewed within the renew deadline"),
        "{}",
        leader.log()
    );
    standby.stop().await;
}

#[tokio::test]
async fn a_manager_whose_caches_cannot_sync_fails_visibly_and_stops_on_sigterm() {
    let Some((env, _one)) = real().await else {
        return;
    };
    // A ServiceAccount with no rights: the controller can list nothing.
    let nobody = env.kubeconfig_without_rights("nobody").await;

    let mut manager = Manager::start(&env, &nobody, &["--cache-sync-timeout=5m"]);
    eventually("/healthz", WAIT, || async {
        manager.probe("/healthz") == Some((200, "ok".into()))
    })
    .await;
    let waiting = format!("waiting for controllers to sync: {}", configmaps::NAME);
    // Unauthenticated: the answer names the check, not the controller nor why.
    assert_eq!(
        manager.probe("/readyz"),
        Some((
            503,
            "[-]caches-synced failed: reason withheld\n[+]watches-answering ok\n\
             [+]watches-running ok\nreadyz check failed\n"
                .into()
        )),
        "not ready before its caches sync"
    );
    // The reason is logged as a probe fails: probed until it names the controller (a probe
    // before the controllers start gives another reason).
    eventually("why, in the log", WAIT, || async {
        manager.probe("/readyz");
        manager.log().contains("readyz check failed") && manager.log().contains(&waiting)
    })
    .await;
    // Without the rights of config/rbac/metrics_auth_role.yaml, the manager cannot review
    // even a metrics reader's token.
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    eventually("the metrics endpoint", WAIT, || async {
        manager.scrape(None).await.is_ok()
    })
    .await;
    assert_eq!(
        manager.scrape(Some(&reader)).await,
        Ok((500, "Authentication failed\n".to_string())),
        "the TokenReview is forbidden"
    );
    let (exited, took) = manager.terminate().await;
    println!("stopped {took:?} after SIGTERM, caches never synced");
    assert_eq!(exited.code(), Some(0), "{exited}\n{}", manager.log());
    // Well below the 8 s a drain may take: nothing was in flight.
    assert!(took < Duration::from_secs(6), "nothing to drain: {took:?}");

    let mut manager = Manager::start(&env, &nobody, &["--cache-sync-timeout=3s"]);
    let exited = manager.wait(Duration::from_secs(10)).await;
    assert_eq!(
        exited.code(),
        Some(1),
        "a cache that never syncs fails the manager: {exited}\n{}",
        manager.log()
    );
    assert!(
        manager
            .log()
            .contains(&format!("Error: {waiting} after 3s")),
        "{}",
        manager.log()
    );
}

#[tokio::test]
// Linux routes all of 127.0.0.0/8 to the loopback interface: the flood comes from 127.0.0.2.
#[cfg(target_os = "linux")]
async fn idle_connections_neither_starve_the_probes_nor_stay_open() {
    use tokio::io::AsyncReadExt as _;

    let Some((env, _one)) = real().await else {
        return;
    };
    let mut manager = Manager::start(&env, &kubeconfig(&env), &[]);
    eventually("/healthz", WAIT, || async {
        manager.probe("/healthz") == Some((200, "ok".into()))
    })
    .await;
    // Connections that never send a request, all from one address other than the prober's.
    let mut idle = Vec::new();
    for _ in 0..300 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(([127, 0, 0, 2], 0).into()).unwrap();
        let server = ([127, 0, 0, 1], manager.probes).into();
        idle.push(socket.connect(server).await.unwrap());
    }
    assert_eq!(
        manager.probe("/healthz"),
        Some((200, "ok".into())),
        "the probes still answer"
    );
    // The server keeps 32 from that address and closed the others at once; after the header
    // read timeout it closes those 32 too: a read of each sees the end.
    tokio::time::sleep(Duration::from_secs(7)).await;
    for stream in &mut idle {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest));
        assert!(matches!(read.await, Ok(Ok(_))), "closed by the server");
    }
    manager.stop().await;
}

#[tokio::test]
async fn metrics_are_served_over_https_to_metrics_readers_only() {
    let Some((env, _one)) = real().await else {
        return;
    };
    let mut manager = Manager::leading(&env).await;
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    let stranger = env.service_account_token("stranger", None).await;

    assert_eq!(
        manager.scrape(None).await,
        Ok((401, "Unauthorized\n".to_string()))
    );
    assert_eq!(
        manager.scrape(Some("not-a-token")).await,
        Ok((401, "Unauthorized\n".to_string()))
    );
    let denied = format!(
        "Authorization denied for user system:serviceaccount:{}:stranger\n",
        env.namespace
    );
    assert_eq!(manager.scrape(Some(&stranger)).await, Ok((403, denied)));
    assert!(
        http_get(manager.metrics, "/metrics").is_none_or(|(status, _)| status == 400),
        "no metrics over plain HTTP"
    );

    // (The reconcile counts show once something is reconciled: the first test reads them.)
    let families = [
        "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_retries_total",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds",
        "rest_client_requests_total",
        "leader_election_master_status",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ];
    let missing = |metrics: &str| -> Vec<&str> {
        families
            .into_iter()
            .filter(|f| !metrics.lines().any(|line| line.starts_with(f)))
            .collect()
    };
    // The controller declares its families as it starts, just after the Lease is won.
    let deadline = Instant::now() + Duration::from_secs(30);
    let metrics = loop {
        let (status, metrics) = manager.scrape(Some(&reader)).await.unwrap();
        assert_eq!(status, 200, "{metrics}");
        let missing = missing(&metrics);
        if missing.is_empty() {
            break metrics;
        }
        assert!(
            Instant::now() < deadline,
            "missing {missing:?} in\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let has = |line: String| {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line} in\n{metrics}"
        );
    };
    has(format!(
        r#"leader_election_master_status{{name="{LEASE}"}} 1"#
    ));
    // The default --max-concurrent-reconciles.
    let name = configmaps::NAME;
    has(format!(
        r#"controller_runtime_max_concurrent_reconciles{{controller="{name}"}} 10"#
    ));
    // The controller's queue: the namespace's ConfigMaps (its CA bundle, at least) were added
    // and taken, and nothing waits once they are reconciled.
    let queue = format!(r#"{{name="{name}",controller="{name}"}} "#);
    eventually("the queue's items taken", WAIT, || async {
        let (_, metrics) = manager.scrape(Some(&reader)).await.unwrap();
        let value = |family: &str| -> f64 {
            let series = format!("{family}{queue}");
            (metrics.lines())
                .find_map(|line| line.strip_prefix(&series)?.parse().ok())
                .unwrap_or(-1.0)
        };
        value("workqueue_adds_total") >= 1.0
            && value("workqueue_queue_duration_seconds_count") >= 1.0
            && value("workqueue_depth") == 0.0
    })
    .await;
    // The manager's own requests to the API server, the reviews included.
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with(r#"rest_client_requests_total{code="201",method="POST""#)),
        "{metrics}"
    );
    manager.stop().await;
}

#[tokio::test]
async fn a_flood_of_random_tokens_is_no_flood_of_token_reviews() {
    let Some((env, _one)) = real().await else {
        return;
    };
    let mut manager = Manager::start(&env, &kubeconfig(&env), &[]);
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    eventually("metrics", WAIT, || async {
        matches!(manager.scrape(Some(&reader)).await, Ok((200, _)))
    })
    .await;
    // The manager's POSTs so far (its reviews: nothing else it does here creates anything).
    let posts = |metrics: &str| -> u64 {
        (metrics.lines())
            .filter(|line| {
                line.starts_with(r#"rest_client_requests_total{code="201",method="POST""#)
            })
            .filter_map(|line| line.rsplit_once(' ')?.1.parse::<u64>().ok())
            .sum()
    };
    let before = posts(&manager.scrape(Some(&reader)).await.unwrap().1);
    let started = Instant::now();
    let (mut refused, mut limited) = (0, 0);
    for n in 0..300u32 {
        // Shaped like a service account token, signed by no one.
        let token = format!("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ{n:08x}In0.c2lnbmF0dXJl{n}");
        match manager.scrape(Some(&token)).await {
            Ok((401, _)) => refused += 1,
            Ok((429, _)) => limited += 1,
            other => panic!("{other:?}"),
        }
        if n % 50 == 0 {
            let (status, _) = manager.scrape(Some(&reader)).await.unwrap();
            assert_eq!(status, 200, "the scraper is served during the flood");
        }
    }
    let flood = started.elapsed();
    let (status, metrics) = manager.scrape(Some(&reader)).await.unwrap();
    assert_eq!(status, 200);
    let reviews = posts(&metrics) - before;
    println!(
        "300 random tokens in {flood:?}: {refused} refused after a review, {limited} without (429), \
         {reviews} reviews"
    );
    // A burst of 10, then 2 a second (the scraper's own token and access are remembered).
    let bound = 10 + 2 * flood.as_secs() + 2;
    assert!(
        reviews <= bound,
        "{reviews} reviews for 300 random tokens in {flood:?} (at most {bound})"
    );
    manager.stop().await;
}

#[tokio::test]
async fn metrics_are_served_over_plain_http_to_anyone_when_not_secure() {
    let Some((env, _one)) = real().await else {
        return;
    };
    // As for `make run RUN_ARGS="--metrics-bind-address=:8080 --metrics-secure=false"`.
    let mut manager = Manager::start(&env, &kubeconfig(&env), &["--metrics-secure=false"]);
    eventually("/healthz", WAIT, || async {
        manager.probe("/healthz") == Some((200, "ok".into()))
    })
    .await;
    let metrics = http_get(manager.metrics, "/metrics");
    assert!(
        metrics.as_ref().is_some_and(
            |(status, body)| *status == 200 && body.contains("process_cpu_seconds_total")
        ),
        "{metrics:?}"
    );
    manager.stop().await;
}

#[tokio::test]
async fn metrics_are_served_with_the_certificate_of_metrics_cert_path() {
    let Some((env, _one)) = real().await else {
        return;
    };
    // A CA, and a certificate for localhost it signed, as cert-manager would mount them.
    let dir = std::env::temp_dir().join(format!("metrics-certs-{}", env.namespace));
    std::fs::create_dir_all(&dir).unwrap();
    write_serving_certificate(&dir);

    let cert_path = format!("--metrics-cert-path={}", dir.display());
    let mut manager = Manager::start(&env, &kubeconfig(&env), &[&cert_path]);
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    let ca = dir.join("ca.crt");
    let scrape = || https_get(manager.metrics, "/metrics", Some(&reader), Trust::Ca(&ca));
    eventually("a verified scrape", WAIT, || async {
        matches!(scrape().await, Ok((200, body)) if body.contains("process_cpu_seconds_total"))
    })
    .await;
    manager.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fixture's role is what `make manifests` would generate from the example controller's
/// `RULES`: the RBAC the tests above install is exactly what the controller declares.
#[test]
fn role_yaml_is_generated_from_the_rules() {
    let path = fixture().join("config/rbac/role.yaml");
    let fixture = std::fs::read_to_string(&path).unwrap();
    // Only the leading comment differs: the fixture's says where it comes from.
    let without_comments = |yaml: &str| -> String {
        yaml.lines()
            .filter(|line| !line.starts_with('#'))
            .map(|line| format!("{line}\n"))
            .collect()
    };
    let generated = role_yaml(Scope::Cluster, &[configmaps::RULES]);
    assert_eq!(
        without_comments(&fixture),
        without_comments(&generated),
        "{} is stale; write it again from examples/manager/configmaps.rs's RULES:\n{generated}",
        path.display()
    );
}

/// `--sharding` (docs/sharding.md; its invariants are proven in src/tests/sharding.rs): two
/// replicas each hold a Lease of their own, claim disjoint halves of the buckets between them,
/// and each reconciles the objects of its own (its name is on their Events); one that stops on
/// SIGTERM releases its Lease, and the other takes its share at its next round, long before a
/// lease duration.
#[tokio::test]
async fn sharded_managers_split_the_objects_and_a_stopped_one_hands_its_share_over() {
    let Some((env, _one)) = real().await else {
        return;
    };
    const ONE: &str = "shard-one";
    const TWO: &str = "shard-two";
    let args = ["--sharding", "--metrics-secure=false"];
    let mut one = Manager::start_as(&env, &kubeconfig(&env), ONE, &args);
    let mut two = Manager::start_as(&env, &kubeconfig(&env), TWO, &args);
    // Each replica's share in its metrics: its active buckets and the ring's live members.
    let share = |manager: &Manager| {
        let (_, metrics) = http_get(manager.metrics, "/metrics")?;
        let value = |name: &str| {
            metrics.lines().find_map(|line| {
                line.strip_prefix(name)?
                    .strip_prefix(' ')?
                    .parse::<u32>()
                    .ok()
            })
        };
        Some((
            value("memop_shard_active_buckets")?,
            value("memop_shard_members")?,
        ))
    };
    let leases = Api::<Lease>::namespaced(env.admin.clone(), &env.namespace);
    let claims = |identity: &'static str| {
        let leases = leases.clone();
        async move {
            let name = format!("{LEASE}-shard-{identity}");
            let lease = leases.get_opt(&name).await.unwrap()?;
            assert_eq!(
                lease
                    .labels()
                    .get("example.com/shard-ring")
                    .map(String::as_str),
                Some(LEASE)
            );
            let holder = lease.spec.as_ref()?.holder_identity.clone();
            let claims = lease.annotations().get("example.com/shard-buckets")?;
            Some((holder, u64::from_str_radix(claims, 16).unwrap()))
        }
    };
    eventually("the buckets split between the two", WAIT, || async {
        match (claims(ONE).await, claims(TWO).await) {
            (Some((Some(h1), c1)), Some((Some(h2), c2))) => {
                replica_of(&h1) == ONE
                    && replica_of(&h2) == TWO
                    && c1 & c2 == 0
                    && c1 | c2 == u64::MAX
                    && c1 != 0
                    && c2 != 0
            }
            _ => false,
        }
    })
    .await;

    eventually("the metrics show the split", WAIT, || async {
        matches!((share(&one), share(&two)), (Some((b1, 2)), Some((b2, 2))) if b1 + b2 == 64 && b1 > 0 && b2 > 0)
    })
    .await;

    // Each object is reconciled by the replica its bucket belongs to, as its Event says.
    let (selector, value) = configmaps::SELECTOR.split_once('=').unwrap();
    let names: Vec<String> = (0..12).map(|i| format!("sharded-{i}")).collect();
    for name in &names {
        let object = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": env.namespace, "labels": { selector: value } },
            "data": { "a": "1" },
        });
        apply(&env.admin, &object).await;
    }
    let maps = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let events = Api::<Event>::namespaced(env.admin.clone(), &env.namespace);
    let reporters = || async {
        let list = events.list(&ListParams::default()).await.unwrap();
        let mut reporters = std::collections::BTreeMap::new();
        for event in list.items {
            if let (Some(name), Some(instance)) = (
                event.regarding.and_then(|r| r.name),
                event.reporting_instance,
            ) {
                reporters
                    .entry(name)
                    .or_insert_with(Vec::new)
                    .push(instance);
            }
        }
        reporters
    };
    eventually("every object reconciled", WAIT, || async {
        reporters().await.len() == names.len()
    })
    .await;
    let reporters = reporters().await;
    // An object's bucket, as docs/sharding.md defines it: the top 6 bits of the FNV-1a hash of
    // its UID; its owner is the replica whose Lease claims that bucket.
    let bucket = |uid: &str| {
        let hash = uid.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        hash >> 58
    };
    let (Some((_, one_claims)), Some(_)) = (claims(ONE).await, claims(TWO).await) else {
        panic!("a replica without its Lease");
    };
    let mut by = [0, 0];
    for name in &names {
        let object = maps.get(name).await.unwrap();
        let uid = object.uid().unwrap();
        let owner = if one_claims & (1 << bucket(&uid)) != 0 {
            ONE
        } else {
            TWO
        };
        assert_eq!(reporters[name], [owner], "{name}");
        by[usize::from(owner == TWO)] += 1;
    }
    println!("{} objects reconciled by {ONE}, {} by {TWO}", by[0], by[1]);

    // The second stops: it releases its Lease, and the first claims everything at its next
    // round (every 2 s), not a lease duration (15 s) later.
    two.stop().await;
    let stopped = Instant::now();
    let (holder, released) = claims(TWO).await.unwrap();
    assert_eq!((holder, released), (None, 0), "released, with no claims");
    eventually("the first replica holds every bucket", WAIT, || async {
        claims(ONE).await.map(|(_, c)| c) == Some(u64::MAX)
    })
    .await;
    let took = stopped.elapsed();
    println!("took the stopped replica's share {took:?} after it stopped");
    assert!(took < Duration::from_secs(8), "{took:?}");
    eventually(
        "the first replica's metrics show every bucket",
        WAIT,
        || async { share(&one) == Some((64, 1)) },
    )
    .await;
    // And reconciles what was the second's.
    let theirs = names.iter().find(|n| reporters[*n] == [TWO]);
    if let Some(name) = theirs {
        let patch = Patch::Merge(json!({ "data": { "b": "2" } }));
        maps.patch(name, &PatchParams::default(), &patch)
            .await
            .unwrap();
        eventually("the first replica reconciles it", WAIT, || async {
            let object = maps.get(name).await.unwrap();
            object
                .annotations()
                .get(configmaps::KEYS)
                .map(String::as_str)
                == Some("2")
        })
        .await;
    }
    one.stop().await;
}

/// The project the tests install: a memop project's `config/` for the example manager.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture")
}

/// A namespace of the real control plane with the fixture's RBAC, and the turn of the test's
/// managers ([`ONE_AT_A_TIME`]) for as long as the guard is held; `None` without
/// `KUBEBUILDER_ASSETS` (a failure with `ENVTEST_REQUIRED=1`).
async fn real() -> Option<(TestEnv, tokio::sync::MutexGuard<'static, ()>)> {
    let env = TestEnv::real_for(&fixture()).await?;
    Some((env, ONE_AT_A_TIME.lock().await))
}

/// The manager's own ServiceAccount.
fn kubeconfig(env: &TestEnv) -> PathBuf {
    match &env.backend {
        Backend::Real { kubeconfig, .. } => kubeconfig.clone(),
        Backend::InMemory(_) => unreachable!("TestEnv::real_for is the real control plane"),
    }
}

/// The replica that holds the leader election Lease: its holder identity's name, without the
/// process's UUID.
async fn holder(env: &TestEnv) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(env.admin.clone(), &env.namespace);
    let lease = leases.get_opt(LEASE).await.unwrap();
    let identity = lease.and_then(|l| l.spec?.holder_identity)?;
    Some(replica_of(&identity).to_string())
}

/// The replica of a manager's holder identity, `<name>_<uuid>`: its name (a holder written by
/// a test, with no UUID, as it is).
fn replica_of(identity: &str) -> &str {
    match identity.rsplit_once('_') {
        Some((name, uuid)) if uuid.len() == 36 => name,
        _ => identity,
    }
}

/// The example manager binary, built (if it is not already) on first use.
///
/// `cargo test` builds the examples only when it builds every target: `cargo test --test
/// manager` selects this test alone, so `examples/manager` next to this test binary may be
/// missing, or left from an earlier build and older than the example's source (cargo's
/// `CARGO_BIN_EXE_*` exists for a package's binaries, not its examples). So this asks cargo to
/// build it, in this test's profile, which does nothing when it is up to date, and runs the
/// executable cargo reports (cargo releases its build lock before it runs the tests, so this
/// nested build does not wait for the one that started it). The target directory is inherited
/// as any cargo command inherits it (`CARGO_TARGET_DIR`, `.cargo/config.toml`); only a
/// `--target-dir` given on `cargo test`'s command line is not, and then the example builds in
/// the default one, which is slower but still right.
fn manager_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let mut build = Command::new(cargo);
        build
            .args(["build", "--example", "manager", "--message-format=json"])
            .arg("--manifest-path")
            .arg(manifest);
        // This binary is <target dir>/<profile dir>/deps/manager-<hash>; the dev and test
        // profiles build into `debug`, any other into a directory of its name.
        let test = std::env::current_exe().expect("the test binary's path");
        let profile = test
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name);
        if let Some(profile) = profile.and_then(|p| p.to_str()).filter(|p| *p != "debug") {
            build.args(["--profile", profile]);
        }
        let output = build
            .stdin(Stdio::null())
            .output()
            .expect("running cargo to build the example manager");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let messages: Vec<Value> = stdout
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        let rendered: String = messages
            .iter()
            .filter_map(|m| m["message"]["rendered"].as_str())
            .collect();
        assert!(
            output.status.success(),
            "building the example manager failed:\n{rendered}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let executable = messages
            .iter()
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "manager")
            .filter(|m| m["target"]["kind"] == json!(["example"]))
            .find_map(|m| m["executable"].as_str())
            .expect("cargo reports the example's executable");
        PathBuf::from(executable)
    })
}

/// The manager binary, running; killed if the test ends first. Its output goes to a log file,
/// printed when a test fails.
struct Manager {
    child: Child,
    probes: u16,
    metrics: u16,
    log: PathBuf,
}

impl Manager {
    fn start(env: &TestEnv, kubeconfig: &Path, args: &[&str]) -> Self {
        Self::start_as(env, kubeconfig, IDENTITY, args)
    }

    /// A replica started with leader election, once it holds the Lease.
    async fn leading(env: &TestEnv) -> Self {
        let leader = Self::start(env, &kubeconfig(env), &["--leader-elect"]);
        eventually("the Lease held", WAIT, || async {
            holder(env).await.as_deref() == Some(IDENTITY)
        })
        .await;
        leader
    }

    /// A second replica, [`STANDBY`], started with leader election as the user of
    /// `kubeconfig`, once it waits to lead.
    async fn standing_by(env: &TestEnv, kubeconfig: &Path) -> Self {
        let standby = Self::start_as(env, kubeconfig, STANDBY, &["--leader-elect"]);
        eventually("the standby waiting", WAIT, || async {
            standby.log().contains("waiting to become the leader")
        })
        .await;
        standby
    }

    /// [`Manager::start`] as the replica (pod) `identity`.
    fn start_as(env: &TestEnv, kubeconfig: &Path, identity: &str, args: &[&str]) -> Self {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let (probes, metrics) = (free_port().unwrap(), free_port().unwrap());
        let log = std::env::temp_dir().join(format!(
            "manager-{}-{}-{}.log",
            std::process::id(),
            env.namespace,
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        let output = std::fs::File::create(&log).expect("the manager's log file");
        let child = Command::new(manager_binary())
            .args(args)
            .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
            .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
            .env("KUBECONFIG", kubeconfig)
            // As the downward API sets them in a pod (config/manager/manager.yaml).
            .env("POD_NAME", identity)
            .env("POD_NAMESPACE", &env.namespace)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .env_remove("WATCH_NAMESPACE")
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("the manager's log file"))
            .stderr(output)
            .spawn()
            .expect("starting the manager");
        Self {
            child,
            probes,
            metrics,
            log,
        }
    }

    /// What the manager wrote so far.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET` of a probe: its status code and body.
    fn probe(&self, path: &str) -> Option<(u16, String)> {
        http_get(self.probes, path)
    }

    /// `GET /metrics` with `token`, accepting the manager's self-signed certificate.
    async fn scrape(&self, token: Option<&str>) -> Result<(u16, String), String> {
        https_get(self.metrics, "/metrics", token, Trust::Anything).await
    }

    /// How many reconciles of the example's controller ended with `result` (`success` or
    /// `error`), from `/metrics`; 0 when it cannot tell.
    async fn reconciles(&self, token: &str, result: &str) -> u64 {
        let Ok((200, metrics)) = self.scrape(Some(token)).await else {
            return 0;
        };
        let series = format!(
            r#"controller_runtime_reconcile_total{{controller="{}",result="{result}"}} "#,
            configmaps::NAME
        );
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&series))
            .and_then(|count| count.parse().ok())
            .unwrap_or(0)
    }

    /// Waits for the manager to exit by itself, at most `limit`.
    async fn wait(&mut self, limit: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "the manager still runs after {limit:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends SIGTERM; returns how the manager exited, and how long that took (at most the
    /// pod's grace period).
    async fn terminate(&mut self) -> (ExitStatus, Duration) {
        let sent = Instant::now();
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("sending SIGTERM");
        assert!(killed.success(), "kill -TERM: {killed}");
        let exited = self.wait(GRACE_PERIOD).await;
        (exited, sent.elapsed())
    }

    /// [`Manager::terminate`], which must end in a clean exit.
    async fn stop(&mut self) {
        let (exited, took) = self.terminate().await;
        assert_eq!(
            exited.code(),
            Some(0),
            "{exited} {took:?} after SIGTERM:\n{}",
            self.log()
        );
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            // Captured with the test's output, and shown as it fails.
            println!("the manager's log:\n{}", self.log());
        }
        let _ = std::fs::remove_file(&self.log);
    }
}
