//! Links in a draft and their hosts, read the way a browser or a platform's auto-linker reads
//! them: the scheme in any case (`HTTPS://`), internationalised names mapped to their
//! punycode form and full-width or ideographic dots (`。`, `．`) read as dots (UTS #46, by
//! the `url` crate), bare domains without a scheme (`evil.net/win`, `www.evil.net`), also
//! when punctuation glues them to the word before (`Tickets:evil.net`), and the
//! host after any user info (`https://trusted@evil.net` goes to `evil.net`).

use url::{Host, Url};

/// Dots that domain-name mapping reads as `.`.
const DOTS: [char; 4] = ['.', '。', '．', '｡'];

/// Top-level domains an auto-linker links without a scheme, `www.` or a path.
const BARE_TLDS: &[&str] = &[
    "com", "net", "org", "io", "co", "ai", "app", "dev", "gov", "edu", "info", "biz", "me", "ly", "xyz", "uk", "de",
    "fr", "es", "it", "nl", "eu", "us", "ca", "au", "in", "jp", "cn", "ru", "br", "tv", "news", "blog", "site",
    "online", "shop", "store", "tech", "link", "click", "top",
];

/// Characters trimmed from the end of a link (sentence punctuation and closing quotes).
const TRAILING: [char; 14] = ['.', ',', ')', ']', '!', '?', ';', ':', '"', '\'', '”', '’', '»', '。'];

/// The links in `text`, as they appear: `http://` or `https://` in any case up to white
/// space, any other `scheme://` word, and bare domains.
pub fn links(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter_map(|word| {
            let lower = word.to_ascii_lowercase();
            // ASCII lower-casing keeps byte offsets, so `lower`'s index is `word`'s.
            let opened = word.trim_start_matches(['(', '"', '\'', '“', '[']);
            let link = match lower.find("https://").or_else(|| lower.find("http://")) {
                Some(start) => &word[start..],
                // Another scheme (`ftp://`, `javascript://`) is a link too, and refused.
                None if lower.contains("://") => opened,
                None => bare(opened).or_else(|| glued(opened))?,
            };
            Some(link.trim_end_matches(TRAILING)).filter(|l| !l.is_empty())
        })
        .collect()
}

/// `word` when it is a bare domain an auto-linker would link.
fn bare(word: &str) -> Option<&str> {
    let word = word.trim_end_matches(TRAILING);
    let host = word.split(['/', '?', '#']).next()?;
    // An e-mail address is not a link; user info with a path is (`a.com@evil.net/x`).
    if host.contains('@') && !word.contains('/') {
        return None;
    }
    let host = host.rsplit('@').next()?;
    let host = host.split(':').next()?;
    let labels: Vec<&str> = host.split(DOTS).collect();
    let tld = labels.last()?.to_lowercase();
    let well_formed = labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && tld.chars().count() >= 2
        && (tld.chars().all(char::is_alphabetic) || tld.starts_with("xn--"));
    let linked = host.to_lowercase().starts_with("www") || word.len() > host.len() || BARE_TLDS.contains(&tld.as_str());
    (well_formed && linked).then_some(word)
}

/// A bare domain glued by punctuation to the text before it (`Tickets:evil.net/x`,
/// `—evil.net`): an auto-linker starts a link after any character but a letter, a digit or
/// one that would make the domain part of something longer (an e-mail address, a tag, a
/// name or a number).
fn glued(word: &str) -> Option<&str> {
    word.char_indices()
        .filter(|(_, c)| !(c.is_alphanumeric() || "@$#_-.%~+&=?".contains(*c) || DOTS.contains(c)))
        .find_map(|(at, c)| bare(&word[at + c.len_utf8()..]))
}

/// Why a link is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It does not parse as an http(s) URL with a host.
    Unreadable,
    /// It carries user info before its host (`https://trusted@evil.net`).
    UserInfo(String),
    /// Its host is an IP address.
    IpLiteral(String),
    /// Its host is not on the allow-list.
    Outside(String),
}

impl Refusal {
    /// A sentence for the operator naming the host.
    pub fn sentence(&self) -> String {
        match self {
            Self::Unreadable => "a link could not be read as a web address".to_owned(),
            Self::UserInfo(host) => format!("a link hides its host {host} behind user info"),
            Self::IpLiteral(host) => format!("a link goes to the IP address {host}, not a named host"),
            Self::Outside(host) => format!("a link goes to {host}, which is not on the allow-list"),
        }
    }
}

/// Parse `link` (adding `https://` to a bare domain); another scheme is not a web address.
fn parse(link: &str) -> Option<Url> {
    let lower = link.to_ascii_lowercase();
    let url = if lower.starts_with("http://") || lower.starts_with("https://") {
        Url::parse(link)
    } else if lower.contains("://") {
        return None;
    } else {
        Url::parse(&format!("https://{link}"))
    }
    .ok()?;
    matches!(url.scheme(), "http" | "https").then_some(url)
}

/// An allow-list entry as a host in the form [`Url`] gives hosts (lower case, punycode).
fn allowed_host(entry: &str) -> Option<String> {
    match Url::parse(&format!("https://{}/", entry.trim())).ok()?.host()? {
        Host::Domain(d) => Some(d.to_owned()),
        Host::Ipv4(_) | Host::Ipv6(_) => None,
    }
}

/// Check one link against the allow-list: its host must be an entry or a subdomain of one.
pub fn check(link: &str, allow_list: &[String]) -> Result<(), Refusal> {
    let url = parse(link).ok_or(Refusal::Unreadable)?;
    let host = match url.host() {
        Some(Host::Domain(d)) => d.trim_end_matches('.').to_owned(),
        Some(Host::Ipv4(ip)) => return Err(Refusal::IpLiteral(ip.to_string())),
        Some(Host::Ipv6(ip)) => return Err(Refusal::IpLiteral(ip.to_string())),
        None => return Err(Refusal::Unreadable),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::UserInfo(host));
    }
    let allowed = allow_list
        .iter()
        .filter_map(|a| allowed_host(a))
        .any(|a| host == a || host.strip_suffix(a.as_str()).is_some_and(|sub| sub.ends_with('.')));
    if allowed { Ok(()) } else { Err(Refusal::Outside(host)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow() -> Vec<String> {
        vec!["example.com".into(), "Bücher.example".into()]
    }

    #[test]
    fn links_are_found_in_any_case_and_without_a_scheme() {
        assert_eq!(
            links("See HTTPS://evil。example。net/win, www.evil.net and evil.net/x. Also https://example.com/a."),
            ["HTTPS://evil。example。net/win", "www.evil.net", "evil.net/x", "https://example.com/a"]
        );
        assert_eq!(links("Get it at ftp://example.com/file."), ["ftp://example.com/file"]);
        assert_eq!(
            links("Tickets:evil.net/offer (see:www.evil.org) —evil.net, «evil.net» [evil.net] and/evil.net"),
            ["evil.net/offer", "www.evil.org", "evil.net", "evil.net", "evil.net", "evil.net"]
        );
        assert_eq!(links("At 9:30, mail desk@evil.net, tag #evil.net or $evil.net"), Vec::<&str>::new());
        assert_eq!(
            links("It cost 1.2 million in the U.S. at 9.30 a.m. with Node.js, ask ana@example.com"),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn the_trial_link_is_blocked_exactly_like_its_lower_case_form() {
        let upper = check("HTTPS://evil。example。net/win", &allow());
        let lower = check("https://evil.example.net/win", &allow());
        assert_eq!(upper, Err(Refusal::Outside("evil.example.net".into())));
        assert_eq!(upper, lower);
    }

    #[test]
    fn each_trick_is_refused_and_allowed_hosts_pass() {
        let cases: &[(&str, Result<(), Refusal>)] = &[
            ("https://example.com/a", Ok(())),
            ("HTTPS://WWW.EXAMPLE.COM/a", Ok(())),
            ("https://news．example．com", Ok(())),
            ("example.com/talk", Ok(())),
            ("https://xn--bcher-kva.example/x", Ok(())),
            ("https://bücher.example/x", Ok(())),
            ("https://example.com.evil.net/", Err(Refusal::Outside("example.com.evil.net".into()))),
            ("https://notexample.com/", Err(Refusal::Outside("notexample.com".into()))),
            ("https://trusted@evil.net", Err(Refusal::UserInfo("evil.net".into()))),
            ("https://example.com@evil.net/x", Err(Refusal::UserInfo("evil.net".into()))),
            ("example.com@evil.net/x", Err(Refusal::UserInfo("evil.net".into()))),
            ("https://user:pw@example.com/x", Err(Refusal::UserInfo("example.com".into()))),
            ("http://127.0.0.1/admin", Err(Refusal::IpLiteral("127.0.0.1".into()))),
            ("http://0x7f.1/", Err(Refusal::IpLiteral("127.0.0.1".into()))),
            ("https://[::1]/", Err(Refusal::IpLiteral("::1".into()))),
            ("https://ехample.com/", Err(Refusal::Outside("xn--ample-ywe6i.com".into()))),
            ("evil.net/win", Err(Refusal::Outside("evil.net".into()))),
            ("ftp://example.com/file", Err(Refusal::Unreadable)),
        ];
        for (link, expected) in cases {
            assert_eq!(&check(link, &allow()), expected, "{link}");
        }
    }
}
