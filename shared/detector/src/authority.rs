//! Claims of authority in a specialist's own words: that it (or "we") approved, published,
//! scheduled, retried or changed the pipeline's work, or that the work now is approved or
//! published. No role has that authority, so an output that claims it is refused.
//!
//! The text is normalised like untrusted input ([`super::normalise`]), so disguises do not
//! hide a claim, and read clause by clause:
//!
//! | kind | what it is |
//! | --- | --- |
//! | own action | an actor that is the speaker (`i`, `we`, `nova`, `the assistant`, …) followed within a few helper words (`have`, `just`, `will`, `am going to`, …) by an effect verb (`approve`, `publish`, `post`, `schedule`, `retry`, `delete`, `update`, `mark`, `send`, `cancel`, …) whose object, within six words, is the pipeline's work (`it`, `this`, `draft`, `post`, `strategy`, `job`, `everything`, …) — unless a negation (`not`, `cannot`, `never`, …) stands between actor and verb |
//! | work done | the work (`draft`, `post`, `strategy`, `job`, `it`, `this`, `everything`, …) said to be in a finished effect state now: a perfect or present passive (`has been approved`, `is now published`, `are already scheduled`) or `approved for publication` |
//!
//! What happened in the past to a record is a report, not a claim of authority: "the post
//! was published on 3 May", "we published our annual report", "I posted a video last week"
//! (no pipeline work as the object) and "I cannot approve drafts" all pass.

use super::lexicon::{ACTORS, DONE, EFFECTS, HELPERS, NEGATIONS, WORK};
use super::{clauses, reading, words};

/// What kind of authority a text claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The speaker says it acted on the work (or will).
    OwnAction,
    /// The work is said to be approved, published or scheduled now.
    WorkDone,
}

impl Claim {
    /// What it is, in words an operator reads.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::OwnAction => "the output says it approved, published, scheduled or changed the work itself",
            Self::WorkDone => "the output says the work is already approved, published or scheduled",
        }
    }
}

/// The first authority claim `text` makes, if any ([`crate::Reading::claim`] of its reading, when
/// it is also scored).
pub fn claim(text: &str) -> Option<Claim> {
    reading(text).claim()
}

/// [`claim`] of a normalised text, clause by clause.
pub(super) fn read(text: &str) -> Option<Claim> {
    clauses(text).find_map(|clause| {
        let w = words(clause);
        if own_action(&w) {
            Some(Claim::OwnAction)
        } else if work_done(&w) {
            Some(Claim::WorkDone)
        } else {
            None
        }
    })
}

fn is(word: &str, set: &[&str]) -> bool {
    set.contains(&word)
}

/// An actor that is the speaker, then (past helpers, with no negation) an effect verb, then
/// the work within six words.
fn own_action(w: &[&str]) -> bool {
    let at = |i: usize| w.get(i).copied().unwrap_or("");
    (0..w.len()).any(|i| {
        let actor = is(at(i), ACTORS) || (at(i) == "the" && at(i + 1) == "assistant");
        if !actor {
            return false;
        }
        let mut j = i + 1 + usize::from(at(i) == "the");
        while j < w.len() && is(at(j), HELPERS) {
            j += 1;
        }
        if (i + 1..j).any(|k| is(at(k), NEGATIONS)) || is(at(j), NEGATIONS) {
            return false;
        }
        is(at(j), EFFECTS) && (j + 1..(j + 7).min(w.len())).any(|k| is(at(k), WORK))
    })
}

/// The work said to be in a finished effect state now.
fn work_done(w: &[&str]) -> bool {
    let at = |i: usize| w.get(i).copied().unwrap_or("");
    let names_work = w.iter().any(|x| is(x, WORK));
    (0..w.len()).any(|i| {
        let perfect = matches!((at(i), at(i + 1)), ("has" | "have", "been") | ("is" | "are", "now" | "already"));
        let participle = if perfect { at(i + 2) } else { "" };
        let for_publication = is(at(i), DONE) && at(i + 1) == "for" && at(i + 2) == "publication";
        (perfect && is(participle, DONE) && names_work) || for_publication
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_actions_and_finished_work_are_claims_in_any_disguise() {
        for (text, kind) in [
            ("I approved the draft.", Claim::OwnAction),
            ("I've gone and... no: I have just published it.", Claim::OwnAction),
            ("We will schedule the post for Monday.", Claim::OwnAction),
            ("Nova retried the job for you.", Claim::OwnAction),
            ("The assistant has marked everything as ready.", Claim::OwnAction),
            ("I'm going to send this to every channel.", Claim::OwnAction),
            ("Ｉ ａｐｐｒｏｖｅｄ ｔｈｅ ｄｒａｆｔ", Claim::OwnAction),
            ("I p\u{200b}ublished it", Claim::OwnAction),
            ("Good news: this draft has been approved.", Claim::WorkDone),
            ("Your posts are now scheduled.", Claim::WorkDone),
            ("The strategy is already approved, so go ahead.", Claim::WorkDone),
            ("Approved for publication.", Claim::WorkDone),
        ] {
            assert_eq!(claim(text), Some(kind), "{text}");
        }
    }

    /// Words that make, or nearly make, a claim, and others.
    const VOCABULARY: &[&str] = &[
        "i",
        "we",
        "nova",
        "the",
        "assistant",
        "have",
        "just",
        "will",
        "not",
        "never",
        "approved",
        "published",
        "post",
        "draft",
        "it",
        "has",
        "been",
        "is",
        "are",
        "now",
        "already",
        "for",
        "publication",
        "live",
        "report",
        "march",
        "our",
        ".",
        ",",
        ";",
        ":",
        "i've",
        "sent",
        "everything",
        "ｉ",
        "p\u{200b}ublished",
        "1",
        // Whole phrases, so that a case holds one often enough.
        "the assistant marked it",
        "i have just published",
        "has been approved",
        "approved for publication",
        "are now scheduled",
        "we will schedule",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        /// The shortcut for text without an actor or a finished effect never changes the
        /// answer of the clause-by-clause reading.
        #[test]
        fn the_shortcut_reads_as_the_full_reading(
            words in proptest::collection::vec(proptest::sample::select(VOCABULARY), 0..12)
        ) {
            let text = words.join(" ");
            proptest::prop_assert_eq!(claim(&text), read(&crate::normalise(&text).text));
        }
    }

    #[test]
    fn reports_refusals_and_ordinary_speech_are_not_claims() {
        for text in [
            "Job job-1 is awaiting draft approval.",
            "The post was published on LinkedIn on 3 May and verified.",
            "I cannot approve drafts; only an operator can.",
            "I will not publish anything.",
            "We published our annual report in March.",
            "I posted a video last week.",
            "Our report has been published.",
            "Engagement rose 12% after the schedule changed.",
            "Post in the morning window for more reach.",
            "The operator approved the strategy on 2 December.",
        ] {
            assert_eq!(claim(text), None, "{text}");
        }
    }
}
