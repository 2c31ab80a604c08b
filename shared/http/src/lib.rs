//! The HTTP boundary every Harmonia HTTP function shares (operator, ingest, Nova and the
//! stage functions' push endpoints), so each handler stays a few lines and every failure
//! answers in one JSON shape, `{"error":{code,category,message,retryable}}`.
//!
//! - [`error`]: [`ApiError`], the one mapping of a typed error to a response, and
//!   [`status_of`], the one mapping of a code to an HTTP status.
//! - [`caller`]: the [`Caller`] extractor, the authenticated identity and role behind the
//!   request's `Authorization` header (an operator credential or a Google ID token), and
//!   [`Admin`], a caller whose role is admin (any other answers 403 `forbidden`).
//! - [`body`]: [`JsonBody`], a JSON body whose rejections are typed codes, never axum's text.
//! - [`path`]: [`PathId`], a path parameter parsed as an id newtype.
//! - [`trace`]: [`Trace`], the caller's W3C `traceparent`, or a new root.
//! - [`fallback`]: [`json_fallbacks`], JSON bodies for unknown paths (404) and wrong methods
//!   (405).

pub mod body;
pub mod caller;
pub mod error;
pub mod fallback;
pub mod path;
pub mod trace;

pub use body::JsonBody;
pub use caller::{Admin, Caller};
pub use error::{ApiError, status_of};
pub use fallback::json_fallbacks;
pub use path::PathId;
pub use trace::Trace;

#[cfg(test)]
mod tests;
