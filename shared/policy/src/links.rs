//! Links in a draft and their hosts, read the way a browser or a platform's auto-linker reads
//! them: the scheme in any case (`HTTPS://`), internationalised names mapped to their
//! punycode form and full-width or ideographic dots (`。`, `．`) read as dots (UTS #46, by
//! the `url` crate), bare domains without a scheme (`evil.net/win`, `www.evil.net`), also
//! when punctuation glues them to the word before (`Tickets:evil.net`), and the
//! host after any user info (`https://trusted@evil.net` goes to `evil.net`). Bare IPv4 and
//! IPv6 addresses (`10.0.0.7`, `10.0.0.7:8080/x`, `[2001:db8::1]`, `2001:db8::1`) are links,
//! and so is a word that reads as one once bidirectional controls or zero-width characters are
//! taken out of it (`evil\u{200b}.net`, `\u{202e}ten.live`): such a link is refused as
//! disguised, whatever its host.

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
/// space, any other `scheme://` word, bare domains, bare IP addresses, and words that read as
/// any of these without their invisible characters.
pub fn links(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter_map(|word| {
            if word.chars().any(harmonia_contracts::untrusted::invisible) {
                return disguised(word).then_some(word);
            }
            let lower = word.to_ascii_lowercase();
            // ASCII lower-casing keeps byte offsets, so `lower`'s index is `word`'s.
            let opened = word.trim_start_matches(['(', '"', '\'', '“', '[']);
            let link = match lower.find("https://").or_else(|| lower.find("http://")) {
                Some(start) => &word[start..],
                // Another scheme (`ftp://`, `javascript://`) is a link too, and refused.
                None if lower.contains("://") => opened,
                None => bare(opened).or_else(|| glued(opened)).or_else(|| address(word))?,
            };
            Some(link.trim_end_matches(TRAILING)).filter(|l| !l.is_empty())
        })
        .collect()
}

/// Whether `word`, once its invisible characters are taken out (and read backwards too, for a
/// right-to-left override), is a link or a domain.
fn disguised(word: &str) -> bool {
    let visible: String = word.chars().filter(|c| !harmonia_contracts::untrusted::invisible(*c)).collect();
    let reversed: String = visible.chars().rev().collect();
    [visible, reversed].iter().any(|w| {
        let w = w.trim_matches(|c: char| TRAILING.contains(&c) || "([\"'“".contains(c));
        w.to_ascii_lowercase().contains("://") || bare(w).is_some() || domain_like(w) || address(w).is_some()
    })
}

/// Labels of letters, digits and hyphens between dots, the last alphabetic and two or more
/// long: a host name, linked or not.
fn domain_like(word: &str) -> bool {
    let host = word.split(['/', '?', '#', ':']).next().unwrap_or("");
    let labels: Vec<&str> = host.split(DOTS).collect();
    labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && labels.last().is_some_and(|t| t.chars().count() >= 2 && t.chars().all(char::is_alphabetic))
}

/// `word` when it is a bare IP address, with or without a port and a path (`10.0.0.7`,
/// `10.0.0.7:8080/admin`, `[::1]:8080`, `2001:db8::1`).
fn address(word: &str) -> Option<&str> {
    let word = word.trim_start_matches(['(', '"', '\'', '“']).trim_end_matches(TRAILING);
    let host_and_port = word.split(['/', '?', '#']).next()?;
    if let Some(inside) = host_and_port.strip_prefix('[') {
        let host = inside.split(']').next()?;
        return host.parse::<std::net::Ipv6Addr>().is_ok().then_some(word);
    }
    if host_and_port.parse::<std::net::Ipv6Addr>().is_ok() {
        return Some(word);
    }
    let host = host_and_port.split(':').next()?;
    let port_ok = host_and_port[host.len()..]
        .strip_prefix(':')
        .is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (host.parse::<std::net::Ipv4Addr>().is_ok() && port_ok).then_some(word)
}

/// Whether two links name the same page: the same host (a trailing dot aside), port, path (a
/// trailing slash aside) and query, whether over http or https, whatever the case of scheme and
/// host, and whatever the fragment.
pub fn same(a: &str, b: &str) -> bool {
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => {
            a.host_str().map(|h| h.trim_end_matches('.')) == b.host_str().map(|h| h.trim_end_matches('.'))
                && a.port() == b.port()
                && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
                && a.query() == b.query()
        }
        _ => false,
    }
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
    /// It hides its host with bidirectional controls or zero-width characters.
    Disguised,
}

impl Refusal {
    /// A sentence for the operator naming the host.
    pub fn sentence(&self) -> String {
        match self {
            Self::Unreadable => "a link could not be read as a web address".to_owned(),
            Self::UserInfo(host) => format!("a link hides its host {host} behind user info"),
            Self::IpLiteral(host) => format!("a link goes to the IP address {host}, not a named host"),
            Self::Outside(host) => format!("a link goes to {host}, which is not on the allow-list"),
            Self::Disguised => "a link hides its host with bidirectional controls or zero-width characters".to_owned(),
        }
    }
}

/// Parse `link` (adding `https://` to a bare domain or address, and brackets to a bare IPv6
/// address); another scheme is not a web address.
fn parse(link: &str) -> Option<Url> {
    let lower = link.to_ascii_lowercase();
    let url = if lower.starts_with("http://") || lower.starts_with("https://") {
        Url::parse(link)
    } else if lower.contains("://") {
        return None;
    } else if link.split(['/', '?', '#']).next().is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_ok()) {
        let (host, rest) = link.split_at(link.find(['/', '?', '#']).unwrap_or(link.len()));
        Url::parse(&format!("https://[{host}]{rest}"))
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
    if link.chars().any(harmonia_contracts::untrusted::invisible) {
        return Err(Refusal::Disguised);
    }
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
    fn addresses_and_disguised_hosts_are_links_and_refused() {
        let text = "See 203.0.113.9, 203.0.113.9:8080/admin, [2001:db8::1]:443/x, 2001:db8::7 or ev\u{200b}il.net \
                    and \u{202e}ten.live now; 9:30, 1.2.3 and v1.2.3.4 are not links";
        let found = links(text);
        assert_eq!(
            found,
            [
                "203.0.113.9",
                "203.0.113.9:8080/admin",
                "[2001:db8::1]:443/x",
                "2001:db8::7",
                "ev\u{200b}il.net",
                "\u{202e}ten.live"
            ]
        );
        let refusals: Vec<Refusal> = found.iter().filter_map(|l| check(l, &allow()).err()).collect();
        assert_eq!(
            refusals,
            [
                Refusal::IpLiteral("203.0.113.9".into()),
                Refusal::IpLiteral("203.0.113.9".into()),
                Refusal::IpLiteral("2001:db8::1".into()),
                Refusal::IpLiteral("2001:db8::7".into()),
                Refusal::Disguised,
                Refusal::Disguised,
            ]
        );
        // An allowed host hidden behind a zero-width space is disguised all the same.
        assert_eq!(check("https://exa\u{200b}mple.com/a", &allow()), Err(Refusal::Disguised));
        // Invisible characters that hide no link are not links.
        assert!(links("naïve caf\u{e9} 👩\u{200d}💻 done\u{200b}").is_empty());
    }

    #[test]
    fn the_same_page_is_the_same_link() {
        assert!(same("https://video.example.com/watch/a", "HTTP://video.example.com/watch/a/"));
        assert!(same("video.example.com/watch/a#t=10", "https://video.example.com/watch/a"));
        assert!(!same("https://video.example.com/watch/a", "https://video.example.com/watch/b"));
        assert!(!same("https://video.example.com/watch/a?x=1", "https://video.example.com/watch/a"));
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
