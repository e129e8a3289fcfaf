//! Go duration strings (`"30s"`, `"2m"`, `"1h30m"`, `"500ms"`, `"1.5s"`), as a task's `timeout`
//! is written.

use std::time::Duration;

/// Parse a Go duration; `Err` says why. Negative, zero-free and overflowing values are refused.
pub(crate) fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!("{text:?} is not a duration (for example \"30s\", \"2m\", \"1h30m\", \"500ms\")")
    };
    let s = text.trim();
    if s.is_empty() || s.starts_with('-') {
        return Err(bad());
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += value * seconds;
        rest = &rest[unit_len..];
    }
    // A year is far beyond any sensible task timeout; it also keeps the f64 exact enough.
    if !total.is_finite() || total > 365.0 * 86_400.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let d = |s: &str| parse_go_duration(s).unwrap();
        assert_eq!(d("30s"), Duration::from_secs(30));
        assert_eq!(d("2m"), Duration::from_secs(120));
        assert_eq!(d("1h30m"), Duration::from_secs(5400));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d("250us"), Duration::from_micros(250));
        assert_eq!(d("0"), Duration::ZERO);
        for bad in ["", "30", "-1s", "s", "1x", "1.2.3s", "99999999h", "1h 30m"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }
}
