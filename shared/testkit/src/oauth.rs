//! The OAuth 2.0 side of a recorded platform: which access token it accepts, and its token
//! endpoint's refresh grant (RFC 6749 §6), for the recorded LinkedIn and X servers.
//!
//! A test expires the access token in use ([`Grants::expire`]); a call with it is then refused
//! with a 401 until the client refreshes. A refresh with the refresh token in force issues the
//! next access token, and, where the platform rotates them ([`Rotation::Rotates`], as X does),
//! the next refresh token too, after which the old one is refused.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// Whether the platform issues a new refresh token at each refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// Each refresh token is good for one refresh (X).
    Rotates,
    /// The refresh token stays good (LinkedIn).
    Keeps,
}

#[derive(Debug)]
struct State {
    access: Option<String>,
    refresh: String,
    refreshes: u32,
}

/// The tokens a recorded platform accepts, which a test reads and steers.
#[derive(Clone, Debug)]
pub struct Grants {
    state: Arc<Mutex<State>>,
    rotation: Rotation,
    client_id: &'static str,
    client_secret: &'static str,
}

impl Grants {
    /// A platform accepting `access` and refreshing with `refresh`, for the client `client_id`
    /// with `client_secret`.
    pub fn new(
        access: &str,
        refresh: &str,
        rotation: Rotation,
        client_id: &'static str,
        client_secret: &'static str,
    ) -> Self {
        let state = State { access: Some(access.to_owned()), refresh: refresh.to_owned(), refreshes: 0 };
        Self { state: Arc::new(Mutex::new(state)), rotation, client_id, client_secret }
    }

    /// Whether `headers` carry the access token in force as a bearer token.
    pub fn authorised(&self, headers: &HeaderMap) -> bool {
        let given = headers.get("authorization").and_then(|v| v.to_str().ok());
        let state = self.state.lock().expect("lock");
        state.access.as_ref().is_some_and(|a| given == Some(&format!("Bearer {a}")))
    }

    /// Expire the access token in force: calls with it are refused until a refresh.
    pub fn expire(&self) {
        self.state.lock().expect("lock").access = None;
    }

    /// How many refreshes were granted.
    pub fn refreshes(&self) -> u32 {
        self.state.lock().expect("lock").refreshes
    }

    /// The refresh token in force.
    pub fn refresh_token(&self) -> String {
        self.state.lock().expect("lock").refresh.clone()
    }

    /// A refresh grant from `form` (and the request's `headers`, for HTTP Basic client
    /// authentication): the new access token and, where they rotate, refresh token; `None` when
    /// the grant is refused (a wrong client, or a refresh token not in force).
    pub fn refresh(&self, headers: &HeaderMap, form: &[(String, String)]) -> Option<(String, Option<String>)> {
        let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let basic = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Basic "));
        let client = match basic {
            Some(encoded) => {
                let expected = format!("{}:{}", self.client_id, self.client_secret);
                decode_basic(encoded).is_some_and(|given| given == expected)
            }
            None => field("client_id") == Some(self.client_id) && field("client_secret") == Some(self.client_secret),
        };
        let mut state = self.state.lock().expect("lock");
        if !client || field("grant_type") != Some("refresh_token") || field("refresh_token") != Some(&state.refresh) {
            return None;
        }
        state.refreshes += 1;
        let n = state.refreshes;
        let access = format!("access-{n}-{}", self.client_id);
        state.access = Some(access.clone());
        let rotated = match self.rotation {
            Rotation::Rotates => {
                state.refresh = format!("refresh-{n}-{}", self.client_id);
                Some(state.refresh.clone())
            }
            Rotation::Keeps => None,
        };
        Some((access, rotated))
    }
}

impl Grants {
    /// The token endpoint's answer to the refresh grant in `body` (a form) with `headers`: the
    /// recorded grant `granted` with the new tokens (and the refresh token in force), or the
    /// recorded refusal `refused` with a 400.
    pub fn answer(&self, headers: &HeaderMap, body: &str, mut granted: Value, refused: Value) -> Response {
        match self.refresh(headers, &form_fields(body)) {
            Some((access, _)) => {
                granted["access_token"] = Value::String(access);
                granted["refresh_token"] = Value::String(self.refresh_token());
                (StatusCode::OK, Json(granted)).into_response()
            }
            None => (StatusCode::BAD_REQUEST, Json(refused)).into_response(),
        }
    }
}

/// An HTTP Basic credential's `user:password`.
fn decode_basic(encoded: &str) -> Option<String> {
    use base64::Engine;
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?).ok()
}

/// A form body's (or a query string's) fields, percent-decoded.
pub fn form_fields(body: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_and_forms_are_read_as_clients_send_them() {
        assert_eq!(decode_basic("Y2xpZW50OnNlY3JldA==").as_deref(), Some("client:secret"));
        assert_eq!(
            form_fields("grant_type=refresh_token&refresh_token=a%2Bb%3D&client_id=x+y"),
            [
                ("grant_type".to_owned(), "refresh_token".to_owned()),
                ("refresh_token".to_owned(), "a+b=".to_owned()),
                ("client_id".to_owned(), "x y".to_owned())
            ]
        );
    }
}
