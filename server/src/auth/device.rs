//! Where a session was signed in, as its list shows it: the browser and system in a few words and the network as
//! a prefix, enough to recognise one's own devices (never the whole address or `User-Agent`).

use std::net::IpAddr;

/// Longest summary kept, in characters.
const MAX_SUMMARY_CHARS: usize = 40;

/// "Firefox on Linux" from a `User-Agent`; a program's own name ("curl") when it is no browser; `None` when
/// nothing recognisable is left.
pub fn summary(user_agent: &str) -> Option<String> {
    let browser = browser(user_agent);
    let system = system(user_agent);
    let text = match (browser, system) {
        (Some(browser), Some(system)) => format!("{browser} on {system}"),
        (Some(browser), None) => browser.to_string(),
        (None, Some(system)) => format!("A browser on {system}"),
        (None, None) => program(user_agent)?,
    };
    Some(text.chars().take(MAX_SUMMARY_CHARS).collect())
}

/// The browser, by the tokens browsers put in their `User-Agent` (most specific first: Edge and Opera also
/// say Chrome, Chrome also says Safari).
fn browser(user_agent: &str) -> Option<&'static str> {
    const BROWSERS: [(&str, &str); 11] = [
        ("Edg/", "Edge"),
        ("EdgA/", "Edge"),
        ("EdgiOS/", "Edge"),
        ("OPR/", "Opera"),
        ("SamsungBrowser/", "Samsung Internet"),
        ("Firefox/", "Firefox"),
        ("FxiOS/", "Firefox"),
        ("Chromium/", "Chromium"),
        ("Chrome/", "Chrome"),
        ("CriOS/", "Chrome"),
        ("Version/", "Safari"),
    ];
    BROWSERS.iter().find(|(token, _)| user_agent.contains(token)).map(|(_, name)| *name).filter(|name| {
        // Safari's "Version/" alone is not enough: other programs use the word too.
        *name != "Safari" || user_agent.contains("Safari/")
    })
}

/// The operating system, by the words browsers use for it (Android and ChromeOS also say Linux, iOS says
/// "like Mac OS X").
fn system(user_agent: &str) -> Option<&'static str> {
    const SYSTEMS: [(&str, &str); 8] = [
        ("Android", "Android"),
        ("iPhone", "iOS"),
        ("iPad", "iPadOS"),
        ("CrOS", "ChromeOS"),
        ("Windows", "Windows"),
        ("Macintosh", "macOS"),
        ("Mac OS X", "macOS"),
        ("Linux", "Linux"),
    ];
    SYSTEMS.iter().find(|(word, _)| user_agent.contains(word)).map(|(_, name)| *name)
}

/// The first product name of a `User-Agent` that is not a browser's ("curl/8.5.0" gives "curl"), if it is a
/// plain name.
fn program(user_agent: &str) -> Option<String> {
    let name = user_agent.split(['/', ' ']).next()?.trim();
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    plain.then(|| name.to_string())
}

/// The network of an address: its /24 for IPv4 ("203.0.113.0/24"), its /48 for IPv6 ("2001:db8:7::/48").
pub fn ip_prefix(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            format!("{a}.{b}.{c}.0/24")
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => ip_prefix(IpAddr::V4(v4)),
            None => {
                let [a, b, c, ..] = v6.segments();
                format!("{}/48", std::net::Ipv6Addr::new(a, b, c, 0, 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_and_systems_are_named_in_a_few_words() {
        for (user_agent, expected) in [
            ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox on Linux"),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 \
                 Safari/537.36 Edg/126.0.0.0",
                "Edge on Windows",
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) \
                 Version/17.5 Safari/605.1.15",
                "Safari on macOS",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) \
                 Version/17.5 Mobile/15E148 Safari/604.1",
                "Safari on iOS",
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) \
                 Chrome/126.0.0.0 Mobile Safari/537.36",
                "Chrome on Android",
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 \
                 Safari/537.36",
                "Chrome on Linux",
            ),
            ("curl/8.5.0", "curl"),
            ("python-requests/2.32", "python-requests"),
        ] {
            assert_eq!(summary(user_agent).as_deref(), Some(expected), "{user_agent}");
        }
        for nothing in ["", "   ", "<script>alert(1)</script>", "(compatible)"] {
            assert_eq!(summary(nothing), None, "{nothing}");
        }
        assert!(summary(&"x".repeat(500)).unwrap().chars().count() <= MAX_SUMMARY_CHARS);
    }

    #[test]
    fn only_the_network_of_an_address_is_kept() {
        assert_eq!(ip_prefix("203.0.113.77".parse().unwrap()), "203.0.113.0/24");
        assert_eq!(ip_prefix("2001:db8:7:1::42".parse().unwrap()), "2001:db8:7::/48");
        assert_eq!(ip_prefix("::ffff:198.51.100.9".parse().unwrap()), "198.51.100.0/24");
    }
}
