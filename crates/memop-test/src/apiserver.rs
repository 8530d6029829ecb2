//! An in-memory Kubernetes API server for tests.
//!
//! [`ApiServer::client`] returns a real [`kube::Client`] whose HTTP transport is this server, so
//! operator code runs unchanged against it: typed `Api<K>` calls, `kube::runtime::watcher`,
//! `Controller`, the `finalizer()` helper and the event `Recorder`. Unlike a scripted mock it keeps
//! state, so a scenario test can reconcile twice and check what the cluster converged to.
//!
//! Objects are stored as JSON, keyed by the collection in the URL (`<group>/<version>/<plural>`),
//! namespace and name. Nothing needs to be registered: any `/api/v1/...` or
//! `/apis/<group>/<version>/...` path works, namespaced or cluster-scoped.
//!
//! # Faithful where operators depend on it
//! resourceVersion conflicts, `generation`, the status subresource, finalizers and
//! `deletionTimestamp`, ownerReference garbage collection, watch (list-then-watch, replay from a
//! resourceVersion, streaming lists) and errors as Kubernetes `Status` objects.
//!
//! The same scenarios also run against a real kube-apiserver when `KUBEBUILDER_ASSETS` is set
//! (`envtest.rs`): that tier covers what this server approximates below, and when the two
//! disagree the real server is right.
//!
//! # Approximations
//! - Every resource is assumed to have a status subresource: writes to the main resource never
//!   change `.status`, and `.status` is dropped on create. Other subresources (scale, ...) are 404.
//! - Strategic merge patch and server-side apply are JSON merge patches (RFC 7386): lists are
//!   replaced rather than merged by key, and there is no field ownership (`managedFields`, `force`
//!   and conflicts between managers are ignored). A field a manager applied before and leaves
//!   out of its next apply is removed, as the real server removes it when that manager alone
//!   set it (here: even when another set it too).
//! - No admission, defaulting or schema validation, but for two rules of the real server's
//!   that operators meet: an update may not change a Deployment's selector, nor give an object
//!   two controller owner references. Server-owned metadata (uid, name, namespace,
//!   creation and deletion timestamps) is silently kept on update instead of being rejected.
//! - Garbage collection runs synchronously, in background mode: orphaning, foreground deletion
//!   and `deletecollection` are not supported (a delete's propagation policy is ignored; its
//!   preconditions are checked). `dryRun` is refused (400).
//! - A list with `limit` is served in pages, each with a `continue` token, but each page as the
//!   objects are when it is asked for, not as they were when the list began. A token expires only
//!   when a test says ([`ApiServer::expire_continue_tokens`]), then as after etcd compacted the
//!   revision the list began at: 410 Expired, with a token that resumes the list where it stopped
//!   (the real server's "inconsistent continue"). Field selectors accept any dotted path, compared
//!   as a string. Watches send no periodic bookmarks (only the end-of-initial-events bookmark of
//!   streaming lists) and the event history is unbounded, so no watch gets 410 Gone unless a
//!   test says ([`ApiServer::expire_watches`]).

use std::{
    collections::BTreeMap,
    convert::Infallible,
    future::Future,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use bytes::Bytes;
use futures::{StreamExt, stream};
use http::{HeaderValue, Method, StatusCode, header::CONTENT_TYPE};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use json_patch::PatchOperation;
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::client::Body;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::requests::{Request, RequestLog, Verb};

/// How long a watch without `timeoutSeconds` stays open (the real server picks 30–60 minutes).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Metadata owned by the server: updates and patches cannot change it.
const SERVER_OWNED_METADATA: [&str; 6] = [
    "uid",
    "name",
    "namespace",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// The server. Clones share state, so a test can keep one handle while clients use another.
#[derive(Clone, Default)]
pub struct ApiServer {
    state: Arc<Mutex<State>>,
    /// The request log and fault injection of [`ApiServer::client`].
    log: RequestLog,
}

impl ApiServer {
    /// An API server holding no objects yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A client talking to this server, with default namespace `"default"`.
    ///
    /// Must be called inside a Tokio runtime (`kube::Client` spawns its request buffer there).
    pub fn client(&self) -> kube::Client {
        self.client_with(&self.log)
    }

    /// A client like [`ApiServer::client`] whose requests go through `log` first.
    pub fn client_with(&self, log: &RequestLog) -> kube::Client {
        kube::Client::new(tower::Layer::layer(log, self.clone().service()), "default")
    }

    fn service(
        self,
    ) -> impl tower::Service<
        http::Request<Body>,
        Response = Response,
        Error = Infallible,
        Future = impl Future<Output = Result<Response, Infallible>> + Send,
    > + Send
    + 'static {
        let server = self;
        tower::service_fn(move |request: http::Request<Body>| {
            let server = server.clone();
            async move { Ok::<_, Infallible>(server.handle(request).await) }
        })
    }

    /// Fails the next `times` requests of [`ApiServer::client`] matching `verb` and `resource`
    /// (as in [`Request::resource`]; `"*"` matches any) with HTTP `code` and a matching
    /// `Status`, before any state changes: use it to exercise conflict and retry paths.
    pub fn fail_next(&self, verb: Verb, resource: &str, code: u16, times: usize) {
        self.log.fail_next(verb, resource, code, times);
    }

    /// Ends every open watch as the real server does when the revision a watch follows has
    /// been compacted away (etcd keeps 5 minutes of history by default): with an `ERROR` event
    /// holding a 410 Expired `Status`, after which its client must list again.
    pub fn expire_watches(&self) {
        let status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "too old resource version",
            "reason": "Expired",
            "code": 410,
        });
        for watcher in self.lock().watchers.drain(..) {
            let _ = watcher.sender.send(event_line("ERROR", &status));
        }
    }

    /// Answers the next `times` lists that continue with a token of an earlier page as the real
    /// server does once etcd has compacted the revision their list began at (5 minutes after, by
    /// default): 410 Expired, and in the `Status`'s `metadata.continue` a token that continues
    /// the list where it stopped, at the current revision (the real server's "inconsistent
    /// continue"). Lists continued with such a token never expire.
    pub fn expire_continue_tokens(&self, times: usize) {
        self.lock().expire_continues = times;
    }

    /// Every request of [`ApiServer::client`] since the log was last cleared, in order, failed
    /// ones included.
    pub fn requests(&self) -> Vec<Request> {
        self.log.requests()
    }

    /// How many write requests (create/update/patch/delete) of [`ApiServer::client`] went to
    /// `resource` (as in [`Request::resource`], `"*"` for all) since the log was last cleared.
    /// Failed requests count too: they are what the operator sent.
    pub fn writes(&self, resource: &str) -> usize {
        self.log.writes(resource)
    }

    /// Forgets the requests logged so far.
    pub fn clear_requests(&self) {
        self.log.clear();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock must not turn every later request into a
        // second, unrelated panic; the state itself is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn handle(&self, request: http::Request<Body>) -> Response {
        let (parts, body) = request.into_parts();
        // Read the body before taking the lock: the guard must never be held across an await.
        match body.collect_bytes().await {
            Ok(bytes) => self.lock().serve(&parts, &bytes),
            Err(err) => Failure::new(400, format!("reading the request body: {err}")).response(),
        }
    }
}

type Response = http::Response<UnsyncBoxBody<Bytes, Infallible>>;

#[derive(Default)]
struct State {
    objects: BTreeMap<ObjectKey, Value>,
    /// The last resourceVersion handed out. One counter for everything, like etcd's revision,
    /// so a list's resourceVersion orders it against every later change.
    resource_version: u64,
    /// Source of uids and `generateName` suffixes.
    serial: u64,
    /// Every change so far, so a watch from resourceVersion N can replay what happened after N
    /// (kube's watcher lists first, then watches from the list's resourceVersion).
    history: Vec<Change>,
    watchers: Vec<Watcher>,
    /// The last server-side apply of each object by each field manager (through the status
    /// subresource or not): what a manager's next apply leaves out of it is removed.
    applied: BTreeMap<(ObjectKey, String, bool), Value>,
    /// How many continued lists to answer as expired ([`ApiServer::expire_continue_tokens`]).
    expire_continues: usize,
}

/// Where a paged list goes on: the list's resourceVersion (`None` for the current one, after an
/// expired token), and the namespace and name of the last object of the page before.
#[derive(serde::Serialize, serde::Deserialize)]
struct Continue {
    rv: Option<u64>,
    namespace: String,
    name: String,
}

impl Continue {
    fn token(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ObjectKey {
    collection: String,
    /// Empty for cluster-scoped objects.
    namespace: String,
    name: String,
}

/// One stored change: `before` is absent for creations, `after` for deletions.
struct Change {
    resource_version: u64,
    key: ObjectKey,
    before: Option<Value>,
    after: Option<Value>,
}

/// An open watch: its selection, and where to send matching events (as ready-to-write lines).
struct Watcher {
    filter: Filter,
    sender: mpsc::UnboundedSender<Bytes>,
}

impl Watcher {
    /// Sends `change` if this watcher sees it. Returns false once the client has hung up.
    fn notify(&self, change: &Change) -> bool {
        match self.filter.event(change) {
            Some(line) => self.sender.send(line).is_ok(),
            None => !self.sender.is_closed(),
        }
    }
}

impl State {
    fn serve(&mut self, parts: &http::request::Parts, body: &[u8]) -> Response {
        let query = Query::parse(parts.uri.query().unwrap_or_default());
        let target = Target::parse(parts.uri.path());
        let verb = match parts.method {
            Method::GET if target.as_ref().is_some_and(|t| t.name.is_some()) => Verb::Get,
            Method::GET if query.flag("watch") => Verb::Watch,
            Method::GET => Verb::List,
            Method::POST => Verb::Create,
            Method::PUT => Verb::Update,
            Method::PATCH => Verb::Patch,
            Method::DELETE => Verb::Delete,
            ref other => return Failure::new(405, format!("{other} is not supported")).response(),
        };
        let Some(target) = target else {
            return Failure::new(404, "the server could not find the requested resource")
                .response();
        };
        let content_type = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        self.dispatch(verb, &target, &query, content_type, body)
            .unwrap_or_else(Failure::response)
    }

    fn dispatch(
        &mut self,
        verb: Verb,
        target: &Target,
        query: &Query,
        content_type: &str,
        body: &[u8],
    ) -> Result<Response, Failure> {
        if verb.is_write() && query.get("dryRun").is_some() {
            // Persisting a dry run would make tests lie; refuse it loudly instead.
            return Err(Failure::new(400, "dryRun is not supported"));
        }
        let ok = |object: Value| json_response(StatusCode::OK, &object);
        match (verb, target.name.as_deref()) {
            (Verb::Get, Some(name)) => self
                .objects
                .get(&target.key(name))
                .map(|object| json_response(StatusCode::OK, object))
                .ok_or_else(|| target.not_found(name)),
            (Verb::List, _) => self.list(target, query).map(ok),
            (Verb::Watch, _) => self.watch(target, query),
            (Verb::Create, None) => {
                let created = self.create(target, parse_json(body)?, None)?;
                Ok(json_response(StatusCode::CREATED, &created))
            }
            (Verb::Update, Some(name)) => {
                let key = target.key(name);
                let old = self.objects.get(&key).cloned();
                let old = old.ok_or_else(|| target.not_found(name))?;
                self.update(target, key, &old, parse_json(body)?).map(ok)
            }
            (Verb::Patch, Some(name)) => self.patch(target, name, query, content_type, body),
            (Verb::Delete, Some(name)) if !target.status => {
                let key = target.key(name);
                let object = self
                    .objects
                    .get(&key)
                    .ok_or_else(|| target.not_found(name))?;
                check_preconditions(object, body)?;
                self.delete(&key)
                    .map(ok)
                    .ok_or_else(|| target.not_found(name))
            }
            _ => Err(Failure::new(405, format!("{verb:?} is not allowed here"))),
        }
    }

    fn list(&mut self, target: &Target, query: &Query) -> Result<Value, Failure> {
        let filter = Filter::new(target, query)?;
        let after = match query.get("continue").filter(|token| !token.is_empty()) {
            Some(token) => {
                let after: Continue = serde_json::from_str(token)
                    .map_err(|_| Failure::new(400, "continue key is not valid"))?;
                if after.rv.is_some() && self.expire_continues > 0 {
                    self.expire_continues -= 1;
                    let inconsistent = Continue { rv: None, ..after };
                    return Err(Failure::new(410, INCONSISTENT_CONTINUE)
                        .with_continue(inconsistent.token()));
                }
                Some(after)
            }
            None => None,
        };
        let limit = query
            .get("limit")
            .and_then(|limit| limit.parse::<usize>().ok())
            .filter(|limit| *limit > 0);
        let resource_version = after
            .as_ref()
            .and_then(|after| after.rv)
            .unwrap_or(self.resource_version);
        let mut selected = self.objects.iter().filter(|(key, object)| {
            filter.matches(key, object)
                && after.as_ref().is_none_or(|after| {
                    (key.namespace.as_str(), key.name.as_str())
                        > (after.namespace.as_str(), after.name.as_str())
                })
        });
        let mut items: Vec<&Value> = Vec::new();
        let mut next = None;
        for (key, object) in selected.by_ref() {
            items.push(object);
            next = Some(key);
            if limit.is_some_and(|limit| items.len() == limit) {
                break;
            }
        }
        let more = limit.is_some_and(|limit| items.len() == limit) && selected.next().is_some();
        let mut metadata = json!({ "resourceVersion": resource_version.to_string() });
        if let (true, Some(last)) = (more, next) {
            let next = Continue {
                rv: Some(resource_version),
                namespace: last.namespace.clone(),
                name: last.name.clone(),
            };
            metadata["continue"] = json!(next.token());
        }
        let kind = self.kind_of(&target.collection).unwrap_or_default();
        Ok(json!({
            "apiVersion": target.group_version,
            "kind": format!("{kind}List"),
            "metadata": metadata,
            "items": items,
        }))
    }

    fn selected<'a>(&'a self, filter: &'a Filter) -> impl Iterator<Item = &'a Value> {
        let selected = self
            .objects
            .iter()
            .filter(|(key, object)| filter.matches(key, object));
        selected.map(|(_, object)| object)
    }

    /// The kind stored objects of `collection` have: the URL only names the plural.
    fn kind_of(&self, collection: &str) -> Option<&str> {
        self.objects
            .iter()
            .find(|(key, _)| key.collection == collection)
            .and_then(|(_, object)| object["kind"].as_str())
    }

    fn watch(&mut self, target: &Target, query: &Query) -> Result<Response, Failure> {
        let filter = Filter::new(target, query)?;
        let streaming_list = query.flag("sendInitialEvents");
        let mut initial = Vec::new();
        match query.get("resourceVersion").unwrap_or_default() {
            // With no starting point (or for a streaming list) the current state comes first, as
            // synthetic ADDED events.
            rv if rv.is_empty() || rv == "0" || streaming_list => {
                let current = self.selected(&filter);
                initial.extend(current.map(|object| event_line("ADDED", object)));
                if streaming_list {
                    // kube's `watcher::Config::streaming_lists()` waits for this bookmark to
                    // know that the initial state is complete.
                    let bookmark = json!({
                        "apiVersion": target.group_version,
                        "kind": self.kind_of(&target.collection).unwrap_or_default(),
                        "metadata": {
                            "resourceVersion": self.resource_version.to_string(),
                            "annotations": { "k8s.io/initial-events-end": "true" },
                        },
                    });
                    initial.push(event_line("BOOKMARK", &bookmark));
                }
            }
            rv => {
                let since: u64 = rv
                    .parse()
                    .map_err(|_| Failure::new(400, format!("invalid resourceVersion {rv:?}")))?;
                initial.extend(
                    self.history
                        .iter()
                        .filter(|change| change.resource_version > since)
                        .filter_map(|change| filter.event(change)),
                );
            }
        }
        // Registering the watcher under the same lock as the replay means no change can fall
        // between the two or be sent twice.
        let (sender, receiver) = mpsc::unbounded_channel();
        self.watchers.push(Watcher { filter, sender });
        let timeout = query
            .get("timeoutSeconds")
            .and_then(|seconds| seconds.parse().ok())
            .filter(|&seconds| seconds > 0)
            .map_or(DEFAULT_WATCH_TIMEOUT, Duration::from_secs);
        let live = stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|line| (line, receiver))
        });
        let lines = stream::iter(initial)
            .chain(live)
            // Ending the body is how the real server honours `timeoutSeconds`; kube's watcher
            // then resumes from the last resourceVersion it saw.
            .take_until(tokio::time::sleep(timeout))
            .map(|line| Ok::<_, Infallible>(Frame::data(line)));
        let body = StreamBody::new(lines).boxed_unsync();
        Ok(response(StatusCode::OK, body))
    }

    /// Creates an object from a POST body, or from a server-side apply to a missing object (then
    /// `url_name` is the name from the URL).
    fn create(
        &mut self,
        target: &Target,
        mut object: Value,
        url_name: Option<&str>,
    ) -> Result<Value, Failure> {
        check_shape(&object)?;
        let metadata = &object["metadata"];
        let name = match (url_name, metadata["name"].as_str()) {
            (Some(name), _) | (None, Some(name)) => name.to_owned(),
            (None, None) => match metadata["generateName"].as_str() {
                Some(prefix) => {
                    self.serial += 1;
                    format!("{prefix}{:05x}", self.serial)
                }
                None => return Err(Failure::new(422, "metadata.name is required")),
            },
        };
        if let (Some(url_ns), Some(body_ns)) = (&target.namespace, metadata["namespace"].as_str())
            && url_ns != body_ns
        {
            return Err(Failure::new(400, "namespace does not match the request"));
        }
        let key = target.key(&name);
        if self.objects.contains_key(&key) {
            return Err(Failure {
                code: 409,
                reason: "AlreadyExists",
                message: format!("{} already exists", target.describe(&name)),
                continue_: None,
            });
        }
        self.serial += 1;
        let metadata = &mut object["metadata"];
        metadata["name"] = json!(name);
        // The URL decides the namespace; cluster-scoped objects have none.
        set_or_remove(
            metadata,
            "namespace",
            target.namespace.clone().map(Value::from),
        );
        metadata["uid"] = json!(format!("00000000-0000-4000-8000-{:012x}", self.serial));
        metadata["creationTimestamp"] = now();
        metadata["generation"] = json!(1);
        set_or_remove(metadata, "deletionTimestamp", None);
        set_or_remove(metadata, "deletionGracePeriodSeconds", None);
        // Status is written through the subresource only, even at creation.
        set_or_remove(&mut object, "status", None);
        Ok(self.store(key, object))
    }

    /// Applies a PUT (or a patched copy of `old`) under the rules of the real server.
    fn update(
        &mut self,
        target: &Target,
        key: ObjectKey,
        old: &Value,
        mut new: Value,
    ) -> Result<Value, Failure> {
        check_shape(&new)?;
        let current_rv = &old["metadata"]["resourceVersion"];
        // A resourceVersion in the body is a precondition (optimistic concurrency); without one
        // the write is unconditional.
        if let Some(rv) = new["metadata"]["resourceVersion"].as_str()
            && !rv.is_empty()
            && Some(rv) != current_rv.as_str()
        {
            return Err(Failure::new(
                409,
                format!(
                    "Operation cannot be fulfilled on {}: the object has been modified; \
                     please apply your changes to the latest version and try again",
                    target.describe(&key.name)
                ),
            ));
        }
        if target.status {
            // Through /status only `.status` changes.
            let status = new.get("status").cloned();
            new = old.clone();
            set_or_remove(&mut new, "status", status);
        } else {
            // ...and through the main resource everything but `.status`.
            set_or_remove(&mut new, "status", old.get("status").cloned());
        }
        let old_metadata = &old["metadata"];
        for field in SERVER_OWNED_METADATA {
            set_or_remove(
                &mut new["metadata"],
                field,
                old_metadata.get(field).cloned(),
            );
        }
        validate_update(target, old, &new)?;
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        new["metadata"]["generation"] =
            json!(generation + i64::from(desired_state_changed(old, &new)));
        new["metadata"]["resourceVersion"] = current_rv.clone();
        if new == *old {
            // A no-op write keeps the resourceVersion and wakes no watcher, so a controller that
            // writes what is already there does not trigger itself forever.
            return Ok(new);
        }
        if is_terminating(&new) && !has_finalizers(&new) {
            // The last finalizer is gone: deletion completes now.
            return Ok(self.remove(key, new));
        }
        Ok(self.store(key, new))
    }

    fn patch(
        &mut self,
        target: &Target,
        name: &str,
        query: &Query,
        content_type: &str,
        body: &[u8],
    ) -> Result<Response, Failure> {
        let patch = parse_json(body)?;
        let media_type = content_type.split(';').next().unwrap_or_default().trim();
        let apply = media_type == "application/apply-patch+yaml";
        if apply && query.get("fieldManager").is_none_or(str::is_empty) {
            return Err(Failure::new(422, "fieldManager is required for apply"));
        }
        let key = target.key(name);
        let manager = query.get("fieldManager").unwrap_or_default().to_string();
        let applied = (key.clone(), manager, target.status);
        let Some(old) = self.objects.get(&key).cloned() else {
            // Server-side apply creates missing objects, but not through the status subresource.
            if apply && !target.status {
                let created = self.create(target, patch.clone(), Some(name))?;
                self.applied.insert(applied, patch);
                return Ok(json_response(StatusCode::CREATED, &created));
            }
            return Err(target.not_found(name));
        };
        let mut patched = old.clone();
        match media_type {
            "application/json-patch+json" => apply_json_patch(&mut patched, patch.clone())?,
            // Strategic merge and apply are approximated by a JSON merge patch (see module docs).
            "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                json_patch::merge(&mut patched, &patch)
            }
            "application/apply-patch+yaml" => {
                json_patch::merge(&mut patched, &patch);
                // What this manager applied last time and leaves out now goes.
                if let Some(previous) = self.applied.get(&applied) {
                    remove_left_out(&mut patched, previous, &patch);
                }
            }
            other => return Err(Failure::new(415, format!("unsupported patch {other:?}"))),
        }
        let updated = self.update(target, key, &old, patched)?;
        if apply {
            self.applied.insert(applied, patch);
        }
        Ok(json_response(StatusCode::OK, &updated))
    }

    fn delete(&mut self, key: &ObjectKey) -> Option<Value> {
        let mut object = self.objects.get(key)?.clone();
        if !has_finalizers(&object) {
            return Some(self.remove(key.clone(), object));
        }
        if is_terminating(&object) {
            return Some(object);
        }
        // Finalizers hold the object: mark it as deleting and let each finalizer's owner clean up
        // and remove its entry. The real server bumps the generation here too.
        let metadata = &mut object["metadata"];
        let generation = metadata["generation"].as_i64().unwrap_or(1);
        metadata["generation"] = json!(generation + 1);
        metadata["deletionTimestamp"] = now();
        metadata["deletionGracePeriodSeconds"] = json!(0);
        Some(self.store(key.clone(), object))
    }

    /// Stores `object` under a new resourceVersion and notifies watchers.
    fn store(&mut self, key: ObjectKey, mut object: Value) -> Value {
        let resource_version = self.next_resource_version();
        object["metadata"]["resourceVersion"] = json!(resource_version.to_string());
        let before = self.objects.insert(key.clone(), object.clone());
        self.record(Change {
            resource_version,
            key,
            before,
            after: Some(object.clone()),
        });
        object
    }

    /// Removes the object for good (`object` is its final state), notifies watchers, then
    /// garbage-collects its dependents.
    fn remove(&mut self, key: ObjectKey, mut object: Value) -> Value {
        self.objects.remove(&key);
        self.applied.retain(|(applied, _, _), _| *applied != key);
        let resource_version = self.next_resource_version();
        object["metadata"]["resourceVersion"] = json!(resource_version.to_string());
        self.record(Change {
            resource_version,
            key,
            before: Some(object.clone()),
            after: None,
        });
        // The garbage collector's background propagation, done synchronously: every object with
        // an ownerReference to this uid is deleted too (which recurses, and respects finalizers).
        let uid = &object["metadata"]["uid"];
        let dependents: Vec<ObjectKey> = self
            .objects
            .iter()
            .filter(|(_, dependent)| is_owned_by(dependent, uid))
            .map(|(key, _)| key.clone())
            .collect();
        for dependent in &dependents {
            self.delete(dependent);
        }
        object
    }

    fn record(&mut self, change: Change) {
        self.watchers.retain(|watcher| watcher.notify(&change));
        self.history.push(change);
    }

    fn next_resource_version(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }
}

/// What a request URL addresses.
struct Target {
    /// `"v1"` or `"<group>/<version>"`.
    group_version: String,
    /// `"<group_version>/<plural>"`: objects are keyed by it.
    collection: String,
    plural: String,
    namespace: Option<String>,
    name: Option<String>,
    /// The `status` subresource.
    status: bool,
}

impl Target {
    fn parse(path: &str) -> Option<Self> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group_version, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => ((*version).to_owned(), rest),
            ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
            _ => return None,
        };
        let (namespace, rest) = match rest {
            // `namespaces/<ns>/<plural>/...` is namespaced, but `namespaces/<name>[/status]` is
            // the Namespace object itself.
            ["namespaces", namespace, rest @ ..]
                if rest.first().is_some_and(|s| *s != "status") =>
            {
                (Some((*namespace).to_owned()), rest)
            }
            _ => (None, rest),
        };
        let (plural, name, status) = match rest {
            [plural] => (*plural, None, false),
            [plural, name] => (*plural, Some((*name).to_owned()), false),
            [plural, name, "status"] => (*plural, Some((*name).to_owned()), true),
            _ => return None,
        };
        Some(Self {
            collection: format!("{group_version}/{plural}"),
            group_version,
            plural: plural.to_owned(),
            namespace,
            name,
            status,
        })
    }

    fn key(&self, name: &str) -> ObjectKey {
        ObjectKey {
            collection: self.collection.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            name: name.to_owned(),
        }
    }

    /// `deployments.apps "web"`, as the real server words its messages.
    fn describe(&self, name: &str) -> String {
        match self.group_version.split_once('/') {
            Some((group, _)) => format!("{}.{group} {name:?}", self.plural),
            None => format!("{} {name:?}", self.plural),
        }
    }

    fn not_found(&self, name: &str) -> Failure {
        Failure::new(404, format!("{} not found", self.describe(name)))
    }
}

/// Which objects a list or watch selects.
struct Filter {
    collection: String,
    /// `None` lists across all namespaces.
    namespace: Option<String>,
    labels: Vec<Requirement>,
    fields: Vec<Requirement>,
}

impl Filter {
    fn new(target: &Target, query: &Query) -> Result<Self, Failure> {
        Ok(Self {
            collection: target.collection.clone(),
            namespace: target.namespace.clone(),
            labels: parse_label_selector(query.get("labelSelector").unwrap_or_default())?,
            fields: parse_field_selector(query.get("fieldSelector").unwrap_or_default())?,
        })
    }

    fn matches(&self, key: &ObjectKey, object: &Value) -> bool {
        key.collection == self.collection
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == key.namespace)
            && self.labels.iter().all(|requirement| {
                requirement.matches(object["metadata"]["labels"][requirement.key.as_str()].as_str())
            })
            && self.fields.iter().all(|requirement| {
                requirement.matches(Some(&field_value(object, &requirement.key)))
            })
    }

    /// The watch event this filter's watcher gets for `change`, as a line, if any. Like the real
    /// server, an object that starts matching the selectors is ADDED and one that stops matching
    /// is DELETED, so the client's cache stays right.
    fn event(&self, change: &Change) -> Option<Bytes> {
        let visible = |object: &&Value| self.matches(&change.key, object);
        let before = change.before.as_ref().filter(visible);
        let after = change.after.as_ref().filter(visible);
        let (kind, object) = match (before, after) {
            (None, Some(after)) => ("ADDED", after),
            (Some(_), Some(after)) => ("MODIFIED", after),
            (Some(before), None) => ("DELETED", change.after.as_ref().unwrap_or(before)),
            (None, None) => return None,
        };
        Some(event_line(kind, object))
    }
}

/// One selector requirement, on a label or (for field selectors) a field.
struct Requirement {
    key: String,
    op: Op,
}

enum Op {
    In(Vec<String>),
    /// Also matches objects without the key, as `!=` and `notin` do in Kubernetes.
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

impl Requirement {
    fn matches(&self, value: Option<&str>) -> bool {
        match &self.op {
            Op::In(values) => value.is_some_and(|v| values.iter().any(|x| x == v)),
            Op::NotIn(values) => value.is_none_or(|v| values.iter().all(|x| x != v)),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
        }
    }
}

/// `a=b,c!=d,e in (f,g),h notin (i),j,!k`.
fn parse_label_selector(selector: &str) -> Result<Vec<Requirement>, Failure> {
    // Split on the commas between requirements, not on those inside `in (...)` value sets.
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0_usize, 0);
    for (index, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&selector[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
        .into_iter()
        .map(str::trim)
        .filter(|term| !term.is_empty())
        .map(parse_label_requirement)
        .collect()
}

fn parse_label_requirement(term: &str) -> Result<Requirement, Failure> {
    let invalid = || Failure::new(400, format!("unable to parse label requirement {term:?}"));
    if let Some(requirement) = parse_equality(term) {
        return Ok(requirement);
    }
    if let Some((head, values)) = term.strip_suffix(')').and_then(|t| t.split_once('(')) {
        let values = values.split(',').map(|v| v.trim().to_owned()).collect();
        let (key, operator) = head.trim().rsplit_once(' ').ok_or_else(invalid)?;
        let op = match operator {
            "in" => Op::In(values),
            "notin" => Op::NotIn(values),
            _ => return Err(invalid()),
        };
        return Ok(Requirement {
            key: key.trim().to_owned(),
            op,
        });
    }
    let (key, op) = match term.strip_prefix('!') {
        Some(key) => (key.trim(), Op::DoesNotExist),
        None => (term, Op::Exists),
    };
    let valid_key = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if !valid_key {
        return Err(invalid());
    }
    Ok(Requirement {
        key: key.to_owned(),
        op,
    })
}

/// `metadata.name=a,metadata.namespace!=b`: field selectors only have (in)equality.
fn parse_field_selector(selector: &str) -> Result<Vec<Requirement>, Failure> {
    selector
        .split(',')
        .map(str::trim)
        .filter(|term| !term.is_empty())
        .map(|term| {
            parse_equality(term).ok_or_else(|| {
                Failure::new(400, format!("unable to parse field requirement {term:?}"))
            })
        })
        .collect()
}

/// `key=value`, `key==value` or `key!=value`.
fn parse_equality(term: &str) -> Option<Requirement> {
    let (key, op) = match term.split_once("!=") {
        Some((key, value)) => (key, Op::NotIn(vec![value.trim().to_owned()])),
        None => {
            let (key, value) = term.split_once("==").or_else(|| term.split_once('='))?;
            (key, Op::In(vec![value.trim().to_owned()]))
        }
    };
    Some(Requirement {
        key: key.trim().to_owned(),
        op,
    })
}

/// A field's value for field selectors: its string form, `""` when absent (so, as in Kubernetes,
/// `spec.nodeName=` selects pods that have no node yet).
fn field_value(object: &Value, path: &str) -> String {
    match object.pointer(&format!("/{}", path.replace('.', "/"))) {
        Some(Value::String(value)) => value.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The decoded query string of a request.
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(raw: &str) -> Self {
        let pairs = raw.split('&').filter(|pair| !pair.is_empty()).map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(name), percent_decode(value))
        });
        Self(pairs.collect())
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1"))
    }
}

/// `application/x-www-form-urlencoded` decoding, which is how kube encodes query parameters
/// (selectors like `tier in (a,b)` arrive as `tier+in+%28a%2Cb%29`).
fn percent_decode(encoded: &str) -> String {
    let mut decoded = Vec::with_capacity(encoded.len());
    let mut rest = encoded.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        rest = tail;
        match byte {
            b'+' => decoded.push(b' '),
            b'%' => {
                let hex = tail.get(..2).and_then(|hex| std::str::from_utf8(hex).ok());
                match hex.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
                    Some(value) => {
                        decoded.push(value);
                        rest = &tail[2..];
                    }
                    None => decoded.push(b'%'),
                }
            }
            other => decoded.push(other),
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// RFC 6902, plus one quirk of the real server (Go's json-patch): a `test` for `null` passes when
/// the path is absent. kube-runtime's `finalizer()` relies on it to add the first finalizer.
fn apply_json_patch(document: &mut Value, patch: Value) -> Result<(), Failure> {
    let operations: Vec<PatchOperation> = serde_json::from_value(patch)
        .map_err(|err| Failure::new(400, format!("invalid JSON patch: {err}")))?;
    // One operation at a time, so each `test` sees the document as the previous ones left it.
    // On error the caller discards `document`, so a half-applied patch never gets stored.
    for operation in &operations {
        if let PatchOperation::Test(test) = operation
            && test.value.is_null()
            && document.pointer(test.path.as_str()).is_none()
        {
            continue;
        }
        json_patch::patch(document, std::slice::from_ref(operation))
            .map_err(|err| Failure::new(422, format!("JSON patch failed: {err}")))?;
    }
    Ok(())
}

/// Generation tracks desired state. As for custom resources on the real server, it changes when
/// anything outside `.metadata` and `.status` changes, which for most objects means `.spec`.
fn desired_state_changed(old: &Value, new: &Value) -> bool {
    let desired = |object: &Value| -> BTreeMap<String, Value> {
        object
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(field, _)| !matches!(field.as_str(), "metadata" | "status"))
            .map(|(field, value)| (field.clone(), value.clone()))
            .collect()
    };
    desired(old) != desired(new)
}

/// Removes from `object` what `previous` (a manager's last apply) set and `current` (its apply
/// now) leaves out, field by field into objects (a list is one field): server-side apply's
/// removal of what a manager stops applying, without its field ownership (a field another
/// manager set too is removed as well).
fn remove_left_out(object: &mut Value, previous: &Value, current: &Value) {
    let (Some(object), Some(previous)) = (object.as_object_mut(), previous.as_object()) else {
        return;
    };
    for (field, before) in previous {
        match current.get(field) {
            None => {
                object.remove(field);
            }
            Some(now) => {
                if let Some(inner) = object.get_mut(field) {
                    remove_left_out(inner, before, now);
                }
            }
        }
    }
}

fn has_finalizers(object: &Value) -> bool {
    object["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|finalizers| !finalizers.is_empty())
}

/// The preconditions of a delete (`DeleteOptions.preconditions` in its body), checked as the
/// real server checks them: a UID or resourceVersion other than the object's is a 409 Conflict.
fn check_preconditions(object: &Value, body: &[u8]) -> Result<(), Failure> {
    let options: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    for (field, name) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        let Some(wanted) = options["preconditions"][field].as_str() else {
            continue;
        };
        let actual = object["metadata"][field].as_str().unwrap_or_default();
        if wanted != actual {
            let message = format!(
                "Precondition failed: {name} in precondition: {wanted}, {name} in object meta: {actual}"
            );
            return Err(Failure::new(409, message));
        }
    }
    Ok(())
}

fn is_terminating(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

fn is_owned_by(object: &Value, uid: &Value) -> bool {
    object["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|owners| owners.iter().any(|owner| owner["uid"] == *uid))
}

/// Sets `object[field]`, or removes it for `None`. `object` must be a JSON object or null.
fn set_or_remove(object: &mut Value, field: &str, value: Option<Value>) {
    match value {
        Some(value) => object[field] = value,
        None => {
            if let Some(fields) = object.as_object_mut() {
                fields.remove(field);
            }
        }
    }
}

/// Rejects bodies the server could not index into (indexing a non-object `Value` for writing
/// panics): the body and its `metadata` must be JSON objects.
/// The real server's validation of an update that the tests' scenarios meet: a Deployment's
/// selector cannot change, and at most one owner reference is the controller (what keeps an
/// operator's forced apply from taking over someone else's Deployment).
fn validate_update(target: &Target, old: &Value, new: &Value) -> Result<(), Failure> {
    let controllers = new["metadata"]["ownerReferences"]
        .as_array()
        .map_or(0, |owners| {
            owners
                .iter()
                .filter(|o| o["controller"] == json!(true))
                .count()
        });
    if controllers > 1 {
        return Err(Failure::new(
            422,
            format!(
                "{} is invalid: metadata.ownerReferences: Invalid value: Only one reference can have Controller set to true",
                target.describe(new["metadata"]["name"].as_str().unwrap_or_default())
            ),
        ));
    }
    if target.collection == "apps/v1/deployments"
        && old["spec"]["selector"] != new["spec"]["selector"]
    {
        return Err(Failure::new(
            422,
            format!(
                "{} is invalid: spec.selector: Invalid value: {}: field is immutable",
                target.describe(new["metadata"]["name"].as_str().unwrap_or_default()),
                new["spec"]["selector"]
            ),
        ));
    }
    Ok(())
}

fn check_shape(object: &Value) -> Result<(), Failure> {
    let metadata_ok = object
        .get("metadata")
        .is_none_or(|metadata| metadata.is_object() || metadata.is_null());
    if object.is_object() && metadata_ok {
        Ok(())
    } else {
        Err(Failure::new(
            400,
            "object and metadata must be JSON objects",
        ))
    }
}

fn parse_json(body: &[u8]) -> Result<Value, Failure> {
    serde_json::from_slice(body)
        .map_err(|err| Failure::new(400, format!("invalid JSON body: {err}")))
}

/// The current time in the API's format (RFC 3339, whole seconds).
fn now() -> Value {
    json!(Time(Timestamp::now()))
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({ "type": kind, "object": object }).to_string();
    line.push('\n');
    Bytes::from(line)
}

fn response(code: StatusCode, body: UnsyncBoxBody<Bytes, Infallible>) -> Response {
    let mut response = http::Response::new(body);
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn json_response(code: StatusCode, value: &Value) -> Response {
    let body = Full::new(Bytes::from(value.to_string())).boxed_unsync();
    response(code, body)
}

/// An error, sent as a Kubernetes `Status` so the client surfaces it as `kube::Error::Api` and
/// helpers like `is_not_found()` and `is_conflict()` work.
struct Failure {
    code: u16,
    reason: &'static str,
    message: String,
    /// The `continue` token of the `Status`'s list metadata (an expired list's).
    continue_: Option<String>,
}

/// The message of the real server's 410 to a list continued with an expired token.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a \
    consistent list result. You can start a new list without the continue parameter, or use the \
    continue token in this response to retrieve the remainder of the results. Continuing with \
    the provided token results in an inconsistent list - objects that were created, modified, or \
    deleted between the time the first chunk was returned and now may show up in the list.";

impl Failure {
    fn new(code: u16, message: impl Into<String>) -> Self {
        let reason = match code {
            400 => "BadRequest",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            _ => "Unknown",
        };
        Self {
            code,
            reason,
            message: message.into(),
            continue_: None,
        }
    }

    /// The failure with `token` in its list metadata.
    fn with_continue(self, token: String) -> Self {
        Self {
            continue_: Some(token),
            ..self
        }
    }

    fn response(self) -> Response {
        let metadata = match &self.continue_ {
            Some(token) => json!({ "continue": token }),
            None => json!({}),
        };
        let status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": metadata,
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json_response(code, &status)
    }
}
