//! Reading a webhook's request body: up to [`MAX_REQUEST_SIZE`], and the uid of a review too
//! large to read.

use axum::body::Body;

/// The largest request body a webhook reads: controller-runtime's limit (7 MiB), room for an
/// update's two objects of the API server's 3 MiB each and the rest of the review. A larger
/// body is answered with a review that refuses it (code 413), not with a bare HTTP error.
pub(crate) const MAX_REQUEST_SIZE: usize = 7 * 1024 * 1024;

/// Why a request body was not read.
#[derive(Debug)]
pub(super) enum Unread {
    /// It is larger than [`MAX_REQUEST_SIZE`]; `uid` is the review's, if its first bytes say.
    TooLarge { uid: String },
    /// The connection failed while it was sent.
    Failed(String),
}

impl Unread {
    /// The review's uid, the message, the HTTP code and the reason to answer with.
    pub(super) fn answer(self, what: &str) -> (String, String, u16, &'static str) {
        match self {
            Unread::TooLarge { uid } => (
                uid,
                format!("request entity is too large; limit is {MAX_REQUEST_SIZE} bytes"),
                413,
                "RequestEntityTooLarge",
            ),
            Unread::Failed(error) => (
                String::new(),
                format!("cannot read the {what}: {error}"),
                400,
                "BadRequest",
            ),
        }
    }
}

/// Reads a request body of at most [`MAX_REQUEST_SIZE`] bytes (axum's extractors stop at
/// 2 MiB, with a bare HTTP 413), without buffering more than that.
pub(super) async fn read_body(body: Body) -> Result<Vec<u8>, Unread> {
    use futures::StreamExt as _;
    let mut stream = body.into_data_stream();
    let mut read = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| Unread::Failed(error.to_string()))?;
        let room = MAX_REQUEST_SIZE - read.len();
        if chunk.len() > room {
            read.extend_from_slice(&chunk[..room]);
            return Err(Unread::TooLarge {
                uid: leading_uid(&read),
            });
        }
        read.extend_from_slice(&chunk);
    }
    Ok(read)
}

/// The uid of the review that `body` begins, when its request starts with it as the API
/// server writes it (`{"kind":…,"apiVersion":…,"request":{"uid":"…"`): a review too large to
/// read is still answered with its uid, without which the API server would not take the answer
/// (and relay its message). Empty when the first bytes do not say.
pub(super) fn leading_uid(body: &[u8]) -> String {
    // Only the first bytes: the request's uid comes before its objects.
    let head = &body[..body.len().min(4096)];
    let head = String::from_utf8_lossy(head);
    let Some(at) = head.find("\"request\"") else {
        return String::new();
    };
    let rest = head[at + "\"request\"".len()..].trim_start();
    let rest = rest.strip_prefix(':').map(str::trim_start);
    let rest = rest
        .and_then(|rest| rest.strip_prefix('{'))
        .map(str::trim_start);
    let rest = rest
        .and_then(|rest| rest.strip_prefix("\"uid\""))
        .map(str::trim_start);
    let rest = rest
        .and_then(|rest| rest.strip_prefix(':'))
        .map(str::trim_start);
    let Some(rest) = rest.and_then(|rest| rest.strip_prefix('"')) else {
        return String::new();
    };
    match rest.split_once('"') {
        Some((uid, _)) if uid.len() <= 128 && !uid.contains('\\') => uid.to_string(),
        _ => String::new(),
    }
}
