//! Grounding of a draft's figures and quotations in the evidence it cites.
//!
//! A figure is a number as written with what makes it a quantity: a currency (`$3.75
//! million`, `1.2 million dollars`), a percentage (`40%`, `40 per cent`), a multiple (`2.5
//! times`, `3x`), a time (`9.30 a.m.`, `21:30`), a day with its month (`3 May`, `May 3rd`,
//! `the 3rd of May`: the month must match too) or a plain number (years, counts). A cardinal
//! written in words counts when a scale or unit follows it (`five million dollars`,
//! `twenty-five per cent`, `three times`), so spelling a number out does not hide it.
//! Scale words are applied (`1.2 million` = `1,200,000`), thousands separators dropped, so
//! a figure is compared by value. A draft's figure is grounded when some figure of the cited
//! evidence has the same value and, when the draft names a unit, the same unit (a plain
//! number in the draft may also match the number as written in the evidence, so "1.2" is
//! grounded by "1.2 million"). "Cost the city 1." carries the figure 1, which "1.2 million
//! dollars" does not ground.
//!
//! A quotation (text between “ ”, „ “, « » or a pair of `"`) must be an exact span of a
//! cited evidence text, starting and ending at word boundaries (so "cost the city 1." is
//! not a span of "cost the city 1.2 million").

/// A currency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Currency {
    Dollar,
    Euro,
    Pound,
}

/// What a figure counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Plain,
    Money(Currency),
    Percent,
    Times,
    /// Minutes after midnight (or after noon or midnight when no a.m./p.m. was given).
    Time {
        meridiem: bool,
    },
    /// A day of the month written with its month (`3 May`, `May 3`, `3rd of May`), 1-12.
    Day {
        month: u8,
    },
}

/// A decimal value: `mantissa × 10^exponent`, with no trailing zeros in the mantissa (so
/// equal values are equal structs), or the digits as written when they do not fit.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    Exact { mantissa: u128, exponent: i32 },
    Digits(String),
}

impl Value {
    fn new(digits: &str, fraction_digits: usize, scale: i32) -> Self {
        match digits.parse::<u128>() {
            Ok(mut mantissa) => {
                let mut exponent = scale - i32::try_from(fraction_digits).unwrap_or(i32::MAX / 2);
                while mantissa != 0 && mantissa % 10 == 0 {
                    mantissa /= 10;
                    exponent += 1;
                }
                if mantissa == 0 {
                    exponent = 0;
                }
                Self::Exact { mantissa, exponent }
            }
            // Digits too many for the mantissa are compared as written, exponent included.
            Err(_) => Self::Digits(format!("{digits}e{scale}-{fraction_digits}")),
        }
    }
}

/// One figure of a text.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Figure {
    /// Its value, scale applied (for a time, minutes).
    value: Value,
    /// The number as written, before any scale word.
    written: Value,
    unit: Unit,
    /// The figure as it appears, for the operator's message.
    text: String,
}

impl Figure {
    /// Whether `evidence` grounds this figure of the draft.
    fn grounded_by(&self, evidence: &Figure) -> bool {
        match (self.unit, evidence.unit) {
            (Unit::Plain, _) => self.value == evidence.value || self.value == evidence.written,
            (Unit::Time { meridiem: a }, Unit::Time { meridiem: b }) if a != b => {
                matches!((twelve_hour(&self.value), twelve_hour(&evidence.value)), (Some(x), Some(y)) if x == y)
            }
            (mine, theirs) => mine == theirs && self.value == evidence.value,
        }
    }
}

/// A time's minutes on a twelve-hour clock.
fn twelve_hour(value: &Value) -> Option<u128> {
    match value {
        Value::Exact { mantissa, exponent } => {
            let minutes = mantissa.checked_mul(10u128.checked_pow(u32::try_from(*exponent).ok()?)?)?;
            Some(minutes % (12 * 60))
        }
        Value::Digits(_) => None,
    }
}

/// What may be written straight after a number's digits: scales, multiples, times of day,
/// ordinals and decades.
const GLUED_UNITS: &[&str] = &["k", "m", "mn", "b", "bn", "tn", "x", "am", "pm", "st", "nd", "rd", "th", "s", "pc"];

fn scale_word(word: &str) -> Option<i32> {
    Some(match word {
        "thousand" | "k" => 3,
        "million" | "m" | "mn" | "millions" => 6,
        "billion" | "bn" | "b" | "billions" => 9,
        "trillion" | "tn" | "trillions" => 12,
        _ => return None,
    })
}

fn currency_word(word: &str) -> Option<Currency> {
    Some(match word {
        "dollar" | "dollars" | "usd" => Currency::Dollar,
        "euro" | "euros" | "eur" => Currency::Euro,
        "pound" | "pounds" | "gbp" => Currency::Pound,
        _ => return None,
    })
}

fn currency_sign(ch: char) -> Option<Currency> {
    Some(match ch {
        '$' => Currency::Dollar,
        '€' => Currency::Euro,
        '£' => Currency::Pound,
        _ => return None,
    })
}

/// The next word after `rest` (letters and dots, lower case) and the bytes it spans with
/// its leading white space.
fn next_word(rest: &str) -> (String, usize) {
    let trimmed = rest.trim_start_matches([' ', '\u{a0}']);
    let skipped = rest.len() - trimmed.len();
    let len = trimmed.find(|c: char| !(c.is_alphabetic() || c == '.' || c == '\'')).unwrap_or(trimmed.len());
    let word = trimmed[..len].trim_end_matches('.').to_lowercase();
    (word, skipped + len)
}

/// Every figure of `text`.
fn figures(text: &str) -> Vec<Figure> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() || (i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) {
            i += 1;
            continue;
        }
        let start = i;
        let mut digits = String::new();
        let mut fraction = String::new();
        let mut clock: Option<String> = None;
        while i < bytes.len() {
            let c = bytes[i];
            if c.is_ascii_digit() {
                digits.push(char::from(c));
                i += 1;
            } else if c == b',' && group_of_three(bytes, i + 1) && fraction.is_empty() {
                i += 1;
            } else {
                break;
            }
        }
        if i + 1 < bytes.len() && matches!(bytes[i], b'.' | b':') && bytes[i + 1].is_ascii_digit() {
            let separator = bytes[i];
            i += 1;
            let mut part = String::new();
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                part.push(char::from(bytes[i]));
                i += 1;
            }
            if separator == b':' {
                clock = Some(part);
            } else {
                fraction = part;
            }
        }
        let mut end = i;
        // Letters glued to the digits are a unit (`5k`, `3x`, `10am`, `1st`) or make the whole
        // token a name or a code (`3b9e`, `4G`), which is not a figure.
        let glued_len = text[end..].find(|c: char| !c.is_alphanumeric()).unwrap_or(text.len() - end);
        let glued = text[end..end + glued_len].to_lowercase();
        if !glued.is_empty() && !GLUED_UNITS.contains(&glued.as_str()) {
            i = end + glued_len;
            continue;
        }
        let prefix = text[..start].chars().next_back();
        let mut unit = prefix.and_then(currency_sign).map_or(Unit::Plain, Unit::Money);
        let mut scale = 0;
        let rest = &text[end..];
        if rest.starts_with('%') {
            unit = Unit::Percent;
            end += 1;
        } else if let Some(after_x) = rest.strip_prefix(['x', '×'])
            && !after_x.starts_with(char::is_alphanumeric)
        {
            unit = Unit::Times;
            end += rest.len() - after_x.len();
        } else {
            let (word, len) = next_word(rest);
            if let Some(s) = scale_word(&word).filter(|_| clock.is_none()) {
                scale = s;
                end += len;
            }
            let (word, len) = next_word(&text[end..]);
            let (second, len2) = next_word(&text[end + len..]);
            match word.as_str() {
                w if currency_word(w).is_some() => {
                    unit = currency_word(w).map_or(unit, Unit::Money);
                    end += len;
                }
                "percent" | "pc" => {
                    unit = Unit::Percent;
                    end += len;
                }
                "per" if second == "cent" => {
                    unit = Unit::Percent;
                    end += len + len2;
                }
                "times" | "fold" => {
                    unit = Unit::Times;
                    end += len;
                }
                "a.m" | "am" | "p.m" | "pm" if scale == 0 => {
                    let pm = word.starts_with('p');
                    let minutes = clock.clone().unwrap_or_else(|| fraction.clone());
                    let written = Value::new(&format!("{digits}{fraction}"), fraction.len(), 0);
                    out.push(time(&digits, &minutes, Some(pm), written, &text[start..end + len]));
                    i = end + len;
                    continue;
                }
                _ => {}
            }
        }
        // A scale or unit word was read with its stop ("million."), which is punctuation.
        let figure_text = text[start..end].trim_end().trim_end_matches('.').to_owned();
        let day = (unit == Unit::Plain && scale == 0 && fraction.is_empty() && clock.is_none())
            .then(|| day_of_month(text, &digits, start, end + glued_len))
            .flatten();
        match (clock, day) {
            (Some(minutes), _) => {
                let written = Value::new(&format!("{digits}{minutes}"), minutes.len(), 0);
                out.push(time(&digits, &minutes, None, written, &figure_text));
            }
            (None, Some((month, span))) => out.push(Figure {
                value: Value::new(&digits, 0, 0),
                written: Value::new(&digits, 0, 0),
                unit: Unit::Day { month },
                text: text[span].trim_end_matches('.').to_owned(),
            }),
            (None, None) => out.push(Figure {
                value: Value::new(&format!("{digits}{fraction}"), fraction.len(), scale),
                written: Value::new(&format!("{digits}{fraction}"), fraction.len(), 0),
                unit,
                text: match unit {
                    Unit::Money(_) if prefix.and_then(currency_sign).is_some() => {
                        format!("{}{figure_text}", prefix.map(String::from).unwrap_or_default())
                    }
                    _ => figure_text,
                },
            }),
        }
        i = end.max(i);
    }
    out.extend(figures_in_words(text));
    out
}

/// Month names; a date names one in full or by its first three or four letters (`Sept.`).
const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The month (1-12) `word` names, capitalised as a date writes it ("May", not the verb
/// "may").
fn month(word: &str) -> Option<u8> {
    let word = word.trim_end_matches('.');
    if !word.starts_with(char::is_uppercase) || word.chars().count() < 3 {
        return None;
    }
    let lower = word.to_lowercase();
    let at = MONTHS.iter().position(|m| *m == lower || (lower.chars().count() <= 4 && m.starts_with(&lower)))?;
    u8::try_from(at + 1).ok()
}

/// When the number `digits` at `start..end` (any ordinal suffix included) is a day of the
/// month written with its month — "3 May", "3rd of May", "May 3" — the month and the span
/// of the whole date.
fn day_of_month(text: &str, digits: &str, start: usize, end: usize) -> Option<(u8, std::ops::Range<usize>)> {
    if !digits.parse::<u8>().is_ok_and(|d| (1..=31).contains(&d)) {
        return None;
    }
    let after = &text[end..];
    let mut gap = after.len() - after.trim_start().len();
    if after.trim_start().starts_with("of ") {
        let of = &after[gap + 2..];
        gap += 2 + of.len() - of.trim_start().len();
    }
    let next_len = after[gap..].find(|c: char| !(c.is_alphabetic() || c == '.')).unwrap_or(after.len() - gap);
    if gap > 0
        && let Some(m) = month(&after[gap..gap + next_len])
    {
        return Some((m, start..end + gap + next_len));
    }
    let before = text[..start].trim_end_matches(' ');
    let word_start = before
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphabetic() || *c == '.'))
        .map_or(0, |(at, c)| at + c.len_utf8());
    // The month must be its own word, apart from the number ("Sept. 6", not "Sept.6").
    let m = month(&before[word_start..]).filter(|_| before.len() < start)?;
    Some((m, word_start..end))
}

/// Cardinal number words and their values.
const NUMBER_WORDS: [(&str, u32); 28] = [
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
];

fn number_word(word: &str) -> Option<u32> {
    NUMBER_WORDS.iter().find(|(w, _)| *w == word).map(|(_, n)| *n)
}

/// The value of a cardinal written in words: `five`, `twenty-five`, `twenty five`.
fn cardinal(words: &[(usize, &str)]) -> Option<(u32, usize)> {
    let (_, first) = words.first()?;
    let lower = first.to_lowercase();
    if let Some((tens, ones)) = lower.split_once('-') {
        let (t, o) = (number_word(tens)?, number_word(ones)?);
        return (t >= 20 && t % 10 == 0 && (1..10).contains(&o)).then_some((t + o, 1));
    }
    let n = number_word(&lower)?;
    let ones = words.get(1).and_then(|(_, w)| number_word(&w.to_lowercase())).filter(|o| (1..10).contains(o));
    match ones {
        Some(o) if n >= 20 && n % 10 == 0 => Some((n + o, 2)),
        _ => Some((n, 1)),
    }
}

/// Figures written in words ("five million dollars", "twenty per cent", "three times"): a
/// cardinal followed by a scale, a unit, or both. A bare number word ("one of the best") is
/// not a figure.
fn figures_in_words(text: &str) -> Vec<Figure> {
    let words = words_at(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let Some((mut n, used)) = cardinal(&words[i..]) else {
            i += 1;
            continue;
        };
        let mut at = i + used;
        let lower = |k: usize| words.get(k).map(|(_, w)| w.to_lowercase()).unwrap_or_default();
        // "one hundred and fifty": hundreds, then an optional "and" and the rest below 100.
        let hundreds = lower(at) == "hundred";
        if hundreds {
            n *= 100;
            at += 1;
            let and = usize::from(lower(at) == "and");
            if let Some((rest, used)) =
                cardinal(&words[(at + and).min(words.len())..]).filter(|(r, _)| (1..100).contains(r))
            {
                n += rest;
                at += and + used;
            }
        }
        // Single letters ("five m") are not scale words once the number is spelled out.
        let scale = Some(lower(at)).filter(|w| w.len() > 2).and_then(|w| scale_word(&w));
        if scale.is_some() {
            at += 1;
        }
        let unit = match lower(at).as_str() {
            w if currency_word(w).is_some() => currency_word(w).map(Unit::Money),
            "percent" => Some(Unit::Percent),
            "per" if lower(at + 1) == "cent" => Some(Unit::Percent),
            "times" | "fold" => Some(Unit::Times),
            _ => None,
        };
        if !hundreds && scale.is_none() && unit.is_none() {
            i += used;
            continue;
        }
        let last = match unit {
            Some(Unit::Percent) if lower(at) == "per" => at + 1,
            Some(_) => at,
            None => at - 1,
        };
        let (first_at, _) = words[i];
        let (last_at, last_word) = words[last];
        out.push(Figure {
            value: Value::new(&n.to_string(), 0, scale.unwrap_or(0)),
            written: Value::new(&n.to_string(), 0, 0),
            unit: unit.unwrap_or(Unit::Plain),
            text: text[first_at..last_at + last_word.len()].to_owned(),
        });
        i = last + 1;
    }
    out
}

/// The words of `text` (letters, digits and hyphens) with their byte offsets.
fn words_at(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match (c.is_alphanumeric() || c == '-', start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                out.push((from, &text[from..at]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(from) = start {
        out.push((from, &text[from..]));
    }
    out
}

/// A time of day from its hour and minute digits, with a.m./p.m. when given.
fn time(hour: &str, minutes: &str, pm: Option<bool>, written: Value, text: &str) -> Figure {
    let on_the_hour = if minutes.is_empty() { "0" } else { minutes };
    let clock = match (hour.parse::<u128>(), on_the_hour.parse::<u128>()) {
        (Ok(h), Ok(m)) => {
            let h = match pm {
                Some(true) => h % 12 + 12,
                Some(false) => h % 12,
                None => h,
            };
            h.checked_mul(60).and_then(|t| t.checked_add(m))
        }
        _ => None,
    };
    // Digits too many for a time of day are compared as written.
    let value = clock.map_or_else(|| Value::Digits(format!("{hour}:{minutes}")), |t| Value::new(&t.to_string(), 0, 0));
    Figure { value, written, unit: Unit::Time { meridiem: pm.is_some() }, text: text.trim_end().to_owned() }
}

/// Whether exactly three digits start at `at` (a thousands group).
fn group_of_three(bytes: &[u8], at: usize) -> bool {
    bytes.len() >= at + 3
        && bytes[at..at + 3].iter().all(u8::is_ascii_digit)
        && bytes.get(at + 3).is_none_or(|b| !b.is_ascii_digit())
}

/// The figures of `body` that no figure of `evidence` grounds, as written, in order, each
/// once.
pub(crate) fn ungrounded_figures(body: &str, evidence: &[&str]) -> Vec<String> {
    let known: Vec<Figure> = evidence.iter().flat_map(|e| figures(e)).collect();
    let mut out: Vec<String> = Vec::new();
    for f in figures(body) {
        if !known.iter().any(|e| f.grounded_by(e)) && !out.contains(&f.text) {
            out.push(f.text);
        }
    }
    out
}

/// The quotations of `text`: spans between typographic quote pairs or pairs of `"`.
fn quotations(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (open, close) in [('“', '”'), ('„', '“'), ('«', '»'), ('"', '"')] {
        let mut rest = text;
        while let Some(at) = rest.find(open) {
            let inner = &rest[at + open.len_utf8()..];
            let Some(end) = inner.find(close) else { break };
            let quoted = inner[..end].trim();
            if !quoted.is_empty() {
                out.push(quoted);
            }
            rest = &inner[end + close.len_utf8()..];
        }
    }
    out
}

/// Whether `quote` occurs in `text` as a span that does not start or end inside a word or a
/// number ("cost the city 1." is in "cost the city 1.2 million" only as a cut figure).
fn exact_span(text: &str, quote: &str) -> bool {
    text.match_indices(quote).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + quote.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The quotations of `body` that are not an exact span of any `evidence` text.
pub(crate) fn inexact_quotations<'a>(body: &'a str, evidence: &[&str]) -> Vec<&'a str> {
    quotations(body).into_iter().filter(|q| !evidence.iter().any(|e| exact_span(e, q))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<String> {
        figures(text).into_iter().map(|f| f.text).collect()
    }

    #[test]
    fn figures_are_read_with_their_units_and_scale() {
        assert_eq!(
            values("The extra service cost the city 1.2 million dollars, $3.75 million in all, 2.5 times more."),
            ["1.2 million dollars", "$3.75 million", "2.5 times"]
        );
        assert_eq!(
            values("At 9.30 a.m. on 3 May 2025, 40% (1,200 riders) came; 3x more."),
            ["9.30 a.m.", "3 May", "2025", "40%", "1,200", "3x"]
        );
        assert_eq!(values("covid19, item_2, 3b9e and 4G are names, not figures"), Vec::<String>::new());
        assert_eq!(values("5k riders, 10am, the 1st, the 1990s"), ["5k", "10am", "1", "1990"]);
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
            ("1.2", "1.2 million dollars"),
            ("2025", "in 2025"),
        ];
        for (draft, evidence) in cases {
            assert!(ungrounded_figures(draft, &[evidence]).is_empty(), "{draft} vs {evidence}");
        }
    }

    #[test]
    fn distorted_figures_are_named() {
        let evidence = ["The extra service cost the city 1.2 million dollars.", "It cost $3.75 million.", "2.5 times"];
        assert_eq!(ungrounded_figures("The extra service cost the city 1.", &evidence), ["1"]);
        assert_eq!(ungrounded_figures("It cost $3.", &evidence), ["$3"]);
        assert_eq!(ungrounded_figures("Ridership grew 2.", &evidence), ["2"]);
        assert_eq!(ungrounded_figures("It cost $3.75 billion.", &evidence), ["$3.75 billion"]);
        assert_eq!(ungrounded_figures("It cost €3.75 million.", &evidence), ["€3.75 million"]);
        assert_eq!(ungrounded_figures("A 1.2% rise", &evidence), ["1.2%"]);
        assert_eq!(ungrounded_figures("At 9.30 p.m.", &["At 9.30 a.m."]), ["9.30 p.m."]);
    }

    #[test]
    fn a_day_is_read_with_its_month() {
        assert_eq!(
            values("On 3 May, May 4th, the 5th of June and Sept. 6 it may 7 times"),
            ["3 May", "May 4th", "5th of June", "Sept. 6", "7 times"]
        );
        let evidence = ["The first bus leaves on 3 May 2025, 12 riders on board."];
        for grounded in ["on May 3, 2025", "on the 3rd of May", "12 riders, 3 of them"] {
            assert!(ungrounded_figures(grounded, &evidence).is_empty(), "{grounded}");
        }
        assert_eq!(ungrounded_figures("on 3 June 2025", &evidence), ["3 June"]);
        assert_eq!(ungrounded_figures("on May 12", &evidence), ["May 12"]);
    }

    #[test]
    fn figures_written_in_words_are_figures() {
        assert_eq!(
            values("five million dollars, twenty-five per cent, forty two percent, three times, one of the best"),
            ["five million dollars", "twenty-five per cent", "forty two percent", "three times"]
        );
        assert_eq!(
            values("one hundred and fifty per cent, two hundred thousand riders, three hundred"),
            ["one hundred and fifty per cent", "two hundred thousand", "three hundred"]
        );
        assert!(ungrounded_figures("a rise of one hundred and fifty per cent", &["a rise of 150%"]).is_empty());
        assert!(ungrounded_figures("two hundred thousand riders", &["200,000 riders"]).is_empty());
        let evidence = ["The service cost $5 million, 25% more, and ridership grew 3 times."];
        for grounded in ["five million dollars", "twenty-five per cent", "three times", "one of the best, ten of us"] {
            assert!(ungrounded_figures(grounded, &evidence).is_empty(), "{grounded}");
        }
        assert_eq!(ungrounded_figures("It cost five billion dollars.", &evidence), ["five billion dollars"]);
        assert_eq!(ungrounded_figures("It cost $5 million.", &["It cost five million dollars."]), Vec::<String>::new());
    }

    #[test]
    fn quotations_must_be_exact_spans() {
        let evidence = ["The extra service cost the city 1.2 million dollars."];
        assert!(inexact_quotations("She said “cost the city 1.2 million dollars”.", &evidence).is_empty());
        assert_eq!(
            inexact_quotations("She said “cost the city 1.” and \"it was cheap\".", &evidence),
            ["cost the city 1.", "it was cheap"]
        );
    }
}
