//! JSON request bodies whose every rejection is a typed code.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use harmonia_contracts::{Code, Error};
use serde::de::DeserializeOwned;

use crate::ApiError;

/// A JSON body of type `T`. Unlike [`axum::Json`], a refused body answers in the error shape
/// every function uses: `payload_too_large` past the router's body limit, `invalid_request`
/// for anything else (wrong content type, malformed JSON, a body of another shape).
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

/// The typed error of a refused JSON body.
pub fn rejection(rejection: &JsonRejection) -> Error {
    match rejection {
        JsonRejection::BytesRejection(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            Error::from_code(Code::PayloadTooLarge)
        }
        JsonRejection::BytesRejection(_) => Error::new(Code::InvalidRequest, "the request body could not be read"),
        JsonRejection::MissingJsonContentType(_) => {
            Error::new(Code::InvalidRequest, "the body must be sent as Content-Type: application/json")
        }
        JsonRejection::JsonSyntaxError(_) => Error::new(Code::InvalidRequest, "the body is not valid JSON"),
        // The data error and any variant axum adds later: the body is JSON of another shape.
        _ => Error::from_code(Code::InvalidRequest),
    }
}

/// Decode a request body's bytes as `T` exactly as [`JsonBody`] does once the body has been
/// read within the router's limit and its content type checked (axum's `Json::from_bytes`),
/// with the same typed rejections. For callers that hold the bytes already, such as the fuzz
/// targets of every request body.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    Json::<T>::from_bytes(bytes).map(|Json(value)| value).map_err(|refused| rejection(&refused))
}

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(Self(value)),
            Err(refused) => Err(ApiError(rejection(&refused))),
        }
    }
}
