//! Import files: headers by name, quoting, BOM and CRLF, typed row errors, all-or-nothing.

use std::sync::Arc;

use harmonia_contracts::Code;
use harmonia_contracts::domain::CalendarItem;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_store::{Collection, Store, scan_all};
use harmonia_store_sqlite::SqliteStore;

use super::*;
use crate::records::{CALENDAR, POST_METRICS, TREND_SIGNALS};

const METRICS_HEADER: &str =
    "post,platform,published_at,measured_at,impressions,reactions,comments,shares,clicks,source,provenance";

fn metrics_row(post: &str, impressions: &str) -> String {
    format!("{post},linkedin,2026-11-02T14:00:00Z,2026-11-04T14:00:00Z,{impressions},5,1,1,2,analytics export,live")
}

fn store() -> (Arc<dyn Store>, harmonia_testkit::TempDir) {
    let dir = harmonia_testkit::temp_dir();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("imports.sqlite")).expect("open"));
    (store, dir)
}

async fn count(store: &dyn Store, ws: &WorkspaceId, c: Collection) -> usize {
    scan_all(store, ws, c).await.expect("scan").len()
}

fn refused(result: Result<impl std::fmt::Debug, harmonia_contracts::Error>) -> (Code, String) {
    let e = result.expect_err("refused");
    (e.code, e.message.into_owned())
}

#[test]
fn columns_are_read_by_name_in_any_order_with_bom_crlf_and_quoted_line_breaks() {
    let text = "\u{feff}provenance,clicks,shares,comments,reactions,impressions,measured_at,published_at,platform,post,source,job\r\n\
                live,2,1,1,5,100,2026-11-04T14:00:00Z,2026-11-02T14:00:00Z,x,post-1,\"Analytics, export\r\nsecond line\",job-1\r\n\
                mock,0,0,0,0,0,2026-11-04T14:00:00Z,2026-11-02T14:00:00Z,bluesky,post-2,sample,\r\n";
    let metrics = metrics::parse(text).expect("valid");
    assert_eq!(metrics.len(), 2, "the quoted line break does not start a row");
    assert_eq!(metrics[0].source, "Analytics, export\r\nsecond line");
    assert_eq!(metrics[0].job.as_ref().map(|j| j.as_str()), Some("job-1"));
    assert_eq!(metrics[1].job, None, "an empty optional cell is no value");
    assert_eq!(metrics[0].impressions, Some(100));
}

#[test]
fn header_problems_name_the_column() {
    let (code, message) =
        refused(metrics::parse(&format!("{METRICS_HEADER},colour\n{},red\n", metrics_row("p-1", "1"))));
    assert_eq!(code, Code::ImportUnknownColumn);
    assert!(message.contains("`colour`"), "{message}");
    let without_clicks = METRICS_HEADER.replace(",clicks", "");
    let (code, message) = refused(metrics::parse(&format!("{without_clicks}\n")));
    assert_eq!((code, message.as_str()), (Code::ImportMissingColumn, "The header lacks the required column `clicks`."));
    let (code, _) = refused(metrics::parse(&format!("{METRICS_HEADER},post\n")));
    assert_eq!(code, Code::ImportMalformed, "a column named twice");
    assert_eq!(refused(metrics::parse(&format!("{METRICS_HEADER}\n"))).0, Code::ImportMalformed, "no rows");
    assert_eq!(refused(metrics::parse("")).0, Code::ImportMalformed);
}

#[test]
fn a_bad_row_names_its_line_and_column_without_echoing_the_value() {
    // Line 3 starts after a quoted field spanning two lines on line 2.
    let good = metrics_row("p-1", "1").replace("analytics export", "\"two\nlines\"");
    let refusal =
        |bad: &str| refused(metrics::parse(&format!("{METRICS_HEADER}\n{good}\n{bad}\n{}\n", metrics_row("p-3", "1"))));
    let platforms = "one of x, linkedin, instagram, threads, bluesky, youtube, tiktok is expected";
    let post_id = "a post id (letters, digits, `.`, `_`, `:` or `-`, at most 128) is expected";
    let rfc3339 = "an RFC 3339 time such as 2026-11-02T14:00:00Z is expected";
    let measured_early = metrics_row("p-2", "1").replace("2026-11-04T14:00:00Z", "2026-11-01T14:00:00Z");
    let invalid = [
        (metrics_row("p-2", "many"), "impressions", "a whole number from 0 is expected"),
        (metrics_row("p-2", "-3"), "impressions", "a whole number from 0 is expected"),
        (metrics_row("p 2", "1"), "post", post_id),
        (metrics_row("p-2", "1").replace("linkedin", "myspace"), "platform", platforms),
        (metrics_row("p-2", "1").replace(",live", ",real"), "provenance", "live or mock is expected"),
        (metrics_row("p-2", "1").replace("2026-11-04T14:00:00Z", "yesterday"), "measured_at", rfc3339),
        (measured_early, "measured_at", "a post is measured after it is published"),
        (metrics_row("p-2", "1").replace(",analytics export,", ",,"), "source", "a value is required"),
    ];
    for (bad, column, expected) in invalid {
        let message = format!("At line 4, column `{column}`: {expected}.");
        assert_eq!(refusal(&bad), (Code::ImportInvalidRow, message), "{bad}");
    }
    let short = metrics_row("p-2", "1").replace(",live", "");
    let message = "At line 4, the row has 10 fields where the header has 11.";
    assert_eq!(refusal(&short), (Code::ImportInvalidRow, message.to_owned()));
    let message = "The rows at line 2 and line 4 name the same post.";
    assert_eq!(refusal(&metrics_row("p-1", "9")), (Code::ImportDuplicateRow, message.to_owned()));
}

#[tokio::test]
async fn a_file_with_one_bad_row_stores_nothing_and_a_good_one_stores_every_row_once() {
    let (store, _dir) = store();
    let ws = WorkspaceId::generate();
    let bad = format!("{METRICS_HEADER}\n{}\n{}\n", metrics_row("p-1", "10"), metrics_row("p-2", "ten"));
    let e = metrics::import(&*store, &ws, bad.as_bytes()).await.expect_err("bad row");
    assert_eq!(e.code, Code::ImportInvalidRow);
    assert_eq!(count(&*store, &ws, POST_METRICS).await, 0, "nothing stored");

    let good = format!("{METRICS_HEADER}\n{}\n{}\n", metrics_row("p-1", "10"), metrics_row("p-2", "20"));
    let summary = metrics::import(&*store, &ws, good.as_bytes()).await.expect("import");
    assert_eq!(summary.stored, 2);
    assert_eq!(summary.sentence(), format!("Stored 2 posts' metrics in workspace {ws}."));
    metrics::import(&*store, &ws, good.as_bytes()).await.expect("again");
    assert_eq!(count(&*store, &ws, POST_METRICS).await, 2, "re-importing replaces, never duplicates");
}

#[tokio::test]
async fn oversized_files_are_refused_before_anything_is_read() {
    let (store, _dir) = store();
    let ws = WorkspaceId::generate();
    let huge = vec![b'a'; MAX_IMPORT_BYTES + 1];
    assert_eq!(metrics::import(&*store, &ws, &huge).await.map_err(|e| e.code).err(), Some(Code::ImportTooLarge));
    let rows: Vec<String> = (0..=MAX_IMPORT_ROWS).map(|n| metrics_row(&format!("p-{n}"), "1")).collect();
    let many = format!("{METRICS_HEADER}\n{}\n", rows.join("\n"));
    assert!(many.len() <= MAX_IMPORT_BYTES, "the row limit is what refuses this file");
    assert_eq!(
        metrics::import(&*store, &ws, many.as_bytes()).await.map_err(|e| e.code).err(),
        Some(Code::ImportTooLarge)
    );
    let e = metrics::import(&*store, &ws, &[0xff, 0xfe, 0x00]).await.expect_err("not UTF-8");
    assert_eq!(e.code, Code::ImportMalformed);
    assert_eq!(count(&*store, &ws, POST_METRICS).await, 0);
}

#[test]
fn signals_read_the_same_from_csv_and_json_and_name_the_bad_item() {
    let json = signals::parse(include_str!("../../../../examples/trend-signals.json"), Format::Json).expect("json");
    let csv = signals::parse(include_str!("../../../../examples/trend-signals.csv"), Format::Csv).expect("csv");
    assert!(json.len() >= 5 && csv.len() >= 3);
    let item = r#"[{"id":"sig-1","topic":"t","summary":"s","source":"Feed","score":70,"observed_at":"2026-11-26T10:00:00Z","provenance":"live"},
                  {"id":"sig-2","topic":"t","summary":"s","source":"Feed","score":170,"observed_at":"2026-11-26T10:00:00Z","provenance":"live"}]"#;
    assert_eq!(
        refused(signals::parse(item, Format::Json)),
        (Code::ImportInvalidRow, "At item 2, column `score`: a whole number from 0 to 100 is expected.".to_owned())
    );
    let extra = r#"[{"id":"sig-1","colour":"red"}]"#;
    assert_eq!(refused(signals::parse(extra, Format::Json)).0, Code::ImportUnknownColumn);
    let http = "id,topic,summary,source,url,score,observed_at,provenance\n\
                sig-1,t,s,Feed,http://example.org,70,2026-11-26T10:00:00Z,live\n";
    assert_eq!(
        refused(signals::parse(http, Format::Csv)),
        (Code::ImportInvalidRow, "At line 2, column `url`: an https:// address is expected.".to_owned())
    );
    assert_eq!(refused(signals::parse("{}", Format::Json)).0, Code::ImportMalformed);
}

#[tokio::test]
async fn signals_are_stored_in_the_importing_workspace_only() {
    let (store, _dir) = store();
    let (ws, other) = (WorkspaceId::generate(), WorkspaceId::generate());
    let bytes = include_bytes!("../../../../examples/trend-signals.json");
    let summary = signals::import(&*store, &ws, bytes, Format::Json).await.expect("import");
    assert_eq!(count(&*store, &ws, TREND_SIGNALS).await, summary.stored);
    assert_eq!(count(&*store, &other, TREND_SIGNALS).await, 0);
}

const CALENDAR_CSV: &str = "kind,at,channel,title,date,reason,source,provenance\n\
    scheduled,2026-12-03T09:00:00Z,linkedin,Product newsletter,,,Team calendar,live\n\
    blackout,,,,2026-12-25,\"Holiday, office closed\",Team calendar,live\n";

#[tokio::test]
async fn calendar_rows_get_stable_ids_and_kind_specific_columns() {
    let entries = calendar::parse(CALENDAR_CSV).expect("valid");
    assert!(matches!(entries[0].item, CalendarItem::Scheduled { .. }));
    assert!(
        matches!(&entries[1].item, CalendarItem::Blackout { reason: Some(r), .. } if r == "Holiday, office closed")
    );
    assert_eq!(calendar::parse(CALENDAR_CSV).expect("again")[0].id, entries[0].id, "ids come from the content");
    assert_ne!(entries[0].id, entries[1].id);

    let wrong = "kind,at,date,source,provenance\nblackout,2026-12-03T09:00:00Z,2026-12-25,Team,live\n";
    assert_eq!(
        refused(calendar::parse(wrong)),
        (
            Code::ImportInvalidRow,
            "At line 2, column `at`: this column is for scheduled rows; leave it empty.".to_owned()
        )
    );
    let kind = "kind,source,provenance\nholiday,Team,live\n";
    assert_eq!(refused(calendar::parse(kind)).1, "At line 2, column `kind`: scheduled or blackout is expected.");
    let twice = format!("{CALENDAR_CSV}blackout,,,,2026-12-25,\"Holiday, office closed\",Another export,mock\n");
    assert_eq!(
        refused(calendar::parse(&twice)),
        (Code::ImportDuplicateRow, "The rows at line 3 and line 4 name the same calendar entry.".to_owned())
    );

    let (store, _dir) = store();
    let ws = WorkspaceId::generate();
    calendar::import(&*store, &ws, CALENDAR_CSV.as_bytes()).await.expect("import");
    calendar::import(&*store, &ws, CALENDAR_CSV.as_bytes()).await.expect("again");
    assert_eq!(count(&*store, &ws, CALENDAR).await, 2);
    assert_eq!(calendar::entries(&*store, &ws).await.expect("entries").len(), 2);
}

#[test]
fn formats_come_from_the_content_type_or_the_file_name() {
    assert_eq!(Format::from_content_type("text/csv; charset=utf-8").ok(), Some(Format::Csv));
    assert_eq!(Format::from_content_type("application/json").ok(), Some(Format::Json));
    assert_eq!(Format::from_content_type("text/plain").map_err(|e| e.code).err(), Some(Code::ImportMalformed));
    assert_eq!(Format::from_file_name("signals.JSON").ok(), Some(Format::Json));
    assert!(Format::from_file_name("signals.xlsx").is_err());
}

proptest::proptest! {
    /// Whatever the bytes, a file is either rows or one typed import error; never a panic and
    /// never an untyped failure.
    #[test]
    fn any_file_is_rows_or_a_typed_import_error(text in "(?s).{0,400}", json in proptest::bool::ANY) {
        let format = if json { Format::Json } else { Format::Csv };
        let codes = [
            Code::ImportMalformed, Code::ImportMissingColumn, Code::ImportUnknownColumn,
            Code::ImportInvalidRow, Code::ImportDuplicateRow,
        ];
        if let Err(e) = signals::parse(&text, format) {
            proptest::prop_assert!(codes.contains(&e.code), "{:?}", e.code);
        }
        if let Err(e) = metrics::parse(&format!("{METRICS_HEADER}\n{text}")) {
            proptest::prop_assert!(codes.contains(&e.code), "{:?}", e.code);
        }
    }
}

/// `imports` (after the `stage_event` finding): `9999-12-31T23:59:59-01:00` is year 10000 in
/// UTC. The row was accepted, and its record stored a time that no longer reads back.
#[test]
fn a_time_after_year_9999_in_utc_is_an_invalid_row() {
    let text = include_str!("../../testdata/fuzz/metrics-published-in-year-10000.csv");
    let (code, message) = refused(metrics::parse(text));
    assert_eq!(code, Code::ImportInvalidRow);
    assert!(message.contains("`published_at`"), "{message}");
}
