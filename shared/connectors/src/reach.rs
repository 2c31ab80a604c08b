//! Where a deployment's posts go, without any credential: the connector the deployment
//! publishes through and the channels it holds accounts for.
//!
//! Policy judges a draft against the reach (a channel no connector here can reach is refused
//! before anyone approves it), so the functions that judge but never send (policy, and the
//! operator's edits) need it too. In the cloud they are told it by `HARMONIA_PUBLISHING`, a
//! JSON declaration Terraform writes from the same variables that configure the publishing
//! functions' credentials:
//!
//! ```json
//! {"connector":"webhook","accounts":[{"platform":"bluesky","handle":"@fieldnotes.bsky.social","connector":"bluesky"}]}
//! ```
//!
//! A function that holds the credentials derives its reach from them, and refuses to start
//! when a declaration says otherwise (so policy never passes a post its publisher cannot send).

use harmonia_contracts::domain::{Channel, ConnectorKind, Platform};
use serde::{Deserialize, Serialize};

use super::Connector;
use super::accounts::{Accounts, same_handle};

/// One channel account, as declared: which channel, through which connector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredAccount {
    /// The channel's platform.
    pub platform: Platform,
    /// The channel's handle.
    pub handle: String,
    /// The connector holding its credentials.
    pub connector: ConnectorKind,
}

/// A deployment's reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reach {
    /// The deployment's own connector.
    pub connector: ConnectorKind,
    /// The channels with accounts of their own.
    #[serde(default)]
    pub accounts: Vec<DeclaredAccount>,
}

impl Reach {
    /// The reach of a function holding `connector` and `accounts`.
    pub fn of(connector: &dyn Connector, accounts: &Accounts) -> Self {
        Self {
            connector: connector.kind(),
            accounts: accounts
                .iter()
                .map(|(platform, handle, c)| DeclaredAccount {
                    platform,
                    handle: handle.to_owned(),
                    connector: c.kind(),
                })
                .collect(),
        }
    }

    /// A declaration as written (`HARMONIA_PUBLISHING`); the error is a sentence naming
    /// what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let reach: Self = serde_json::from_str(text).map_err(|_| {
            "is not a JSON object {\"connector\": …, \"accounts\": [{platform, handle, connector}]}".to_owned()
        })?;
        for (n, a) in reach.accounts.iter().enumerate() {
            let handle = a.handle.trim();
            if handle.is_empty() || handle.len() > 200 || handle.chars().any(char::is_whitespace) {
                return Err(format!("has account {} with an empty, long or spaced handle", n + 1));
            }
            if a.connector.account_platform() != Some(a.platform) {
                return Err(format!(
                    "has account {} on {} through {}: accounts are Bluesky, Mastodon, LinkedIn or X channels through their own connector",
                    n + 1,
                    a.platform.as_str(),
                    a.connector.as_str()
                ));
            }
            if reach.accounts[..n].iter().any(|b| b.platform == a.platform && same_handle(&b.handle, &a.handle)) {
                return Err(format!("names the {} channel {} twice", a.platform.as_str(), a.handle));
            }
        }
        Ok(reach)
    }

    /// Whether this deployment holds an account for `channel` through the connector the
    /// channel names.
    pub fn holds_account(&self, channel: &Channel) -> bool {
        self.accounts.iter().any(|a| {
            a.platform == channel.platform
                && same_handle(&a.handle, &channel.handle)
                && a.connector == channel.connector
        })
    }

    /// The differences from `other`, as sentences (empty when the two reach the same
    /// channels the same way; order and handle spelling aside).
    pub fn differences(&self, other: &Self) -> Vec<String> {
        let mut out = Vec::new();
        if self.connector != other.connector {
            out.push(format!("publishes through {}, not {}", self.connector.as_str(), other.connector.as_str()));
        }
        let missing = |from: &Self, to: &Self| {
            from.accounts
                .iter()
                .filter(|a| {
                    !to.accounts.iter().any(|b| {
                        a.platform == b.platform && same_handle(&a.handle, &b.handle) && a.connector == b.connector
                    })
                })
                .map(|a| format!("{} {}", a.platform.as_str(), a.handle))
                .collect::<Vec<_>>()
        };
        for a in missing(self, other) {
            out.push(format!("holds an account for {a} that the declaration does not name"));
        }
        for a in missing(other, self) {
            out.push(format!("holds no account for {a}, which the declaration names"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(platform: Platform, handle: &str, connector: ConnectorKind) -> Channel {
        Channel { platform, handle: handle.into(), max_posts_per_day: None, connector, max_characters: None }
    }

    #[test]
    fn a_declaration_names_accounts_and_judges_channels_like_the_credentials_would() {
        let reach = Reach::parse(
            r#"{"connector":"webhook","accounts":[{"platform":"bluesky","handle":"@fieldnotes.bsky.social","connector":"bluesky"}]}"#,
        )
        .expect("parses");
        assert_eq!(reach.connector, ConnectorKind::Webhook);
        assert!(reach.holds_account(&channel(Platform::Bluesky, "FieldNotes.bsky.social", ConnectorKind::Bluesky)));
        assert!(!reach.holds_account(&channel(Platform::Bluesky, "@other.bsky.social", ConnectorKind::Bluesky)));
        assert!(!reach.holds_account(&channel(Platform::Mastodon, "@fieldnotes.bsky.social", ConnectorKind::Mastodon)));
        let alone = Reach::parse(r#"{"connector":"sandbox"}"#).expect("accounts are optional");
        assert!(alone.accounts.is_empty());
    }

    #[test]
    fn a_bad_declaration_is_refused_with_a_sentence() {
        for (bad, says) in [
            ("webhook", "JSON object"),
            (r#"{"connector":"fax"}"#, "JSON object"),
            (r#"{"connector":"sandbox","extra":1}"#, "JSON object"),
            (
                r#"{"connector":"sandbox","accounts":[{"platform":"bluesky","handle":" ","connector":"bluesky"}]}"#,
                "handle",
            ),
            (
                r#"{"connector":"sandbox","accounts":[{"platform":"x","handle":"@a","connector":"webhook"}]}"#,
                "through webhook",
            ),
            (
                r#"{"connector":"sandbox","accounts":[{"platform":"bluesky","handle":"@a.b","connector":"bluesky"},{"platform":"bluesky","handle":"A.B","connector":"bluesky"}]}"#,
                "twice",
            ),
        ] {
            let e = Reach::parse(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn differences_name_the_connector_and_each_account_either_side() {
        let declared = Reach::parse(
            r#"{"connector":"webhook","accounts":[{"platform":"bluesky","handle":"@a.bsky.social","connector":"bluesky"}]}"#,
        )
        .expect("parses");
        assert!(declared.differences(&declared.clone()).is_empty());
        let mut held = declared.clone();
        held.accounts[0].handle = "A.bsky.social".into();
        assert!(held.differences(&declared).is_empty(), "handle spelling aside");
        held.connector = ConnectorKind::Sandbox;
        held.accounts = vec![DeclaredAccount {
            platform: Platform::Mastodon,
            handle: "@a@social.example".into(),
            connector: ConnectorKind::Mastodon,
        }];
        let d = held.differences(&declared);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].contains("sandbox, not webhook"));
        assert!(d[1].contains("mastodon @a@social.example") && d[1].contains("does not name"));
        assert!(d[2].contains("bluesky @a.bsky.social") && d[2].contains("declaration names"));
    }
}
