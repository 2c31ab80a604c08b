//! `harmonia workspace init FILE | show | update FILE`: the workspace configuration, on the
//! embedded default through `harmonia_pipeline::workspace` (the same functions as the operator
//! API's `/v1/workspace`), or (`--cloud`) through that API, as the credential's admin.

use std::path::Path;

use chrono::{Datelike, Duration, NaiveDate, TimeZone, Utc};
use clap::Subcommand;
use harmonia_contracts::domain::{PostingWindow, TimeZoneName, WorkspaceConfig, WorkspaceVersion};
use harmonia_contracts::ids::{OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::workspace::{self, Updated};
use serde_json::{Value, json};

use crate::app::{Backend, Output};

/// The largest configuration file read (a real one is a few kilobytes).
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// What to do with the workspace configuration.
#[derive(Debug, Subcommand)]
pub(crate) enum WorkspaceCommand {
    /// Configure a new workspace from a TOML file (refused when it is already configured).
    Init {
        /// The configuration file (see examples/workspace.toml).
        file: std::path::PathBuf,
    },
    /// Show the current configuration version.
    Show,
    /// Store the file as the workspace's next configuration version (nothing when unchanged).
    Update {
        /// The configuration file.
        file: std::path::PathBuf,
    },
}

/// Run one `workspace` command in `ws`.
pub(crate) async fn run(
    backend: &Backend,
    out: &Output,
    ws: &WorkspaceId,
    command: WorkspaceCommand,
) -> Result<(), Error> {
    let by: OperatorId = "cli".parse()?;
    match command {
        WorkspaceCommand::Init { file } => {
            let config = read(&file)?;
            let version = match backend {
                Backend::Local(l) => workspace::init(&*l.env.store, ws, config, &by).await?,
                Backend::Cloud(client) => match client.workspace().await {
                    Ok(_) => return Err(Error::from_code(Code::WorkspaceExists)),
                    Err(e) if e.code == Code::WorkspaceNotConfigured => {
                        client.put_workspace(&config.to_toml()?).await?.workspace
                    }
                    Err(e) => return Err(e),
                },
            };
            out.say(&format!("Configured workspace `{ws}`: version {}.", version.version));
            print(out, &version);
            out.value(&json!({ "workspace": version, "changed": true }));
        }
        WorkspaceCommand::Show => {
            let version = match backend {
                Backend::Local(l) => workspace::current(&*l.env.store, ws).await?,
                Backend::Cloud(client) => client.workspace().await?.workspace,
            };
            print(out, &version);
            out.value(
                &json!({ "workspace": version, "windows_utc": windows_utc(&version.config, Utc::now().date_naive()) }),
            );
        }
        WorkspaceCommand::Update { file } => {
            let config = read(&file)?;
            let updated = match backend {
                Backend::Local(l) => workspace::update(&*l.env.store, ws, config, &by).await?,
                Backend::Cloud(client) => {
                    // Only a configured workspace is updated (a PUT would configure a new one).
                    client.workspace().await?;
                    let stored = client.put_workspace(&config.to_toml()?).await?;
                    match stored.changed {
                        true => Updated::Changed(stored.workspace),
                        false => Updated::Unchanged(stored.workspace),
                    }
                }
            };
            match updated {
                Updated::Changed(version) => {
                    out.say(&format!("Stored version {} of workspace `{ws}`; it is now current.", version.version));
                    out.say("Jobs already running keep the version they started with.");
                    print(out, &version);
                    out.value(&json!({ "workspace": version, "changed": true }));
                }
                Updated::Unchanged(version) => {
                    out.say(&format!(
                        "Nothing changed: the file matches version {} of workspace `{ws}`, so no new version was stored.",
                        version.version
                    ));
                    out.value(&json!({ "workspace": version, "changed": false }));
                }
            }
        }
    }
    Ok(())
}

/// Read and check a configuration file; nothing is stored when it is invalid.
fn read(file: &Path) -> Result<WorkspaceConfig, Error> {
    let unreadable = || Error::new(Code::NotFound, "The workspace configuration file cannot be read.");
    let meta = std::fs::metadata(file).map_err(|_| unreadable())?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(Error::new(Code::PayloadTooLarge, "A workspace configuration file is at most 256 KiB."));
    }
    let bytes = std::fs::read(file).map_err(|_| unreadable())?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::new(Code::InvalidWorkspaceConfig, "The workspace configuration is not UTF-8 text.").with_cause(e)
    })?;
    WorkspaceConfig::from_toml(&text)
}

/// The configuration, readably.
fn print(out: &Output, v: &WorkspaceVersion) {
    let c = &v.config;
    out.say(&format!("Workspace `{}`: {}", v.workspace, c.name));
    out.say(&format!(
        "  version         {} (stored {} by {})",
        v.version,
        v.created_at.format("%Y-%m-%d %H:%M UTC"),
        v.created_by
    ));
    out.say(&format!(
        "  mode            {}",
        match c.mode {
            harmonia_contracts::domain::WorkspaceMode::Development => "development (mock evidence may be published)",
            harmonia_contracts::domain::WorkspaceMode::Production => "production (mock evidence is refused)",
        }
    ));
    out.say(&format!("  audience        {}", c.audience));
    out.say(&format!("  voice           {}", c.voice));
    for (n, goal) in c.goals.iter().enumerate() {
        out.say(&format!("  {:<15} {goal}", if n == 0 { "goals" } else { "" }));
    }
    out.say(&format!("  call to action  {}", c.call_to_action));
    for (n, ch) in c.channels.iter().enumerate() {
        let limit = ch.max_posts_per_day.map(|m| format!(", at most {m} a day")).unwrap_or_default();
        let connector = ch.connector.as_str();
        out.say(&format!(
            "  {:<15} {} {} (via {connector}{limit})",
            if n == 0 { "channels" } else { "" },
            ch.platform.as_str(),
            ch.handle
        ));
    }
    out.say(&format!("  links allowed   {}", list_or(&c.link_allow_list, "none (posts may not link)")));
    out.say(&format!("  banned phrases  {}", list_or(&c.banned_phrases, "none")));
    out.say(&format!(
        "  cadence         {} posts a week, at most {} a day",
        c.cadence.posts_per_week, c.cadence.max_posts_per_day
    ));
    let today = Utc::now().date_naive();
    out.say(&format!(
        "  posting windows ({}; in UTC for the coming week, which follows daylight saving time)",
        c.timezone
    ));
    for (window, utc) in c.posting_windows.iter().zip(windows_utc(c, today)) {
        let days: Vec<&str> = window.days.iter().map(|d| day_name(chrono::Weekday::from(*d))).collect();
        out.say(&format!("    {} {}–{} local", days.join(" "), window.start, window.end));
        let spans: Vec<String> = utc
            .iter()
            .filter_map(|s| Some(format!("{}–{}", s.get("start")?.as_str()?, s.get("end")?.as_str()?)))
            .collect();
        out.say(&format!("      = {} UTC", spans.join(", ")));
    }
}

fn list_or(items: &[String], empty: &str) -> String {
    if items.is_empty() { empty.to_owned() } else { items.join(", ") }
}

fn day_name(d: chrono::Weekday) -> &'static str {
    match d {
        chrono::Weekday::Mon => "Mon",
        chrono::Weekday::Tue => "Tue",
        chrono::Weekday::Wed => "Wed",
        chrono::Weekday::Thu => "Thu",
        chrono::Weekday::Fri => "Fri",
        chrono::Weekday::Sat => "Sat",
        chrono::Weekday::Sun => "Sun",
    }
}

/// Each window's occurrences in the seven days from `from`, in UTC (`Tue 15:00`), one list per
/// window: the offset depends on the date, so these are for that week.
fn windows_utc(c: &WorkspaceConfig, from: NaiveDate) -> Vec<Vec<Value>> {
    c.posting_windows.iter().map(|w| occurrences(w, c.timezone, from)).collect()
}

fn occurrences(w: &PostingWindow, zone: TimeZoneName, from: NaiveDate) -> Vec<Value> {
    let tz = zone.tz();
    let mut out = Vec::new();
    for offset in 0..7 {
        let date = from + Duration::days(offset);
        if !w.days.iter().any(|d| chrono::Weekday::from(*d) == date.weekday()) {
            continue;
        }
        // A local time skipped by a clock change has no UTC instant; the earliest of an
        // ambiguous one is the window's start.
        let at =
            |t: chrono::NaiveTime| tz.from_local_datetime(&date.and_time(t)).earliest().map(|d| d.with_timezone(&Utc));
        if let (Some(start), Some(end)) = (at(w.start.time()), at(w.end.time())) {
            let label = |d: chrono::DateTime<Utc>| format!("{} {}", day_name(d.weekday()), d.format("%H:%M"));
            out.push(json!({ "date": date, "start": label(start), "end": label(end),
                             "start_utc": start, "end_utc": end }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_convert_to_utc_by_the_date_of_each_occurrence() {
        let config = WorkspaceConfig::from_toml(harmonia_local::DEMO_CONFIG).expect("valid");
        // America/Denver: UTC-7 in winter, UTC-6 in summer; the demo window is Mon-Fri 08:00-17:00.
        let winter = windows_utc(&config, NaiveDate::from_ymd_opt(2026, 12, 7).expect("date"));
        assert_eq!(winter[0].len(), 5);
        assert_eq!(
            (winter[0][0]["start"].as_str(), winter[0][0]["end"].as_str()),
            (Some("Mon 15:00"), Some("Tue 00:00"))
        );
        let summer = windows_utc(&config, NaiveDate::from_ymd_opt(2026, 7, 6).expect("date"));
        assert_eq!(summer[0][0]["start"].as_str(), Some("Mon 14:00"));
    }
}
