//! Which hosts a request may name (`gate.rs` checks it): loopback names
//! and addresses, the address listened on, and those the operator lists.

use std::net::IpAddr;

/// Which hosts a request may name.
#[derive(Debug, Clone, Default)]
pub struct HostRule {
    /// Names (or `name:port`) allowed besides loopback; `*` allows any.
    pub allowed: Vec<String>,
    /// The address the server listens on (a request naming it is allowed).
    pub local: Option<IpAddr>,
}

impl HostRule {
    /// Whether a request whose host (from `Host` or the HTTP/2 authority)
    /// is `host` may be served.
    pub fn admits(&self, host: &str) -> bool {
        let name = strip_port(host);
        if name.eq_ignore_ascii_case("localhost") || name.to_ascii_lowercase().ends_with(".localhost") {
            return true;
        }
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>()
            && (ip.is_loopback() || Some(ip) == self.local)
        {
            return true;
        }
        self.allowed.iter().any(|a| a == "*" || a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name))
    }
}

/// `host` without its `:port` (an IPv6 literal keeps its brackets).
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses_pass_and_others_need_listing() {
        let rule = HostRule { allowed: vec!["search.example.com".into()], local: "10.1.2.3".parse().ok() };
        for ok in [
            "localhost",
            "localhost:7311",
            "app.localhost:80",
            "127.0.0.1:7311",
            "127.9.9.9",
            "[::1]:7311",
            "10.1.2.3:7311",
            "search.example.com",
            "SEARCH.example.com:443",
        ] {
            assert!(rule.admits(ok), "{ok}");
        }
        for refused in
            ["evil.example", "evil.example:7311", "localhost.evil.example", "10.1.2.4", "[::2]", ""]
        {
            assert!(!rule.admits(refused), "{refused}");
        }
        assert!(HostRule { allowed: vec!["*".into()], local: None }.admits("anything.example"));
    }
}
