//! Reading a workspace configuration file: TOML text → JSON value → the checked-in JSON Schema
//! (`schemas/workspace-config.schema.json`) → [`WorkspaceConfig`] → the rules a schema cannot
//! state (a window ends after it starts, a channel is listed once, …).
//!
//! Every failure is `invalid_workspace_config` with a message naming where the problem is, in
//! the file's own terms (`channels[1].platform`, `posting_windows[0].end`, or a line and column
//! for a TOML syntax error). The message never repeats the file's text: only key names that
//! form the path, and limits or allowed values taken from the schema.

use std::collections::HashSet;
use std::sync::LazyLock;

use serde_json::Value;

use super::{Platform, TimeZoneName, WorkspaceConfig};
use crate::error::{Code, Error};
use crate::schema::{SchemaValidator, Violation};

/// The checked-in schema; a test keeps it equal to the one derived from the type.
const SCHEMA: &str = include_str!("../../../../schemas/workspace-config.schema.json");

/// The schema compiled once: it is a constant of the build, so failing to compile is a defect.
static VALIDATOR: LazyLock<Result<SchemaValidator<WorkspaceConfig>, Error>> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(SCHEMA)
        .map_err(|e| Error::new(Code::Internal, "the workspace configuration schema is not JSON").with_cause(e))?;
    SchemaValidator::from_schema(&schema)
});

fn invalid(path: &str, problem: &str) -> Error {
    if path.is_empty() {
        Error::new(Code::InvalidWorkspaceConfig, format!("The workspace configuration {problem}."))
    } else {
        Error::new(
            Code::InvalidWorkspaceConfig,
            format!("The workspace configuration is invalid at `{path}`: it {problem}."),
        )
    }
}

impl WorkspaceConfig {
    /// The configuration as a file an operator can edit and send back: TOML that
    /// [`WorkspaceConfig::from_toml`] reads as this very configuration (comments and key order
    /// of the original file are not kept; the store holds the values).
    pub fn to_toml(&self) -> Result<String, Error> {
        toml::to_string(self).map_err(|e| {
            Error::new(Code::Internal, "the workspace configuration could not be written as TOML").with_cause(e)
        })
    }

    /// Parse a configuration file's TOML text.
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        let value: Value = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |span| line_and_column(text, span.start));
            Error::new(
                Code::InvalidWorkspaceConfig,
                format!("The workspace configuration is not valid TOML at line {line}, column {column}."),
            )
        })?;
        Self::from_value(&value)
    }

    /// Check a configuration given as a JSON value (the API's JSON body, or parsed TOML).
    pub fn from_value(value: &Value) -> Result<Self, Error> {
        let validator = VALIDATOR.as_ref().map_err(Clone::clone)?;
        let config = validator.parse(value).map_err(|v| violation(value, &v))?;
        config.check()?;
        Ok(config)
    }

    /// The rules the schema cannot state.
    fn check(&self) -> Result<(), Error> {
        let blank = [
            ("name", &self.name),
            ("audience", &self.audience),
            ("voice", &self.voice),
            ("call_to_action", &self.call_to_action),
        ];
        for (field, text) in blank {
            if text.trim().is_empty() {
                return Err(invalid(field, "must not be blank"));
            }
        }
        for (n, goal) in self.goals.iter().enumerate() {
            if goal.trim().is_empty() {
                return Err(invalid(&format!("goals[{n}]"), "must not be blank"));
            }
        }
        for (n, phrase) in self.banned_phrases.iter().enumerate() {
            if phrase.trim().is_empty() {
                return Err(invalid(&format!("banned_phrases[{n}]"), "must not be blank"));
            }
        }
        let mut channels = HashSet::new();
        for (n, channel) in self.channels.iter().enumerate() {
            if channel.handle.trim().is_empty() {
                return Err(invalid(&format!("channels[{n}].handle"), "must not be blank"));
            }
            if !channels.insert((channel.platform, channel.handle.trim().to_lowercase())) {
                return Err(invalid(
                    &format!("channels[{n}]"),
                    "repeats a channel listed before it (same platform and handle)",
                ));
            }
            if channel.max_characters.is_some() && channel.platform != Platform::Mastodon {
                return Err(invalid(
                    &format!("channels[{n}].max_characters"),
                    "is for Mastodon channels only: other platforms' limits are fixed",
                ));
            }
            if channel.max_posts_per_day.is_some_and(|m| m > self.cadence.max_posts_per_day) {
                return Err(invalid(
                    &format!("channels[{n}].max_posts_per_day"),
                    "must not exceed cadence.max_posts_per_day",
                ));
            }
        }
        for (n, window) in self.posting_windows.iter().enumerate() {
            if window.end <= window.start {
                return Err(invalid(&format!("posting_windows[{n}].end"), "must be after the window's start"));
            }
            let mut days = HashSet::new();
            if !window.days.iter().all(|d| days.insert(*d)) {
                return Err(invalid(&format!("posting_windows[{n}].days"), "must not repeat a day"));
            }
        }
        let snapshots = &self.engagement.snapshots;
        if snapshots.windows(2).any(|w| w[1].minutes() <= w[0].minutes()) {
            return Err(invalid("engagement.snapshots", "must list each time once, earliest first"));
        }
        if self.cadence.max_posts_per_day > self.cadence.posts_per_week {
            return Err(invalid("cadence.max_posts_per_day", "must not exceed cadence.posts_per_week"));
        }
        Ok(())
    }
}

/// The error for a schema violation (or a value the schema's shape allows but the type refuses:
/// only a time zone name outside the IANA list can be that).
fn violation(value: &Value, v: &Violation) -> Error {
    if v.problem.is_empty() {
        let zone = value.get("timezone").and_then(Value::as_str);
        if zone.is_some_and(|z| z.parse::<TimeZoneName>().is_err()) {
            return invalid("timezone", "must be an IANA time zone name (for example Europe/Lisbon)");
        }
        return invalid("", "does not match the workspace configuration's shape");
    }
    let path = field_path(&v.instance_path);
    let problem = if v.problem == "is not in the expected form" { form_of(&path) } else { v.problem.clone() };
    invalid(&path, &problem)
}

/// What a pattern-checked field must look like, said for that field.
fn form_of(path: &str) -> String {
    let last = path.rsplit('.').next().unwrap_or(path);
    if last == "start" || last == "end" {
        "must be a time of day written HH:MM (24-hour)".to_owned()
    } else if last == "timezone" {
        "must be an IANA time zone name (for example Europe/Lisbon)".to_owned()
    } else if path.starts_with("link_allow_list") {
        "must be a host name such as example.com (no scheme, path or port)".to_owned()
    } else {
        "is not in the expected form".to_owned()
    }
}

/// A JSON pointer (`/channels/1/platform`) in the file's terms (`channels[1].platform`).
/// Configuration keys are never all digits, so an all-digit segment is an array index.
pub(crate) fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests;
