//! Figures as they are said: a number with what makes it a quantity, and what changes its
//! meaning around it.
//!
//! A figure is a number as written with its currency (`$3.75 million`, `1.2 million dollars`),
//! percentage (`40%`, `40 per cent`), multiple (`2.5 times`, `3x`), unit of measure (`12
//! degrees`, `-4°C`, `8 km`, `3 hours`), time (`9.30 a.m.`, `21:30`), day with its month (`3
//! May`, `May 3rd`, `the 3rd of May`) or none (years, counts). A cardinal written in words is a
//! figure when a scale or unit follows it (`five million dollars`, `twenty-five per cent`) or
//! when it is ten or more (`forty`, `twenty-five`, `a hundred and fifty`), so spelling a
//! number out does not hide it. Scale words are applied (`1.2 million` = `1,200,000`) and
//! thousands separators dropped, so figures compare by value. Around the number:
//!
//! - its sign: `minus 12`, `−12`, `-12` (a dash alone before the digits), `negative 3`,
//!   `12 degrees below zero` / `below freezing`;
//! - its negation: a negating word (`not`, `n't`, `never`, `no`, `no longer`, `none`,
//!   `nobody`, `nothing`, `nor`, `neither`, `cannot`, `without`; `nicht`, `nie`, `kein`;
//!   `nunca`, `jamás`; `ne`, `pas`, `jamais`; `non`, `mai`; `não`, `nem`) at most six words
//!   before it in its clause (text between `.`, `,`, `;`, `:`, `!`, `?` or a line break), with
//!   no other figure in between. A year, a time or a date is not negated: "did not cut 40% in
//!   2024" negates the cut, not the year;
//! - its range: `3–5`, `3-5`, `3 to 5`, `between 3 and 5` are one figure, with both ends.
//!
//! Text is read through one normalisation ([`crate::prepare`]): zero-width characters inside
//! numbers are removed and full-width digits and signs read as ASCII.

use std::ops::Range;

use crate::prepare::{Prepared, prepare};

/// A currency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Currency {
    Dollar,
    Euro,
    Pound,
}

/// A unit of measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    Degrees,
    Kilometres,
    Metres,
    Miles,
    Kilograms,
    Tonnes,
    Litres,
    Seconds,
    Minutes,
    Hours,
    Days,
    Weeks,
    Months,
    Years,
}

/// What a figure counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Plain,
    Money(Currency),
    Percent,
    Times,
    Measure(Measure),
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
pub(crate) enum Value {
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

    /// The value times `10^scale`.
    fn scaled(&self, scale: i32) -> Self {
        match self {
            Self::Exact { mantissa, exponent } if *mantissa != 0 => {
                Self::Exact { mantissa: *mantissa, exponent: exponent + scale }
            }
            Self::Exact { .. } => self.clone(),
            Self::Digits(d) => Self::Digits(format!("{d}x{scale}")),
        }
    }
}

/// One figure of a text, with where its parts lie (byte ranges of the text as given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figure {
    /// Its value, scale applied (for a time, minutes).
    pub(crate) value: Value,
    /// The number as written, before any scale word.
    pub(crate) written: Value,
    /// The scale word's power of ten (0 without one).
    pub(crate) scale: i32,
    pub(crate) unit: Unit,
    /// A minus sign, `minus`, `negative` or `below zero` goes with it.
    pub(crate) negative: bool,
    /// A negating word governs it in its clause.
    pub(crate) negated: bool,
    /// The upper end, when the figure is a range.
    pub(crate) upper: Option<Value>,
    /// The figure as it appears (sign and range included), for the operator's message.
    pub text: String,
    /// The digits (or number words), with a currency sign written before them.
    pub number: Range<usize>,
    /// The number with its scale and unit (and the range's other end).
    pub full: Range<usize>,
    /// The sign, when one is written apart from the digits.
    pub sign: Option<Range<usize>>,
    /// The negating word(s).
    pub negation: Option<Range<usize>>,
    /// The range's other end.
    pub range_end: Option<Range<usize>>,
}

impl Figure {
    /// Everything that gives the figure its meaning: from its negation or sign to the end of
    /// its unit or range.
    pub fn context(&self) -> Range<usize> {
        let mut r = self.full.clone();
        for part in [&self.sign, &self.negation, &self.range_end].into_iter().flatten() {
            r.start = r.start.min(part.start);
            r.end = r.end.max(part.end);
        }
        r
    }

    /// Whether `evidence` grounds this figure of a post: the same value, sign, negation and
    /// range, and the same unit when the post names one (a plain number may rest on a count,
    /// a measure or a day, never on an amount, a percentage or a multiple, whose unit it
    /// would drop).
    pub(crate) fn grounded_by(&self, evidence: &Figure) -> bool {
        self.negative == evidence.negative
            && self.negated == evidence.negated
            && self.upper == evidence.upper
            && self.unit_matches(evidence)
    }

    fn unit_matches(&self, evidence: &Figure) -> bool {
        match (self.unit, evidence.unit) {
            (Unit::Plain, Unit::Plain | Unit::Day { .. } | Unit::Measure(_)) => self.value == evidence.value,
            (Unit::Plain, Unit::Time { .. }) => self.value == evidence.written,
            (Unit::Time { meridiem: a }, Unit::Time { meridiem: b }) if a != b => {
                matches!((twelve_hour(&self.value), twelve_hour(&evidence.value)), (Some(x), Some(y)) if x == y)
            }
            (mine, theirs) => mine == theirs && self.value == evidence.value,
        }
    }

    /// The same quantity, but for its magnitude, sign, negation or range: what a distortion
    /// of `evidence` looks like.
    pub(crate) fn resembles(&self, evidence: &Figure) -> bool {
        let same_number = self.written == evidence.written || self.value == evidence.value;
        let units = match (self.unit, evidence.unit) {
            (Unit::Plain, _) | (_, Unit::Plain) => true,
            (a, b) => a == b,
        };
        same_number && units
    }

    /// Whether its negation is read (not for a time, a date or a year).
    fn negatable(&self, text: &str) -> bool {
        match self.unit {
            Unit::Time { .. } | Unit::Day { .. } => false,
            Unit::Plain => !is_year(&text[self.number.clone()]),
            _ => true,
        }
    }
}

/// A four-digit number from 1000 to 2999 written plainly: a year.
fn is_year(number: &str) -> bool {
    number.len() == 4 && number.bytes().all(|b| b.is_ascii_digit()) && (b'1'..=b'2').contains(&number.as_bytes()[0])
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
/// ordinals, decades and a few units.
const GLUED_UNITS: &[&str] = &[
    "k", "m", "mn", "b", "bn", "tn", "x", "am", "pm", "st", "nd", "rd", "th", "s", "pc", "km", "kg", "h", "hrs", "min",
];

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

fn measure_word(word: &str) -> Option<Measure> {
    Some(match word {
        "degree" | "degrees" | "celsius" | "fahrenheit" => Measure::Degrees,
        "km" | "kilometre" | "kilometres" | "kilometer" | "kilometers" => Measure::Kilometres,
        "metre" | "metres" | "meter" | "meters" => Measure::Metres,
        "mile" | "miles" => Measure::Miles,
        "kg" | "kilo" | "kilos" | "kilogram" | "kilograms" => Measure::Kilograms,
        "tonne" | "tonnes" | "ton" | "tons" => Measure::Tonnes,
        "litre" | "litres" | "liter" | "liters" => Measure::Litres,
        "second" | "seconds" | "sec" | "secs" => Measure::Seconds,
        "minute" | "minutes" | "min" | "mins" => Measure::Minutes,
        "hour" | "hours" | "h" | "hrs" => Measure::Hours,
        "day" | "days" => Measure::Days,
        "week" | "weeks" => Measure::Weeks,
        "month" | "months" => Measure::Months,
        "year" | "years" => Measure::Years,
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

/// A unit written right after a number's scale at `rest` (a currency, percentage, multiple or
/// measure, in words or signs), and how many bytes it spans.
fn unit_after(rest: &str) -> Option<(Unit, usize)> {
    let spaced = rest.len() - rest.trim_start_matches([' ', '\u{a0}']).len();
    let after = &rest[spaced..];
    if let Some(degrees) = after.strip_prefix('°') {
        let letter = degrees.chars().next().filter(|c| matches!(c, 'C' | 'F' | 'c' | 'f'));
        let more = letter.map_or(0, char::len_utf8);
        let bounded = !degrees[more..].starts_with(char::is_alphanumeric);
        return bounded.then_some((Unit::Measure(Measure::Degrees), spaced + '°'.len_utf8() + more));
    }
    let (word, len) = next_word(rest);
    let (second, len2) = next_word(&rest[len..]);
    match word.as_str() {
        w if currency_word(w).is_some() => currency_word(w).map(|c| (Unit::Money(c), len)),
        "percent" | "pc" => Some((Unit::Percent, len)),
        "per" if second == "cent" => Some((Unit::Percent, len + len2)),
        "times" | "fold" => Some((Unit::Times, len)),
        w => measure_word(w).map(|m| (Unit::Measure(m), len)),
    }
}

/// Every figure of `text`, in order, with its ranges in `text` as given.
pub fn figures(text: &str) -> Vec<Figure> {
    let prepared = prepare(text);
    let mut found = read_figures(&prepared.text);
    for f in &mut found {
        map_back(f, &prepared);
    }
    found
}

/// Ranges of the prepared text mapped to the original.
fn map_back(f: &mut Figure, prepared: &Prepared<'_>) {
    f.number = prepared.back_range(f.number.clone());
    f.full = prepared.back_range(f.full.clone());
    for part in [&mut f.sign, &mut f.negation, &mut f.range_end].into_iter().flatten() {
        *part = prepared.back_range(part.clone());
    }
}

/// Every figure of a prepared text, in order, with every part around it read.
fn read_figures(text: &str) -> Vec<Figure> {
    let mut found = numbers(text);
    found.extend(figures_in_words(text));
    found.sort_by_key(|f| f.number.start);
    let mut found = ranges(text, found);
    for f in &mut found {
        signed(text, f);
    }
    // A negation governs a figure only with no other figure between them.
    let ends: Vec<usize> = found.iter().map(|f| f.full.end).collect();
    for (n, f) in found.iter_mut().enumerate() {
        if f.negatable(text) {
            negated(text, f, n.checked_sub(1).map_or(0, |p| ends[p]));
        }
        f.text = text[f.context_without_negation()].trim_end().to_owned();
        if f.text.ends_with('.') && !f.text.ends_with("a.m.") && !f.text.ends_with("p.m.") {
            f.text.pop();
        }
    }
    found
}

impl Figure {
    /// Where the figure starts as written: its sign, or its number.
    fn context_start(&self) -> usize {
        self.sign.as_ref().map_or(self.number.start, |s| s.start.min(self.number.start))
    }

    /// The figure's own span: sign, number, unit, range (a negation is words of the clause).
    fn context_without_negation(&self) -> Range<usize> {
        let mut r = self.full.clone();
        for part in [&self.sign, &self.range_end].into_iter().flatten() {
            r.start = r.start.min(part.start);
            r.end = r.end.max(part.end);
        }
        r
    }
}

/// Figures written with digits.
fn numbers(text: &str) -> Vec<Figure> {
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
        let digits_end = i;
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
        let sign_of_currency = prefix.and_then(currency_sign);
        let number_start = start - prefix.filter(|_| sign_of_currency.is_some()).map_or(0, char::len_utf8);
        let mut unit = sign_of_currency.map_or(Unit::Plain, Unit::Money);
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
            match word.as_str() {
                "a.m" | "am" | "p.m" | "pm" if scale == 0 => {
                    let pm = word.starts_with('p');
                    let minutes = clock.clone().unwrap_or_else(|| fraction.clone());
                    let written = Value::new(&format!("{digits}{fraction}"), fraction.len(), 0);
                    out.push(time(&digits, &minutes, Some(pm), written, number_start..digits_end, start..end + len));
                    i = end + len;
                    continue;
                }
                _ if clock.is_none() => {
                    if let Some((u, len)) = unit_after(&text[end..]) {
                        // A currency sign and a currency word name one currency ("$5 dollars").
                        if !(matches!(unit, Unit::Money(_)) && matches!(u, Unit::Measure(_))) {
                            unit = u;
                            end += len;
                        }
                    }
                }
                _ => {}
            }
        }
        let day = (unit == Unit::Plain && scale == 0 && fraction.is_empty() && clock.is_none())
            .then(|| day_of_month(text, &digits, start, end + glued_len))
            .flatten();
        match (clock, day) {
            (Some(minutes), _) => {
                let written = Value::new(&format!("{digits}{minutes}"), minutes.len(), 0);
                out.push(time(&digits, &minutes, None, written, number_start..digits_end, number_start..end));
            }
            (None, Some((month, span))) => out.push(Figure {
                value: Value::new(&digits, 0, 0),
                written: Value::new(&digits, 0, 0),
                scale: 0,
                unit: Unit::Day { month },
                negative: false,
                negated: false,
                upper: None,
                text: String::new(),
                number: number_start..digits_end,
                full: span,
                sign: None,
                negation: None,
                range_end: None,
            }),
            (None, None) => out.push(Figure {
                value: Value::new(&format!("{digits}{fraction}"), fraction.len(), scale),
                written: Value::new(&format!("{digits}{fraction}"), fraction.len(), 0),
                scale,
                unit,
                negative: false,
                negated: false,
                upper: None,
                text: String::new(),
                number: number_start..digits_end,
                full: number_start..trimmed_end(text, number_start, end),
                sign: None,
                negation: None,
                range_end: None,
            }),
        }
        i = end.max(i);
    }
    out
}

/// `end` moved back over white space and a unit's trailing stop ("million." ends at "n").
fn trimmed_end(text: &str, start: usize, end: usize) -> usize {
    let kept = text[start..end].trim_end();
    let kept = if kept.len() > 1 && kept.ends_with('.') && !kept.ends_with("a.m.") && !kept.ends_with("p.m.") {
        &kept[..kept.len() - 1]
    } else {
        kept
    };
    start + kept.len()
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
fn day_of_month(text: &str, digits: &str, start: usize, end: usize) -> Option<(u8, Range<usize>)> {
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
        let word = after[gap..gap + next_len].trim_end_matches('.');
        return Some((m, start..end + gap + word.len()));
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

/// Figures written in words: a cardinal followed by a scale, a unit or both ("five million
/// dollars", "twenty per cent", "three times", "two hours"), or one of ten or more
/// ("forty", "a hundred and fifty"). A small bare number word ("one of the best") is not a
/// figure.
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
        let number_end = words[at - 1].0 + words[at - 1].1.len();
        // Single letters ("five m") are not scale words once the number is spelled out.
        let scale = Some(lower(at)).filter(|w| w.len() > 2).and_then(|w| scale_word(&w));
        let mut end = number_end;
        if scale.is_some() {
            end = words[at].0 + words[at].1.len();
        }
        let unit = unit_after(&text[end..]);
        if let Some((_, len)) = unit {
            end += len;
        }
        if !hundreds && scale.is_none() && unit.is_none() && n < 10 {
            i += used;
            continue;
        }
        let (first_at, _) = words[i];
        out.push(Figure {
            value: Value::new(&n.to_string(), 0, scale.unwrap_or(0)),
            written: Value::new(&n.to_string(), 0, 0),
            scale: scale.unwrap_or(0),
            unit: unit.map_or(Unit::Plain, |(u, _)| u),
            negative: false,
            negated: false,
            upper: None,
            text: String::new(),
            number: first_at..number_end,
            full: first_at..trimmed_end(text, first_at, end),
            sign: None,
            negation: None,
            range_end: None,
        });
        // Go on from the word after the figure.
        i = words.iter().position(|(w_at, _)| *w_at >= end).unwrap_or(words.len()).max(i + 1);
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
fn time(
    hour: &str,
    minutes: &str,
    pm: Option<bool>,
    written: Value,
    number: Range<usize>,
    full: Range<usize>,
) -> Figure {
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
    Figure {
        value,
        written,
        scale: 0,
        unit: Unit::Time { meridiem: pm.is_some() },
        negative: false,
        negated: false,
        upper: None,
        text: String::new(),
        number,
        full,
        sign: None,
        negation: None,
        range_end: None,
    }
}

/// Whether exactly three digits start at `at` (a thousands group).
fn group_of_three(bytes: &[u8], at: usize) -> bool {
    bytes.len() >= at + 3
        && bytes[at..at + 3].iter().all(u8::is_ascii_digit)
        && bytes.get(at + 3).is_none_or(|b| !b.is_ascii_digit())
}

/// Pairs of figures that are one range (`3–5`, `3 to 5`, `between 3 and 5`), joined: the
/// first takes the second as its upper end (and its unit and scale, when it names none).
fn ranges(text: &str, found: Vec<Figure>) -> Vec<Figure> {
    let mut out: Vec<Figure> = Vec::with_capacity(found.len());
    for f in found {
        if let Some(low) = out.last_mut()
            && low.upper.is_none()
            && joins_range(text, low, &f)
        {
            if low.scale == 0 && f.scale != 0 {
                low.value = low.written.scaled(f.scale);
                low.scale = f.scale;
            }
            if low.unit == Unit::Plain {
                low.unit = f.unit;
            }
            low.upper = Some(f.value);
            low.range_end = Some(f.full.clone());
            low.full.end = f.full.end;
            continue;
        }
        out.push(f);
    }
    out
}

/// Whether `low` and `high` are the two ends of one range.
fn joins_range(text: &str, low: &Figure, high: &Figure) -> bool {
    let clock_or_day = |f: &Figure| matches!(f.unit, Unit::Time { .. } | Unit::Day { .. });
    if clock_or_day(low) || clock_or_day(high) || high.number.start < low.full.end {
        return false;
    }
    let units_agree = low.unit == Unit::Plain || low.unit == high.unit;
    let between = text[low.full.end..high.number.start].trim();
    let before = text[..low.context_start()].trim_end().to_lowercase();
    // "from 4,000 to 10,000" is a change, not a range.
    let dashed = matches!(between, "-" | "–" | "—") || (between == "to" && !before.ends_with("from"));
    let between_and = between == "and" && before.ends_with("between");
    units_agree && (dashed || between_and)
}

/// Read the sign written around `f`: a dash alone before its digits, `minus` or `negative`
/// before it, `below zero` or `below freezing` after it.
fn signed(text: &str, f: &mut Figure) {
    if matches!(f.unit, Unit::Time { .. } | Unit::Day { .. }) {
        return;
    }
    let before = &text[..f.number.start];
    let dash = before.chars().next_back().filter(|c| matches!(c, '-' | '−' | '–'));
    if let Some(dash) = dash {
        let ahead = before[..before.len() - dash.len_utf8()].chars().next_back();
        if ahead.is_none_or(|c| c.is_whitespace() || matches!(c, '(' | '[' | '"' | '“' | ':')) {
            f.negative = true;
            f.sign = Some(f.number.start - dash.len_utf8()..f.number.start);
            return;
        }
    }
    let trimmed = before.trim_end();
    let word_start =
        trimmed.char_indices().rev().find(|(_, c)| !c.is_alphabetic()).map_or(0, |(at, c)| at + c.len_utf8());
    let word = trimmed[word_start..].to_lowercase();
    if matches!(word.as_str(), "minus" | "negative") {
        f.negative = true;
        f.sign = Some(word_start..trimmed.len());
        return;
    }
    let after = &text[f.full.end..];
    let gap = after.len() - after.trim_start().len();
    for phrase in ["below zero", "below freezing"] {
        if after[gap..].to_lowercase().starts_with(phrase) {
            f.negative = true;
            f.sign = Some(f.full.end + gap..f.full.end + gap + phrase.len());
            return;
        }
    }
}

/// Words that negate what follows them in their clause.
const NEGATORS: &[&str] = &[
    "not", "never", "no", "none", "nobody", "nothing", "nor", "neither", "cannot", "without", "nicht", "nie",
    "niemals", "kein", "keine", "keinen", "keinem", "nunca", "jamás", "jamas", "ne", "pas", "jamais", "non", "mai",
    "não", "nao", "nem",
];

/// How many words before a figure a negation may stand.
const NEGATION_REACH: usize = 6;

/// How far back, in bytes, those words are looked for.
const NEGATION_BYTES: usize = 160;

/// Read whether a negating word governs `f`: at most [`NEGATION_REACH`] words before it, in
/// its clause, after `floor` (where the figure before it starts).
fn negated(text: &str, f: &mut Figure, floor: usize) {
    let start = f.context().start;
    // Six words are never far back: the clause is looked for only that far, so a long text
    // without punctuation is not read back to its start for every figure.
    let mut reach = start.saturating_sub(NEGATION_BYTES).max(floor);
    while !text.is_char_boundary(reach) {
        reach += 1;
    }
    let clause_start =
        text[reach..start].rfind(['.', ',', ';', ':', '!', '?', '\n']).map_or(reach, |at| reach + at + 1);
    let from = clause_start.max(floor);
    if from >= start {
        return;
    }
    let words = words_at(&text[from..start]);
    for (n, (at, word)) in words.iter().rev().enumerate() {
        if n >= NEGATION_REACH || word.chars().any(|c| c.is_ascii_digit()) {
            return;
        }
        let lower = word.to_lowercase();
        let at = from + at;
        let mut end = at + word.len();
        // "didn't", "can’t": the word before the apostrophe ends in n.
        let contraction = ["'t", "’t"].into_iter().find(|t| lower.ends_with('n') && text[end..].starts_with(t));
        if !NEGATORS.contains(&lower.as_str()) && contraction.is_none() {
            continue;
        }
        f.negated = true;
        end += contraction.map_or(0, str::len);
        // "no longer": the whole phrase.
        let rest = &text[end..];
        if lower == "no" && rest.trim_start().to_lowercase().starts_with("longer") {
            end += rest.len() - rest.trim_start().len() + "longer".len();
        }
        // "did not": the auxiliary with it.
        let auxiliary = words.iter().rev().nth(n + 1).filter(|(_, prev)| {
            lower == "not"
                && matches!(
                    prev.to_lowercase().as_str(),
                    "did"
                        | "do"
                        | "does"
                        | "was"
                        | "were"
                        | "is"
                        | "are"
                        | "had"
                        | "has"
                        | "have"
                        | "will"
                        | "would"
                        | "could"
                        | "can"
                        | "should"
                )
        });
        let start_at = auxiliary.map_or(at, |(prev_at, _)| from + prev_at);
        f.negation = Some(start_at..end);
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        figures(text).into_iter().map(|f| f.text).collect()
    }

    #[test]
    fn figures_are_read_with_their_units_and_scale() {
        assert_eq!(
            texts("The extra service cost the city 1.2 million dollars, $3.75 million in all, 2.5 times more."),
            ["1.2 million dollars", "$3.75 million", "2.5 times"]
        );
        assert_eq!(
            texts("At 9.30 a.m. on 3 May 2025, 40% (1,200 riders) came; 3x more."),
            ["9.30 a.m.", "3 May", "2025", "40%", "1,200", "3x"]
        );
        assert_eq!(texts("covid19, item_2, 3b9e and 4G are names, not figures"), Vec::<String>::new());
        assert_eq!(texts("5k riders, 10am, the 1st, the 1990s"), ["5k", "10am", "1", "1990"]);
        assert_eq!(
            texts("It fell to 12°C, then -4 °F, 8 km away, 3 hours later"),
            ["12°C", "-4 °F", "8 km", "3 hours"]
        );
    }

    #[test]
    fn the_sign_negation_and_range_are_read_around_the_number() {
        let f = figures("Overnight it fell to minus 12 degrees on three nights in a row.");
        assert_eq!((f[0].text.as_str(), f[0].negative), ("minus 12 degrees", true));
        let f = figures("It was 12 degrees below zero.");
        assert_eq!((f[0].negative, f[0].text.as_str()), (true, "12 degrees below zero"));
        let f = figures("We did not cut 40% of the ranger jobs in 2024.");
        assert!(f[0].negated, "the cut is negated");
        assert_eq!(
            f[0].negation.clone().map(|r| &"We did not cut 40% of the ranger jobs in 2024."[r]),
            Some("did not")
        );
        assert!(!f[1].negated, "a year is not");
        let f = figures("They didn't add 30 buses, but 12.");
        assert!(f[0].negated && !f[1].negated);
        let f = figures("Between 3 and 5 million people and 3–5 hours, 10 to 20%.");
        assert_eq!(
            texts("Between 3 and 5 million people and 3–5 hours, 10 to 20%."),
            ["3 and 5 million", "3–5 hours", "10 to 20%"]
        );
        assert_eq!(f[0].value, Value::new("3", 0, 6), "the scale applies to both ends");
        assert!(f.iter().all(|f| f.upper.is_some()));
        assert_eq!(texts("The score was 3-2 in 2024-25"), ["3-2", "2024-25"]);
        assert_eq!(texts("It grew from 4,000 to 10,000 riders"), ["4,000", "10,000"], "a change is not a range");
    }

    #[test]
    fn hidden_characters_and_full_width_digits_read_as_digits() {
        let text = "Up ８０％ and 4\u{200b}0% more";
        let f = figures(text);
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].unit, &text[f[0].full.clone()]), (Unit::Percent, "８０％"));
        assert_eq!(f[1].value, Value::new("40", 0, 0));
    }

    #[test]
    fn number_words_of_ten_or_more_are_figures() {
        assert_eq!(
            texts(
                "five million dollars, twenty-five per cent, forty two percent, three times, one of the best, forty rangers, two hours"
            ),
            ["five million dollars", "twenty-five per cent", "forty two percent", "three times", "forty", "two hours"]
        );
        assert_eq!(
            texts("one hundred and fifty per cent, two hundred thousand riders, three hundred"),
            ["one hundred and fifty per cent", "two hundred thousand", "three hundred"]
        );
    }

    proptest::proptest! {
        /// Any text is read without a panic, and every range lies on character boundaries of it.
        #[test]
        fn any_text_is_read(text in "\\PC{0,80}") {
            for f in figures(&text) {
                for r in [Some(f.number.clone()), Some(f.full.clone()), f.sign.clone(), f.negation.clone(), f.range_end.clone(), Some(f.context())].into_iter().flatten() {
                    proptest::prop_assert!(r.start <= r.end && r.end <= text.len());
                    proptest::prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
                }
            }
        }
    }
}
