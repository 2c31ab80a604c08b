//! The push endpoint: how a Cloud Run function receives Pub/Sub messages.
//!
//! Pub/Sub POSTs `{"message":{"data","attributes","messageId","publishTime"},"subscription",
//! "deliveryAttempt"}`; the emulator sends snake_case twins of the message keys as well, so
//! both spellings are read. The handler's [`Outcome::Ack`] answers 204 and
//! [`Outcome::Nack`] 503, which Pub/Sub redelivers with backoff until the dead-letter
//! policy takes the message. A body that is not a push request at all gets 400 (also a
//! redelivery, so it ends on the dead-letter topic rather than vanishing).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine as _;
use chrono::Utc;
use harmonia_bus::{Delivery, Handler, Name, Outcome};
use harmonia_contracts::{Code, ErrorBody};
use serde_json::{Value, json};

/// Largest accepted push body: a 10 MB message, base64-encoded, plus its envelope.
pub const MAX_PUSH_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Why a push body was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Not JSON, or missing the `message`/`subscription` shape.
    #[error("not a Pub/Sub push request")]
    NotAPushRequest,
    /// `data` is not base64.
    #[error("message data is not base64")]
    BadData,
}

fn field<'a>(obj: &'a serde_json::Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    obj.get(camel).or_else(|| obj.get(snake))
}

/// Decode a push request body into a [`Delivery`].
pub fn decode(body: &[u8]) -> Result<Delivery, Error> {
    let root: Value = serde_json::from_slice(body).map_err(|_| Error::NotAPushRequest)?;
    let message = root.get("message").and_then(Value::as_object).ok_or(Error::NotAPushRequest)?;
    let subscription = root.get("subscription").and_then(Value::as_str).ok_or(Error::NotAPushRequest)?;
    // `projects/p/subscriptions/name` -> `name`
    let subscription: Name =
        subscription.rsplit('/').next().unwrap_or_default().parse().map_err(|_| Error::NotAPushRequest)?;
    let message_id =
        field(message, "messageId", "message_id").and_then(Value::as_str).ok_or(Error::NotAPushRequest)?.to_owned();
    let data = match field(message, "data", "data").and_then(Value::as_str) {
        Some(text) => base64::engine::general_purpose::STANDARD.decode(text).map_err(|_| Error::BadData)?,
        None => Vec::new(),
    };
    let attributes: BTreeMap<String, String> = match field(message, "attributes", "attributes") {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())).ok_or(Error::NotAPushRequest))
            .collect::<Result<_, _>>()?,
        None | Some(Value::Null) => BTreeMap::new(),
        Some(_) => return Err(Error::NotAPushRequest),
    };
    // Pub/Sub always stamps a message; a body without a stamp is taken as published on
    // arrival, but a stamp that is not RFC 3339 in years 0000 to 9999 (UTC) means the body is
    // not Pub/Sub's, and could not be stored and read back (the dead-letter record keeps it).
    let published_at = match field(message, "publishTime", "publish_time") {
        None | Some(Value::Null) => Utc::now(),
        Some(stamp) => {
            stamp.as_str().and_then(|t| harmonia_contracts::time::parse(t).ok()).ok_or(Error::NotAPushRequest)?
        }
    };
    // Pub/Sub reports the attempt only with a dead-letter policy (the emulator never does).
    let attempt = field(root.as_object().ok_or(Error::NotAPushRequest)?, "deliveryAttempt", "delivery_attempt")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n >= 1);
    Ok(Delivery { message_id, subscription, data, attributes, attempt, published_at })
}

async fn receive(State(handler): State<Arc<dyn Handler>>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(delivery) => {
            let size = crate::usage::size(&delivery.data, &delivery.attributes);
            crate::usage::usage().delivered(delivery.subscription.as_str(), size);
            match handler.handle(delivery).await {
                Outcome::Ack => StatusCode::NO_CONTENT.into_response(),
                Outcome::Nack => StatusCode::SERVICE_UNAVAILABLE.into_response(),
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "refused a malformed push request");
            // The same JSON error shape as every other Harmonia endpoint.
            let body = ErrorBody::new(Code::InvalidRequest, e.to_string());
            (StatusCode::BAD_REQUEST, Json(json!({ "error": body }))).into_response()
        }
    }
}

/// A router answering push requests on `POST path` with `handler`, counting each delivery on
/// the process's meter (`harmonia.pubsub.messages`, see the crate's usage counters).
pub fn router(path: &str, handler: Arc<dyn Handler>) -> Router {
    Router::new().route(path, post(receive)).layer(DefaultBodyLimit::max(MAX_PUSH_BODY_BYTES)).with_state(handler)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_camel_and_snake_case_bodies() {
        let body = json!({
            "message": {"data": "aGk=", "attributes": {"a": "1"}, "messageId": "42", "message_id": "42",
                        "publishTime": "2026-01-01T00:00:00.123Z", "publish_time": "2026-01-01T00:00:00.123Z"},
            "subscription": "projects/p/subscriptions/sub-1",
            "deliveryAttempt": 3
        });
        let d = decode(body.to_string().as_bytes()).expect("decode");
        assert_eq!((d.message_id.as_str(), d.data.as_slice(), d.attempt), ("42", b"hi".as_slice(), Some(3)));
        assert_eq!(d.subscription.as_str(), "sub-1");
        assert_eq!(d.attributes.get("a").map(String::as_str), Some("1"));

        let snake =
            json!({"message": {"data": "", "message_id": "7"}, "subscription": "projects/p/subscriptions/sub-1"});
        let d = decode(snake.to_string().as_bytes()).expect("decode");
        assert_eq!((d.message_id.as_str(), d.attempt, d.data.len()), ("7", None, 0));
    }

    #[test]
    fn refuses_what_is_not_a_push() {
        assert_eq!(decode(b"\xff\xfe").err(), Some(Error::NotAPushRequest));
        assert_eq!(decode(b"{}").err(), Some(Error::NotAPushRequest));
        let bad = json!({"message": {"data": "***", "messageId": "1"}, "subscription": "projects/p/subscriptions/s-1"});
        assert_eq!(decode(bad.to_string().as_bytes()).err(), Some(Error::BadData));
        let attrs = json!({"message": {"messageId": "1", "attributes": {"n": 1}}, "subscription": "projects/p/subscriptions/s-1"});
        assert_eq!(decode(attrs.to_string().as_bytes()).err(), Some(Error::NotAPushRequest));
        let stamp = json!({"message": {"messageId": "1", "publishTime": "yesterday"}, "subscription": "projects/p/subscriptions/s-1"});
        assert_eq!(decode(stamp.to_string().as_bytes()).err(), Some(Error::NotAPushRequest));
    }

    /// `push_body`: `9999-12-31T23:59:59-01:00` is year 10000 in UTC. It was taken as the
    /// publication time, which the dead-letter record then stored in a form that does not
    /// read back.
    #[test]
    fn a_publish_time_after_year_9999_in_utc_is_not_a_push() {
        let body = include_bytes!("../testdata/fuzz/push-published-in-year-10000.json");
        assert_eq!(decode(body).err(), Some(Error::NotAPushRequest));
    }

    struct Ack;

    #[async_trait::async_trait]
    impl Handler for Ack {
        async fn handle(&self, _: Delivery) -> Outcome {
            Outcome::Ack
        }
    }

    fn post(body: &Value) -> axum::http::Request<axum::body::Body> {
        axum::http::Request::post("/push/t")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .expect("a request")
    }

    #[tokio::test]
    async fn a_malformed_push_gets_a_json_error_and_a_push_is_acked() {
        let app = router("/push/t", Arc::new(Ack));
        let reply = harmonia_testkit::oneshot(app.clone(), post(&json!({"nope": 1}))).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST);
        let body = reply.json();
        assert_eq!(body["error"]["code"], "invalid_request");
        assert_eq!(body["error"]["message"], "not a Pub/Sub push request");
        let push =
            json!({"message": {"data": "aGk=", "messageId": "1"}, "subscription": "projects/p/subscriptions/s-1"});
        assert_eq!(harmonia_testkit::oneshot(app, post(&push)).await.status, StatusCode::NO_CONTENT);
    }
}
