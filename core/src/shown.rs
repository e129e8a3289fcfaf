//! Text from outside (a path or name the model gave, a cell id from a notebook, a command) as the
//! engine's own messages show it.
//!
//! A message that echoes such text goes to the model and often to a person's terminal (a CLI
//! printing tool results, a log). Raw control characters there can rewrite the screen (`ESC [2J`,
//! OSC 8 links, a fake prompt), and invisible or bidirectional formatting characters can make a
//! name read as another (`evil\u{202e}txt.exe` shows as `evilexe.txt`; tag characters smuggle
//! text nobody sees). So every such character is written as its escape (`\u{1b}`, `\u{202e}`),
//! which also keeps the message unambiguous. Content (a file's text, a command's output, a
//! listing of names on disk) is passed on as it is: that is data, not the engine's message.

use std::borrow::Cow;

/// Characters never shown raw in a message: control characters (C0, DEL, C1) and the invisible
/// formatting ones (bidi embeddings, overrides, isolates and marks, zero-width characters, the
/// line and paragraph separators, the byte order mark, interlinear annotations, tags).
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{061C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{E0000}'..='\u{E007F}'
        )
}

/// `text` as a message shows it: every [`is_hidden`] character escaped, and cut at 300
/// characters (a hostile path of a megabyte is not echoed whole).
pub(crate) fn shown(text: &str) -> Cow<'_, str> {
    const MAX: usize = 300;
    let plain = !text.chars().any(is_hidden) && text.len() <= MAX;
    if plain {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(MAX * 2));
    for (i, c) in text.chars().enumerate() {
        if i == MAX {
            out.push('…');
            break;
        }
        push(&mut out, c);
    }
    Cow::Owned(out)
}

fn push(out: &mut String, c: char) {
    if is_hidden(c) {
        out.extend(c.escape_default());
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_escaped_and_others_kept() {
        assert_eq!(shown("plain ünï 😀 日本"), "plain ünï 😀 日本");
        assert!(matches!(shown("plain"), Cow::Borrowed(_)));
        assert_eq!(
            shown("a\u{1b}[2Jb\u{202e}c\u{2066}d\u{200b}e\u{e0041}f\u{7f}g\u{85}h\ni"),
            "a\\u{1b}[2Jb\\u{202e}c\\u{2066}d\\u{200b}e\\u{e0041}f\\u{7f}g\\u{85}h\\ni"
        );
        // Combining marks are letters of a name, not formatting.
        assert_eq!(shown("e\u{301}"), "e\u{301}");
        for c in [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{2028}', '\u{2029}', '\u{feff}',
        ] {
            assert!(is_hidden(c), "{c:?}");
        }
    }

    #[test]
    fn shown_cuts_long_text() {
        let long = "x".repeat(1000);
        let s = shown(&long);
        assert_eq!(s.chars().count(), 301);
        assert!(s.ends_with('…'));
        assert_eq!(shown("\u{1b}"), "\\u{1b}");
    }
}
