//! The operator's stored login: the operator API's address and their credential, in
//! `$XDG_CONFIG_HOME/harmonia/login.toml` (else `~/.config/harmonia/login.toml`), a file only
//! its owner can read or write (0600, in a 0700 folder). `harmonia login` writes it after the
//! API accepted the credential; `harmonia logout` removes it.
//!
//! The file is replaced whole (written beside it, then renamed), so a reader never sees half
//! of it. A file that others can read is refused rather than used: the credential in it may
//! already be someone else's.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::PathBuf;

use harmonia_contracts::{Code, Error};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// What `harmonia login` stores.
#[derive(Clone, Debug)]
pub struct Login {
    /// The operator API's address.
    pub url: String,
    /// The operator's credential (or ID token).
    pub credential: SecretString,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    url: String,
    credential: String,
}

/// Where the login is kept: `$XDG_CONFIG_HOME/harmonia/login.toml`, else
/// `$HOME/.config/harmonia/login.toml`; `None` when neither variable is set.
pub fn path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let config = var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|home| home.join(".config")))?;
    Some(config.join("harmonia").join("login.toml"))
}

/// The stored login, if there is one.
pub fn load() -> Result<Option<Login>, Error> {
    match path() {
        Some(path) => load_from(&path),
        None => Ok(None),
    }
}

/// The login stored at `path`, if there is one.
fn load_from(path: &std::path::Path) -> Result<Option<Login>, Error> {
    let unreadable = || Error::new(Code::InvalidConfig, format!("The stored login {} cannot be read.", path.display()));
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(unreadable()),
    };
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(Error::new(
            Code::InvalidConfig,
            format!(
                "The stored login {} can be read by others, so it is not used: run `harmonia login` again.",
                path.display()
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|_| unreadable())?;
    let file: File = toml::from_str(&text).map_err(|_| unreadable())?;
    Ok(Some(Login { url: file.url, credential: SecretString::from(file.credential) }))
}

/// Store `login`, readable and writable by its owner only; the path it went to.
pub fn store(login: &Login) -> Result<PathBuf, Error> {
    let path = path().ok_or_else(|| {
        Error::new(Code::InvalidConfig, "Neither XDG_CONFIG_HOME nor HOME is set: there is nowhere to keep the login.")
    })?;
    store_at(&path, login)?;
    Ok(path)
}

/// Store `login` at `path`, readable and writable by its owner only.
fn store_at(path: &std::path::Path, login: &Login) -> Result<(), Error> {
    let failed = || Error::new(Code::InvalidConfig, format!("The login could not be written to {}.", path.display()));
    let dir = path.parent().ok_or_else(failed)?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|_| failed())?;
    let text =
        toml::to_string(&File { url: login.url.clone(), credential: login.credential.expose_secret().to_owned() })
            .map_err(|_| failed())?;
    let partial = dir.join(".login.toml.partial");
    let _ = std::fs::remove_file(&partial);
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&partial).map_err(|_| failed())?;
    file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(|_| failed())?;
    std::fs::rename(&partial, path).map_err(|_| failed())
}

/// Remove the stored login; whether there was one.
pub fn remove() -> Result<bool, Error> {
    let Some(path) = path() else { return Ok(false) };
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(_) => {
            Err(Error::new(Code::InvalidConfig, format!("The stored login {} could not be removed.", path.display())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_login_is_its_owners_alone_and_reads_back() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("harmonia").join("login.toml");
        assert!(load_from(&path).expect("no login").is_none());
        let login =
            Login { url: "https://operator.example".into(), credential: SecretString::from("hop_w/ana/s3cret") };
        store_at(&path, &login).expect("stored");
        assert_eq!(std::fs::metadata(&path).expect("file").permissions().mode() & 0o777, 0o600);
        let folder = std::fs::metadata(path.parent().expect("folder")).expect("folder");
        assert_eq!(folder.permissions().mode() & 0o777, 0o700);
        let back = load_from(&path).expect("readable").expect("stored");
        assert_eq!(
            (back.url.as_str(), back.credential.expose_secret()),
            ("https://operator.example", "hop_w/ana/s3cret")
        );
        // Stored again (a new credential), it replaces the file whole.
        let rotated = Login { url: login.url.clone(), credential: SecretString::from("hop_w/ana/n3w") };
        store_at(&path, &rotated).expect("stored again");
        assert_eq!(load_from(&path).expect("readable").expect("stored").credential.expose_secret(), "hop_w/ana/n3w");
    }

    #[test]
    fn a_login_others_can_read_is_refused_not_used() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("login.toml");
        let login =
            Login { url: "https://operator.example".into(), credential: SecretString::from("hop_w/ana/s3cret") };
        store_at(&path, &login).expect("stored");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let refused = load_from(&path).map(|_| ()).expect_err("refused");
        assert_eq!(refused.code, Code::InvalidConfig);
        assert!(refused.message.contains("can be read by others"), "{}", refused.message);
        assert!(!refused.message.contains("s3cret"));
    }
}
