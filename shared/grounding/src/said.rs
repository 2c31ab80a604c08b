//! A post's quotations in the source's own characters.

use harmonia_contracts::domain::locate;

use crate::quotations;

/// `body` with each quotation that matches a span of `cited` only after the speech's match
/// form (a straight quote for a curly one, one space for two, `...` for `…`) replaced by that
/// span as the evidence writes it; the rest of `body` is kept byte for byte. A quotation that
/// is already exact, or matches none of `cited`, is left as it is (policy judges it).
pub fn as_said(body: &str, cited: &[&str]) -> String {
    let mut out = String::with_capacity(body.len());
    let mut from = 0;
    let base = body.as_ptr() as usize;
    let mut quoted: Vec<(usize, &str)> =
        quotations(body).into_iter().map(|q| (q.as_ptr() as usize - base, q)).collect();
    quoted.sort_by_key(|(at, _)| *at);
    for (at, q) in quoted {
        if at < from || cited.iter().any(|c| c.contains(q)) {
            continue;
        }
        let Some(said) = cited.iter().find_map(|c| locate(c, q).first().map(|r| &c[r.clone()])) else { continue };
        out.push_str(&body[from..at]);
        out.push_str(said);
        from = at + q.len();
    }
    out.push_str(&body[from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quotation_takes_the_sources_characters_and_nothing_else_changes() {
        let cited = ["The crew said it’s done… twice."];
        assert_eq!(as_said("They said “it's done...” at last.", &cited), "They said “it’s done…” at last.");
        assert_eq!(as_said("They said “it’s done…” at last.", &cited), "They said “it’s done…” at last.");
        assert_eq!(as_said("They said “never said”.", &cited), "They said “never said”.");
    }
}
