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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
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
/// How long a review may take before the request fails.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this many answers are remembered, so that callers with ever new tokens cannot
/// grow the manager's memory.
const MAX_REMEMBERED: usize = 4096;

/// Authenticates and authorizes requests through the API server (see the module docs).
pub struct Authorizer {
    client: Client,
    /// By SHA-256 of the token, so that tokens are not kept in memory: the user each names, or
    /// `None` for a token the API server does not accept.
    users: Remembered<Option<UserInfo>>,
    /// By everything the SubjectAccessReview asks about (the user, its groups and extra
    /// attributes, the verb and the path): whether the request is allowed.
    decisions: Remembered<bool>,
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
        }
    }

    /// axum middleware: lets the request through only when [`Authorizer::check`] allows it.
    pub async fn require(State(this): State<Arc<Self>>, request: Request, next: Next) -> Response {
        let verb = request.method().as_str().to_ascii_lowercase();
        match this
            .check(request.headers(), &verb, request.uri().path())
            .await
        {
            Ok(()) => next.run(request).await,
            Err(refusal) => refusal.into_response(),
        }
    }

    /// Whether the bearer token of `headers` names a user allowed `verb` on `path`.
    pub async fn check(&self, headers: &HeaderMap, verb: &str, path: &str) -> Result<(), Refusal> {
        let token = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .ok_or(Refusal::Unauthenticated)?;
        let user = self.authenticate(token).await?;
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

    async fn authenticate(&self, token: &str) -> Result<UserInfo, Refusal> {
        let key = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let key: String = key
            .as_ref()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let user = match self.users.get(&key) {
            Some(user) => user,
            None => {
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
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let reviews = Api::<TokenReview>::all(self.client.clone());
        let review = tokio::time::timeout(
            REVIEW_TIMEOUT,
            reviews.create(&PostParams::default(), &review),
        )
        .await??;
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
        let review = tokio::time::timeout(
            REVIEW_TIMEOUT,
            reviews.create(&PostParams::default(), &review),
        )
        .await??;
        Ok(review.status.is_some_and(|status| status.allowed))
    }
}

/// Answers kept for a while (tokio's clock, so that tests can move it).
struct Remembered<V> {
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V> Default for Remembered<V> {
    fn default() -> Self {
        Self {
            entries: Mutex::default(),
        }
    }
}

impl<V: Clone> Remembered<V> {
    fn get(&self, key: &str) -> Option<V> {
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (expires, value) = entries.get(key)?;
        (Instant::now() < *expires).then(|| value.clone())
    }

    fn put(&self, key: String, value: V, ttl: Duration) {
        let now = Instant::now();
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= MAX_REMEMBERED {
            entries.retain(|_, (expires, _)| now < *expires);
            if entries.len() >= MAX_REMEMBERED {
                entries.clear();
            }
        }
        entries.insert(key, (now + ttl, value));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt;
    use serde_json::{Value, json};

    use super::*;

    /// An API server that knows two tokens, "reader" (user "scraper", allowed) and "other"
    /// (user "stranger", denied), and counts the reviews it is asked for.
    #[derive(Clone, Default)]
    struct Reviews {
        tokens: Arc<AtomicUsize>,
        access: Arc<AtomicUsize>,
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
                        let user = match review["spec"]["token"].as_str() {
                            Some("reader") => Some("scraper"),
                            Some("other") => Some("stranger"),
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
        let headers = bearer("reader");
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
        let headers = bearer("other");
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

        let headers = bearer("forged");
        let check = || authorizer.check(&headers, "get", "/metrics");
        assert_eq!(check().await, Err(Refusal::Unauthenticated));
        assert_eq!(check().await, Err(Refusal::Unauthenticated));
        assert_eq!(
            reviews.counts(),
            (1, 0),
            "an invalid token is remembered too"
        );
    }

    #[tokio::test]
    async fn a_failed_review_is_a_server_error() {
        // Nothing listens there: the TokenReview cannot be made.
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let authorizer = Authorizer::new(Client::try_from(config).unwrap());
        let refusal = authorizer.check(&bearer("reader"), "get", "/metrics").await;
        assert_eq!(refusal, Err(Refusal::ReviewFailed("Authentication failed")));
        let response = refusal.unwrap_err().into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test(start_paused = true)]
    async fn remembers_a_bounded_number_of_answers() {
        let remembered = Remembered::default();
        remembered.put("old".into(), 0, Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(2)).await;
        for n in 1..=MAX_REMEMBERED {
            remembered.put(format!("key-{n}"), n, Duration::from_secs(60));
        }
        let len = || remembered.entries.lock().unwrap().len();
        assert_eq!(len(), MAX_REMEMBERED, "the expired answer made room");
        assert_eq!(remembered.get("key-1"), Some(1));

        // Full of answers still valid: they are all dropped rather than grow further.
        remembered.put("new".into(), 0, Duration::from_secs(60));
        assert_eq!(len(), 1);
        assert_eq!(remembered.get("new"), Some(0));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(remembered.get("new"), None, "expired");
    }
}
