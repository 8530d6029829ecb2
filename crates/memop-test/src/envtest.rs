//! A real Kubernetes control plane for tests, as controller-runtime's envtest starts it: etcd
//! and kube-apiserver from `KUBEBUILDER_ASSETS` (`make setup-envtest`), on free loopback ports,
//! with RBAC authorization on. When the assets also hold kube-controller-manager, it runs the
//! garbage collector, so owner references cascade for real, and the storage version migrator,
//! so `StorageVersionMigration`s run. When they hold kube-scheduler and
//! kwok too (`scripts/envtest/build.sh` builds all of them), Deployments roll out for real:
//! kube-controller-manager also runs the deployment, replicaset and resource quota controllers,
//! kube-scheduler binds the pods to one node that kwok simulates, and kwok's stages make them
//! Running and Ready, so a Deployment reports `Available=True` with no test writing its status.
//!
//! One control plane serves a whole test binary ([`ControlPlane::shared`]); every test gets a
//! namespace of its own ([`TestEnv::real`]) and, in it, the project's own `config/rbac` objects,
//! installed as kustomize would install them. The operator's client authenticates as that
//! ServiceAccount, so a verb missing from a controller's `RULES` fails with the 403 a cluster
//! would give; the admin client (`system:masters`) is only for the test's setup and assertions.
//!
//! Without `KUBEBUILDER_ASSETS`, [`TestEnv::real`] is `None` after one line on stderr;
//! `ENVTEST_REQUIRED=1` turns that into a failure. (A memop project does not even build its
//! real-control-plane tests then: see [`crate::scenarios!`].) The processes stop, and their temp directory
//! goes, when the test binary exits, however it exits: a small reaper shell holds the other end
//! of a pipe and acts when it closes.
//!
//! [`run_local`] starts the same control plane for a developer's machine (`make local-cluster`),
//! so that `make install run` need no kind: it runs until Ctrl-C, then stops it all.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, Node, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, Config};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::Value;

use super::requests::RequestLog;
use crate::apiserver::ApiServer;

/// The directory with `etcd`, `kube-apiserver` (and optionally `kube-controller-manager`, and
/// with it `kube-scheduler`, `kwok` and kwok's stages, `kwok.yaml`).
pub const ASSETS_ENV: &str = "KUBEBUILDER_ASSETS";
/// Set to `1` to fail, not skip, when [`ASSETS_ENV`] is unset.
pub const REQUIRED_ENV: &str = "ENVTEST_REQUIRED";
/// How long each process may take to come up (a cold kube-apiserver on 2 cores needs ~10 s).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Field manager of everything the harness applies.
const FIELD_MANAGER: &str = "envtest";
/// The one node of the control plane, which kwok simulates.
pub const NODE: &str = "kwok-node";

/// A running etcd + kube-apiserver (+ kube-controller-manager, + kube-scheduler and kwok).
pub struct ControlPlane {
    dir: PathBuf,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// Whether kube-controller-manager runs its garbage collector.
    pub garbage_collection: bool,
    /// Whether Deployments roll out: kube-controller-manager runs the deployment and replicaset
    /// controllers, kube-scheduler binds pods to [`NODE`] and kwok makes them Ready.
    pub rollouts: bool,
    /// The reaper: when its pipe closes (at exit, or [`ControlPlane::stop`]), it stops
    /// everything.
    reaper: Reaper,
}

impl ControlPlane {
    /// The control plane of this test binary, started on first use; `None` when
    /// [`ASSETS_ENV`] is unset (after saying so once, past the test output capture).
    pub fn shared() -> Option<&'static ControlPlane> {
        static PLANE: OnceLock<Option<Result<ControlPlane, String>>> = OnceLock::new();
        let plane = PLANE.get_or_init(|| {
            let assets = std::env::var_os(ASSETS_ENV).filter(|dir| !dir.is_empty())?;
            // Starting blocks on a runtime of its own, and callers are inside Tokio already.
            let assets = PathBuf::from(assets);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .subsec_nanos();
            let dir = std::env::temp_dir().join(format!("envtest-{}-{nanos}", std::process::id()));
            let started = std::thread::spawn(move || {
                ControlPlane::start(&assets, &dir, Some(&project_dir()))
            });
            Some(
                started
                    .join()
                    .unwrap_or_else(|_| Err("the start-up thread panicked".into())),
            )
        });
        match plane {
            Some(Ok(plane)) => Some(plane),
            Some(Err(err)) => panic!("starting the control plane: {err}"),
            None if std::env::var(REQUIRED_ENV).is_ok_and(|v| v == "1" || v == "true") => {
                panic!("{REQUIRED_ENV} is set but {ASSETS_ENV} is not: run `make setup-envtest`")
            }
            None => {
                static SAID: Once = Once::new();
                SAID.call_once(|| {
                    // Straight to stderr: libtest captures print!/eprint!, not this.
                    let _ = writeln!(
                        std::io::stderr(),
                        "real-control-plane tests skipped: set {ASSETS_ENV} (`make setup-envtest` prints it)"
                    );
                });
                None
            }
        }
    }

    /// A control plane for a developer's machine, in `dir` (made, and removed when it stops),
    /// its admin's kubeconfig [`ControlPlane::admin_kubeconfig`]: no CRD installed (`make
    /// install` does that), nothing of a test's.
    pub fn local(assets: &Path, dir: &Path) -> Result<ControlPlane, String> {
        if dir.exists() {
            return Err(format!(
                "{} exists: another local control plane runs (stop it with Ctrl-C), or remove it",
                dir.display()
            ));
        }
        ControlPlane::start(assets, dir, None)
    }

    /// Stops every process and removes the control plane's directory, and returns once done.
    pub fn stop(self) {
        let Reaper {
            stdin,
            mut child,
            children,
        } = self.reaper;
        // The reaper stops them; waiting for each here lets it see them gone (a process that
        // exited stays a zombie, which `kill -0` finds, until its parent waits for it).
        drop(stdin);
        for mut process in children {
            let _ = process.wait();
        }
        let _ = child.wait();
    }

    /// Starts the control plane in `dir`, with `project`'s CRDs installed.
    fn start(assets: &Path, dir: &Path, project: Option<&Path>) -> Result<ControlPlane, String> {
        let binary = |name: &str| {
            let path = assets.join(name);
            path.is_file()
                .then_some(path)
                .ok_or_else(|| format!("{name} not found in {ASSETS_ENV}={}", assets.display()))
        };
        let (etcd, apiserver) = (binary("etcd")?, binary("kube-apiserver")?);
        let controller_manager = binary("kube-controller-manager").ok();
        // All of them or none: assets with kwok but not the rest are a broken build.
        let rollouts = match binary("kwok") {
            Ok(kwok) => {
                if controller_manager.is_none() {
                    return Err(format!(
                        "kwok needs kube-controller-manager in {ASSETS_ENV} too"
                    ));
                }
                Some((kwok, binary("kwok.yaml")?, binary("kube-scheduler")?))
            }
            Err(_) => None,
        };

        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        // Absolute: the kubeconfigs name the certificates, and are read from anywhere.
        let dir = std::fs::canonicalize(dir).map_err(|e| e.to_string())?;
        let mut reaper = Reaper::start(&dir)?;
        write_certificates(&dir).map_err(|e| format!("certificates: {e}"))?;

        let etcd_url = start_etcd(&etcd, &dir, &mut reaper)?;

        let (url, apiserver_child) = start_apiserver(&apiserver, &dir, &etcd_url, &mut reaper)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let admin = admin_client(&dir, "default").await;
            let deadline = Instant::now() + START_TIMEOUT;
            loop {
                // Ready once it serves the default namespace (created by its own bootstrap).
                if Api::<Namespace>::all(admin.clone())
                    .get("default")
                    .await
                    .is_ok()
                {
                    break;
                }
                if let Ok(Some(status)) = apiserver_child.try_wait() {
                    return Err(exited(&dir, "kube-apiserver", status));
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "kube-apiserver not ready in {START_TIMEOUT:?}; {}",
                        log_tail(&dir, "kube-apiserver")
                    ));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            match project {
                Some(project) => install_crds(&admin, project).await,
                None => Ok(()),
            }
        })?;
        // After the CRDs: its garbage collector then watches the custom kinds from the start.
        let garbage_collection = controller_manager.is_some();
        start_controllers(
            &dir,
            controller_manager,
            rollouts.as_ref(),
            &mut reaper,
            &runtime,
        )?;
        Ok(ControlPlane {
            dir,
            url,
            garbage_collection,
            rollouts: rollouts.is_some(),
            reaper,
        })
    }

    /// The kubeconfig of a cluster admin (`system:masters`), namespace `default`: what `kubectl`
    /// and `make run` use on a developer's machine.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    /// Writes a kubeconfig for `token` into the control plane's directory and returns its path.
    pub fn kubeconfig_for_token(&self, name: &str, token: &str, namespace: &str) -> PathBuf {
        let path = self.dir.join(format!("{name}.kubeconfig"));
        let user = format!("token: {token}");
        write_kubeconfig(&path, &self.url, &self.dir.join("ca.crt"), &user, namespace);
        path
    }
}

/// `make local-cluster`: starts [`ControlPlane::local`] in `dir` from the binaries of
/// [`ASSETS_ENV`], says how to use it, and runs until Ctrl-C (SIGINT) or SIGTERM; then stops
/// every process and removes `dir` before it returns.
pub fn run_local(dir: &Path) -> Result<(), String> {
    let assets = std::env::var_os(ASSETS_ENV)
        .filter(|assets| !assets.is_empty())
        .ok_or_else(|| format!("{ASSETS_ENV} is not set: run `make setup-envtest`"))?;
    let assets = PathBuf::from(assets);
    eprintln!(
        "local-cluster: starting a control plane from {} in {}",
        assets.display(),
        dir.display()
    );
    let plane = ControlPlane::local(&assets, dir)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let stopped = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let (mut interrupt, mut terminate) = (
            signal(SignalKind::interrupt()).map_err(|e| e.to_string())?,
            signal(SignalKind::terminate()).map_err(|e| e.to_string())?,
        );
        let nodes = match plane.rollouts {
            true => format!("node {NODE}, simulated by kwok: pods go Running on it"),
            false => format!(
                "no node: {ASSETS_ENV} lacks kube-scheduler and kwok, so pods stay Pending \
                 (memop's scripts/envtest/build.sh builds them)"
            ),
        };
        println!(
            "local-cluster: kube-apiserver at {}, {nodes}. In another terminal:\n  \
             export KUBECONFIG={}\n  make install run\nCtrl-C stops it all and removes {}.",
            plane.url,
            plane.admin_kubeconfig().display(),
            dir.display()
        );
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        Ok::<_, String>(())
    });
    eprintln!("local-cluster: stopping");
    plane.stop();
    stopped
}

/// What a test runs against: one namespace, an admin client for setup and assertions, and the
/// operator's own client, whose requests are logged (and can be failed) by [`RequestLog`].
pub struct TestEnv {
    /// The test's own namespace: a fresh one on the real control plane.
    pub namespace: String,
    /// Test setup and assertions; not logged.
    pub admin: Client,
    /// What the operator uses: on the real control plane, its ServiceAccount.
    pub operator: Client,
    /// Every request of [`TestEnv::operator`], with the failures to inject into them.
    pub requests: RequestLog,
    /// Which API server the test runs on.
    pub backend: Backend,
}

/// The API server a [`TestEnv`] runs on.
pub enum Backend {
    /// The in-memory API server (always available).
    InMemory(ApiServer),
    /// The real control plane of `KUBEBUILDER_ASSETS`.
    Real {
        /// The control plane, shared by the tests of one test binary.
        plane: &'static ControlPlane,
        /// The kubeconfig of the operator's ServiceAccount, for a manager binary.
        kubeconfig: PathBuf,
    },
}

impl TestEnv {
    /// A test environment on the in-memory API server ([`ApiServer`]).
    pub fn in_memory() -> Self {
        let server = ApiServer::new();
        let requests = RequestLog::default();
        let operator = server.client_with(&requests);
        Self {
            namespace: "default".into(),
            admin: server.client(),
            operator,
            requests,
            backend: Backend::InMemory(server),
        }
    }

    /// A fresh namespace on the real control plane, with the project's RBAC installed for the
    /// operator's ServiceAccount in it; `None` when the control plane is not available.
    pub async fn real() -> Option<Self> {
        Self::real_for(&project_dir()).await
    }

    /// [`TestEnv::real`] for the project whose `config/` is in `project` rather than in
    /// [`project_dir`] (a fixture of a crate's tests, say): its `config/rbac` is installed for
    /// the operator's ServiceAccount, and its `config/crd/bases`, if any, on the shared control
    /// plane.
    pub async fn real_for(project: &Path) -> Option<Self> {
        let plane = ControlPlane::shared()?;
        static NEXT: AtomicUsize = AtomicUsize::new(1);
        let namespace = format!("test-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let admin = admin_client(&plane.dir, &namespace).await;
        let object =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": namespace } }))
                .expect("a namespace");
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &object)
            .await
            .expect("creating the test namespace");
        if project != project_dir() {
            // The control plane installed those of project_dir() when it started.
            install_crds(&admin, project)
                .await
                .unwrap_or_else(|err| panic!("installing the CRDs: {err}"));
        }
        let service_account = install_rbac(&admin, &namespace, project).await;
        let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), &namespace);
        let token = token(&accounts, &service_account).await;
        let kubeconfig = plane.kubeconfig_for_token(&namespace, &token, &namespace);
        let requests = RequestLog::default();
        let operator = kube::client::ClientBuilder::try_from(config(&kubeconfig).await)
            .expect("a client")
            .with_layer(&requests)
            .build();
        Some(Self {
            namespace,
            admin,
            operator,
            requests,
            backend: Backend::Real { plane, kubeconfig },
        })
    }

    /// The kubeconfig of a ServiceAccount with no rights at all, in the test's namespace: a
    /// manager running as it can watch nothing (real control plane only).
    pub async fn kubeconfig_without_rights(&self, name: &str) -> PathBuf {
        let Backend::Real { plane, .. } = &self.backend else {
            panic!("only the real control plane authorizes requests")
        };
        let token = self.service_account_token(name, None).await;
        let file = format!("{}-{name}", self.namespace);
        plane.kubeconfig_for_token(&file, &token, &self.namespace)
    }

    /// Creates ServiceAccount `name` in the test's namespace, bound to the project's
    /// ClusterRole `cluster_role` of `config/rbac` if given (as installed for this test, with
    /// its name prefix), and returns a token for it (real control plane only).
    pub async fn service_account_token(&self, name: &str, cluster_role: Option<&str>) -> String {
        let accounts = Api::<ServiceAccount>::namespaced(self.admin.clone(), &self.namespace);
        let account = serde_json::from_value(serde_json::json!({ "metadata": { "name": name } }))
            .expect("a ServiceAccount");
        accounts
            .create(&PostParams::default(), &account)
            .await
            .expect("creating a ServiceAccount");
        if let Some(role) = cluster_role {
            let binding = serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": { "name": format!("{}-{name}-{role}", self.namespace) },
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": format!("{}-{role}", self.namespace),
                },
                "subjects": [{ "kind": "ServiceAccount", "name": name, "namespace": self.namespace }],
            });
            apply(&self.admin, &binding).await;
        }
        token(&accounts, name).await
    }

    /// Whether this is the real control plane.
    pub fn is_real(&self) -> bool {
        matches!(self.backend, Backend::Real { .. })
    }

    /// Whether Deployments roll out by themselves: pods are created, scheduled and made Ready,
    /// and the deployment controller reports it in the Deployment's status (on the real control
    /// plane, only when kube-controller-manager, kube-scheduler and kwok run; see
    /// [`crate::workloads`] for the stand-in elsewhere).
    pub fn rolls_out(&self) -> bool {
        match &self.backend {
            Backend::InMemory(_) => false,
            Backend::Real { plane, .. } => plane.rollouts,
        }
    }

    /// Whether deleting an owner deletes what it owns (on the real control plane, only when
    /// kube-controller-manager runs).
    pub fn collects_garbage(&self) -> bool {
        match &self.backend {
            Backend::InMemory(_) => true,
            Backend::Real { plane, .. } => plane.garbage_collection,
        }
    }
}

/// Creates [`NODE`], schedulable, and waits until kwok reports it Ready: from then on, pods
/// bound to it come up. It has kwok's default capacity (a thousand CPUs, a million pods).
async fn add_node(dir: &Path, kwok: &mut Child) -> Result<(), String> {
    let admin = admin_client(dir, "default").await;
    let nodes = Api::<Node>::all(admin);
    let node = serde_json::from_value(serde_json::json!({ "metadata": {
        "name": NODE,
        "labels": { "kubernetes.io/hostname": NODE, "type": "kwok" },
        "annotations": { "kwok.x-k8s.io/node": "fake" },
    }}))
    .expect("a node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .map_err(|e| format!("creating node {NODE}: {e}"))?;
    // The API server taints a new node not-ready (admission plugin TaintNodesByCondition), and
    // kube-controller-manager's node lifecycle controller lifts the taint once the node reports
    // Ready. That controller would also evict pods from a node whose heartbeats stop, which
    // kwok's fast stages do not send: lift the taint here instead.
    let untainted = Patch::Merge(serde_json::json!({ "spec": { "taints": null } }));
    nodes
        .patch(NODE, &PatchParams::default(), &untainted)
        .await
        .map_err(|e| format!("untainting node {NODE}: {e}"))?;
    // As JSON: k8s-openapi types conditions differently from one Kubernetes version to another.
    let ready = |node: &Node| {
        let node = serde_json::to_value(node).unwrap_or_default();
        let conditions = node["status"]["conditions"].as_array().cloned();
        conditions
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    };
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if nodes.get(NODE).await.is_ok_and(|node| ready(&node)) {
            return Ok(());
        }
        if let Ok(Some(status)) = kwok.try_wait() {
            return Err(exited(dir, "kwok", status));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "kwok did not make node {NODE} Ready in {START_TIMEOUT:?}; {}",
                log_tail(dir, "kwok")
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A token for ServiceAccount `name`, from the TokenRequest API, valid for an hour.
// The `into`s: k8s-openapi types the request's spec and the status' token as `Option`s from
// Kubernetes 1.36 on, as required fields before; the project picks the version.
#[allow(clippy::useless_conversion)]
async fn token(accounts: &Api<ServiceAccount>, name: &str) -> String {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }
        .into(),
        ..TokenRequest::default()
    };
    let status = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token for a ServiceAccount")
        .status
        .expect("a token");
    Option::<String>::from(status.token).expect("a token")
}

/// Runs each listed scenario, an `async fn(TestEnv)`, as two tests: `in_memory::<name>` and
/// `real_control_plane::<name>`. The second exists only when the crate is built with the
/// `envtest` cfg, which a memop project's `build.rs` sets when `KUBEBUILDER_ASSETS` (or
/// `ENVTEST_REQUIRED=1`) is: a run without a control plane neither passes them nor lists each
/// as ignored; the project's one `real_control_plane` test in `tests/manifests.rs` says, in one
/// line, that they were not built and how to build them.
#[macro_export]
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod in_memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::TestEnv::in_memory()).await
                }
            )*
        }
        #[cfg(envtest)]
        mod real_control_plane {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(env) = $crate::TestEnv::real().await {
                        super::$name(env).await
                    }
                }
            )*
        }
    };
}

/// A client in `system:masters` (RBAC does not apply to it), with `namespace` as its default.
async fn admin_client(dir: &Path, namespace: &str) -> Client {
    let mut config = config(&dir.join("admin.kubeconfig")).await;
    config.default_namespace = namespace.to_string();
    Client::try_from(config).expect("a client")
}

/// The client configuration of a kubeconfig file the harness wrote.
async fn config(kubeconfig: &Path) -> Config {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).expect("a kubeconfig");
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client configuration")
}

/// Creates every CRD of `project`'s `config/crd/bases` (its own kinds) and
/// `config/external-crds` (other projects' kinds its controllers reconcile, which a cluster
/// gets from their projects) and waits until each is established: a CRD the real server refuses
/// fails here.
async fn install_crds(admin: &Client, project: &Path) -> Result<(), String> {
    let api = Api::<CustomResourceDefinition>::all(admin.clone());
    // A project without APIs yet, or without external ones, has no such directory.
    let entries = ["config/crd/bases", "config/external-crds"]
        .iter()
        .filter_map(|dir| std::fs::read_dir(project.join(dir)).ok())
        .flatten();
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let text = std::fs::read_to_string(entry.path()).map_err(|e| e.to_string())?;
        let crd: CustomResourceDefinition = serde_saphyr::from_str(&text)
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        let name = crd.metadata.name.clone().unwrap_or_default();
        let params = PatchParams::apply(FIELD_MANAGER).force();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(|e| format!("the API server refused {}: {e}", entry.path().display()))?;
        names.push(name);
    }
    for name in names {
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(10), established)
            .await
            .map_err(|_| format!("CRD {name} not established in 10 s"))?
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Installs the objects `project`'s `config/rbac/kustomization.yaml` lists for the operator
/// running in `namespace`, renamed as kustomize's `namePrefix` and `namespace` would (so that
/// tests do not share cluster-scoped objects), and returns the ServiceAccount's name.
async fn install_rbac(admin: &Client, namespace: &str, project: &Path) -> String {
    let dir = project.join("config/rbac");
    let kustomization: Value = serde_saphyr::from_str(&read(&dir.join("kustomization.yaml")))
        .expect("config/rbac/kustomization.yaml");
    let prefix = format!("{namespace}-");
    let mut service_account = None;
    let resources = kustomization["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for file in resources.iter().filter_map(Value::as_str) {
        let mut object: Value = serde_saphyr::from_str(&read(&dir.join(file)))
            .unwrap_or_else(|e| panic!("config/rbac/{file}: {e}"));
        rename(&mut object, &prefix, namespace);
        if object["kind"] == "ServiceAccount" {
            service_account = object["metadata"]["name"].as_str().map(str::to_string);
        }
        apply(admin, &object).await;
    }
    service_account.expect("config/rbac has a ServiceAccount")
}

/// kustomize's `namePrefix` and `namespace` on one object: names, role references, subjects.
pub fn rename(object: &mut Value, prefix: &str, namespace: &str) {
    let metadata = &mut object["metadata"];
    let name = metadata["name"].as_str().unwrap_or_default();
    metadata["name"] = format!("{prefix}{name}").into();
    let namespaced = metadata.get("namespace").is_some()
        || matches!(
            object["kind"].as_str(),
            Some("ServiceAccount" | "Role" | "RoleBinding")
        );
    if namespaced {
        object["metadata"]["namespace"] = namespace.into();
    }
    if let Some(role) = object.get_mut("roleRef") {
        let name = role["name"].as_str().unwrap_or_default();
        role["name"] = format!("{prefix}{name}").into();
    }
    for subject in object
        .get_mut("subjects")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if subject["kind"] == "ServiceAccount" {
            let name = subject["name"].as_str().unwrap_or_default();
            subject["name"] = format!("{prefix}{name}").into();
            subject["namespace"] = namespace.into();
        }
    }
}

/// Server-side applies any object, finding its resource through discovery; the namespace of a
/// cluster-scoped object is ignored.
pub async fn apply(admin: &Client, object: &Value) {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap_or_default());
    let (resource, capabilities) = kube::discovery::pinned_kind(admin, &gvk)
        .await
        .unwrap_or_else(|e| panic!("discovering {gvk:?}: {e}"));
    let namespace = object["metadata"]["namespace"].as_str();
    let api: Api<DynamicObject> = match (&capabilities.scope, namespace) {
        (Scope::Namespaced, Some(namespace)) => {
            Api::namespaced_with(admin.clone(), namespace, &resource)
        }
        (Scope::Namespaced, None) => panic!("{} needs a namespace", gvk.kind),
        (Scope::Cluster, _) => Api::all_with(admin.clone(), &resource),
    };
    let mut object = object.clone();
    if capabilities.scope == Scope::Cluster
        && let Some(metadata) = object["metadata"].as_object_mut()
    {
        metadata.remove("namespace");
    }
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap_or_else(|e| panic!("applying {} {name}: {e}", gvk.kind));
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// A port free on 127.0.0.1 now (the kernel picks it; the race with other processes is small).
pub fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Starts `name`, its output going to `<dir>/<name>.log`.
fn spawn(dir: &Path, name: &str, command: &mut Command) -> Result<Child, String> {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).map_err(|e| e.to_string())?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    // A process group of its own: a Ctrl-C in the terminal reaches the program that started it,
    // which stops it (through the reaper), not the control plane's processes one by one.
    command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting {name}: {e}"))
}

/// Polls `ready` until it holds, failing early when the process exits.
fn wait_for(
    dir: &Path,
    name: &str,
    child: &mut Child,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    while !ready() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(exited(dir, name, status));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{name} not ready in {START_TIMEOUT:?}; {}",
                log_tail(dir, name)
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn exited(dir: &Path, name: &str, status: std::process::ExitStatus) -> String {
    format!("{name} exited ({status}); {}", log_tail(dir, name))
}

fn log_tail(dir: &Path, name: &str) -> String {
    let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    format!("the end of its log:\n{tail}")
}

/// `GET http://127.0.0.1:<port><path>` over plain HTTP/1.0: the status code and the body.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// A shell that, when the test binary's end of its stdin closes (the binary exited, whichever
/// way), stops the processes whose ids it was sent and deletes the control plane's directory.
struct Reaper {
    stdin: ChildStdin,
    /// The shell, to wait for in [`ControlPlane::stop`].
    child: Child,
    /// The processes it stops, to wait for in [`ControlPlane::stop`].
    children: Vec<Child>,
}

impl Reaper {
    const SCRIPT: &'static str = r#"
        pids=""
        while read -r pid; do pids="$pids $pid"; done
        kill -TERM $pids 2>/dev/null
        n=0
        while [ $n -lt 100 ]; do
            alive=""
            for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
            [ -z "$alive" ] && break
            sleep 0.1; n=$((n + 1))
        done
        kill -KILL $pids 2>/dev/null
        rm -rf "$1"
    "#;

    fn start(dir: &Path) -> Result<Self, String> {
        let mut child = Command::new("sh")
            .args(["-c", Self::SCRIPT, "reaper"])
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting the reaper shell: {e}"))?;
        let stdin = child.stdin.take().expect("a piped stdin");
        Ok(Self {
            stdin,
            child,
            children: Vec::new(),
        })
    }

    /// Has the reaper stop `child`, and keeps it: the process, to wait for.
    fn watch(&mut self, child: Child) -> Result<&mut Child, String> {
        writeln!(self.stdin, "{}", child.id()).map_err(|e| e.to_string())?;
        self.children.push(child);
        Ok(self.children.last_mut().expect("just pushed"))
    }
}

/// Writes the certificates of the control plane to its directory: one CA that signs the
/// serving certificate and the admin's client certificate, and the ServiceAccount signing key.
fn write_certificates(dir: &Path) -> Result<(), rcgen::Error> {
    let write = |file: &str, text: String| {
        std::fs::write(dir.join(file), text).expect("writing a certificate")
    };
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "envtest-ca");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;
    write("ca.crt", ca.pem());

    let key = KeyPair::generate()?;
    let mut serving =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?;
    serving
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    write("apiserver.crt", serving.signed_by(&key, &ca)?.pem());
    write("apiserver.key", key.serialize_pem());

    let key = KeyPair::generate()?;
    let mut admin = CertificateParams::new(Vec::<String>::new())?;
    admin.distinguished_name.push(DnType::CommonName, "admin");
    admin
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    write("admin.crt", admin.signed_by(&key, &ca)?.pem());
    write("admin.key", key.serialize_pem());

    let key = KeyPair::generate()?;
    write("sa.key", key.serialize_pem());
    write("sa.pub", key.public_key_pem());
    Ok(())
}

fn write_kubeconfig(path: &Path, url: &str, ca: &Path, user: &str, namespace: &str) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {url}\n    certificate-authority: {ca}\nusers:\n- name: user\n  user:\n    {user}\ncontexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: user\n    namespace: {namespace}\ncurrent-context: envtest\n",
        ca = ca.display()
    );
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// The directory of the project under test, whose `config/` the real control plane installs:
/// `CARGO_MANIFEST_DIR`, which cargo sets for the tests it runs, or else the current directory.
pub fn project_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Starts kube-apiserver in `dir` on etcd at `etcd_url`, with the admin's kubeconfig beside it,
/// and returns its URL and process (not ready yet).
fn start_apiserver<'r>(
    apiserver: &Path,
    dir: &Path,
    etcd_url: &str,
    reaper: &'r mut Reaper,
) -> Result<(String, &'r mut Child), String> {
    let port = free_port()?;
    let url = format!("https://127.0.0.1:{port}");
    let d = |file: &str| dir.join(file).display().to_string();
    let admin = format!(
        "client-certificate: {}\n    client-key: {}",
        d("admin.crt"),
        d("admin.key")
    );
    write_kubeconfig(
        &dir.join("admin.kubeconfig"),
        &url,
        &dir.join("ca.crt"),
        &admin,
        "default",
    );
    let apiserver_child = spawn(
        dir,
        "kube-apiserver",
        Command::new(apiserver).args([
            format!("--etcd-servers={etcd_url}"),
            format!("--cert-dir={}", dir.display()),
            format!("--tls-cert-file={}", d("apiserver.crt")),
            format!("--tls-private-key-file={}", d("apiserver.key")),
            format!("--secure-port={port}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            "--allow-privileged=true".into(),
            // No controller creates the `default` ServiceAccount, so its admission plugin
            // would refuse pods. OwnerReferencesPermissionEnforcement is on, as in strict
            // clusters: setting blockOwnerDeletion needs `update` on the owner's finalizers.
            "--disable-admission-plugins=ServiceAccount".into(),
            "--enable-admission-plugins=OwnerReferencesPermissionEnforcement".into(),
            "--authorization-mode=RBAC".into(),
            format!("--client-ca-file={}", d("ca.crt")),
            format!("--service-account-issuer={url}/"),
            format!("--service-account-key-file={}", d("sa.pub")),
            format!("--service-account-signing-key-file={}", d("sa.key")),
            "--endpoint-reconciler-type=none".into(),
        ]),
    )?;
    Ok((url, reaper.watch(apiserver_child)?))
}

/// Starts etcd in `dir`, and returns its client URL once it is healthy.
fn start_etcd(etcd: &Path, dir: &Path, reaper: &mut Reaper) -> Result<String, String> {
    let (client_port, peer_port) = (free_port()?, free_port()?);
    let etcd_url = format!("http://127.0.0.1:{client_port}");
    let etcd_child = spawn(
        dir,
        "etcd",
        Command::new(etcd).args([
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
            "--unsafe-no-fsync=true".into(),
        ]),
    )?;
    let etcd_child = reaper.watch(etcd_child)?;
    wait_for(dir, "etcd", etcd_child, || {
        http_get(client_port, "/health").is_some_and(|(status, _)| status == 200)
    })?;
    Ok(etcd_url)
}

/// Starts kube-controller-manager (its garbage collector and storage version migrator, and the
/// controllers of rollouts with `rollouts`), and with `rollouts` kube-scheduler and kwok, which
/// runs the pods on one simulated node.
fn start_controllers(
    dir: &Path,
    controller_manager: Option<PathBuf>,
    rollouts: Option<&(PathBuf, PathBuf, PathBuf)>,
    reaper: &mut Reaper,
    runtime: &tokio::runtime::Runtime,
) -> Result<(), String> {
    let d = |file: &str| dir.join(file).display().to_string();
    if let Some(binary) = controller_manager {
        // The resource quota controller keeps quotas' usage, so that a test can fill a
        // namespace's quota to make new pods fail as they would in a cluster. The storage
        // version migrator runs StorageVersionMigrations (GA in 1.37, on by default there;
        // it needs the garbage collector, whose caches it reads).
        let controllers = if rollouts.is_some() {
            "garbage-collector-controller,storage-version-migrator-controller,deployment-controller,replicaset-controller,resourcequota-controller"
        } else {
            "garbage-collector-controller,storage-version-migrator-controller"
        };
        let child = spawn(
            dir,
            "kube-controller-manager",
            Command::new(binary).args([
                format!("--kubeconfig={}", d("admin.kubeconfig")),
                format!("--controllers={controllers}"),
                "--leader-elect=false".into(),
                "--secure-port=0".into(),
                "--use-service-account-credentials=false".into(),
            ]),
        )?;
        reaper.watch(child)?;
    }
    if let Some((kwok, stages, scheduler)) = rollouts {
        let child = spawn(
            dir,
            "kube-scheduler",
            Command::new(scheduler).args([
                format!("--kubeconfig={}", d("admin.kubeconfig")),
                "--leader-elect=false".into(),
                "--secure-port=0".into(),
            ]),
        )?;
        reaper.watch(child)?;
        // kwok serves nothing without --server-address: no port to pick.
        let child = spawn(
            dir,
            "kwok",
            Command::new(kwok).args([
                format!("--kubeconfig={}", d("admin.kubeconfig")),
                format!("--config={}", stages.display()),
                "--manage-all-nodes=true".into(),
            ]),
        )?;
        let kwok = reaper.watch(child)?;
        runtime.block_on(add_node(dir, kwok))?;
    }
    Ok(())
}
