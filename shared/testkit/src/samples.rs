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
