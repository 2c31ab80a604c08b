//! `harmonia operator add|list|revoke`: the workspace's operator credentials, on the embedded
//! default (the command line acts as the operator `cli`, as it does for decisions) or, with
//! `--cloud`, through the operator API as the credential's admin.
//!
//! `harmonia first-admin NAME` creates a deployed workspace's first admin, the one thing no
//! credential can do yet: with the deployer's own Google credentials it writes the record into
//! the project's Firestore, and it is refused once the workspace has an active admin.
//!
//! Each command builds a [`Rendered`] (text and JSON) that `run` prints, so tests check what
//! an operator would see without reading stdout.

use clap::Subcommand;
use harmonia_auth::Role;
use harmonia_auth::operators::{self, Issued, OperatorSummary, Status};
use harmonia_client::api::NewOperator;
use harmonia_contracts::ids::{IdLiteral, OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::Store;
use serde_json::{Value, json};

use crate::app::{Backend, Output};

/// What `harmonia operator` does.
#[derive(Debug, Subcommand)]
pub(crate) enum OperatorCommand {
    /// Create an operator and print its credential, this once (only its digest is stored).
    Add {
        /// The operator's name (letters, digits, '.', '_', ':' or '-').
        name: String,
        /// Make it an admin: it may also add and revoke operators.
        #[arg(long)]
        admin: bool,
        /// Replace the credential of the active operator NAME instead (its role unchanged):
        /// the old credential stops working as the new one is stored.
        #[arg(long, conflicts_with = "admin")]
        rotate: bool,
    },
    /// Every operator of the workspace: name, role, created, status (never a credential).
    List,
    /// Revoke an operator's credential: it stops working at once, in every function.
    Revoke {
        /// The operator's name.
        name: String,
    },
}

/// What a command shows: a text for people and a JSON value for `--json`.
#[derive(Debug)]
pub(crate) struct Rendered {
    text: String,
    json: Value,
}

/// Who the command line acts as.
fn cli_operator() -> OperatorId {
    OperatorId::from_literal(const { IdLiteral::new("cli") })
}

/// Run `command` in `workspace` and print what it shows.
pub(crate) async fn run(
    backend: &Backend,
    out: &Output,
    workspace: &WorkspaceId,
    command: OperatorCommand,
) -> Result<(), Error> {
    let rendered = match backend {
        Backend::Local(l) => execute(&*l.env.store, workspace, command).await?,
        Backend::Cloud(client) => through_api(client, workspace, command).await?,
    };
    out.say(rendered.text.trim_end());
    out.value(&rendered.json);
    Ok(())
}

/// Do what `command` says through the operator API, as the credential's admin.
async fn through_api(
    client: &harmonia_client::Client,
    workspace: &WorkspaceId,
    command: OperatorCommand,
) -> Result<Rendered, Error> {
    match command {
        OperatorCommand::Add { rotate: true, .. } => Err(Error::new(
            Code::InvalidRequest,
            "The operator API does not rotate a credential: revoke the operator, then add the name again for a new one.",
        )),
        OperatorCommand::Add { name, admin, rotate: false } => {
            let body = NewOperator { name: name.parse()?, role: if admin { Role::Admin } else { Role::Operator } };
            Ok(issued_view(&client.add_operator(&body).await?, false))
        }
        OperatorCommand::List => {
            let listed = client.operators().await?.operators;
            let text = if listed.is_empty() { format!("{}\n", first_admin_hint(workspace)) } else { table(&listed) };
            Ok(Rendered { text, json: json!({ "workspace": workspace, "operators": listed }) })
        }
        OperatorCommand::Revoke { name } => {
            Ok(revoked_view(workspace, &client.revoke_operator(&name.parse()?).await?.operator))
        }
    }
}

/// `harmonia first-admin NAME`: the deployed workspace's first admin, written into the
/// project's Firestore with the deployer's Google credentials (configured from the environment
/// like the functions). Refused with `already_exists` once the workspace has an active admin:
/// from then on admins add operators through the API.
#[cfg(feature = "cloud")]
pub(crate) async fn first_admin(out: &Output, workspace: &WorkspaceId, name: &str) -> Result<(), Error> {
    let name: OperatorId = name.parse()?;
    let env = harmonia_host::env_from_environment(Vec::new()).await?;
    let store = &*env.store;
    let admins = operators::list(store, workspace).await?;
    if let Some(admin) = admins.iter().find(|o| o.status == Status::Active && o.role == Role::Admin) {
        return Err(Error::new(
            Code::AlreadyExists,
            format!(
                "Workspace {workspace} already has an admin ({}): ask them to add operators with `harmonia --cloud operator add`.",
                admin.operator
            ),
        ));
    }
    let rendered = issued_view(&operators::add(store, workspace, &name, Role::Admin, &cli_operator()).await?, false);
    out.say(rendered.text.trim_end());
    out.value(&rendered.json);
    Ok(())
}

/// `harmonia first-admin` in a build without the feature `cloud`.
#[cfg(not(feature = "cloud"))]
pub(crate) async fn first_admin(_out: &Output, _workspace: &WorkspaceId, _name: &str) -> Result<(), Error> {
    Err(crate::app::without_cloud("first-admin"))
}

/// Do what `command` says in `workspace` of `store`.
async fn execute(store: &dyn Store, workspace: &WorkspaceId, command: OperatorCommand) -> Result<Rendered, Error> {
    let by = cli_operator();
    match command {
        OperatorCommand::Add { name, admin, rotate } => {
            let name: OperatorId = name.parse()?;
            let issued = if rotate {
                operators::rotate(store, workspace, &name, &by).await?
            } else {
                let role = if admin { Role::Admin } else { Role::Operator };
                operators::add(store, workspace, &name, role, &by).await?
            };
            Ok(issued_view(&issued, rotate))
        }
        OperatorCommand::List => {
            let listed = operators::list(store, workspace).await?;
            let text = if listed.is_empty() { format!("{}\n", first_admin_hint(workspace)) } else { table(&listed) };
            Ok(Rendered { text, json: json!({ "workspace": workspace, "operators": listed }) })
        }
        OperatorCommand::Revoke { name } => {
            Ok(revoked_view(workspace, &operators::revoke(store, workspace, &name.parse()?, &by).await?))
        }
    }
}

fn revoked_view(workspace: &WorkspaceId, revoked: &OperatorSummary) -> Rendered {
    let text =
        format!("Revoked {} in workspace {workspace}: its credential no longer works anywhere.\n", revoked.operator);
    Rendered { text, json: json!({ "workspace": workspace, "operator": revoked }) }
}

fn issued_view(issued: &Issued, rotated: bool) -> Rendered {
    let what = if rotated { "Replaced the credential of" } else { "Added" };
    let text = format!(
        "{what} {} {} in workspace {}. Its credential, shown only this once (only its digest is stored):\n\n  {}\n\n\
         Use it as `Authorization: Bearer <credential>` with the operator API.\n",
        issued.role.as_str(),
        issued.operator,
        issued.workspace,
        issued.credential
    );
    Rendered { text, json: json!(issued) }
}

/// The operators as a table with a header row: name, role, created, status.
fn table(rows: &[OperatorSummary]) -> String {
    let header = ["NAME", "ROLE", "CREATED", "STATUS"];
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|o| {
            let status = match (o.status, o.revoked_at) {
                (Status::Revoked, Some(at)) => format!("revoked {}", at.format("%Y-%m-%d %H:%M UTC")),
                (status, _) => status.as_str().to_owned(),
            };
            [
                o.operator.to_string(),
                o.role.as_str().to_owned(),
                o.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
                status,
            ]
        })
        .collect();
    let width = |i: usize| cells.iter().map(|c| c[i].len()).chain([header[i].len()]).max().unwrap_or(0);
    let widths = [width(0), width(1), width(2)];
    let line = |c: [&str; 4]| {
        format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        )
    };
    let mut out = line(header);
    for c in &cells {
        out.push_str(&line([&c[0], &c[1], &c[2], &c[3]]));
    }
    out
}

/// The one sentence that says how to let the first operator in.
pub(crate) fn first_admin_hint(workspace: &WorkspaceId) -> String {
    format!(
        "No operator can sign in to workspace {workspace} yet: create the first admin with `harmonia operator add NAME --admin`, which prints its credential once."
    )
}

/// How many operators of `workspace` hold a working credential.
pub(crate) async fn active_operators(store: &dyn Store, workspace: &WorkspaceId) -> Result<usize, Error> {
    Ok(operators::list(store, workspace).await?.iter().filter(|o| o.status == Status::Active).count())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use harmonia_auth::Credentials;
    use harmonia_contracts::Code;
    use harmonia_store_sqlite::SqliteStore;

    use super::*;

    /// An empty store in a fresh directory (kept while the returned guard lives), and the
    /// workspace the commands run in.
    fn fixture() -> (Arc<dyn Store>, WorkspaceId, harmonia_testkit::TempDir) {
        let dir = harmonia_testkit::temp_dir();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("cli.db")).expect("store"));
        (store, "brand".parse().expect("ws"), dir)
    }

    fn add(name: &str, admin: bool) -> OperatorCommand {
        OperatorCommand::Add { name: name.into(), admin, rotate: false }
    }

    #[tokio::test]
    async fn add_list_and_revoke_as_an_operator_sees_them() {
        let (store, ws, _dir) = fixture();
        let credentials = Credentials::new(store.clone());

        let empty = execute(&*store, &ws, OperatorCommand::List).await.expect("list");
        assert!(empty.text.contains("harmonia operator add NAME --admin"), "{}", empty.text);
        assert_eq!(active_operators(&*store, &ws).await.expect("count"), 0);

        let added = execute(&*store, &ws, add("ana", true)).await.expect("add");
        let credential = added.json["credential"].as_str().expect("credential").to_owned();
        assert_eq!(
            (added.json["operator"].as_str(), added.json["role"].as_str(), added.json["workspace"].as_str()),
            (Some("ana"), Some("admin"), Some("brand"))
        );
        assert_eq!(added.text.matches(&credential).count(), 1, "printed exactly once: {}", added.text);
        let who = credentials.authenticate(Some(&format!("Bearer {credential}"))).await.expect("authenticates");
        assert_eq!((who.operator.as_str(), who.role), ("ana", Role::Admin));

        let again = execute(&*store, &ws, add("ana", false)).await.map(|_| ()).map_err(|e| e.code);
        assert_eq!(again, Err(Code::AlreadyExists));
        execute(&*store, &ws, add("bob", false)).await.expect("add bob");

        let listed = execute(&*store, &ws, OperatorCommand::List).await.expect("list");
        let lines: Vec<&str> = listed.text.lines().collect();
        assert_eq!(lines.len(), 3, "{}", listed.text);
        let header: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(header, ["NAME", "ROLE", "CREATED", "STATUS"]);
        assert!(lines[1].starts_with("ana ") && lines[1].contains("admin") && lines[1].ends_with("active"));
        assert!(lines[2].starts_with("bob ") && lines[2].contains("operator"));
        assert!(!listed.json.to_string().contains("digest") && !listed.text.contains(&credential));

        let refused = execute(&*store, &ws, OperatorCommand::Revoke { name: "ana".into() }).await;
        assert_eq!(refused.map(|_| ()).map_err(|e| e.code), Err(Code::LastAdmin));
        let revoked = execute(&*store, &ws, OperatorCommand::Revoke { name: "bob".into() }).await.expect("revoke");
        assert_eq!(revoked.json["operator"]["status"], "revoked");
        let listed = execute(&*store, &ws, OperatorCommand::List).await.expect("list");
        assert!(listed.text.lines().nth(2).is_some_and(|l| l.contains("revoked")), "{}", listed.text);
        assert_eq!(active_operators(&*store, &ws).await.expect("count"), 1);
    }

    #[tokio::test]
    async fn rotation_prints_a_new_credential_and_the_old_one_stops_working() {
        let (store, ws, _dir) = fixture();
        let credentials = Credentials::new(store.clone());
        let first = execute(&*store, &ws, add("ana", true)).await.expect("add");
        let rotate = OperatorCommand::Add { name: "ana".into(), admin: false, rotate: true };
        let second = execute(&*store, &ws, rotate).await.expect("rotate");
        assert!(second.text.starts_with("Replaced the credential of admin ana"), "{}", second.text);
        let bearer = |r: &Rendered| format!("Bearer {}", r.json["credential"].as_str().unwrap_or_default());
        assert!(credentials.authenticate(Some(&bearer(&first))).await.is_err());
        assert_eq!(credentials.authenticate(Some(&bearer(&second))).await.map(|w| w.role), Ok(Role::Admin));
    }

    #[tokio::test]
    async fn a_bad_name_is_a_typed_error_and_nothing_is_stored() {
        let (store, ws, _dir) = fixture();
        let bad = execute(&*store, &ws, add("an a", true)).await.map(|_| ()).map_err(|e| e.code);
        assert_eq!(bad, Err(Code::InvalidId));
        assert!(operators::list(&*store, &ws).await.expect("list").is_empty());
    }
}
