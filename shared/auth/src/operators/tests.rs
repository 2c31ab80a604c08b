//! Operator records on both store backends: every case runs on a SQLite file and (feature
//! `e2e`) on the Firestore emulator started by `infra/test.sh`, so every deployed function and
//! the embedded default see the same behaviour.

use std::sync::Arc;

use harmonia_store::Store;
#[cfg(feature = "e2e")]
use harmonia_store_firestore::FirestoreStore;
use harmonia_store_sqlite::SqliteStore;

use super::*;

/// Every case below, once per backend.
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::sqlite()).await;
                }
            )*
        }
        #[cfg(feature = "e2e")]
        mod firestore {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::firestore().await).await;
                }
            )*
        }
    };
}

on_both_backends!(
    an_added_operator_authenticates_with_its_role_until_revoked,
    an_active_name_cannot_be_added_twice_but_a_revoked_one_can_be_reused,
    the_last_active_admin_cannot_be_revoked,
    two_admins_revoking_each_other_at_once_leave_one,
    rotation_replaces_the_credential_and_keeps_the_role,
    the_list_is_by_name_and_never_carries_a_digest,
    a_credential_naming_another_workspace_finds_no_record,
);

struct Fixture {
    store: Arc<dyn Store>,
    ws: WorkspaceId,
    cli: OperatorId,
    /// Holds the SQLite file's directory until the test ends.
    _dir: Option<harmonia_testkit::TempDir>,
}

fn sqlite() -> Fixture {
    let dir = harmonia_testkit::temp_dir();
    let store = Arc::new(SqliteStore::open(dir.path().join("operators.db")).expect("store"));
    Fixture { store, ws: "brand".parse().expect("ws"), cli: "cli".parse().expect("op"), _dir: Some(dir) }
}

#[cfg(feature = "e2e")]
async fn firestore() -> Fixture {
    harmonia_testkit::firestore_emulator();
    let project = harmonia_testkit::unique("operators");
    let store = Arc::new(FirestoreStore::connect(&project, "(default)").await.expect("firestore"));
    Fixture { store, ws: "brand".parse().expect("ws"), cli: "cli".parse().expect("op"), _dir: None }
}

fn op(name: &str) -> OperatorId {
    name.parse().expect("operator id")
}

impl Fixture {
    async fn add(&self, name: &str, role: Role) -> Result<Issued, Error> {
        add(&*self.store, &self.ws, &op(name), role, &self.cli).await
    }

    async fn revoke(&self, name: &str) -> Result<OperatorSummary, Error> {
        revoke(&*self.store, &self.ws, &op(name), &op("ana")).await
    }

    async fn who(&self, credential: &str) -> Result<Identity, Error> {
        authenticate(&*self.store, &Credential::parse(credential).expect("a credential")).await
    }
}

async fn an_added_operator_authenticates_with_its_role_until_revoked(f: Fixture) {
    let admin = f.add("ana", Role::Admin).await.expect("add");
    assert_eq!((admin.operator.as_str(), admin.role, &admin.workspace), ("ana", Role::Admin, &f.ws));
    let bob = f.add("bob", Role::Operator).await.expect("add");
    assert_eq!(
        f.who(&bob.credential).await.map(|w| (w.operator, w.workspace, w.role)),
        Ok((op("bob"), f.ws.clone(), Role::Operator))
    );
    assert_eq!(f.who(&admin.credential).await.map(|w| w.role), Ok(Role::Admin));

    let revoked = f.revoke("bob").await.expect("revoke");
    assert_eq!((revoked.status, revoked.revoked_by), (Status::Revoked, Some(op("ana"))));
    assert_eq!(f.who(&bob.credential).await.map_err(|e| e.code), Err(Code::Unauthenticated));
    assert_eq!(f.revoke("bob").await.map_err(|e| e.code), Err(Code::NotFound), "already revoked");
    assert_eq!(f.revoke("nobody").await.map_err(|e| e.code), Err(Code::NotFound));
}

async fn an_active_name_cannot_be_added_twice_but_a_revoked_one_can_be_reused(f: Fixture) {
    f.add("ana", Role::Admin).await.expect("admin");
    let first = f.add("bob", Role::Operator).await.expect("first");
    let again = f.add("bob", Role::Admin).await;
    assert_eq!(again.map(|_| ()).map_err(|e| e.code), Err(Code::AlreadyExists));
    assert_eq!(f.who(&first.credential).await.map(|w| w.role), Ok(Role::Operator), "the refusal changed nothing");

    f.revoke("bob").await.expect("revoke");
    let second = f.add("bob", Role::Operator).await.expect("reuse");
    assert_eq!(f.who(&second.credential).await.map(|w| w.operator), Ok(op("bob")));
    assert_eq!(
        f.who(&first.credential).await.map_err(|e| e.code),
        Err(Code::Unauthenticated),
        "the revoked credential stays dead when its name is reused"
    );
}

async fn the_last_active_admin_cannot_be_revoked(f: Fixture) {
    let ana = f.add("ana", Role::Admin).await.expect("ana");
    f.add("bob", Role::Operator).await.expect("bob");
    let refused = f.revoke("ana").await.map(|_| ()).map_err(|e| e.code);
    assert_eq!(refused, Err(Code::LastAdmin), "an operator does not count as an admin");
    assert_eq!(f.who(&ana.credential).await.map(|w| w.role), Ok(Role::Admin), "nothing was revoked");

    f.add("cleo", Role::Admin).await.expect("cleo");
    f.revoke("ana").await.expect("another admin remains");
    assert_eq!(f.revoke("cleo").await.map(|_| ()).map_err(|e| e.code), Err(Code::LastAdmin));
}

async fn two_admins_revoking_each_other_at_once_leave_one(f: Fixture) {
    for round in 0..5 {
        let ws: WorkspaceId = format!("race-{round}").parse().expect("ws");
        for name in ["ana", "bob"] {
            add(&*f.store, &ws, &op(name), Role::Admin, &f.cli).await.expect("admin");
        }
        let (ana, bob) = (op("ana"), op("bob"));
        let (a, b) = tokio::join!(revoke(&*f.store, &ws, &ana, &bob), revoke(&*f.store, &ws, &bob, &ana));
        assert_eq!(usize::from(a.is_ok()) + usize::from(b.is_ok()), 1, "exactly one revocation wins: {a:?} {b:?}");
        let lost = if a.is_ok() { b } else { a };
        assert_eq!(lost.map(|_| ()).map_err(|e| e.code), Err(Code::LastAdmin));
        let listed = list(&*f.store, &ws).await.expect("list");
        assert_eq!(listed.iter().filter(|o| o.status == Status::Active).count(), 1);
    }
}

async fn rotation_replaces_the_credential_and_keeps_the_role(f: Fixture) {
    let old = f.add("ana", Role::Admin).await.expect("add");
    let new = rotate(&*f.store, &f.ws, &op("ana"), &f.cli).await.expect("rotate");
    assert_ne!(old.credential, new.credential);
    assert_eq!(new.role, Role::Admin);
    assert_eq!(f.who(&old.credential).await.map_err(|e| e.code), Err(Code::Unauthenticated));
    assert_eq!(f.who(&new.credential).await.map(|w| w.role), Ok(Role::Admin));
    let missing = rotate(&*f.store, &f.ws, &op("nobody"), &f.cli).await;
    assert_eq!(missing.map(|_| ()).map_err(|e| e.code), Err(Code::NotFound));
}

async fn the_list_is_by_name_and_never_carries_a_digest(f: Fixture) {
    let cleo = f.add("cleo", Role::Operator).await.expect("cleo");
    f.add("ana", Role::Admin).await.expect("ana");
    f.add("bob", Role::Operator).await.expect("bob");
    f.revoke("bob").await.expect("revoke");
    let listed = list(&*f.store, &f.ws).await.expect("list");
    let rows: Vec<_> = listed.iter().map(|o| (o.operator.as_str(), o.role, o.status)).collect();
    assert_eq!(
        rows,
        [
            ("ana", Role::Admin, Status::Active),
            ("bob", Role::Operator, Status::Revoked),
            ("cleo", Role::Operator, Status::Active)
        ]
    );
    let text = serde_json::to_string(&listed).expect("json");
    let digest = Credential::parse(&cleo.credential).expect("credential").digest();
    assert!(!text.contains(&digest) && !text.contains("digest"), "{text}");
    assert!(!text.contains(&cleo.credential));
    let other: WorkspaceId = "elsewhere".parse().expect("ws");
    assert!(list(&*f.store, &other).await.expect("list").is_empty(), "another workspace sees none of them");
}

async fn a_credential_naming_another_workspace_finds_no_record(f: Fixture) {
    let ana = f.add("ana", Role::Admin).await.expect("add");
    let moved = ana.credential.replacen("hop_brand/", "hop_elsewhere/", 1);
    assert_eq!(f.who(&moved).await.map_err(|e| e.code), Err(Code::Unauthenticated));
}

#[test]
fn issued_debug_output_hides_the_credential() {
    let (issued, record) = issue(&"ws".parse().expect("ws"), &op("ana"), Role::Admin, &op("cli"));
    assert!(!format!("{issued:?}").contains(&issued.credential));
    assert!(Credential::parse(&issued.credential).is_some_and(|c| c.matches(&record.digest)));
}
