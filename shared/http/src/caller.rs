//! The authenticated caller, as an extractor.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use harmonia_auth::{Credentials, Identity, Role};
use harmonia_contracts::{Code, Error};

use crate::ApiError;

/// The identity behind the request's `Authorization: Bearer <credential>` header: an operator
/// credential (checked against its record in the store) or a Google ID token, with the
/// caller's role. Any state that can give the
/// [`Credentials`] (`Arc<Credentials>: FromRef<S>`) can use it; a refusal answers 401 (or 403
/// for a valid token of an unmapped principal) in the shared error shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller(pub Identity);

impl<S> FromRequestParts<S> for Caller
where
    Arc<Credentials>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let credentials = Arc::<Credentials>::from_ref(state);
        let header = match parts.headers.get(AUTHORIZATION) {
            None => None,
            Some(value) => Some(
                value
                    .to_str()
                    .map_err(|_| Error::new(Code::Unauthenticated, "the Authorization header is not text"))?,
            ),
        };
        Ok(Self(credentials.authenticate(header).await?))
    }
}

/// An admin of the caller's workspace: a [`Caller`] whose role is [`Role::Admin`]. An operator
/// is answered 403 `forbidden`; an unauthenticated request 401, as for [`Caller`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admin(pub Identity);

impl<S> FromRequestParts<S> for Admin
where
    Arc<Credentials>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Caller(who) = Caller::from_request_parts(parts, state).await?;
        match who.role {
            Role::Admin => Ok(Self(who)),
            Role::Operator => Err(Error::from_code(Code::Forbidden).into()),
        }
    }
}
