//! A typed path parameter.

use std::str::FromStr;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use harmonia_contracts::{Code, Error};

use crate::ApiError;

/// The route's one path parameter, parsed as `T` (an id newtype): a malformed value answers
/// with `T`'s own typed error (such as `invalid_id`), never axum's text rejection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathId<T>(pub T);

impl<T, S> FromRequestParts<S> for PathId<T>
where
    T: FromStr<Err = Error> + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(text) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| Error::new(Code::InvalidRequest, "the path parameter is not valid text").with_cause(e))?;
        Ok(Self(text.parse()?))
    }
}
