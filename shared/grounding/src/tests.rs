use harmonia_contracts::domain::{Speech, TranscriptSegment};

use super::*;

fn plain(evidence: &[&'static str]) -> Vec<Cited<'static>> {
    evidence.iter().map(|t| Cited::text(t)).collect()
}

fn named(body: &str, evidence: &[&'static str]) -> Vec<String> {
    ungrounded(body, &plain(evidence), &[]).into_iter().map(|u| u.figure).collect()
}

/// A source of one speaker whose cues are `cues`, and the cited moment `quote` of it, read as
/// policy reads it: the quote where it was said.
fn said_in(cues: &[&str], quote: &str) -> (String, Range<usize>) {
    let segments: Vec<TranscriptSegment> = cues
        .iter()
        .zip(0u64..)
        .map(|(t, n)| TranscriptSegment {
            start_ms: n * 1000,
            end_ms: n * 1000 + 900,
            speaker: None,
            text: (*t).into(),
        })
        .collect();
    let speech = Speech::of(&segments);
    let span = speech.find(quote).expect("the quote is said");
    (speech.utterances()[span.utterance].text.clone(), span.start..span.end)
}

#[test]
fn equal_values_ground_each_other_across_notations() {
    let cases = [
        ("1.2 million", "1,200,000 riders"),
        ("$1.2 million", "1.2 million dollars"),
        ("$1,200,000", "$1.2m"),
        ("40 per cent", "40%"),
        ("2.5 times", "2.5x"),
        ("9:30", "9.30 a.m."),
        ("21:30", "9.30 p.m."),
        ("2025", "in 2025"),
        ("minus 12 degrees", "it fell to −12 °C"),
        ("3 to 5 hours", "3–5 hours"),
        ("forty rangers", "40 rangers"),
        ("８０％", "80%"),
        ("We did not cut 40% of the jobs", "we didn't cut 40% of jobs"),
    ];
    for (draft, evidence) in cases {
        assert!(ungrounded(draft, &[Cited::text(evidence)], &[]).is_empty(), "{draft} vs {evidence}");
    }
}

#[test]
fn distorted_figures_are_named() {
    let evidence = ["The extra service cost the city 1.2 million dollars.", "It cost $3.75 million.", "2.5 times"];
    assert_eq!(named("The extra service cost the city 1.", &evidence), ["1"]);
    assert_eq!(named("It cost $3.", &evidence), ["$3"]);
    assert_eq!(named("It cost $3.75.", &evidence), ["$3.75"], "the magnitude is part of the figure");
    assert_eq!(named("It cost 1.2.", &evidence), ["1.2"], "a plain number never drops a magnitude");
    assert_eq!(named("Ridership grew 2.", &evidence), ["2"]);
    assert_eq!(named("It cost $3.75 billion.", &evidence), ["$3.75 billion"]);
    assert_eq!(named("It cost €3.75 million.", &evidence), ["€3.75 million"]);
    assert_eq!(named("A 1.2% rise", &evidence), ["1.2%"]);
    assert_eq!(named("At 9.30 p.m.", &["At 9.30 a.m."]), ["9.30 p.m."]);
    assert_eq!(named("It hit 12 degrees", &["It fell to minus 12 degrees."]), ["12 degrees"]);
    assert_eq!(named("They cut 40% of jobs", &["We did not cut 40% of jobs."]), ["40%"]);
    assert_eq!(named("They cut 3 jobs", &["They cut 3–5 jobs."]), ["3"]);
    assert_eq!(named("about 40 of the jobs", &["40% of the jobs"]), ["40"], "a percentage is not a count");
    let why = |body: &str, evidence: &'static str| ungrounded(body, &[Cited::text(evidence)], &[])[0].sentence();
    assert_eq!(
        why("They cut 40% of jobs", "We did not cut 40% of jobs."),
        "the figure \"40%\" changes its negation: the evidence says \"did not cut 40%\""
    );
    assert_eq!(
        why("It hit 12 degrees", "It fell to minus 12 degrees."),
        "the figure \"12 degrees\" drops its sign: the evidence says \"minus 12 degrees\""
    );
    assert_eq!(
        why("It cost $3.75.", "It cost $3.75 million."),
        "the figure \"$3.75\" is not what the evidence says: \"$3.75 million\""
    );
}

#[test]
fn a_day_is_read_with_its_month() {
    let evidence = ["The first bus leaves on 3 May 2025, 12 riders on board."];
    for grounded in ["on May 3, 2025", "on the 3rd of May", "12 riders, 3 of them"] {
        assert!(named(grounded, &evidence).is_empty(), "{grounded}");
    }
    assert_eq!(named("on 3 June 2025", &evidence), ["3 June"]);
    assert_eq!(named("on May 12", &evidence), ["May 12"]);
}

#[test]
fn figures_written_in_words_are_figures() {
    assert!(named("a rise of one hundred and fifty per cent", &["a rise of 150%"]).is_empty());
    assert!(named("two hundred thousand riders", &["200,000 riders"]).is_empty());
    let evidence = ["The service cost $5 million, 25% more, and ridership grew 3 times."];
    for grounded in ["five million dollars", "twenty-five per cent", "three times", "one of the best, two of us"] {
        assert!(named(grounded, &evidence).is_empty(), "{grounded}");
    }
    assert_eq!(named("It cost five billion dollars.", &evidence), ["five billion dollars"]);
    assert_eq!(named("forty rangers", &evidence), ["forty"]);
}

#[test]
fn a_figure_is_read_where_it_was_said_not_where_the_quote_stops() {
    // The trial: a quote that stops at a cue boundary, and a post repeating it.
    let (utterance, quote) =
        said_in(&["The new visitor centre cost $3.75", "million, more than planned."], "cost $3.75");
    let cited = [Cited { text: &utterance[quote.clone()], said: Some(Said::around(&utterance, quote)) }];
    let found = ungrounded("The visitor centre cost $3.75.", &cited, &[]);
    assert_eq!(found.iter().map(|u| u.figure.as_str()).collect::<Vec<_>>(), ["$3.75"]);
    assert!(ungrounded("The visitor centre cost $3.75 million.", &cited, &[]).is_empty());
}

#[test]
fn quotes_that_cut_a_figure_off_its_meaning_are_named() {
    let case = |cues: &[&str], quote: &str| -> Vec<String> {
        let (utterance, range) = said_in(cues, quote);
        cuts_in(&utterance, range).iter().map(Cut::sentence).collect()
    };
    assert_eq!(
        case(
            &["The new visitor centre cost $3.75", "million, more than planned."],
            "The new visitor centre cost $3.75"
        ),
        ["a quote cuts the figure \"$3.75 million\" off its magnitude or unit \"million\""]
    );
    assert_eq!(
        case(
            &["Overnight it fell to minus", "12 degrees on three nights in a row."],
            "12 degrees on three nights in a row"
        ),
        ["a quote cuts the figure \"minus 12 degrees\" off its sign \"minus\""]
    );
    assert_eq!(
        case(&["We did not", "cut 40% of the ranger jobs in 2024."], "cut 40% of the ranger jobs in 2024"),
        ["a quote cuts the figure \"did not cut 40%\" off its negation \"did not\""]
    );
    let kitchen = Speech::of(&[
        TranscriptSegment {
            start_ms: 0,
            end_ms: 900,
            speaker: None,
            text: "Last winter our kitchen served 12,".into(),
        },
        TranscriptSegment { start_ms: 1000, end_ms: 1900, speaker: None, text: "500 hot meals.".into() },
    ]);
    assert!(kitchen.find("500 hot meals").is_none(), "a span that starts inside a number is never a quote");
    assert!(kitchen.find("our kitchen served 12").is_none(), "nor one that ends inside it");
    assert_eq!(case(&["Each trip takes 3–5", "hours on foot."], "Each trip takes 3–5 hours"), Vec::<String>::new());
    assert_eq!(
        case(&["Each trip takes 3 to", "5 hours on foot."], "Each trip takes 3"),
        ["a quote cuts the figure \"3 to 5 hours\" off its range \"5 hours\""]
    );
    // Whole, nothing is cut.
    assert!(case(&["We did not", "cut 40% of the ranger jobs."], "We did not cut 40% of the ranger jobs").is_empty());
}

#[test]
fn a_quotation_of_the_post_is_checked_where_its_moment_was_said() {
    let (utterance, range) = said_in(
        &["Our budget grew to $3.75", "million this year, as planned."],
        "Our budget grew to $3.75 million this year",
    );
    let cited = [Cited { text: &utterance[range.clone()], said: Some(Said::around(&utterance, range)) }];
    assert!(cuts("She said “Our budget grew to $3.75 million”.", &cited).is_empty());
    let cut = cuts("She said “Our budget grew to $3.75”.", &cited);
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0].missing[0].0, Missing::Magnitude);
}

#[test]
fn quotations_must_be_exact_spans() {
    let evidence = plain(&["The extra service cost the city 1.2 million dollars."]);
    assert!(inexact_quotations("She said “cost the city 1.2 million dollars”.", &evidence).is_empty());
    assert_eq!(
        inexact_quotations("She said “cost the city 1.” and \"it was cheap\".", &evidence),
        ["cost the city 1.", "it was cheap"]
    );
    let curly = plain(&["He said \"it's done\" -- twice."]);
    assert!(inexact_quotations("“it’s done”", &curly).is_empty(), "curly and straight quotes are one");
}

/// Words a generated sentence is made of: figures with their context, and filler.
fn word() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        4 => "[a-z]{2,7}".prop_map(String::from),
        1 => (1u32..999, 0u32..100).prop_map(|(w, c)| format!("${w}.{c:02} million")),
        1 => (1u32..99).prop_map(|n| format!("minus {n} degrees")),
        1 => (1u32..99).prop_map(|n| format!("did not cut {n}%")),
        1 => (1u32..9, 10u32..20).prop_map(|(a, b)| format!("{a} to {b} hours")),
        1 => (1u32..99, 100u32..999).prop_map(|(a, b)| format!("{a},{b} meals")),
    ]
}

/// What a figure means, compared between a quote read alone and the source.
fn meaning(f: &Figure) -> (figures::Value, figures::Unit, bool, bool, Option<figures::Value>) {
    (f.value.clone(), f.unit, f.negative, f.negated, f.upper.clone())
}

proptest::proptest! {
    /// Sentences split across 1–3 cues at random points, inside figures and negations too:
    /// every quote that no cut is found in keeps each of its figures' magnitude, unit, sign,
    /// negation and range as the source says them.
    #[test]
    fn an_accepted_quote_keeps_every_figure_whole(
        words in proptest::collection::vec(word(), 3..14),
        cuts_at in proptest::collection::vec(0usize..1000, 0..3),
        from in 0usize..1000,
        len in 1usize..1000,
    ) {
        let sentence = format!("{}.", words.join(" "));
        // Split the sentence's characters into 1–3 cues at random spaces or inside tokens.
        let mut bounds: Vec<usize> = cuts_at.iter().map(|c| c % sentence.len()).filter(|b| *b > 0 && sentence.is_char_boundary(*b)).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut cues = Vec::new();
        let mut start = 0;
        for b in bounds.into_iter().chain(std::iter::once(sentence.len())) {
            let piece = sentence[start..b].trim();
            if !piece.is_empty() {
                cues.push(piece.to_owned());
            }
            start = b;
        }
        let segments: Vec<TranscriptSegment> = cues.iter().zip(0u64..).map(|(t, n)| TranscriptSegment {
            start_ms: n * 1000, end_ms: n * 1000 + 900, speaker: None, text: t.clone(),
        }).collect();
        let speech = Speech::of(&segments);
        let utterance = &speech.utterances()[0].text;
        // A quote: a span of the continuous text between two word boundaries.
        let spaces: Vec<usize> = std::iter::once(0).chain(utterance.match_indices(' ').map(|(at, _)| at + 1)).collect();
        let first = spaces[from % spaces.len()];
        let ends: Vec<usize> = utterance.match_indices(' ').map(|(at, _)| at).chain(std::iter::once(utterance.len())).filter(|e| *e > first).collect();
        proptest::prop_assume!(!ends.is_empty());
        let last = ends[len % ends.len()];
        let quote = &utterance[first..last];
        proptest::prop_assume!(speech.find(quote).is_some());
        if cuts_in(utterance, first..last).is_empty() {
            let source: Vec<Figure> = figures(utterance).into_iter().filter(|f| f.number.start < last && first < f.number.end).collect();
            let alone: Vec<Figure> = figures(quote);
            proptest::prop_assert_eq!(
                alone.iter().map(meaning).collect::<Vec<_>>(),
                source.iter().map(meaning).collect::<Vec<_>>(),
                "quote {:?} of {:?}", quote, utterance
            );
        }
    }
}
