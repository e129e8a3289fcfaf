//! Text from a model, a tool or a service shown in a terminal: control characters (ANSI
//! escapes that could move the cursor, erase a line or retitle the window) and bidirectional
//! overrides (which can make a shown command read differently from what runs) are shown as
//! visible escapes instead, so an approval prompt always shows what will happen.

/// `text` with every control character except newline and tab (and every bidi control)
/// written as `\u{..}`.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hazard(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// [`clean`] on one line: newlines and tabs escaped too.
pub fn clean_line(text: &str) -> String {
    clean(text).replace('\n', "\\n").replace('\t', "\\t")
}

/// At most `max` characters of `text` (on a char boundary), with `…` when cut.
pub fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

fn is_hazard(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_not_run() {
        assert_eq!(clean("ok\n\tfine"), "ok\n\tfine");
        assert_eq!(clean("\x1b[2K\rrm -rf /"), "\\u{1b}[2K\\u{d}rm -rf /");
        assert_eq!(clean("a\u{202e}b"), "a\\u{202e}b");
        assert_eq!(clean("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(clean_line("a\nb"), "a\\nb");
        assert_eq!(cut_chars("héllo", 2), "hé…");
        assert_eq!(cut_chars("hé", 2), "hé");
    }
}
