//! Who may read the metrics, decided as controller-runtime's `WithAuthenticationAndAuthorization`
//! filter decides it: the caller's bearer token is checked by the API server (a TokenReview),
//! and the user it names must be allowed `get` on the non-resource URL `/metrics` (a
//! SubjectAccessReview), which the `metrics-reader` ClusterRole grants. The manager may ask
//! for both reviews through `config/rbac/metrics_auth_role.yaml`.
//!
//! Answers are remembered as controller-runtime remembers them (a token for a minute, an
//! allowed request for 5 minutes, a denied one for 30 seconds), so that a scrape every few
//! seconds does not cost two API calls each time. Refusals are answered as controller-runtime
//! answers them: 401 `Unauthorized` without a valid token, 403 `Authorization denied for user
//! NAME`, and 500 when a review itself fails. (controller-runtime answers an invalid token with
//! a 500; this answers it with a 401, which is what it is.)
//!
//! The endpoint is no amplifier: whoever reaches it without a token the API server accepts must
//! not make the manager flood the API server with reviews, under the manager's own priority
//! and fairness flow, nor push the scrapers' answers out of memory.
//! - A bearer token that is not shaped like a JSON Web Token (three base64url parts, the first
//!   a JSON object; service account tokens are JWTs) is refused without a review.
//! - Tokens the manager has not seen accepted are reviewed at most [`NEW_TOKEN_REVIEWS_PER_SECOND`]
//!   a second per caller address (in bursts of [`NEW_TOKEN_REVIEW_BURST`]; IPv6 addresses by
//!   /64), and [`ALL_NEW_TOKEN_REVIEWS_PER_SECOND`] in all (bursts of
//!   [`ALL_NEW_TOKEN_REVIEW_BURST`]); beyond, they are answered 429. One address spraying
//!   tokens thus uses its own share only: a new scraper (a new Prometheus replica, a rotated
//!   token) elsewhere is still reviewed. Many addresses spraying together can still use up the
//!   whole budget. A token accepted before is reviewed again when its answer expires whatever
//!   the rate.
//! - Answers are evicted least recently used first when [`MAX_REMEMBERED`] are kept, so that
//!   the scrapers' stay.
//! - Only `/metrics` is authorized: other paths are answered 404 without a review.
//! - A review that fails for a transient reason (the API server unreachable, a timeout, a 5xx
//!   or 429 answer) is tried again, 5 times in all with backoff, as controller-runtime's
//!   delegating authenticator and authorizer do.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};
use tokio::time::Instant;

/// How long an answer of the API server is trusted.
const TOKEN_TTL: Duration = Duration::from_secs(60);
const ALLOWED_TTL: Duration = Duration::from_secs(5 * 60);
const DENIED_TTL: Duration = Duration::from_secs(30);
/// How long one attempt at a review may take.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts at a review that fails for a transient reason, and the wait before the second
/// (then 1.5 times longer each time): controller-runtime's `DefaultAuthWebhookRetryBackoff`.
const REVIEW_ATTEMPTS: u32 = 5;
const REVIEW_BACKOFF: Duration = Duration::from_millis(500);
/// At most this many answers are remembered, so that callers with ever new tokens cannot
/// grow the manager's memory; the least recently used go first.
pub const MAX_REMEMBERED: usize = 4096;
/// How many reviews of tokens not seen accepted before the manager makes a second for one
/// caller address, at most.
pub const NEW_TOKEN_REVIEWS_PER_SECOND: f64 = 2.0;
/// How many of those it makes at once for one caller address, at most.
pub const NEW_TOKEN_REVIEW_BURST: f64 = 10.0;
/// How many reviews of tokens not seen accepted before the manager makes a second in all.
pub const ALL_NEW_TOKEN_REVIEWS_PER_SECOND: f64 = 10.0;
/// How many of those it makes at once in all.
pub const ALL_NEW_TOKEN_REVIEW_BURST: f64 = 30.0;
/// The caller addresses whose new-token budgets are kept at most (one that has refilled is
/// the same as none).
const MAX_CALLERS: usize = 4096;
/// Longer bearer tokens are refused without a review (service account tokens are about 1 KiB).
const MAX_TOKEN_LEN: usize = 16 * 1024;

/// Authenticates and authorizes requests through the API server (see the module docs).
pub struct Authorizer {
    client: Client,
    /// By SHA-256 of the token, so that tokens are not kept in memory: the user each names, or
    /// `None` for a token the API server does not accept.
    users: Remembered<Option<UserInfo>>,
    /// By everything the SubjectAccessReview asks about (the user, its groups and extra
    /// attributes, the verb and the path): whether the request is allowed.
    decisions: Remembered<bool>,
    /// What reviews of tokens not seen accepted before may still be made.
    new_tokens: Mutex<NewTokens>,
}

/// Why a request is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token, or one the API server does not accept.
    Unauthenticated,
    /// The user may not make this request.
    Forbidden { user: String },
    /// A review failed (the API server unreachable, or the manager not allowed to ask).
    ReviewFailed(&'static str),
    /// Too many tokens not seen before to review: try again later.
    TooManyNewTokens,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        // As Go's http.Error writes them: plain text, ending with a newline.
        let (status, message) = match self {
            Refusal::Unauthenticated => (StatusCode::UNAUTHORIZED, "Unauthorized".to_string()),
            Refusal::Forbidden { user } => (
                StatusCode::FORBIDDEN,
                format!("Authorization denied for user {user}"),
            ),
            Refusal::ReviewFailed(what) => (StatusCode::INTERNAL_SERVER_ERROR, what.to_string()),
            Refusal::TooManyNewTokens => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many new tokens to review; try again later".to_string(),
            ),
        };
        (status, format!("{message}\n")).into_response()
    }
}

impl Authorizer {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            users: Remembered::default(),
            decisions: Remembered::default(),
            new_tokens: Mutex::new(NewTokens::default()),
        }
    }

    /// axum middleware: lets the request through only when [`Authorizer::check`] allows it.
    /// See [`protect`].
    pub async fn require(State(this): State<Arc<Self>>, request: Request, next: Next) -> Response {
        let verb = request.method().as_str().to_ascii_lowercase();
        // The caller's address, as the manager's HTTP server records it.
        let caller = (request.extensions().get::<ConnectInfo<SocketAddr>>())
            .map(|ConnectInfo(addr)| addr.ip());
        match this
            .check_from(caller, request.headers(), &verb, request.uri().path())
            .await
        {
            Ok(()) => next.run(request).await,
            Err(refusal) => refusal.into_response(),
        }
    }

    /// Whether the bearer token of `headers` names a user allowed `verb` on `path`, from a
    /// caller whose address is not known (see [`Authorizer::check_from`]).
    #[cfg(test)]
    pub async fn check(&self, headers: &HeaderMap, verb: &str, path: &str) -> Result<(), Refusal> {
        self.check_from(None, headers, verb, path).await
    }

    /// Whether the bearer token of `headers`, sent from `caller`, names a user allowed `verb`
    /// on `path`. New tokens are rate limited per caller address (callers without one share
    /// a budget).
    pub async fn check_from(
        &self,
        caller: Option<IpAddr>,
        headers: &HeaderMap,
        verb: &str,
        path: &str,
    ) -> Result<(), Refusal> {
        let token = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| is_jwt_shaped(token))
            .ok_or(Refusal::Unauthenticated)?;
        let user = self.authenticate(caller, token).await?;
        let key = serde_json::json!([user.username, user.uid, user.groups, user.extra, verb, path])
            .to_string();
        let allowed = match self.decisions.get(&key) {
            Some(allowed) => allowed,
            None => {
                let allowed = self.review_access(&user, verb, path).await.map_err(|error| {
                    tracing::error!(%error, user = user.username.as_deref().unwrap_or_default(), "SubjectAccessReview failed");
                    Refusal::ReviewFailed("Authorization failed")
                })?;
                let ttl = if allowed { ALLOWED_TTL } else { DENIED_TTL };
                self.decisions.put(key, allowed, ttl);
                allowed
            }
        };
        if allowed {
            Ok(())
        } else {
            let user = user.username.unwrap_or_default();
            tracing::debug!(%user, %verb, %path, "metrics request denied");
            Err(Refusal::Forbidden { user })
        }
    }

    async fn authenticate(&self, caller: Option<IpAddr>, token: &str) -> Result<UserInfo, Refusal> {
        let key = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let key: String = key
            .as_ref()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let user = match self.users.lookup(&key) {
            Lookup::Fresh(user) => user,
            seen => {
                // A token accepted before is one of the scrapers': reviewed again whatever the
                // rate of new ones.
                let known = matches!(seen, Lookup::Expired(Some(_)));
                if !known && !lock(&self.new_tokens).take(caller, Instant::now()) {
                    tracing::debug!("too many new tokens to review");
                    return Err(Refusal::TooManyNewTokens);
                }
                let user = self.review_token(token).await.map_err(|error| {
                    tracing::error!(%error, "TokenReview failed");
                    Refusal::ReviewFailed("Authentication failed")
                })?;
                self.users.put(key, user.clone(), TOKEN_TTL);
                user
            }
        };
        user.ok_or(Refusal::Unauthenticated)
    }

    /// Asks the API server who `token` is: `None` if it is not a valid token.
    async fn review_token(&self, token: &str) -> anyhow::Result<Option<UserInfo>> {
        // `into`: k8s-openapi types the token as `String` from Kubernetes 1.36 on, as
        // `Option<String>` before; the project picks the version.
        #[allow(clippy::useless_conversion)]
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string().into(),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let reviews = Api::<TokenReview>::all(self.client.clone());
        let review = with_retries(|| {
            let (reviews, review) = (reviews.clone(), review.clone());
            async move { reviews.create(&PostParams::default(), &review).await }
        })
        .await?;
        let status = review.status.unwrap_or_default();
        if status.authenticated == Some(true) {
            Ok(Some(status.user.unwrap_or_default()))
        } else {
            tracing::debug!(
                error = status.error.unwrap_or_default(),
                "token not accepted"
            );
            Ok(None)
        }
    }

    /// Asks the API server whether `user` may `verb` the non-resource URL `path`.
    async fn review_access(&self, user: &UserInfo, verb: &str, path: &str) -> anyhow::Result<bool> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid.clone(),
                groups: user.groups.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let reviews = Api::<SubjectAccessReview>::all(self.client.clone());
        let review = with_retries(|| {
            let (reviews, review) = (reviews.clone(), review.clone());
            async move { reviews.create(&PostParams::default(), &review).await }
        })
        .await?;
        Ok(review.status.is_some_and(|status| status.allowed))
    }
}

/// `router` with each request to one of its routes (`/metrics`) let through only when
/// `authorizer` allows it; other paths are answered 404 without a review (the SubjectAccessReview
/// would name whatever path a caller made up).
pub fn protect(router: axum::Router, authorizer: Arc<Authorizer>) -> axum::Router {
    router.route_layer(axum::middleware::from_fn_with_state(
        authorizer,
        Authorizer::require,
    ))
}

/// Whether `token` looks like a JSON Web Token: three parts of base64url (without padding)
/// separated by dots, the first a JSON object (`eyJ` is how `{"` starts in base64).
fn is_jwt_shaped(token: &str) -> bool {
    let base64url = |part: &str| {
        !part.is_empty()
            && (part.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    let parts: Vec<&str> = token.split('.').collect();
    token.len() <= MAX_TOKEN_LEN
        && parts.len() == 3
        && parts.iter().all(|part| base64url(part))
        && parts[0].starts_with("eyJ")
}

/// Makes a review with `create`, trying again when it fails for a transient reason.
async fn with_retries<T, F, Fut>(create: F) -> anyhow::Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut backoff = REVIEW_BACKOFF;
    let mut attempt = 1;
    loop {
        let error = match tokio::time::timeout(REVIEW_TIMEOUT, create()).await {
            Ok(Ok(review)) => return Ok(review),
            Ok(Err(error)) if attempt < REVIEW_ATTEMPTS && is_transient(&error) => {
                anyhow::Error::from(error)
            }
            Ok(Err(error)) => return Err(error.into()),
            Err(elapsed) if attempt < REVIEW_ATTEMPTS => anyhow::Error::from(elapsed),
            Err(elapsed) => return Err(elapsed.into()),
        };
        tracing::debug!(%error, attempt, "review failed; trying again");
        tokio::time::sleep(backoff).await;
        backoff = backoff.mul_f64(1.5);
        attempt += 1;
    }
}

/// Whether a review that failed with `error` may succeed when tried again.
fn is_transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Permits, `rate` a second up to `burst` at once.
struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    filled: Instant,
}

impl TokenBucket {
    fn new(rate: f64, burst: f64) -> Self {
        Self {
            rate,
            burst,
            tokens: burst,
            filled: Instant::now(),
        }
    }

    /// Adds the permits earned until `now`.
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.filled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.filled = now;
    }

    /// Whether a permit is there at `now`.
    fn has(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= 1.0
    }

    /// Whether it has refilled completely at `now`: the same as a new one.
    fn full(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= self.burst
    }

    /// Takes a permit, if there is one at `now`.
    fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The budgets of reviews of new tokens: one per caller address, and one for all.
struct NewTokens {
    per_caller: HashMap<Option<IpAddr>, TokenBucket>,
    all: TokenBucket,
}

impl Default for NewTokens {
    fn default() -> Self {
        Self {
            per_caller: HashMap::new(),
            all: TokenBucket::new(ALL_NEW_TOKEN_REVIEWS_PER_SECOND, ALL_NEW_TOKEN_REVIEW_BURST),
        }
    }
}

impl NewTokens {
    /// Takes a permit for `caller` at `now`, if both its budget and the overall one have one.
    fn take(&mut self, caller: Option<IpAddr>, now: Instant) -> bool {
        // An IPv6 network hands out a /64 to one host: one budget for it.
        let caller = caller.map(|ip| match ip.to_canonical() {
            IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
            v4 => v4,
        });
        if self.per_caller.len() >= MAX_CALLERS && !self.per_caller.contains_key(&caller) {
            self.per_caller.retain(|_, bucket| !bucket.full(now));
            if self.per_caller.len() >= MAX_CALLERS {
                // Callers from that many addresses at once: the overall budget still holds.
                self.per_caller.clear();
            }
        }
        let bucket = (self.per_caller.entry(caller)).or_insert_with(|| {
            TokenBucket::new(NEW_TOKEN_REVIEWS_PER_SECOND, NEW_TOKEN_REVIEW_BURST)
        });
        bucket.has(now) && self.all.take(now) && bucket.take(now)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Answers kept for a while (tokio's clock, so that tests can move it), at most `capacity`
/// of them: the least recently used is dropped to make room for a new one.
struct Remembered<V> {
    capacity: usize,
    entries: Mutex<Entries<V>>,
}

struct Entries<V> {
    /// Each answer, when it expires, and when it was last used.
    by_key: HashMap<String, (Instant, V, u64)>,
    /// The keys by when they were last used (a counter).
    by_use: BTreeMap<u64, String>,
    uses: u64,
}

/// What is remembered of a key.
#[derive(Debug, PartialEq, Eq)]
enum Lookup<V> {
    /// An answer still valid.
    Fresh(V),
    /// An answer that expired.
    Expired(V),
    /// Nothing.
    Unknown,
}

impl<V: Clone> Default for Remembered<V> {
    fn default() -> Self {
        Self::with_capacity(MAX_REMEMBERED)
    }
}

impl<V: Clone> Remembered<V> {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(Entries {
                by_key: HashMap::new(),
                by_use: BTreeMap::new(),
                uses: 0,
            }),
        }
    }

    /// The answer for `key`, if it is still valid.
    fn get(&self, key: &str) -> Option<V> {
        match self.lookup(key) {
            Lookup::Fresh(value) => Some(value),
            Lookup::Expired(_) | Lookup::Unknown => None,
        }
    }

    /// What is remembered of `key`, which counts as a use.
    fn lookup(&self, key: &str) -> Lookup<V> {
        let mut entries = lock(&self.entries);
        let Entries {
            by_key,
            by_use,
            uses,
        } = &mut *entries;
        let Some((expires, value, used)) = by_key.get_mut(key) else {
            return Lookup::Unknown;
        };
        by_use.remove(used);
        *uses += 1;
        *used = *uses;
        by_use.insert(*uses, key.to_string());
        if Instant::now() < *expires {
            Lookup::Fresh(value.clone())
        } else {
            Lookup::Expired(value.clone())
        }
    }

    fn put(&self, key: String, value: V, ttl: Duration) {
        let mut entries = lock(&self.entries);
        let Entries {
            by_key,
            by_use,
            uses,
        } = &mut *entries;
        if let Some((_, _, used)) = by_key.remove(&key) {
            by_use.remove(&used);
        }
        while by_key.len() >= self.capacity.max(1) {
            let Some((_, oldest)) = by_use.pop_first() else {
                break;
            };
            by_key.remove(&oldest);
        }
        *uses += 1;
        by_use.insert(*uses, key.clone());
        by_key.insert(key, (Instant::now() + ttl, value, *uses));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.entries).by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt;
    use serde_json::{Value, json};

    use super::*;

    /// Two service account tokens (JWTs).
    const READER: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzY3JhcGVyIn0.c2lnbmVk";
    const OTHER: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzdHJhbmdlciJ9.c2lnbmVk";

    /// An API server that knows two tokens, READER (user "scraper", allowed) and OTHER
    /// (user "stranger", denied), and counts the reviews it is asked for; it fails the next
    /// `failures` TokenReviews with a 500.
    #[derive(Clone, Default)]
    struct Reviews {
        tokens: Arc<AtomicUsize>,
        access: Arc<AtomicUsize>,
        failures: Arc<AtomicUsize>,
    }

    impl Reviews {
        fn client(&self) -> Client {
            let this = self.clone();
            let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
                let this = this.clone();
                async move {
                    let path = request.uri().path().to_string();
                    let body = request.into_body().collect().await?.to_bytes();
                    let mut review: Value = serde_json::from_slice(&body)?;
                    if path.ends_with("/tokenreviews") {
                        this.tokens.fetch_add(1, Ordering::SeqCst);
                        if this.failures.load(Ordering::SeqCst) > 0 {
                            this.failures.fetch_sub(1, Ordering::SeqCst);
                            let status = json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500, "reason": "InternalError", "message": "etcd timed out" });
                            let body = kube::client::Body::from(serde_json::to_vec(&status)?);
                            return Ok(http::Response::builder().status(500).body(body)?);
                        }
                        let user = match review["spec"]["token"].as_str() {
                            Some(READER) => Some("scraper"),
                            Some(OTHER) => Some("stranger"),
                            _ => None,
                        };
                        review["status"] = match user {
                            Some(user) => {
                                json!({ "authenticated": true, "user": { "username": user } })
                            }
                            None => {
                                json!({ "authenticated": false, "error": "invalid bearer token" })
                            }
                        };
                    } else {
                        this.access.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(
                            review["spec"]["nonResourceAttributes"],
                            json!({ "path": "/metrics", "verb": "get" })
                        );
                        let allowed = review["spec"]["user"] == "scraper";
                        review["status"] = json!({ "allowed": allowed });
                    }
                    let body = kube::client::Body::from(serde_json::to_vec(&review)?);
                    Ok::<_, Box<dyn std::error::Error + Send + Sync>>(
                        http::Response::builder().status(201).body(body)?,
                    )
                }
            });
            Client::new(service, "default")
        }

        fn counts(&self) -> (usize, usize) {
            (
                self.tokens.load(Ordering::SeqCst),
                self.access.load(Ordering::SeqCst),
            )
        }
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        headers
    }

    #[tokio::test(start_paused = true)]
    async fn allowed_callers_are_remembered_for_as_long_as_controller_runtime_remembers_them() {
        let reviews = Reviews::default();
        let authorizer = Authorizer::new(reviews.client());
        let headers = bearer(READER);
        let check = || authorizer.check(&headers, "get", "/metrics");

        assert_eq!(check().await, Ok(()));
        assert_eq!(reviews.counts(), (1, 1));
        assert_eq!(check().await, Ok(()), "remembered");
        assert_eq!(reviews.counts(), (1, 1), "no more reviews");

        tokio::time::advance(TOKEN_TTL).await;
        assert_eq!(check().await, Ok(()));
        assert_eq!(
            reviews.counts(),
            (2, 1),
            "the token is checked again after a minute, the access is not"
        );

        tokio::time::advance(ALLOWED_TTL).await;
        assert_eq!(check().await, Ok(()));
        assert_eq!(reviews.counts(), (3, 2), "both after 5 minutes");
    }

    #[tokio::test(start_paused = true)]
    async fn denials_are_remembered_for_30_seconds() {
        let reviews = Reviews::default();
        let authorizer = Authorizer::new(reviews.client());
        let headers = bearer(OTHER);
        let check = || authorizer.check(&headers, "get", "/metrics");
        let denied = Err(Refusal::Forbidden {
            user: "stranger".into(),
        });

        assert_eq!(check().await, denied);
        assert_eq!(check().await, denied);
        assert_eq!(reviews.counts(), (1, 1));
        tokio::time::advance(DENIED_TTL).await;
        assert_eq!(check().await, denied);
        assert_eq!(
            reviews.counts(),
            (1, 2),
            "the denial is reviewed again, the token is still known"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn requests_without_a_valid_token_are_unauthenticated() {
        let reviews = Reviews::default();
        let authorizer = Authorizer::new(reviews.client());
        let no_token = authorizer.check(&HeaderMap::new(), "get", "/metrics").await;
        assert_eq!(no_token, Err(Refusal::Unauthenticated));
        assert_eq!(reviews.counts(), (0, 0), "nothing to review");

        let headers = bearer("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJmb3JnZWQifQ.Zm9yZ2Vk");
        let check = || authorizer.check(&headers, "get", "/metrics");
        assert_eq!(check().await, Err(Refusal::Unauthenticated));
        assert_eq!(check().await, Err(Refusal::Unauthenticated));
        assert_eq!(
            reviews.counts(),
            (1, 0),
            "an invalid token is remembered too"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_review_is_a_server_error() {
        // Nothing listens there: the TokenReview cannot be made.
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let authorizer = Authorizer::new(Client::try_from(config).unwrap());
        let refusal = authorizer.check(&bearer(READER), "get", "/metrics").await;
        assert_eq!(refusal, Err(Refusal::ReviewFailed("Authentication failed")));
        let response = refusal.unwrap_err().into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test(start_paused = true)]
    async fn remembers_a_bounded_number_of_answers_dropping_the_least_recently_used() {
        let remembered = Remembered::with_capacity(3);
        remembered.put("scraper".into(), 0, Duration::from_secs(60));
        remembered.put("a".into(), 1, Duration::from_secs(60));
        remembered.put("b".into(), 2, Duration::from_secs(60));
        // The scraper's answer is used again: "a" is now the least recently used.
        assert_eq!(remembered.get("scraper"), Some(0));
        remembered.put("c".into(), 3, Duration::from_secs(60));
        assert_eq!(remembered.len(), 3);
        assert_eq!(remembered.get("a"), None, "dropped");
        assert_eq!(remembered.get("scraper"), Some(0), "kept");
        assert_eq!(remembered.get("c"), Some(3));
        // Many new keys later, a key used between each keeps its answer.
        for n in 0..100 {
            remembered.put(format!("new-{n}"), n, Duration::from_secs(60));
            assert_eq!(remembered.get("scraper"), Some(0));
        }
        assert_eq!(remembered.len(), 3);
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(remembered.get("scraper"), None, "expired");
        assert_eq!(
            remembered.lookup("scraper"),
            Lookup::Expired(0),
            "but known"
        );
    }

    fn random_jwt(n: u64) -> String {
        // Random enough for a cache: the SHA-256 of n, in base64url's alphabet.
        let digest = ring::digest::digest(&ring::digest::SHA256, &n.to_le_bytes());
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        format!("eyJhbGciOiJSUzI1NiJ9.{hex}.{hex}")
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_of_random_tokens_is_no_flood_of_token_reviews() {
        let reviews = Reviews::default();
        let authorizer = Authorizer::new(reviews.client());
        let check = |token: &str| {
            let headers = bearer(token);
            let authorizer = &authorizer;
            async move { authorizer.check(&headers, "get", "/metrics").await }
        };
        assert_eq!(check(READER).await, Ok(()));
        assert_eq!(reviews.counts(), (1, 1));

        // 300 tokens that are not JWTs: refused without a review.
        for n in 0..300u64 {
            let token = format!("random-{n}-{}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            assert_eq!(check(&token).await, Err(Refusal::Unauthenticated));
        }
        assert_eq!(
            reviews.counts(),
            (1, 1),
            "no review of tokens that are not JWTs"
        );

        // 300 JWT-shaped ones, in 3 seconds: a burst of reviews, then a bounded rate.
        let mut refused = 0;
        for n in 0..300u64 {
            match check(&random_jwt(n)).await {
                Err(Refusal::Unauthenticated) => {}
                Err(Refusal::TooManyNewTokens) => refused += 1,
                other => panic!("{other:?}"),
            }
            tokio::time::advance(Duration::from_millis(10)).await;
            // The scraper is served throughout.
            if n % 50 == 0 {
                assert_eq!(check(READER).await, Ok(()));
            }
        }
        let bound = NEW_TOKEN_REVIEW_BURST + 3.0 * NEW_TOKEN_REVIEWS_PER_SECOND;
        let (token_reviews, _) = reviews.counts();
        assert!(
            (token_reviews - 1) as f64 <= bound,
            "{token_reviews} TokenReviews for 300 random tokens (at most {bound})"
        );
        assert!(refused >= 300 - bound as usize, "{refused} refused");
        let response = Refusal::TooManyNewTokens.into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);

        // The scraper's answer expires while the flood goes on and the bucket is empty: its token
        // is reviewed again anyway.
        tokio::time::advance(TOKEN_TTL).await;
        for n in 300..400u64 {
            let _ = check(&random_jwt(n)).await;
        }
        let before = reviews.counts().0;
        assert_eq!(check(READER).await, Ok(()));
        assert_eq!(
            reviews.counts().0,
            before + 1,
            "reviewed again, not rate limited"
        );
        assert_eq!(
            check(&random_jwt(1000)).await,
            Err(Refusal::TooManyNewTokens)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_sprayer_does_not_shut_out_a_new_scraper_elsewhere() {
        use tower::ServiceExt as _;
        let reviews = Reviews::default();
        let authorizer = Arc::new(Authorizer::new(reviews.client()));
        let router = protect(
            super::super::metrics::router(Arc::new(super::super::Metrics::default())),
            authorizer,
        );
        // A scrape as the manager's HTTP server passes it on, with the caller's address.
        let scrape = |from: [u8; 4], token: String| {
            let mut request = axum::http::Request::get("/metrics")
                .body(axum::body::Body::empty())
                .unwrap();
            *request.headers_mut() = bearer(&token);
            let caller = SocketAddr::from((from, 40000));
            request.extensions_mut().insert(ConnectInfo(caller));
            let router = router.clone();
            async move { router.oneshot(request).await.unwrap().status() }
        };
        let sprayer = [10, 0, 0, 66];
        // A sustained flood from one address, 50 new tokens a second, for 20 seconds.
        for n in 0..1000 {
            let status = scrape(sprayer, random_jwt(n)).await;
            assert!(
                status == StatusCode::UNAUTHORIZED || status == StatusCode::TOO_MANY_REQUESTS,
                "{status}"
            );
            tokio::time::advance(Duration::from_millis(20)).await;
        }
        // A new scraper (a new Prometheus replica, say) from another address, mid-flood (right
        // after a new token of the sprayer's): its token is reviewed at once.
        let _ = scrape(sprayer, random_jwt(1000)).await;
        let flooded = reviews.counts().0;
        assert_eq!(
            scrape([10, 0, 0, 7], READER.to_string()).await,
            StatusCode::OK,
            "the new scraper is served"
        );
        assert_eq!(reviews.counts().0, flooded + 1, "its token was reviewed");
        // The sprayer had its own share of reviews, no more.
        let bound = NEW_TOKEN_REVIEW_BURST + 20.0 * NEW_TOKEN_REVIEWS_PER_SECOND;
        assert!(
            flooded as f64 <= bound,
            "{flooded} reviews (at most {bound})"
        );

        // Many addresses together are still held to the overall budget.
        let before = reviews.counts().0;
        for caller in 0..200u8 {
            let _ = scrape([10, 1, 0, caller], random_jwt(10_000 + u64::from(caller))).await;
        }
        let reviewed = reviews.counts().0 - before;
        assert!(
            reviewed as f64 <= ALL_NEW_TOKEN_REVIEW_BURST + 1.0,
            "{reviewed} reviews for 200 addresses at once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_review_that_fails_for_a_transient_reason_is_tried_again() {
        let reviews = Reviews::default();
        let authorizer = Authorizer::new(reviews.client());
        reviews.failures.store(2, Ordering::SeqCst);
        assert_eq!(
            authorizer.check(&bearer(READER), "get", "/metrics").await,
            Ok(())
        );
        assert_eq!(reviews.counts(), (3, 1), "two failures, then the answer");

        reviews
            .failures
            .store(REVIEW_ATTEMPTS as usize, Ordering::SeqCst);
        let refusal = authorizer.check(&bearer(OTHER), "get", "/metrics").await;
        assert_eq!(refusal, Err(Refusal::ReviewFailed("Authentication failed")));
        assert_eq!(
            reviews.counts().0,
            3 + REVIEW_ATTEMPTS as usize,
            "5 attempts in all"
        );
    }

    #[tokio::test]
    async fn only_the_metrics_path_is_authorized() {
        use tower::ServiceExt as _;
        let reviews = Reviews::default();
        let authorizer = Arc::new(Authorizer::new(reviews.client()));
        let router = protect(
            super::super::metrics::router(Arc::new(super::super::Metrics::default())),
            authorizer,
        );
        let get = |path: &str| {
            let mut request = axum::http::Request::get(path)
                .body(axum::body::Body::empty())
                .unwrap();
            *request.headers_mut() = bearer(READER);
            router.clone().oneshot(request)
        };
        let response = get("/made-up").await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            reviews.counts(),
            (0, 0),
            "no review for a path that is not served"
        );
        let response = get("/metrics").await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(reviews.counts(), (1, 1));
    }

    #[test]
    fn only_jwt_shaped_tokens_are_reviewed() {
        assert!(is_jwt_shaped(READER));
        for token in [
            "reader",
            "abcdef.0123456789abcdef",
            "eyJhbGciOiJSUzI1NiJ9.eyJ.",
            "eyJ.a.b.c",
            "eyJhbGciOiJSUzI1NiJ9.e+J/.c2lnbmVk",
            "Zm9v.YmFy.YmF6",
        ] {
            assert!(!is_jwt_shaped(token), "{token}");
        }
        let long = format!("eyJ{}.a.b", "a".repeat(MAX_TOKEN_LEN));
        assert!(!is_jwt_shaped(&long));
    }
}
