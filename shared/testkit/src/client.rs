//! Calling a served router over HTTP: one request's status and JSON body, and the code of the
//! shared error shape `{"error":{code,category,message,retryable}}`.

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
