//! The example sources under `examples/`, compiled in so every test uses the same inputs.

/// A talk's transcript segments and frame descriptions (the source `format: json`).
pub const LAUNCH_TALK: &str = include_str!("../../../examples/launch-talk.json");
/// A planning snapshot for the launch-talk workspace.
pub const PLANNING_SNAPSHOT: &str = include_str!("../../../examples/planning-snapshot.json");
/// Post metrics for Nova's performance tools.
pub const POST_METRICS: &str = include_str!("../../../examples/post-metrics.json");
/// Trend signals, as JSON.
pub const TREND_SIGNALS_JSON: &str = include_str!("../../../examples/trend-signals.json");
/// The same trend signals, as CSV.
pub const TREND_SIGNALS_CSV: &str = include_str!("../../../examples/trend-signals.csv");
/// A briefing as SubRip subtitles.
pub const RANGER_BRIEFING_SRT: &str = include_str!("../../../examples/ranger-briefing.srt");
/// A talk as WebVTT captions.
pub const TRAIL_MAINTENANCE_VTT: &str = include_str!("../../../examples/trail-maintenance.vtt");
/// The demo brand's workspace configuration file.
pub const DEMO_WORKSPACE: &str = include_str!("../../../examples/workspace.toml");
/// A held-out workspace configuration (a public library), never the demo brand.
pub const HELD_OUT_WORKSPACE: &str = include_str!("../fixtures/riverside-library.toml");
/// A held-out transcript (the library's board meeting, WebVTT), never the bundled sample.
pub const HELD_OUT_TRANSCRIPT_VTT: &str = include_str!("../fixtures/library-board.vtt");

/// A valid WebVTT transcript of at least `bytes` bytes (and at most 20,000 cues, the schema's
/// limit, so at most about 4 MiB): a long talk about a transit pilot whose cues vary, each
/// about 200 characters with figures in it, one second apart.
pub fn long_webvtt(bytes: usize) -> String {
    const LINES: [&str; 4] = [
        "In week {i} the pilot carried {n} riders across {k} routes, and the team measured a {p} percent drop in the average wait at the busiest stops.",
        "Ridership on route {k} grew to {n} trips that week; drivers reported {p} fewer missed connections after the timetable change in week {i}.",
        "The survey in week {i} reached {n} residents, and {p} percent said the new shelters on {k} corridors made the morning commute easier.",
        "Maintenance crews closed {k} work orders in week {i}, keeping {p} percent of the fleet in service while carrying {n} passengers a day.",
    ];
    let mut out = String::from("WEBVTT\n\n");
    let mut i = 0usize;
    while out.len() < bytes {
        let (start, end) = (i * 1000, i * 1000 + 900);
        let stamp =
            |ms: usize| format!("{:02}:{:02}:{:02}.{:03}", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
        let text = LINES[i % LINES.len()]
            .replace("{i}", &(i + 1).to_string())
            .replace("{n}", &(1200 + i * 7 % 900).to_string())
            .replace("{k}", &(3 + i % 11).to_string())
            .replace("{p}", &(5 + i % 40).to_string());
        out.push_str(&format!("{}\n{} --> {}\n{text}\n\n", i + 1, stamp(start), stamp(end)));
        i += 1;
    }
    out
}
