//! Channel accounts: the connectors that hold one channel's own credentials, read from the
//! channel secrets file.
//!
//! The file is TOML, one `[[channel]]` table per channel, naming the platform and handle of a
//! workspace channel and the connector with its credentials:
//!
//! ```toml
//! [[channel]]
//! platform = "bluesky"
//! handle = "@fieldnotes.bsky.social"
//! connector = "bluesky"
//! service = "https://bsky.social"          # the account's PDS
//! identifier = "fieldnotes.bsky.social"    # handle or DID
//! app_password = "xxxx-xxxx-xxxx-xxxx"     # an app password, never the account password
//!
//! [[channel]]
//! platform = "mastodon"
//! handle = "@fieldnotes@mastodon.social"
//! connector = "mastodon"
//! service = "https://mastodon.social"      # the instance
//! access_token = "…"                       # scopes write:statuses read:statuses read:accounts
//! visibility = "public"                    # or unlisted, private (default public)
//! ```
//!
//! Locally it is `channels.toml` in the data dir. `HARMONIA_CHANNEL_SECRETS` names another
//! file, or a directory: on Cloud Run each channel is its own Secret Manager secret, mounted as
//! `<dir>/<name>/channel.toml`, so a directory's `*.toml` files and its subdirectories'
//! `channel.toml` files are read together, in name order, as one list. A file that others than
//! its owner may read is refused, as is any value out of shape; the messages name the file and
//! the entry, never a credential. In a directory of mounted secrets the files may be readable
//! by all (Cloud Run mounts them `0444` by design, in a container of one user) but never
//! writable by others than their owner.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use harmonia_contracts::domain::{Channel, ConnectorKind, Platform};
use harmonia_contracts::{Code, Error};
use secrecy::SecretString;
use serde::Deserialize;

use super::Connector;
use super::bluesky::{Bluesky, BlueskyConfig};
use super::mastodon::{Mastodon, MastodonConfig};

/// The file name of the channel secrets file in a local data dir.
pub const LOCAL_FILE: &str = "channels.toml";

/// The file name of one channel's secret inside a directory of mounted secrets.
pub const CHANNEL_FILE: &str = "channel.toml";

/// How long one platform request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    channel: Vec<Entry>,
}

/// One entry as written; which fields it needs depends on its connector.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    platform: Platform,
    handle: String,
    connector: ConnectorKind,
    #[serde(default)]
    service: Option<String>,
    #[serde(default)]
    identifier: Option<String>,
    #[serde(default)]
    app_password: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    visibility: Option<super::mastodon::Visibility>,
}

/// Whether a file is one of a directory of mounted secrets, which may be readable by all.
#[derive(Clone, Copy)]
enum Mounted {
    No,
    Yes,
}

/// One channel's connector.
#[derive(Clone)]
struct Account {
    platform: Platform,
    handle: String,
    connector: Arc<dyn Connector>,
}

/// The channel accounts of a deployment.
#[derive(Clone, Default)]
pub struct Accounts(Vec<Account>);

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|a| (a.platform.as_str(), &a.handle))).finish()
    }
}

/// A handle as compared: without a leading `@`, case-insensitively.
pub(super) fn same_handle(a: &str, b: &str) -> bool {
    a.trim_start_matches('@').eq_ignore_ascii_case(b.trim_start_matches('@'))
}

fn invalid(path: &Path, what: &str) -> Error {
    Error::new(Code::InvalidConfig, format!("the channel secrets file {} {what}", path.display()))
}

impl Accounts {
    /// No accounts: every channel goes through the deployment's own connector.
    pub fn none() -> Self {
        Self::default()
    }

    /// `connector` for the channel `platform`/`handle` (tests and embedders).
    pub fn with(mut self, platform: Platform, handle: &str, connector: Arc<dyn Connector>) -> Self {
        self.0.push(Account { platform, handle: handle.to_owned(), connector });
        self
    }

    /// The accounts in the file at `path`, or in the files of the directory at `path` (see
    /// the module docs); none when it does not exist.
    pub fn load(path: &Path) -> Result<Self, Error> {
        if !path.is_dir() {
            return Self::none().add_file(path, Mounted::No);
        }
        let listing = |dir: &Path| -> Result<Vec<std::path::PathBuf>, Error> {
            let mut paths = std::fs::read_dir(dir)
                .map_err(|_| invalid(dir, "cannot be listed"))?
                .map(|e| e.map(|e| e.path()).map_err(|_| invalid(dir, "cannot be listed")))
                .collect::<Result<Vec<_>, _>>()?;
            paths.sort();
            Ok(paths)
        };
        let mut accounts = Self::none();
        for entry in listing(path)? {
            let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // Mounted secrets carry hidden bookkeeping entries (`..data`); they are not channels.
            if name.starts_with('.') {
                continue;
            }
            if entry.is_dir() {
                let file = entry.join(CHANNEL_FILE);
                if !file.exists() {
                    return Err(invalid(&entry, &format!("holds no {CHANNEL_FILE}")));
                }
                accounts = accounts.add_file(&file, Mounted::Yes)?;
            } else if name.ends_with(".toml") {
                accounts = accounts.add_file(&entry, Mounted::Yes)?;
            }
        }
        Ok(accounts)
    }

    /// These accounts and those of the file at `path` (none when it does not exist).
    fn add_file(mut self, path: &Path, mounted: Mounted) -> Result<Self, Error> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self),
            Err(_) => return Err(invalid(path, "cannot be read")),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path).map_err(|_| invalid(path, "cannot be read"))?.permissions().mode();
            match mounted {
                Mounted::No if mode & 0o077 != 0 => {
                    return Err(invalid(
                        path,
                        &format!("may be read by others (mode {:o}): chmod 600 it", mode & 0o777),
                    ));
                }
                Mounted::Yes if mode & 0o022 != 0 => {
                    return Err(invalid(
                        path,
                        &format!("may be written by others (mode {:o}): chmod go-w it", mode & 0o777),
                    ));
                }
                _ => {}
            }
        }
        let file: File = toml::from_str(&text).map_err(|e| {
            // The parser's message quotes the offending line, which may hold a credential.
            let at = e.span().map(|s| text[..s.start].lines().count().max(1));
            invalid(
                path,
                &match at {
                    Some(line) => format!("is not a list of [[channel]] entries (line {line})"),
                    None => "is not a list of [[channel]] entries".into(),
                },
            )
        })?;
        for (n, entry) in file.channel.into_iter().enumerate() {
            let which =
                || format!("has an invalid [[channel]] entry {} ({} {})", n + 1, entry.platform.as_str(), entry.handle);
            if self.0.iter().any(|a| a.platform == entry.platform && same_handle(&a.handle, &entry.handle)) {
                return Err(invalid(
                    path,
                    &format!("names the {} channel {} again", entry.platform.as_str(), entry.handle),
                ));
            }
            let url_ok = |u: &str| u.starts_with("https://") || u.starts_with("http://");
            let text = |v: &Option<String>| v.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
            let connector: Arc<dyn Connector> = match entry.connector {
                ConnectorKind::Bluesky => {
                    let (Some(service), Some(identifier), Some(app_password)) =
                        (text(&entry.service), text(&entry.identifier), text(&entry.app_password))
                    else {
                        return Err(invalid(path, &which()));
                    };
                    let foreign = entry.access_token.is_some() || entry.visibility.is_some();
                    if entry.platform != Platform::Bluesky || !url_ok(&service) || foreign {
                        return Err(invalid(path, &which()));
                    }
                    Arc::new(Bluesky::new(BlueskyConfig {
                        service,
                        identifier,
                        app_password: SecretString::from(app_password),
                        timeout: TIMEOUT,
                    })?)
                }
                ConnectorKind::Mastodon => {
                    let (Some(instance), Some(token)) = (text(&entry.service), text(&entry.access_token)) else {
                        return Err(invalid(path, &which()));
                    };
                    let foreign = entry.identifier.is_some() || entry.app_password.is_some();
                    if entry.platform != Platform::Mastodon || !url_ok(&instance) || foreign {
                        return Err(invalid(path, &which()));
                    }
                    Arc::new(Mastodon::new(MastodonConfig {
                        instance,
                        access_token: SecretString::from(token),
                        visibility: entry.visibility.unwrap_or_default(),
                        timeout: TIMEOUT,
                    })?)
                }
                // The sandbox needs no account, and the webhook's is the deployment's own.
                ConnectorKind::Sandbox | ConnectorKind::Webhook => return Err(invalid(path, &which())),
            };
            self.0.push(Account { platform: entry.platform, handle: entry.handle.clone(), connector });
        }
        Ok(self)
    }

    /// The connector holding `channel`'s credentials, when there is one of its kind.
    pub fn get(&self, channel: &Channel) -> Option<&Arc<dyn Connector>> {
        self.0
            .iter()
            .find(|a| {
                a.platform == channel.platform
                    && same_handle(&a.handle, &channel.handle)
                    && a.connector.kind() == channel.connector
            })
            .map(|a| &a.connector)
    }

    /// Every account: platform, handle and connector.
    pub fn iter(&self) -> impl Iterator<Item = (Platform, &str, &Arc<dyn Connector>)> {
        self.0.iter().map(|a| (a.platform, a.handle.as_str(), &a.connector))
    }
}

/// The connector `channel` publishes through in a deployment whose own connector is
/// `deployment`: that one when the channel names its kind, else the channel's account.
pub fn resolve<'a>(
    deployment: &'a Arc<dyn Connector>,
    accounts: &'a Accounts,
    channel: &Channel,
) -> Option<&'a Arc<dyn Connector>> {
    if deployment.kind() == channel.connector {
        return Some(deployment);
    }
    accounts.get(channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str, mode: u32) -> std::path::PathBuf {
        let path = dir.join(LOCAL_FILE);
        std::fs::write(&path, text).expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        }
        path
    }

    const ONE: &str = r#"
[[channel]]
platform = "bluesky"
handle = "@fieldnotes.bsky.social"
connector = "bluesky"
service = "https://bsky.social"
identifier = "fieldnotes.bsky.social"
app_password = "abcd-efgh-ijkl-mnop"
"#;

    #[test]
    fn a_private_file_gives_each_channel_its_connector() {
        let dir = harmonia_testkit::temp_dir();
        let accounts = Accounts::load(&write(dir.path(), ONE, 0o600)).expect("loads");
        let channel = |handle: &str, connector| Channel {
            platform: Platform::Bluesky,
            handle: handle.into(),
            max_posts_per_day: None,
            connector,
            max_characters: None,
        };
        assert!(accounts.get(&channel("fieldnotes.bsky.social", ConnectorKind::Bluesky)).is_some(), "@ and case aside");
        assert!(accounts.get(&channel("@other.bsky.social", ConnectorKind::Bluesky)).is_none());
        assert!(accounts.get(&channel("@fieldnotes.bsky.social", ConnectorKind::Webhook)).is_none());
        assert!(!format!("{accounts:?}").contains("abcd"), "no credential in debug output");
        assert!(Accounts::load(&dir.path().join("absent.toml")).expect("none").iter().next().is_none());
    }

    #[test]
    fn a_mastodon_channel_takes_an_instance_and_a_token() {
        let dir = harmonia_testkit::temp_dir();
        let text = "[[channel]]\nplatform = \"mastodon\"\nhandle = \"@fieldnotes@mastodon.example\"\nconnector = \"mastodon\"\nservice = \"https://mastodon.example\"\naccess_token = \"tok-123\"\nvisibility = \"unlisted\"\n";
        let accounts = Accounts::load(&write(dir.path(), text, 0o600)).expect("loads");
        let channel = Channel {
            platform: Platform::Mastodon,
            handle: "@fieldnotes@mastodon.example".into(),
            max_posts_per_day: None,
            connector: ConnectorKind::Mastodon,
            max_characters: None,
        };
        assert_eq!(accounts.get(&channel).map(|c| c.kind()), Some(ConnectorKind::Mastodon));
        for bad in [
            text.replace("access_token = \"tok-123\"\n", ""),
            text.replace("unlisted", "everyone"),
            format!("{text}app_password = \"x\"\n"),
        ] {
            let e = Accounts::load(&write(dir.path(), &bad, 0o600)).expect_err("refused");
            assert!(!e.message.contains("tok-123"), "{}", e.message);
        }
    }

    #[test]
    fn a_directory_of_mounted_secrets_reads_every_channel_once() {
        let dir = harmonia_testkit::temp_dir();
        let mount = |name: &str, text: &str| {
            let sub = dir.path().join(name);
            std::fs::create_dir_all(&sub).expect("mkdir");
            std::fs::rename(write(dir.path(), text, 0o444), sub.join(CHANNEL_FILE)).expect("move");
        };
        mount("fieldnotes-bluesky", ONE);
        mount(
            "fieldnotes-mastodon",
            "[[channel]]\nplatform = \"mastodon\"\nhandle = \"@fieldnotes@mastodon.example\"\nconnector = \"mastodon\"\nservice = \"https://mastodon.example\"\naccess_token = \"tok-123\"\n",
        );
        std::fs::create_dir_all(dir.path().join("..data")).expect("bookkeeping");
        let accounts = Accounts::load(dir.path()).expect("loads");
        let held: Vec<_> = accounts.iter().map(|(p, h, c)| (p, h.to_owned(), c.kind())).collect();
        assert_eq!(
            held,
            [
                (Platform::Bluesky, "@fieldnotes.bsky.social".to_owned(), ConnectorKind::Bluesky),
                (Platform::Mastodon, "@fieldnotes@mastodon.example".to_owned(), ConnectorKind::Mastodon),
            ]
        );
        // Readable by all as Cloud Run mounts them, but never writable by others.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = dir.path().join("fieldnotes-mastodon").join(CHANNEL_FILE);
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).expect("chmod");
            let e = Accounts::load(dir.path()).expect_err("group-writable");
            assert!(e.message.contains("written by others"), "{}", e.message);
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        }
        // The same channel in two secrets is refused, naming the second.
        mount("fieldnotes-bluesky-2", ONE);
        let e = Accounts::load(dir.path()).expect_err("twice");
        assert!(e.message.contains("fieldnotes-bluesky-2") && e.message.contains("again"), "{}", e.message);
        // A mount without its file is named.
        std::fs::remove_dir_all(dir.path().join("fieldnotes-bluesky-2")).expect("rm");
        std::fs::create_dir_all(dir.path().join("empty")).expect("mkdir");
        let e = Accounts::load(dir.path()).expect_err("no file");
        assert!(e.message.contains("empty") && e.message.contains(CHANNEL_FILE), "{}", e.message);
    }

    #[test]
    fn a_readable_or_malformed_file_is_refused_naming_it_and_never_its_secrets() {
        let dir = harmonia_testkit::temp_dir();
        let e = Accounts::load(&write(dir.path(), ONE, 0o644)).expect_err("readable by others");
        assert_eq!(e.code, Code::InvalidConfig);
        assert!(e.message.contains("channels.toml") && e.message.contains("chmod 600"), "{}", e.message);
        for bad in [
            ONE.replace("https://bsky.social", "bsky.social"),
            ONE.replace("platform = \"bluesky\"", "platform = \"x\""),
            format!("{ONE}{ONE}"),
            ONE.replace("app_password", "password"),
            "[[channel]]\nplatform = \"bluesky\"\napp_password = \"abcd-efgh-ijkl-mnop\" oops".into(),
        ] {
            let e = Accounts::load(&write(dir.path(), &bad, 0o600)).expect_err("refused");
            assert_eq!(e.code, Code::InvalidConfig, "{bad}");
            assert!(!e.message.contains("abcd-efgh"), "{}", e.message);
        }
    }
}
