//! What WebVTT and SRT share once a file's cues are read: de-duplicating roll-up captions,
//! cutting a cue into speaker turns and timing the segments that come out.

use harmonia_contracts::domain::TranscriptSegment;

/// Text said by one speaker inside one payload line, as markup left it (not yet collapsed).
#[derive(Debug)]
pub(super) struct Piece {
    /// Who says it, when the markup names them.
    pub(super) speaker: Option<String>,
    /// The words.
    pub(super) text: String,
    /// The time in effect at its first visible character (an inline timestamp, else the cue
    /// start); `None` while the piece holds only whitespace.
    pub(super) at: Option<u64>,
}

/// One payload line of a cue that holds some text.
#[derive(Debug)]
pub(super) struct Line {
    /// Its pieces, in order.
    pub(super) pieces: Vec<Piece>,
    /// The line's visible text with whitespace runs collapsed: what roll-up repeats compare.
    pub(super) key: String,
    /// It carries inline timestamps, which a roll-up export writes on new words only.
    pub(super) timed: bool,
    /// A change of speaker starts here even when no name is known (SRT's `- ` lines).
    pub(super) starts_turn: bool,
}

/// A cue: its timing line and its payload lines that hold text.
#[derive(Debug)]
pub(super) struct Cue {
    /// Start, milliseconds.
    pub(super) start: u64,
    /// End, milliseconds.
    pub(super) end: u64,
    /// Payload lines with text, in order.
    pub(super) lines: Vec<Line>,
}

/// A roll-up display shows at most four rows (CEA-608); comparing a few more costs nothing
/// and keeps a pathological cue of a million lines from making the comparison quadratic.
const MOST_REPEATED_LINES: usize = 8;

/// `text`'s words separated by single spaces, appended to `out` (after a space when `out`
/// already holds words).
pub(super) fn push_words(out: &mut String, text: &str) {
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
}

/// `text`'s words separated by single spaces.
pub(super) fn collapsed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_words(&mut out, text);
    out
}

/// Text with nothing to read: whitespace, or only invisible marks such as `&lrm;` decodes to.
fn invisible(text: &str) -> bool {
    text.chars().all(|c| {
        c.is_whitespace() || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}' | '\u{feff}' | '\u{202a}'..='\u{202e}')
    })
}

/// The segments of `cues` in file order. Roll-up captions (see [`roll_up`]) lose the lines a
/// cue repeats from the one before, are put in time order and have their overlaps clamped.
pub(super) fn segments(cues: &[Cue]) -> Vec<TranscriptSegment> {
    let rolling = roll_up(cues);
    let mut out = Vec::with_capacity(cues.len());
    let mut previous: &[Line] = &[];
    for cue in cues {
        let lines = if rolling { &cue.lines[repeated(previous, &cue.lines)..] } else { &cue.lines[..] };
        let start = if rolling { first_word_time(lines, cue) } else { cue.start };
        emit(turns(lines), start, cue.end, &mut out);
        if !cue.lines.is_empty() {
            previous = &cue.lines;
        }
    }
    if rolling {
        settle(&mut out);
    }
    out
}

/// A cue this short that only repeats what was on screen is a roll-up export's pause on the
/// finished line (about 10 ms), not speech.
const REPEAT_CUE_MS: u64 = 50;

/// Whether the file is roll-up captions: a cue carries inline timestamps (automatic captions
/// time their new words), a cue of a few milliseconds repeats the line before, or most cues
/// of two or more lines open with the line the previous cue ended with. A speaker who says
/// "Thank you." twice in ordinary captions is none of these.
fn roll_up(cues: &[Cue]) -> bool {
    if cues.iter().any(|c| c.lines.iter().any(|l| l.timed)) {
        return true;
    }
    let (mut multi, mut rolls) = (0_usize, 0_usize);
    let mut previous: &[Line] = &[];
    for cue in cues {
        let (Some(first), Some(last)) = (cue.lines.first(), previous.last()) else {
            if !cue.lines.is_empty() {
                previous = &cue.lines;
            }
            continue;
        };
        if cue.end.saturating_sub(cue.start) <= REPEAT_CUE_MS && repeated(previous, &cue.lines) == cue.lines.len() {
            return true;
        }
        if cue.lines.len() >= 2 {
            multi += 1;
            rolls += usize::from(first.key == last.key);
        }
        previous = &cue.lines;
    }
    rolls >= 1 && rolls * 2 > multi
}

/// How many of `current`'s leading lines repeat `previous`'s trailing lines. A cue of two or
/// more lines keeps at least its last (a roll-up cue adds a line; only a short cue of one line
/// repeats the finished line alone), and a line with inline timestamps is new (the repeated
/// lines of an automatic export are plain text).
fn repeated(previous: &[Line], current: &[Line]) -> usize {
    let fresh = current.iter().position(|l| l.timed).unwrap_or(current.len());
    let most = current.len().saturating_sub(usize::from(current.len() >= 2));
    let most = most.min(fresh).min(previous.len()).min(MOST_REPEATED_LINES);
    (1..=most)
        .rev()
        .find(|&k| current[..k].iter().zip(&previous[previous.len() - k..]).all(|(c, p)| c.key == p.key))
        .unwrap_or(0)
}

/// When the first new word of a roll-up cue is said: its inline timestamp when that lies
/// inside the cue, else the cue start.
fn first_word_time(lines: &[Line], cue: &Cue) -> u64 {
    let at = lines.iter().flat_map(|l| &l.pieces).find_map(|p| p.at);
    match at {
        Some(at) if at > cue.start && at < cue.end => at,
        _ => cue.start,
    }
}

/// One speaker's words within a cue.
#[derive(Debug)]
struct Turn {
    speaker: Option<String>,
    text: String,
}

/// The speaker turns of `lines`. Text outside any voice belongs to the turn around it (or the
/// first named speaker when it opens the cue); a new name, or a line marked as a change of
/// speaker, starts a turn.
fn turns(lines: &[Line]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    for line in lines {
        let mut forced = line.starts_turn;
        for piece in &line.pieces {
            let empty = piece.text.trim().is_empty();
            let current = turns.last_mut().filter(|_| !forced);
            let joins = match current {
                None => false,
                Some(turn) => match (&turn.speaker, &piece.speaker) {
                    (_, None) => true,
                    (Some(a), Some(b)) => a == b,
                    (None, Some(name)) => {
                        turn.speaker = Some(name.clone());
                        true
                    }
                },
            };
            if empty && (joins || piece.speaker.is_none()) {
                // Whitespace between tags, or a label on a line of its own (kept as a turn
                // below so the next line's words are the labelled speaker's).
                continue;
            }
            match turns.last_mut() {
                Some(turn) if joins => push_words(&mut turn.text, &piece.text),
                _ => turns.push(Turn { speaker: piece.speaker.clone(), text: collapsed(&piece.text) }),
            }
            forced = false;
        }
    }
    turns.retain(|t| !invisible(&t.text));
    turns
}

/// Push the segments of one cue's turns: one per turn, the cue's time shared in proportion to
/// their lengths, each at least 1 ms. A cue too short to share keeps its words as one segment.
fn emit(turns: Vec<Turn>, start: u64, end: u64, out: &mut Vec<TranscriptSegment>) {
    let count = turns.len() as u64;
    if count >= 2 && end.saturating_sub(start) >= count {
        let lengths: Vec<u64> = turns.iter().map(|t| t.text.chars().count() as u64).collect();
        let total: u128 = lengths.iter().map(|&l| u128::from(l)).sum::<u128>().max(1);
        let span = u128::from(end - start);
        let (mut from, mut said) = (start, 0_u128);
        for (index, (turn, length)) in (0_u64..).zip(turns.into_iter().zip(lengths)) {
            said += u128::from(length);
            let to = if index + 1 == count {
                end
            } else {
                let share = u64::try_from(span * said / total).unwrap_or(u64::MAX);
                // Leave a millisecond for each turn still to come.
                start.saturating_add(share).clamp(from + 1, end - (count - 1 - index))
            };
            out.push(TranscriptSegment { start_ms: from, end_ms: to, speaker: turn.speaker, text: turn.text });
            from = to;
        }
        return;
    }
    let mut turns = turns.into_iter();
    let Some(first) = turns.next() else { return };
    let mut joined = TranscriptSegment { start_ms: start, end_ms: end, speaker: first.speaker, text: first.text };
    for turn in turns {
        if joined.speaker != turn.speaker {
            joined.speaker = None;
        }
        push_words(&mut joined.text, &turn.text);
    }
    out.push(joined);
}

/// Put roll-up segments in time order and end each no later than the next starts. Segments
/// of one speaker that start together become one; a segment left with no time gives its words
/// to a neighbour said by the same speaker (the next, else the previous), so no word is lost;
/// only when neither has its speaker is it dropped.
fn settle(segments: &mut Vec<TranscriptSegment>) {
    segments.sort_by_key(|s| s.start_ms);
    let mut settled: Vec<TranscriptSegment> = Vec::with_capacity(segments.len());
    let mut rest = std::mem::take(segments).into_iter();
    let Some(mut current) = rest.next() else { return };
    for mut next in rest {
        if next.start_ms == current.start_ms && next.speaker == current.speaker {
            push_words(&mut current.text, &next.text);
            current.end_ms = current.end_ms.max(next.end_ms);
            continue;
        }
        current.end_ms = current.end_ms.min(next.start_ms);
        if current.end_ms > current.start_ms {
            settled.push(current);
        } else if current.speaker == next.speaker {
            push_words(&mut current.text, &next.text);
            next.text = current.text;
        } else {
            absorb(&mut settled, current);
        }
        current = next;
    }
    if current.end_ms > current.start_ms {
        settled.push(current);
    } else {
        absorb(&mut settled, current);
    }
    *segments = settled;
}

/// Append a segment without time to the last settled one when the same speaker says both.
fn absorb(settled: &mut [TranscriptSegment], segment: TranscriptSegment) {
    if let Some(last) = settled.last_mut().filter(|last| last.speaker == segment.speaker) {
        push_words(&mut last.text, &segment.text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Line {
        Line {
            pieces: vec![Piece { speaker: None, text: text.to_owned(), at: None }],
            key: collapsed(text),
            timed: false,
            starts_turn: false,
        }
    }

    fn voiced(parts: &[(Option<&str>, &str)]) -> Line {
        let pieces = parts
            .iter()
            .map(|(speaker, text)| Piece { speaker: speaker.map(str::to_owned), text: (*text).to_owned(), at: None })
            .collect();
        Line { pieces, key: String::new(), timed: false, starts_turn: false }
    }

    fn cue(start: u64, end: u64, lines: Vec<Line>) -> Cue {
        Cue { start, end, lines }
    }

    #[test]
    fn two_speakers_share_the_cue_in_proportion_and_never_overlap() {
        let cues = [cue(1000, 2000, vec![voiced(&[(Some("Ann"), "Hello there"), (Some("Bo"), "Hi")])])];
        let s = segments(&cues);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].start_ms, s[0].end_ms, s[0].speaker.as_deref()), (1000, 1846, Some("Ann")));
        assert_eq!((s[1].start_ms, s[1].end_ms, s[1].speaker.as_deref()), (1846, 2000, Some("Bo")));
    }

    #[test]
    fn every_turn_gets_a_millisecond_even_when_one_is_tiny() {
        let long = "word ".repeat(900);
        let cues = [cue(0, 3, vec![voiced(&[(Some("A"), &long), (Some("B"), "x"), (Some("C"), "y")])])];
        let s = segments(&cues);
        assert_eq!(s.iter().map(|s| (s.start_ms, s.end_ms)).collect::<Vec<_>>(), [(0, 1), (1, 2), (2, 3)]);
        let too_short = [cue(0, 1, vec![voiced(&[(Some("A"), "one"), (Some("B"), "two")])])];
        let s = segments(&too_short);
        assert_eq!((s.len(), s[0].speaker.as_deref(), s[0].text.as_str()), (1, None, "one two"));
    }

    #[test]
    fn unnamed_text_joins_the_speaker_around_it() {
        let cues = [cue(0, 100, vec![voiced(&[(None, "So"), (Some("Ann"), "we begin")]), line("and go on")])];
        let s = segments(&cues);
        assert_eq!((s.len(), s[0].speaker.as_deref(), s[0].text.as_str()), (1, Some("Ann"), "So we begin and go on"));
    }

    #[test]
    fn ordinary_captions_keep_a_line_said_twice() {
        let cues = [
            cue(0, 1000, vec![line("Thank you.")]),
            cue(1000, 2000, vec![line("Thank you.")]),
            cue(2000, 3000, vec![line("Next item.")]),
        ];
        assert_eq!(segments(&cues).len(), 3);
    }

    #[test]
    fn roll_up_without_timestamps_is_recognised_by_its_repeats() {
        let cues = [
            cue(0, 1000, vec![line("one two")]),
            cue(1000, 2000, vec![line("one two"), line("three four")]),
            cue(2000, 3000, vec![line("three four"), line("five six")]),
            cue(3000, 4000, vec![line("five six"), line("seven")]),
        ];
        let s = segments(&cues);
        let text: Vec<&str> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(text, ["one two", "three four", "five six", "seven"]);
    }

    #[test]
    fn a_cue_of_a_few_milliseconds_repeating_the_line_before_marks_roll_up() {
        let cues = [cue(0, 2000, vec![line("all done")]), cue(2000, 2010, vec![line("all done")])];
        assert_eq!(segments(&cues).len(), 1);
        let spoken = [cue(0, 2000, vec![line("all done")]), cue(2000, 3000, vec![line("all done")])];
        assert_eq!(segments(&spoken).len(), 2);
    }

    #[test]
    fn roll_up_segments_are_ordered_clamped_and_keep_words_that_lose_their_time() {
        let mut timed = line("c");
        timed.timed = true;
        let cues = [
            cue(0, 1500, vec![line("a")]),
            cue(1000, 2000, vec![line("a"), line("b")]),
            cue(1000, 1000, vec![line("b"), timed]),
        ];
        let s = segments(&cues);
        assert_eq!(
            s.iter().map(|s| (s.start_ms, s.end_ms, s.text.as_str())).collect::<Vec<_>>(),
            [(0, 1000, "a"), (1000, 2000, "b c")]
        );
    }
}
