//! `harmonia login [URL]` and `harmonia logout`: the operator's credential for `--cloud`, checked
//! with the operator API before it is kept (`harmonia_client::login`, a file only its owner can
//! read).

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use harmonia_client::{Auth, Client, login};
use harmonia_contracts::{Code, Error};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::json;

use crate::app::Output;

/// `harmonia login [URL]`.
pub(crate) async fn login(out: &Output, url: Option<&str>) -> Result<(), Error> {
    let url =
        url.map(str::to_owned).or_else(|| std::env::var("HARMONIA_API_URL").ok()).filter(|u| !u.trim().is_empty());
    let Some(url) = url else {
        return Err(Error::new(
            Code::InvalidRequest,
            "Name the operator API's address: `harmonia login https://…`, or set HARMONIA_API_URL.",
        ));
    };
    let credential = match std::env::var("HARMONIA_CREDENTIAL").ok().filter(|c| !c.trim().is_empty()) {
        Some(credential) => SecretString::from(credential.trim().to_owned()),
        None => read_credential()?,
    };
    let client = Client::new(&url, Auth::from_text(credential.expose_secret()))?;
    let me = client.me().await?;
    let path = login::store(&login::Login { url: client.base().to_owned(), credential })?;
    out.say(&format!(
        "Signed in to {} as {} ({}) of workspace {}. The credential is kept in {}, readable by you only; `harmonia --cloud …` uses it, and `harmonia logout` forgets it.",
        client.base(),
        me.operator,
        me.role.as_str(),
        me.workspace,
        path.display()
    ));
    out.value(&json!({ "url": client.base(), "me": me, "stored": path }));
    Ok(())
}

/// `harmonia logout`.
pub(crate) fn logout(out: &Output) -> Result<(), Error> {
    let removed = login::remove()?;
    out.say(if removed { "Signed out: the stored login is removed." } else { "No login was stored." });
    out.value(&json!({ "removed": removed }));
    Ok(())
}

/// The credential from standard input: asked for without echo on a terminal, else its first
/// line.
fn read_credential() -> Result<SecretString, Error> {
    let stdin = std::io::stdin();
    let terminal = stdin.is_terminal();
    if terminal {
        let _ = write!(std::io::stderr(), "Operator credential (not shown): ");
        let _ = std::io::stderr().flush();
    }
    // Echo goes off only while the line is read, and comes back whatever happens.
    let echo_off = terminal && stty("-echo");
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if echo_off {
        stty("echo");
        let _ = writeln!(std::io::stderr());
    }
    read.map_err(|e| {
        Error::new(Code::InvalidRequest, "The credential could not be read from standard input.").with_cause(e)
    })?;
    let credential = line.trim();
    if credential.is_empty() {
        return Err(Error::new(
            Code::Unauthenticated,
            "No credential was given: type it, pipe it in, or set HARMONIA_CREDENTIAL.",
        ));
    }
    Ok(SecretString::from(credential.to_owned()))
}

/// Set a terminal mode on standard input with `stty`; whether it worked.
fn stty(mode: &str) -> bool {
    std::process::Command::new("stty")
        .arg(mode)
        .stdin(std::process::Stdio::inherit())
        .status()
        .is_ok_and(|s| s.success())
}
