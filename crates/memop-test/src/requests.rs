//! A request log with fault injection, as a client-side layer: it sees exactly what the
//! operator's [`kube::Client`] sends, whichever API server answers (the in-memory one or a real
//! kube-apiserver), and can fail chosen requests before they leave.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use kube::client::Body;
use serde_json::json;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// The API verbs the log distinguishes, for the request log and fault injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Reading one object.
    Get,
    /// Listing objects: a list request (paged), or a watch that streams the list as its first
    /// events (`sendInitialEvents=true`, Kubernetes' streaming lists: [`Request::streamed`]).
    List,
    /// Watching objects from a resourceVersion (a list with `watch=true`), without a list.
    Watch,
    /// Creating an object (POST).
    Create,
    /// Replacing an object (PUT).
    Update,
    /// Patching an object, server-side apply included.
    Patch,
    /// Deleting an object.
    Delete,
}

impl Verb {
    /// Whether requests with this verb may change stored state.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Self::Create | Self::Update | Self::Patch | Self::Delete
        )
    }
}

/// One entry of the request log.
#[derive(Clone, Debug)]
pub struct Request {
    /// What the request did.
    pub verb: Verb,
    /// The plural from the URL (`"deployments"`), with `"/status"` appended for the subresource.
    pub resource: String,
    /// The namespace from the URL, if any.
    pub namespace: Option<String>,
    /// The object's name from the URL; none for lists, watches and creations.
    pub name: Option<String>,
    /// The HTTP code returned when [`ApiServer::fail_next`](crate::ApiServer::fail_next) made this request fail.
    pub injected_failure: Option<u16>,
    /// Whether it is a dry run (`dryRun=All`): a write request that writes nothing.
    pub dry_run: bool,
    /// Whether it is a list streamed by a watch (`sendInitialEvents=true`), not a list request.
    pub streamed: bool,
}

/// The log and the pending faults; clones share them. Also the [`tower::Layer`] that feeds them.
#[derive(Clone, Default)]
pub struct RequestLog {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    log: Vec<Request>,
    faults: Vec<Fault>,
    delays: Vec<(Verb, String, Duration)>,
}

struct Fault {
    verb: Verb,
    resource: String,
    code: u16,
    /// Matching requests still to let through before failing.
    skip: usize,
    remaining: usize,
}

impl RequestLog {
    /// Fails the next `times` requests matching `verb` and `resource` (as in
    /// [`Request::resource`]; `"*"` matches any) with HTTP `code` and a Kubernetes `Status`,
    /// without sending them: the server never sees them.
    pub fn fail_next(&self, verb: Verb, resource: &str, code: u16, times: usize) {
        self.lock().faults.push(Fault {
            verb,
            resource: resource.to_owned(),
            code,
            skip: 0,
            remaining: times,
        });
    }

    /// Lets the next `skip` requests matching `verb` and `resource` through, then fails one
    /// with `code`: to fail the second of two writes, say.
    pub fn fail_after(&self, skip: usize, verb: Verb, resource: &str, code: u16) {
        self.lock().faults.push(Fault {
            verb,
            resource: resource.to_owned(),
            code,
            skip,
            remaining: 1,
        });
    }

    /// Delays the answer to the next request matching `verb` and `resource` by `delay`, as a
    /// slow or hanging connection would.
    pub fn delay_next(&self, verb: Verb, resource: &str, delay: Duration) {
        self.lock().delays.push((verb, resource.to_owned(), delay));
    }

    /// Drops the faults and delays still pending: the requests go through again (the end of
    /// an outage that `fail_next(verb, "*", 503, usize::MAX)` began, say).
    pub fn heal(&self) {
        let mut state = self.lock();
        state.faults.clear();
        state.delays.clear();
    }

    /// Every request sent since the log was last cleared, in order, failed ones included.
    pub fn requests(&self) -> Vec<Request> {
        self.lock().log.clone()
    }

    /// How many write requests (create/update/patch/delete, dry runs aside) went to `resource`
    /// (`"*"` for all) since the log was last cleared.
    pub fn writes(&self, resource: &str) -> usize {
        self.lock()
            .log
            .iter()
            .filter(|r| {
                r.verb.is_write() && !r.dry_run && (resource == "*" || r.resource == resource)
            })
            .count()
    }

    /// Forgets the requests logged so far.
    pub fn clear(&self) {
        self.lock().log.clear();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs `request`; returns the injected failure code and delay, if any match.
    fn record(&self, request: &http::Request<Body>) -> (Option<u16>, Option<Duration>) {
        let mut entry = describe(request);
        let mut state = self.lock();
        let matching = |(verb, resource, _): &(Verb, String, Duration)| {
            *verb == entry.verb && (resource == "*" || *resource == entry.resource)
        };
        let delay = state
            .delays
            .iter()
            .position(matching)
            .map(|at| state.delays.remove(at).2);
        let fault = state.faults.iter_mut().find(|f| {
            f.remaining > 0
                && f.verb == entry.verb
                && (f.resource == "*" || f.resource == entry.resource)
        });
        if let Some(fault) = fault {
            if fault.skip > 0 {
                fault.skip -= 1;
            } else {
                fault.remaining -= 1;
                entry.injected_failure = Some(fault.code);
            }
        }
        let code = entry.injected_failure;
        state.log.push(entry);
        (code, delay)
    }
}

impl<S> tower::Layer<S> for RequestLog {
    type Service = Logged<S>;

    fn layer(&self, inner: S) -> Logged<S> {
        Logged {
            inner,
            log: self.clone(),
        }
    }
}

/// The service [`RequestLog`] wraps around a client's transport.
pub struct Logged<S> {
    inner: S,
    log: RequestLog,
}

impl<S, B> tower::Service<http::Request<Body>> for Logged<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<ResponseBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let (code, delay) = self.log.record(&request);
        if let Some(code) = code {
            return Box::pin(async move { Ok(failure(code)) });
        }
        let response = self.inner.call(request);
        Box::pin(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let response = response.await.map_err(Into::into)?;
            Ok(response.map(|body| body.map_err(Into::into).boxed_unsync()))
        })
    }
}

/// What the API server answers to a failed request: a `Status` with the code.
fn failure(code: u16) -> http::Response<ResponseBody> {
    let reason = match code {
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        429 => "TooManyRequests",
        _ => "InternalError",
    };
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": format!("injected failure ({code})"),
        "reason": reason,
        "code": code,
    });
    let body = Full::new(Bytes::from(status.to_string()))
        .map_err(|never| match never {})
        .boxed_unsync();
    http::Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .expect("a valid response")
}

/// The verb, resource, namespace and name of an API request, from its method and path:
/// `/api/v1/...` or `/apis/<group>/<version>/...`, then `[namespaces/<ns>/]<plural>[/<name>[/<sub>]]`.
fn describe(request: &http::Request<Body>) -> Request {
    let segments: Vec<&str> = request
        .uri()
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        _ => segments.get(3..),
    }
    .unwrap_or_default();
    let (namespace, rest) = match rest {
        ["namespaces", namespace, plural, rest @ ..] => {
            (Some(namespace.to_string()), [&[*plural], rest].concat())
        }
        _ => (None, rest.to_vec()),
    };
    let name = rest.get(1).map(|name| name.to_string());
    let resource = match rest.get(2) {
        Some(sub) => format!("{}/{sub}", rest[0]),
        None => rest.first().copied().unwrap_or_default().to_string(),
    };
    let query = |wanted: &[&str]| {
        request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| wanted.contains(&p)))
    };
    let watch = query(&["watch=true", "watch=1"]);
    // A streaming list is a watch on the wire, and a list in what it does (and in RBAC's eyes
    // as in the tests': a relist is a list however it comes).
    let streamed = watch && query(&["sendInitialEvents=true"]);
    let verb = match *request.method() {
        http::Method::POST => Verb::Create,
        http::Method::PUT => Verb::Update,
        http::Method::PATCH => Verb::Patch,
        http::Method::DELETE => Verb::Delete,
        _ if streamed => Verb::List,
        _ if watch => Verb::Watch,
        _ if name.is_some() => Verb::Get,
        _ => Verb::List,
    };
    Request {
        verb,
        resource,
        namespace,
        name,
        injected_failure: None,
        dry_run: query(&["dryRun=All"]),
        streamed,
    }
}
