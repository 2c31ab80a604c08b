//! `harmonia channels check`: for each channel of the workspace's current configuration, the
//! connector it publishes through here, and whether that connector's credentials are accepted
//! and its platform answers. Nothing is posted.

use clap::Subcommand;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Error};
use serde_json::json;

use harmonia_pipeline::connector::Checked;

use crate::app::{Backend, Output};

/// What `harmonia channels` does.
#[derive(Debug, Subcommand)]
pub(crate) enum ChannelsCommand {
    /// Check every channel's credentials and reachability, posting nothing. Exits 1 with the
    /// first failure's code (`connector_auth` for refused credentials, `connector_failed` for
    /// a platform that does not answer, `invalid_config` for a channel without credentials).
    Check,
}

/// Run `command` in `workspace`.
pub(crate) async fn run(
    backend: &Backend,
    out: &Output,
    workspace: &WorkspaceId,
    command: ChannelsCommand,
) -> Result<(), Error> {
    let ChannelsCommand::Check = command;
    let env = backend.env();
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
                Ok(Checked::Accepted) => (None, "credentials accepted; the platform answers".to_owned()),
                Ok(Checked::NothingToCheck(why)) => (None, why.to_owned()),
                Err(Code::ConnectorAuth) => {
                    (Some(Code::ConnectorAuth), "the platform refused the credentials".to_owned())
                }
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
