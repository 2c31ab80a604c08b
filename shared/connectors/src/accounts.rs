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
//!
//! [[channel]]
//! platform = "linkedin"
//! handle = "field-notes"
//! connector = "linkedin"
//! author = "urn:li:organization:5515715"   # or urn:li:person:… for a member
//! access_token = "…"                       # scopes w_organization_social r_organization_social
//! refresh_token = "…"                      # optional, with the client to refresh it
//! client_id = "…"
//! client_secret = "…"
//! # api_version = "202605"                 # the LinkedIn-Version header (default shown)
//!
//! [[channel]]
//! platform = "x"
//! handle = "@fieldnotes"
//! connector = "x"
//! access_token = "…"                       # OAuth 2.0 user context: tweet.read tweet.write users.read offline.access
//! refresh_token = "…"
//! client_id = "…"
//! client_secret = "…"                      # a confidential client's; leave out for a public client
//! ```
//!
//! LinkedIn and X tokens are OAuth 2.0 access tokens, refreshed with the refresh token when they
//! expire; the refreshed pair is kept sealed in the store ([`crate::oauth`]), since X spends a
//! refresh token at each refresh. `service` (and `token_url`) may name another API base (and
//! token endpoint) than the platform's own, as tests do. Reading a LinkedIn member's own posts
//! back takes the `r_member_social` permission; an organization's takes
//! `r_organization_social`.
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
use harmonia_store::Store;
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
    #[serde(default)]
    author: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_url: Option<String>,
    #[serde(default)]
    api_version: Option<String>,
}

/// A value as given: trimmed, and `None` when empty.
fn given(value: &Option<String>) -> Option<String> {
    value.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned)
}

fn is_url(u: &str) -> bool {
    u.starts_with("https://") || u.starts_with("http://")
}

/// Why an entry is refused, as a clause ("lacks access_token").
type Why = String;

impl Entry {
    /// The value of the field `name` (`value`), which the entry must give.
    fn need(name: &str, value: &Option<String>) -> Result<String, Why> {
        given(value).ok_or_else(|| format!("lacks {name}"))
    }

    /// `url` (the field `name`), when it is an http(s) URL.
    fn url(name: &str, url: String) -> Result<String, Why> {
        if is_url(&url) { Ok(url) } else { Err(format!("gives a {name} that is not an http(s) URL")) }
    }

    /// Whether the entry gives only fields its connector reads; else the first it does not.
    fn only(&self, allowed: &[&str]) -> Result<(), Why> {
        let present = [
            ("service", self.service.is_some()),
            ("identifier", self.identifier.is_some()),
            ("app_password", self.app_password.is_some()),
            ("access_token", self.access_token.is_some()),
            ("visibility", self.visibility.is_some()),
            ("author", self.author.is_some()),
            ("refresh_token", self.refresh_token.is_some()),
            ("client_id", self.client_id.is_some()),
            ("client_secret", self.client_secret.is_some()),
            ("token_url", self.token_url.is_some()),
            ("api_version", self.api_version.is_some()),
        ];
        match present.iter().find(|(name, there)| *there && !allowed.contains(name)) {
            Some((name, _)) => {
                Err(format!("gives {name}, which the {} connector does not read", self.connector.as_str()))
            }
            None => Ok(()),
        }
    }

    /// The OAuth 2.0 credentials of a LinkedIn or X entry: an access token, and a refresh
    /// token only with the client id to refresh it.
    fn oauth(&self, token_url: &str, client_auth: super::oauth::ClientAuth) -> Result<super::oauth::Credentials, Why> {
        let refresh_token = given(&self.refresh_token);
        let client_id = given(&self.client_id);
        if refresh_token.is_some() && client_id.is_none() {
            return Err("gives a refresh_token without the client_id to refresh it with".into());
        }
        let token_url = Self::url("token_url", given(&self.token_url).unwrap_or_else(|| token_url.to_owned()))?;
        Ok(super::oauth::Credentials {
            token_url,
            client_id,
            client_secret: given(&self.client_secret).map(SecretString::from),
            access_token: SecretString::from(Self::need("access_token", &self.access_token)?),
            refresh_token: refresh_token.map(SecretString::from),
            client_auth,
        })
    }

    /// The connector this entry describes; `Ok(Err(why))` when a field it needs is missing or
    /// out of shape, or it gives one its connector does not read.
    fn connector(&self, store: Option<&Arc<dyn Store>>) -> Result<Result<Arc<dyn Connector>, Why>, Error> {
        let label = format!("{} {}", self.platform.as_str(), self.handle);
        if self.connector.account_platform().is_some_and(|p| p != self.platform) {
            return Ok(Err(format!(
                "names the {} connector, which does not post to {}",
                self.connector.as_str(),
                self.platform.as_str()
            )));
        }
        // An OAuth 2.0 session over `credentials`, keeping refreshed tokens in `store`.
        let session = |credentials| -> Result<_, Error> {
            let http = super::oauth::client(TIMEOUT)?;
            Ok((super::oauth::Session::new(credentials, http.clone(), store.cloned(), &label), http))
        };
        let built: Result<Result<Arc<dyn Connector>, Error>, Why> = match self.connector {
            ConnectorKind::Bluesky => self.bluesky().map(|c| Bluesky::new(c).map(|b| Arc::new(b) as _)),
            ConnectorKind::Mastodon => self.mastodon().map(|c| Mastodon::new(c).map(|m| Arc::new(m) as _)),
            ConnectorKind::Linkedin => self.linkedin().map(|(config, credentials)| {
                let (session, http) = session(credentials)?;
                Ok(Arc::new(super::linkedin::Linkedin::new(config, session, http)) as _)
            }),
            ConnectorKind::X => self.x().map(|(config, credentials)| {
                let (session, http) = session(credentials)?;
                Ok(Arc::new(super::x::X::new(config, session, http)) as _)
            }),
            // The sandbox needs no account, and the webhook's is the deployment's own.
            ConnectorKind::Sandbox | ConnectorKind::Webhook => {
                Err(format!("names the {} connector, which takes no account of its own", self.connector.as_str()))
            }
        };
        // The entry's refusal, or the connector, unless building its client failed.
        match built {
            Ok(connector) => connector.map(Ok),
            Err(why) => Ok(Err(why)),
        }
    }

    fn bluesky(&self) -> Result<BlueskyConfig, Why> {
        self.only(&["service", "identifier", "app_password"])?;
        Ok(BlueskyConfig {
            service: Self::url("service", Self::need("service", &self.service)?)?,
            identifier: Self::need("identifier", &self.identifier)?,
            app_password: SecretString::from(Self::need("app_password", &self.app_password)?),
            timeout: TIMEOUT,
        })
    }

    fn mastodon(&self) -> Result<MastodonConfig, Why> {
        self.only(&["service", "access_token", "visibility"])?;
        Ok(MastodonConfig {
            instance: Self::url("service", Self::need("service", &self.service)?)?,
            access_token: SecretString::from(Self::need("access_token", &self.access_token)?),
            visibility: self.visibility.unwrap_or_default(),
            timeout: TIMEOUT,
        })
    }

    fn linkedin(&self) -> Result<(super::linkedin::LinkedinConfig, super::oauth::Credentials), Why> {
        let oauth = ["access_token", "refresh_token", "client_id", "client_secret", "token_url"];
        self.only(&[&oauth[..], &["service", "author", "api_version"]].concat())?;
        let author = Self::need("author", &self.author)?;
        let urn = author.starts_with("urn:li:person:") || author.starts_with("urn:li:organization:");
        if !urn || author.chars().any(char::is_whitespace) {
            return Err("gives an author that is not urn:li:person:… or urn:li:organization:…".into());
        }
        let version = given(&self.api_version).unwrap_or_else(|| super::linkedin::DEFAULT_VERSION.to_owned());
        if version.len() != 6 || !version.bytes().all(|b| b.is_ascii_digit()) {
            return Err("gives an api_version that is not YYYYMM".into());
        }
        let api = Self::url("service", given(&self.service).unwrap_or_else(|| "https://api.linkedin.com".into()))?;
        let credentials =
            self.oauth("https://www.linkedin.com/oauth/v2/accessToken", super::oauth::ClientAuth::Form)?;
        Ok((super::linkedin::LinkedinConfig { api, author, version, timeout: TIMEOUT }, credentials))
    }

    fn x(&self) -> Result<(super::x::XConfig, super::oauth::Credentials), Why> {
        self.only(&["service", "access_token", "refresh_token", "client_id", "client_secret", "token_url"])?;
        let api = Self::url("service", given(&self.service).unwrap_or_else(|| "https://api.x.com".into()))?;
        let credentials = self.oauth("https://api.x.com/2/oauth2/token", super::oauth::ClientAuth::Basic)?;
        Ok((super::x::XConfig { api, timeout: TIMEOUT }, credentials))
    }
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
    /// the module docs); none when it does not exist. Refreshed OAuth tokens are kept in
    /// `store` ([`crate::oauth`]); without one they live as long as the process.
    pub fn load(path: &Path, store: Option<&Arc<dyn Store>>) -> Result<Self, Error> {
        if !path.is_dir() {
            return Self::none().add_file(path, Mounted::No, store);
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
                accounts = accounts.add_file(&file, Mounted::Yes, store)?;
            } else if name.ends_with(".toml") {
                accounts = accounts.add_file(&entry, Mounted::Yes, store)?;
            }
        }
        Ok(accounts)
    }

    /// These accounts and those of the file at `path` (none when it does not exist).
    fn add_file(mut self, path: &Path, mounted: Mounted, store: Option<&Arc<dyn Store>>) -> Result<Self, Error> {
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
            let connector = entry.connector(store)?.map_err(|why| invalid(path, &format!("{}: it {why}", which())))?;
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

    impl Accounts {
        fn load_file(path: &Path) -> Result<Self, Error> {
            Self::load(path, None)
        }
    }

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
        let accounts = Accounts::load_file(&write(dir.path(), ONE, 0o600)).expect("loads");
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
        assert!(Accounts::load(&dir.path().join("absent.toml"), None).expect("none").iter().next().is_none());
    }

    #[test]
    fn a_mastodon_channel_takes_an_instance_and_a_token() {
        let dir = harmonia_testkit::temp_dir();
        let text = "[[channel]]\nplatform = \"mastodon\"\nhandle = \"@fieldnotes@mastodon.example\"\nconnector = \"mastodon\"\nservice = \"https://mastodon.example\"\naccess_token = \"tok-123\"\nvisibility = \"unlisted\"\n";
        let accounts = Accounts::load_file(&write(dir.path(), text, 0o600)).expect("loads");
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
            let e = Accounts::load_file(&write(dir.path(), &bad, 0o600)).expect_err("refused");
            assert!(!e.message.contains("tok-123"), "{}", e.message);
        }
    }

    #[test]
    fn linkedin_and_x_channels_take_oauth_tokens_and_a_refused_entry_says_why() {
        let dir = harmonia_testkit::temp_dir();
        let linkedin = "[[channel]]\nplatform = \"linkedin\"\nhandle = \"field-notes\"\nconnector = \"linkedin\"\nauthor = \"urn:li:organization:5515715\"\naccess_token = \"li-token\"\nrefresh_token = \"li-refresh\"\nclient_id = \"c\"\nclient_secret = \"s\"\n";
        let x =
            "[[channel]]\nplatform = \"x\"\nhandle = \"@fieldnotes\"\nconnector = \"x\"\naccess_token = \"x-token\"\n";
        let accounts = Accounts::load_file(&write(dir.path(), &format!("{linkedin}{x}"), 0o600)).expect("loads");
        let held: Vec<_> = accounts.iter().map(|(p, _, c)| (p, c.kind())).collect();
        assert_eq!(held, [(Platform::Linkedin, ConnectorKind::Linkedin), (Platform::X, ConnectorKind::X)]);
        for (bad, why) in [
            (linkedin.replace("client_id = \"c\"\n", ""), "gives a refresh_token without the client_id"),
            (linkedin.replace("urn:li:organization:5515715", "5515715"), "gives an author that is not urn:li:person"),
            (linkedin.replace("author = \"urn:li:organization:5515715\"\n", ""), "lacks author"),
            (format!("{linkedin}api_version = \"2026-05\"\n"), "gives an api_version that is not YYYYMM"),
            (format!("{linkedin}service = \"api.linkedin.com\"\n"), "gives a service that is not an http(s) URL"),
            (format!("{x}app_password = \"p\"\n"), "gives app_password, which the x connector does not read"),
            (x.replace("access_token = \"x-token\"\n", ""), "lacks access_token"),
            (
                x.replace("platform = \"x\"", "platform = \"linkedin\""),
                "names the x connector, which does not post to linkedin",
            ),
            (
                x.replace("connector = \"x\"", "connector = \"sandbox\""),
                "names the sandbox connector, which takes no account of its own",
            ),
        ] {
            let e = Accounts::load_file(&write(dir.path(), &bad, 0o600)).expect_err("refused");
            assert_eq!(e.code, Code::InvalidConfig);
            assert!(e.message.contains("entry 1") && e.message.contains(why), "{why}: {}", e.message);
            assert!(!["li-token", "li-refresh", "x-token"].iter().any(|t| e.message.contains(t)), "{}", e.message);
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
        let accounts = Accounts::load(dir.path(), None).expect("loads");
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
            let e = Accounts::load(dir.path(), None).expect_err("group-writable");
            assert!(e.message.contains("written by others"), "{}", e.message);
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        }
        // The same channel in two secrets is refused, naming the second.
        mount("fieldnotes-bluesky-2", ONE);
        let e = Accounts::load(dir.path(), None).expect_err("twice");
        assert!(e.message.contains("fieldnotes-bluesky-2") && e.message.contains("again"), "{}", e.message);
        // A mount without its file is named.
        std::fs::remove_dir_all(dir.path().join("fieldnotes-bluesky-2")).expect("rm");
        std::fs::create_dir_all(dir.path().join("empty")).expect("mkdir");
        let e = Accounts::load(dir.path(), None).expect_err("no file");
        assert!(e.message.contains("empty") && e.message.contains(CHANNEL_FILE), "{}", e.message);
    }

    #[test]
    fn a_readable_or_malformed_file_is_refused_naming_it_and_never_its_secrets() {
        let dir = harmonia_testkit::temp_dir();
        let e = Accounts::load_file(&write(dir.path(), ONE, 0o644)).expect_err("readable by others");
        assert_eq!(e.code, Code::InvalidConfig);
        assert!(e.message.contains("channels.toml") && e.message.contains("chmod 600"), "{}", e.message);
        for bad in [
            ONE.replace("https://bsky.social", "bsky.social"),
            ONE.replace("platform = \"bluesky\"", "platform = \"x\""),
            format!("{ONE}{ONE}"),
            ONE.replace("app_password", "password"),
            "[[channel]]\nplatform = \"bluesky\"\napp_password = \"abcd-efgh-ijkl-mnop\" oops".into(),
        ] {
            let e = Accounts::load_file(&write(dir.path(), &bad, 0o600)).expect_err("refused");
            assert_eq!(e.code, Code::InvalidConfig, "{bad}");
            assert!(!e.message.contains("abcd-efgh"), "{}", e.message);
        }
    }
}
