//! Which addresses `web_fetch` refuses to connect to: every address no public web page lives
//! on. A model (or a page it read) must not make the host fetch its own loopback services, the
//! cloud metadata endpoint or the private network behind it.
//!
//! Refused, IPv4:
//! - `0.0.0.0/8` "this network" (Linux connects `0.0.0.0` to the loopback), `127.0.0.0/8`
//!   loopback;
//! - `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16` private (RFC 1918); `100.64.0.0/10`
//!   shared address space (carrier-grade NAT, RFC 6598);
//! - `169.254.0.0/16` link-local, which holds the cloud metadata address `169.254.169.254`;
//! - `192.0.0.0/24` IETF protocol assignments, `192.0.2.0/24`, `198.51.100.0/24`,
//!   `203.0.113.0/24` documentation, `198.18.0.0/15` benchmarking, `192.88.99.0/24` the
//!   deprecated 6to4 relay anycast;
//! - `224.0.0.0/4` multicast, `240.0.0.0/4` reserved, with `255.255.255.255` broadcast.
//!
//! Refused, IPv6:
//! - `::/128` unspecified, `::1/128` loopback, the rest of `::/96` (deprecated
//!   IPv4-compatible addresses);
//! - `::ffff:0:0/96` IPv4-mapped, `64:ff9b::/96` NAT64 (RFC 6052) and `2002::/16` 6to4: refused
//!   when the IPv4 address inside them is;
//! - `fe80::/10` link-local, `fc00::/7` unique local, `fec0::/10` deprecated site-local,
//!   `ff00::/8` multicast;
//! - everything outside `2000::/3` (the only global unicast block; this covers `64:ff9b:1::/48`
//!   local-use NAT64 and `100::/64` discard-only);
//! - inside it: `2001::/32` Teredo (tunnels to an IPv4 address of its choosing), `2001:2::/48`
//!   benchmarking, `2001:10::/28` and `2001:20::/28` ORCHID, `2001:db8::/32` and `3fff::/20`
//!   documentation.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is refused, or `None` when it may be fetched.
pub(crate) fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    }
}

/// IPv4 blocks: (network, prefix length, what it is).
const V4_REFUSED: &[(u32, u32, &str)] = &[
    (0x0000_0000, 8, "a \"this network\" address"),
    (0x0A00_0000, 8, "a private address"),
    (0x6440_0000, 10, "a shared (carrier-grade NAT) address"),
    (0x7F00_0000, 8, "a loopback address"),
    (0xA9FE_0000, 16, "a link-local address"),
    (0xAC10_0000, 12, "a private address"),
    (0xC000_0000, 24, "an IETF protocol address"),
    (0xC000_0200, 24, "a documentation address"),
    (0xC058_6300, 24, "a 6to4 relay address"),
    (0xC0A8_0000, 16, "a private address"),
    (0xC612_0000, 15, "a benchmarking address"),
    (0xC633_6400, 24, "a documentation address"),
    (0xCB00_7100, 24, "a documentation address"),
    (0xE000_0000, 4, "a multicast address"),
    (0xF000_0000, 4, "a reserved or broadcast address"),
];

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    V4_REFUSED
        .iter()
        .find(|(net, len, _)| bits >> (32 - len) == net >> (32 - len))
        .map(|(_, _, why)| *why)
}

/// IPv6 blocks inside `2000::/3`: (network, prefix length, what it is).
const V6_REFUSED: &[(u128, u32, &str)] = &[
    (0x2001_0000 << 96, 32, "a Teredo tunnel address"),
    (0x2001_0002_0000 << 80, 48, "a benchmarking address"),
    (0x2001_0010 << 96, 28, "an ORCHID address"),
    (0x2001_0020 << 96, 28, "an ORCHID address"),
    (0x2001_0db8 << 96, 32, "a documentation address"),
    (0x3fff << 112, 20, "a documentation address"),
];

fn in_v6(bits: u128, net: u128, len: u32) -> bool {
    bits >> (128 - len) == net >> (128 - len)
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    let embedded_v4 = |shift: u32| Ipv4Addr::from((bits >> shift) as u32);
    if in_v6(bits, 0xffff << 32, 96) {
        return refusal_v4(embedded_v4(0)).map(|_| "an IPv4-mapped internal address");
    }
    if in_v6(bits, 0x0064_ff9b << 96, 96) {
        return refusal_v4(embedded_v4(0)).map(|_| "a NAT64 form of an internal address");
    }
    if bits == 0 {
        return Some("the unspecified address");
    }
    if bits == 1 {
        return Some("a loopback address");
    }
    if in_v6(bits, 0, 96) {
        return Some("an IPv4-compatible address");
    }
    if in_v6(bits, 0xfe80 << 112, 10) {
        return Some("a link-local address");
    }
    if in_v6(bits, 0xfc00 << 112, 7) {
        return Some("a unique local address");
    }
    if in_v6(bits, 0xfec0 << 112, 10) {
        return Some("a site-local address");
    }
    if in_v6(bits, 0xff00 << 112, 8) {
        return Some("a multicast address");
    }
    if !in_v6(bits, 0x2000 << 112, 3) {
        return Some("a reserved address");
    }
    if in_v6(bits, 0x2002 << 112, 16) {
        return refusal_v4(embedded_v4(80)).map(|_| "a 6to4 form of an internal address");
    }
    V6_REFUSED
        .iter()
        .find(|(net, len, _)| in_v6(bits, *net, *len))
        .map(|(_, _, why)| *why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(ip: &str) -> bool {
        refusal(ip.parse().unwrap()).is_some()
    }

    #[test]
    fn internal_addresses_are_refused() {
        for ip in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.255",
            "127.0.0.1",
            "127.255.255.254",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.170",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::127.0.0.1",
            "::8.8.8.8",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.1.2.3",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "2001:db8::1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::",
            "3fff::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "4000::1",
            "5f00::1",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "126.255.255.255",
            "128.0.0.1",
            "169.253.255.255",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.167.255.255",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2001:3::1",
            "2002:808:808::1",
            "64:ff9b::808:808",
            "::ffff:8.8.8.8",
            "2a00:1450:4001::200e",
        ] {
            assert!(!refused(ip), "{ip} must be allowed");
        }
    }

    #[test]
    fn the_reason_names_the_kind() {
        let why = |ip: &str| refusal(ip.parse().unwrap()).unwrap();
        assert_eq!(why("127.0.0.1"), "a loopback address");
        assert_eq!(why("169.254.169.254"), "a link-local address");
        assert_eq!(why("192.168.0.10"), "a private address");
        assert_eq!(why("::ffff:127.0.0.1"), "an IPv4-mapped internal address");
        assert_eq!(why("fd00::1"), "a unique local address");
    }
}
