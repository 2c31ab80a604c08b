//! `harmonia channels check`: for each channel of the workspace's current configuration, the
//! connector it publishes through here, and whether that connector's credentials are accepted
//! and its platform answers. Nothing is posted.

use clap::Subcommand;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Error};
use serde_json::json;

use harmonia_connectors::Checked;
use harmonia_contracts::domain::{Channel, Platform};
use harmonia_policy::MASTODON_CHARACTERS;

use crate::app::{Backend, Output};

/// What `harmonia channels` does.
#[derive(Debug, Subcommand)]
pub(crate) enum ChannelsCommand {
    /// Check every channel's credentials and reachability, posting nothing. Exits 1 with the
    /// first failure's code (`connector_auth` for refused credentials, `connector_failed` for
    /// a platform that does not answer, `invalid_config` for a channel without credentials, a
    /// Mastodon channel counting more characters than its instance allows, or a LinkedIn
    /// channel asking for an API version LinkedIn no longer serves).
    Check,
}

/// What a check that was accepted says, given the status limit the platform stated: a
/// Mastodon channel counting more characters than its instance allows would pass posts the
/// instance refuses, so that is a failure (`invalid_config`); counting fewer is said.
fn limit_agrees(channel: &Channel, stated: Option<u32>) -> (Option<Code>, String) {
    let accepted = "credentials accepted; the platform answers";
    if channel.platform != Platform::Mastodon {
        return (None, accepted.to_owned());
    }
    let counted = channel.max_characters.map_or(MASTODON_CHARACTERS, |m| m as usize);
    match stated.map(|m| m as usize) {
        None => (
            None,
            format!(
                "{accepted}; the instance does not state its status limit, so posts are held to {counted} characters"
            ),
        ),
        Some(allowed) if allowed < counted => (
            Some(Code::InvalidConfig),
            format!(
                "credentials accepted, but the instance allows {allowed} characters a status and the workspace counts {counted}: set max_characters = {allowed} on this channel"
            ),
        ),
        Some(allowed) if allowed > counted => (
            None,
            format!(
                "{accepted}; the instance allows {allowed} characters a status, the workspace holds posts to {counted} (set max_characters = {allowed} on this channel to use them)"
            ),
        ),
        Some(allowed) => (None, format!("{accepted}; {allowed} characters a status")),
    }
}

/// Run `command` in `workspace`.
pub(crate) async fn run(
    backend: &Backend,
    out: &Output,
    workspace: &WorkspaceId,
    command: ChannelsCommand,
) -> Result<(), Error> {
    let ChannelsCommand::Check = command;
    // The channel secrets are on the machine that publishes: here, or the deployment's.
    let env = &backend.local()?.env;
    let version = harmonia_pipeline::workspace::current(&*env.store, workspace).await?;
    let mut rows = Vec::new();
    let mut first_failure: Option<(Code, String)> = None;
    for channel in &version.config.channels {
        let (code, said) = match env.connector_for(channel) {
            None => (
                Some(Code::InvalidConfig),
                format!(
                    "no {} credentials for this channel: add its [[channel]] entry to the channel secrets file (channels.toml in the data dir)",
                    channel.connector.as_str()
                ),
            ),
            Some(connector) => match connector.check().await {
                Ok(Checked::Accepted { max_characters }) => limit_agrees(channel, max_characters),
                Ok(Checked::NothingToCheck(why)) => (None, why.to_owned()),
                Err(Code::ConnectorAuth) => {
                    (Some(Code::ConnectorAuth), "the platform refused the credentials".to_owned())
                }
                Err(Code::InvalidConfig) => (
                    Some(Code::InvalidConfig),
                    "the platform no longer serves the API version this channel asks for: set a newer api_version in its [[channel]] entry".to_owned(),
                ),
                Err(code) => (Some(code), "the platform could not be reached".to_owned()),
            },
        };
        out.say(&format!(
            "{:<10} {:<32} via {:<8} {}{}",
            channel.platform.as_str(),
            channel.handle,
            channel.connector.as_str(),
            if code.is_some() { "FAILED: " } else { "ok: " },
            said
        ));
        if let (Some(code), None) = (code, &first_failure) {
            first_failure =
                Some((code, format!("the {} channel {}: {said}", channel.platform.as_str(), channel.handle)));
        }
        rows.push(json!({
            "platform": channel.platform.as_str(),
            "handle": channel.handle,
            "connector": channel.connector.as_str(),
            "ok": code.is_none(),
            "code": code,
            "message": said,
        }));
    }
    out.value(&json!({ "channels": rows }));
    match first_failure {
        None => Ok(()),
        Some((code, message)) => Err(Error::new(code, format!("{message}. Nothing was posted."))),
    }
}

#[cfg(test)]
mod tests {
    use harmonia_contracts::Code;
    use harmonia_contracts::domain::{Channel, ConnectorKind, Platform};

    use super::limit_agrees;

    fn channel(platform: Platform, max_characters: Option<u32>) -> Channel {
        Channel {
            platform,
            handle: "@fieldnotes@social.example".into(),
            max_posts_per_day: None,
            connector: ConnectorKind::Mastodon,
            max_characters,
        }
    }

    #[test]
    fn a_channel_counting_more_than_its_instance_allows_fails_and_one_counting_less_is_told() {
        let (code, said) = limit_agrees(&channel(Platform::Mastodon, None), Some(400));
        assert_eq!(code, Some(Code::InvalidConfig));
        assert!(
            said.contains("allows 400") && said.contains("counts 500") && said.contains("max_characters = 400"),
            "{said}"
        );
        let (code, said) = limit_agrees(&channel(Platform::Mastodon, Some(400)), Some(400));
        assert_eq!((code, said.contains("400 characters a status")), (None, true), "{said}");
        let (code, said) = limit_agrees(&channel(Platform::Mastodon, None), Some(5000));
        assert_eq!(code, None);
        assert!(said.contains("allows 5000") && said.contains("max_characters = 5000"), "{said}");
        let (code, said) = limit_agrees(&channel(Platform::Mastodon, Some(1000)), None);
        assert_eq!(code, None);
        assert!(said.contains("does not state") && said.contains("1000 characters"), "{said}");
        let (code, said) = limit_agrees(&channel(Platform::Bluesky, None), None);
        assert_eq!((code, said.as_str()), (None, "credentials accepted; the platform answers"));
    }
}
