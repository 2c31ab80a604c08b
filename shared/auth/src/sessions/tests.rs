use std::sync::Arc;

use harmonia_store::Store;
use harmonia_store_sqlite::SqliteStore;

use super::*;
use crate::{Credential, operators};

struct Fixture {
    store: Arc<dyn Store>,
    ws: WorkspaceId,
    _dir: harmonia_testkit::TempDir,
}

fn fixture() -> Fixture {
    let dir = harmonia_testkit::temp_dir();
    let store = Arc::new(SqliteStore::open(dir.path().join("sessions.db")).expect("store"));
    Fixture { store, ws: "brand".parse().expect("ws"), _dir: dir }
}

/// An operator with a credential, and a session opened with it.
async fn signed_in(f: &Fixture, name: &str, role: Role) -> (Credential, Opened) {
    let issued = operators::add(&*f.store, &f.ws, &name.parse().expect("op"), role, &"cli".parse().expect("op"))
        .await
        .expect("add");
    let credential = Credential::parse(&issued.credential).expect("a credential");
    let who = operators::authenticate(&*f.store, &credential).await.expect("authenticates");
    let basis = Basis::Credential { digest: credential.digest() };
    let opened = open(&*f.store, &who, basis, Utc::now()).await.expect("open");
    (credential, opened)
}

#[tokio::test]
async fn a_session_authenticates_as_its_operator_with_its_csrf_token_until_closed() {
    let f = fixture();
    let (_, opened) = signed_in(&f, "ana", Role::Admin).await;
    assert!(opened.token.starts_with("hcs_brand/"), "{}", opened.token.len());
    assert_ne!(opened.token, opened.csrf);
    let session = authenticate(&*f.store, &opened.token, Utc::now()).await.expect("authenticates");
    assert_eq!(session.identity.operator.as_str(), "ana");
    assert_eq!((session.identity.workspace.as_str(), session.identity.role), ("brand", Role::Admin));
    assert!(session.csrf_matches(&opened.csrf));
    assert!(!session.csrf_matches("") && !session.csrf_matches(&opened.token));
    // The store keeps no token.
    let stored = f.store.query(&f.ws, SESSIONS, &harmonia_store::Query::all(10)).await.expect("query");
    assert_eq!(stored.len(), 1);
    assert!(!serde_json::to_string(&stored[0].data).expect("json").contains(&opened.token[4..]));
    close(&*f.store, &opened.token).await.expect("close");
    let refused = authenticate(&*f.store, &opened.token, Utc::now()).await.expect_err("closed");
    assert_eq!(refused.code, Code::Unauthenticated);
    close(&*f.store, &opened.token).await.expect("closing twice is fine");
}

#[tokio::test]
async fn a_session_ends_when_it_expires_or_its_credential_is_revoked_or_rotated() {
    let f = fixture();
    let (_, opened) = signed_in(&f, "ana", Role::Operator).await;
    let later = Utc::now() + LIFETIME + TimeDelta::seconds(1);
    assert_eq!(
        authenticate(&*f.store, &opened.token, later).await.map_err(|e| e.code).err(),
        Some(Code::Unauthenticated)
    );

    let cli = "cli".parse().expect("op");
    operators::add(&*f.store, &f.ws, &"root".parse().expect("op"), Role::Admin, &cli).await.expect("an admin");
    operators::revoke(&*f.store, &f.ws, &"ana".parse().expect("op"), &cli).await.expect("revoke");
    let refused = authenticate(&*f.store, &opened.token, Utc::now()).await.expect_err("revoked");
    assert_eq!(refused.code, Code::Unauthenticated);

    let (_, bo) = signed_in(&f, "bo", Role::Operator).await;
    authenticate(&*f.store, &bo.token, Utc::now()).await.expect("before rotation");
    operators::rotate(&*f.store, &f.ws, &"bo".parse().expect("op"), &cli).await.expect("rotate");
    let refused = authenticate(&*f.store, &bo.token, Utc::now()).await.expect_err("rotated");
    assert_eq!(refused.code, Code::Unauthenticated);
}

#[tokio::test]
async fn a_token_that_is_not_an_open_session_is_refused() {
    let f = fixture();
    let (credential, opened) = signed_in(&f, "ana", Role::Operator).await;
    let secret = &opened.token["hcs_brand/".len()..];
    let forged = format!("hcs_brand/{}", secret.chars().rev().collect::<String>());
    for bad in [
        String::new(),
        credential.expose(),
        forged,
        format!("hcs_other/{secret}"),
        format!("hcs_brand/{}", &secret[1..]),
        format!("hcs_brand/{}", secret.to_uppercase()),
        "hcs_/x".to_owned(),
    ] {
        let refused = authenticate(&*f.store, &bad, Utc::now()).await.expect_err("refused");
        assert_eq!(refused.code, Code::Unauthenticated, "{bad}");
    }
}
