//! Calling a served router over HTTP: one request's status and JSON body, the code of the
//! shared error shape `{"error":{code,category,message,retryable}}`, and the check of the JSON
//! fallbacks every HTTP function serves.

use serde_json::Value;

/// Send `request`; its status and JSON body (`null` when the body is not JSON).
pub async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The `code` of an error body, or `""` when the body is not one.
pub fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

/// Check the JSON fallbacks every HTTP function serves (`harmonia_http::json_fallbacks`) on the
/// router at `base`: `GET /nope` is a 404 `unknown_route` (category `not_found`), and `method`
/// on `path`, a route that does not take it, a 405 `method_not_allowed`.
pub async fn assert_json_fallbacks(base: impl std::fmt::Display, method: reqwest::Method, path: &str) {
    let http = reqwest::Client::new();
    let (status, body) = send(http.get(format!("{base}/nope"))).await;
    assert_eq!((status, error_code(&body)), (404, "unknown_route"), "GET /nope");
    assert_eq!(body["error"]["category"], "not_found", "GET /nope");
    let (status, body) = send(http.request(method.clone(), format!("{base}{path}"))).await;
    assert_eq!((status, error_code(&body)), (405, "method_not_allowed"), "{method} {path}");
}
