//! Reading a shell command line the way the policy needs it: every simple command the line can
//! run (also inside substitutions, subshells, `bash -c`, `eval`, `sudo`/`env`/`xargs`/`find
//! -exec` and similar wrappers), whether it substitutes commands, and whether it is *plain*
//! enough that an allow rule may admit it.
//!
//! This is a careful tokenizer, not a full shell grammar, and it errs in one direction only:
//! - it may see more commands than bash would run (a `for` variable, an arithmetic operand):
//!   that can only make a deny or ask rule catch more;
//! - it calls a line plain only when every piece is understood: literal words, `;`, `&&`,
//!   `||`, `|` and newlines between simple commands, no expansion, no substitution, no
//!   assignment, no subshell or group, no reserved word, no redirection that writes a file.
//!
//! A full parser (brush-parser) was considered: it recurses without a depth limit on hostile
//! input and pulls a snapshot-testing crate into the runtime; the policy needs neither.
//! Everything here is bounded: input length, nesting depth, number of commands.

use std::fmt;

/// The longest command line read (bytes); a longer one is an evaluation error (denied).
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// How deep substitutions, subshells and re-parsed strings (`bash -c`, `eval`) may nest.
pub const MAX_DEPTH: usize = 24;
/// The most simple commands one line may hold.
pub const MAX_COMMANDS: usize = 4096;

/// Why a command line could not be read. The policy denies such a call: bash would refuse most
/// of these lines too, and a line the policy cannot read is one it cannot vouch for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellError {
    /// A quote, substitution or group that never ends.
    Unterminated(&'static str),
    /// A `)` with no `(`.
    Unbalanced,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// More than [`MAX_COMMANDS`] commands.
    TooManyCommands,
    /// Longer than [`MAX_LINE_BYTES`].
    TooLong,
}

impl fmt::Display for ShellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShellError::Unterminated(what) => write!(f, "{what} is never closed"),
            ShellError::Unbalanced => f.write_str("a `)` closes nothing"),
            ShellError::TooDeep => write!(f, "it nests deeper than {MAX_DEPTH} levels"),
            ShellError::TooManyCommands => write!(f, "it holds more than {MAX_COMMANDS} commands"),
            ShellError::TooLong => write!(f, "it is longer than {MAX_LINE_BYTES} bytes"),
        }
    }
}

/// One simple command: its words after quote removal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The words; the first is the command name. A word with an expansion keeps its raw text.
    pub words: Vec<String>,
    /// The name is a literal: no expansion, substitution, glob or brace expansion. When false,
    /// the name is only known when the line runs.
    pub name_known: bool,
    /// Every word is a literal.
    pub literal: bool,
    /// `NAME=value` words before the name.
    pub assigns: bool,
    /// A redirection that writes or opens a file (not `/dev/null`, not a descriptor copy).
    pub writes_file: bool,
    /// Found inside something else: a substitution, a subshell's string, a wrapper's command.
    pub nested: bool,
}

impl SimpleCommand {
    /// The name's last path component: `/usr/bin/rm` -> `rm`.
    pub fn basename(&self) -> &str {
        let name = self.words.first().map(String::as_str).unwrap_or("");
        name.rsplit('/').next().unwrap_or(name)
    }
}

/// What a command line does, as far as the policy is concerned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellReading {
    /// Every simple command, in order of appearance (nested ones after their parent).
    pub commands: Vec<SimpleCommand>,
    /// `$(...)`, backticks, `<(...)`, `>(...)`, `$((...))` or `$[...]` somewhere.
    pub substitution: bool,
    /// A construct beyond a list of simple commands: subshell, group, reserved word,
    /// background `&`, heredoc, function definition.
    pub compound: bool,
    /// The redirection operators used (`>`, `>>`, `<`, ...), writes to `/dev/null` and
    /// descriptor copies left out.
    pub redirects: Vec<String>,
}

impl ShellReading {
    /// Whether an allow rule may admit the line: nothing but literal simple commands joined by
    /// `;`, `&&`, `||`, `|` or newlines.
    pub fn plain(&self) -> bool {
        !self.substitution
            && !self.compound
            && !self.commands.is_empty()
            && self
                .commands
                .iter()
                .all(|c| !c.words.is_empty() && c.literal && !c.assigns && !c.writes_file)
    }
}

/// Read `line`.
pub fn read(line: &str) -> Result<ShellReading, ShellError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ShellError::TooLong);
    }
    let mut out = ShellReading::default();
    let mut p = Parser {
        src: line.as_bytes(),
        pos: 0,
        depth: 0,
        nested: false,
        out: &mut out,
    };
    p.list(Until::End)?;
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    End,
    Paren,
}

/// A word as lexed: its text after quote removal, and which bytes were quoted.
#[derive(Default)]
struct Word {
    text: Vec<u8>,
    quoted: Vec<bool>,
    /// An expansion, substitution or ANSI-C string: the text is not what runs.
    dynamic: bool,
    glob: bool,
    any_quote: bool,
}

impl Word {
    fn push(&mut self, b: u8, quoted: bool) {
        self.text.push(b);
        self.quoted.push(quoted);
        if quoted {
            self.any_quote = true;
        }
    }
    fn push_raw(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.push(*b, true);
        }
    }
    fn string(&self) -> String {
        String::from_utf8_lossy(&self.text).into_owned()
    }
    fn unquoted_is(&self, s: &str) -> bool {
        !self.any_quote && !self.dynamic && self.text == s.as_bytes()
    }
    /// Brace expansion (`{a,b}`, `{1..3}`) in the unquoted text.
    fn braces(&self) -> bool {
        let mut open = None;
        for (i, b) in self.text.iter().enumerate() {
            if self.quoted[i] {
                continue;
            }
            match b {
                b'{' => open = Some(i),
                b'}' => {
                    if let Some(o) = open {
                        let inner = &self.text[o + 1..i];
                        let unq = |j: usize| !self.quoted[o + 1 + j];
                        let comma = inner.iter().enumerate().any(|(j, c)| *c == b',' && unq(j));
                        let range = inner
                            .windows(2)
                            .enumerate()
                            .any(|(j, w)| w == b".." && unq(j));
                        if comma || range {
                            return true;
                        }
                    }
                }
                _ => {}
            }
        }
        false
    }
    fn literal(&self) -> bool {
        !self.dynamic && !self.glob && !self.braces()
    }
    /// `NAME=...` or `NAME+=...` with the name and `=` unquoted.
    fn is_assignment(&self) -> bool {
        let t = &self.text;
        let Some(eq) = t.iter().position(|b| *b == b'=') else {
            return false;
        };
        let name_end = if eq > 0 && t[eq - 1] == b'+' {
            eq - 1
        } else {
            eq
        };
        let name = &t[..name_end];
        !name.is_empty()
            && (name[0].is_ascii_alphabetic() || name[0] == b'_')
            && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
            && self.quoted[..=eq].iter().all(|q| !q)
    }
}

struct Heredoc {
    delimiter: Vec<u8>,
    strip_tabs: bool,
    expand: bool,
}

struct Parser<'s, 'o> {
    src: &'s [u8],
    pos: usize,
    depth: usize,
    nested: bool,
    out: &'o mut ShellReading,
}

/// Reserved words that start a construct whose next word is again a command.
const PREFIX_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "coproc",
];
/// Reserved words that end a construct.
const END_WORDS: &[&str] = &["fi", "done", "esac", "}", "]]"];
/// Reserved words whose own words are not commands (substitutions in them still count).
const HEAD_WORDS: &[&str] = &["for", "select", "case"];

impl Parser<'_, '_> {
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }
    fn peek_at(&self, n: usize) -> Option<u8> {
        self.src.get(self.pos + n).copied()
    }

    /// A list of commands up to the end, or up to the `)` that closes it.
    fn list(&mut self, until: Until) -> Result<(), ShellError> {
        if self.depth > MAX_DEPTH {
            return Err(ShellError::TooDeep);
        }
        let mut words: Vec<Word> = Vec::new();
        let mut writes_file = false;
        let mut heredocs: Vec<Heredoc> = Vec::new();
        let mut in_case = 0usize;
        loop {
            // Blanks and line continuations.
            while let Some(c) = self.peek() {
                if c == b' ' || c == b'\t' || c == b'\r' {
                    self.pos += 1;
                } else if c == b'\\' && self.peek_at(1) == Some(b'\n') {
                    self.pos += 2;
                } else {
                    break;
                }
            }
            let Some(c) = self.peek() else {
                self.finish(&mut words, &mut writes_file, &mut in_case)?;
                return match until {
                    Until::End => Ok(()),
                    Until::Paren => Err(ShellError::Unterminated("`(`")),
                };
            };
            match c {
                b'#' => {
                    // Only reached at the start of a word: a comment to the end of the line.
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                b'\n' => {
                    self.pos += 1;
                    self.finish(&mut words, &mut writes_file, &mut in_case)?;
                    for h in std::mem::take(&mut heredocs) {
                        self.heredoc_body(&h)?;
                    }
                }
                b';' => {
                    self.pos += 1;
                    if matches!(self.peek(), Some(b';') | Some(b'&')) {
                        // `;;`, `;&`, `;;&`: case clause ends.
                        self.pos += 1;
                        if self.peek() == Some(b'&') {
                            self.pos += 1;
                        }
                        self.out.compound = true;
                    }
                    self.finish(&mut words, &mut writes_file, &mut in_case)?;
                }
                b'&' => {
                    if self.peek_at(1) == Some(b'>') {
                        // `&>` / `&>>`: both streams to a file.
                        self.pos += 1;
                        self.redirect(b"&", &mut writes_file, &mut heredocs)?;
                        continue;
                    }
                    self.pos += 1;
                    if self.peek() == Some(b'&') {
                        self.pos += 1;
                    } else {
                        // A background job.
                        self.out.compound = true;
                    }
                    self.finish(&mut words, &mut writes_file, &mut in_case)?;
                }
                b'|' => {
                    self.pos += 1;
                    if matches!(self.peek(), Some(b'|') | Some(b'&')) {
                        self.pos += 1;
                    }
                    self.finish(&mut words, &mut writes_file, &mut in_case)?;
                }
                b'(' => {
                    // A subshell, `((...))`, a function's `()` or an array assignment.
                    self.pos += 1;
                    self.out.compound = true;
                    self.finish(&mut words, &mut writes_file, &mut in_case)?;
                    self.nest(|p| p.list(Until::Paren))?;
                }
                b')' => {
                    self.pos += 1;
                    if words.iter().any(|w| w.unquoted_is("case")) {
                        // `case x in a)`: the head ends and the first pattern with it.
                        self.finish(&mut words, &mut writes_file, &mut in_case)?;
                        continue;
                    }
                    if words.iter().any(|w| w.unquoted_is("esac")) {
                        // `esac)`: the case ends; this `)` closes what encloses it.
                        self.finish(&mut words, &mut writes_file, &mut in_case)?;
                    }
                    if in_case > 0 {
                        // The end of a case pattern.
                        words.clear();
                        continue;
                    }
                    self.finish(&mut words, &mut writes_file, &mut in_case)?;
                    return match until {
                        Until::Paren => Ok(()),
                        Until::End => Err(ShellError::Unbalanced),
                    };
                }
                b'<' | b'>' if self.peek_at(1) != Some(b'(') => {
                    self.redirect(b"", &mut writes_file, &mut heredocs)?;
                }
                _ => {
                    let w = self.word()?;
                    // `2>file`: a descriptor number right before a redirection.
                    let fd = !w.text.is_empty()
                        && !w.any_quote
                        && !w.dynamic
                        && w.text.iter().all(u8::is_ascii_digit)
                        && matches!(self.peek(), Some(b'<') | Some(b'>'))
                        && self.peek_at(1) != Some(b'(');
                    if !fd {
                        words.push(w);
                    }
                }
            }
        }
    }

    /// Run `f` one level deeper.
    fn nest<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, ShellError>,
    ) -> Result<T, ShellError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ShellError::TooDeep);
        }
        let was = self.nested;
        self.nested = true;
        let r = f(self);
        self.nested = was;
        self.depth -= 1;
        r
    }

    /// Read `text` (a backtick body, a `bash -c` script, an `eval`) as a line of its own.
    fn reparse(&mut self, text: &[u8]) -> Result<(), ShellError> {
        if self.depth + 1 > MAX_DEPTH {
            return Err(ShellError::TooDeep);
        }
        let mut sub = Parser {
            src: text,
            pos: 0,
            depth: self.depth + 1,
            nested: true,
            out: &mut *self.out,
        };
        sub.list(Until::End)
    }

    /// A redirection at the current position (`<`, `>`, `>>`, `<<`, `<<<`, `<>`, `>&`, ...).
    fn redirect(
        &mut self,
        prefix: &[u8],
        writes_file: &mut bool,
        heredocs: &mut Vec<Heredoc>,
    ) -> Result<(), ShellError> {
        let mut op: Vec<u8> = prefix.to_vec();
        let first = self.peek().unwrap_or(b'>');
        op.push(first);
        self.pos += 1;
        let mut dup = false;
        match (first, self.peek()) {
            (b'<', Some(b'<')) => {
                self.pos += 1;
                op.push(b'<');
                match self.peek() {
                    Some(b'<') => {
                        self.pos += 1;
                        op.push(b'<');
                    }
                    Some(b'-') => {
                        self.pos += 1;
                        op.push(b'-');
                    }
                    _ => {}
                }
            }
            (b'<', Some(b'>')) | (b'>', Some(b'>')) | (b'>', Some(b'|')) => {
                op.push(self.peek().unwrap_or_default());
                self.pos += 1;
            }
            (_, Some(b'&')) => {
                self.pos += 1;
                dup = true;
            }
            _ => {}
        }
        while matches!(self.peek(), Some(b' ') | Some(b'\t')) {
            self.pos += 1;
        }
        let target = self.word()?;
        let op_text = String::from_utf8_lossy(&op).into_owned();
        match op_text.as_str() {
            "<<" | "<<-" => {
                self.out.compound = true;
                heredocs.push(Heredoc {
                    delimiter: target.text.clone(),
                    strip_tabs: op_text == "<<-",
                    expand: !target.any_quote,
                });
                self.out.redirects.push(op_text);
                return Ok(());
            }
            "<<<" | "<" => {
                self.out.redirects.push(op_text);
                return Ok(());
            }
            _ => {}
        }
        let copies_descriptor = dup
            && target.literal()
            && (target.text == b"-" || target.text.iter().all(u8::is_ascii_digit))
            && !target.text.is_empty();
        let to_null = target.literal() && target.text == b"/dev/null";
        if copies_descriptor || to_null {
            return Ok(());
        }
        self.out.redirects.push(op_text);
        *writes_file = true;
        Ok(())
    }

    /// The body of a heredoc: the lines up to its delimiter; an unquoted delimiter means the
    /// body is expanded, so substitutions in it run.
    fn heredoc_body(&mut self, h: &Heredoc) -> Result<(), ShellError> {
        while self.pos < self.src.len() {
            let start = self.pos;
            let end = self.src[start..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(self.src.len(), |i| start + i);
            self.pos = (end + 1).min(self.src.len());
            let mut line = &self.src[start..end];
            if h.strip_tabs {
                while line.first() == Some(&b'\t') {
                    line = &line[1..];
                }
            }
            if line == h.delimiter.as_slice() {
                return Ok(());
            }
            if h.expand {
                let mut sub = Parser {
                    src: line,
                    pos: 0,
                    depth: self.depth + 1,
                    nested: true,
                    out: &mut *self.out,
                };
                let mut scratch = Word::default();
                while sub.pos < sub.src.len() {
                    sub.double_quoted_char(&mut scratch)?;
                }
            }
        }
        Ok(())
    }

    /// One word, up to an unquoted blank or operator.
    fn word(&mut self) -> Result<Word, ShellError> {
        let mut w = Word::default();
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' => break,
                b'<' | b'>' => {
                    if self.peek_at(1) != Some(b'(') {
                        break;
                    }
                    // `<(...)` / `>(...)`: process substitution.
                    self.pos += 2;
                    self.out.substitution = true;
                    self.nest(|p| p.list(Until::Paren))?;
                    w.dynamic = true;
                }
                b'\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'\n') => self.pos += 1,
                        Some(ch) => {
                            w.push(ch, true);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                b'\'' => {
                    self.pos += 1;
                    w.any_quote = true;
                    loop {
                        match self.peek() {
                            None => return Err(ShellError::Unterminated("a `'` quote")),
                            Some(b'\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(ch) => {
                                w.push(ch, true);
                                self.pos += 1;
                            }
                        }
                    }
                }
                b'"' => {
                    self.pos += 1;
                    w.any_quote = true;
                    loop {
                        match self.peek() {
                            None => return Err(ShellError::Unterminated("a `\"` quote")),
                            Some(b'"') => {
                                self.pos += 1;
                                break;
                            }
                            Some(_) => self.double_quoted_char(&mut w)?,
                        }
                    }
                }
                b'`' => {
                    self.pos += 1;
                    self.backtick(&mut w)?;
                }
                b'$' => self.dollar(&mut w, false)?,
                b'*' | b'?' => {
                    w.glob = true;
                    w.push(c, false);
                    self.pos += 1;
                }
                b'[' => {
                    // A bracket expression only when a `]` closes it in the same word.
                    let rest = &self.src[self.pos + 1..];
                    let end = rest
                        .iter()
                        .position(|b| matches!(b, b' ' | b'\t' | b'\n' | b';' | b'&' | b'|'));
                    let rest = &rest[..end.unwrap_or(rest.len())];
                    if rest.contains(&b']') {
                        w.glob = true;
                    }
                    w.push(c, false);
                    self.pos += 1;
                }
                _ => {
                    w.push(c, false);
                    self.pos += 1;
                }
            }
        }
        Ok(w)
    }

    /// One character (or escape, or expansion) inside double quotes or an expanded heredoc line.
    fn double_quoted_char(&mut self, w: &mut Word) -> Result<(), ShellError> {
        let Some(c) = self.peek() else {
            return Ok(());
        };
        match c {
            b'\\' => {
                self.pos += 1;
                match self.peek() {
                    Some(b'\n') => self.pos += 1,
                    Some(ch @ (b'$' | b'`' | b'"' | b'\\')) => {
                        w.push(ch, true);
                        self.pos += 1;
                    }
                    _ => w.push(b'\\', true),
                }
            }
            b'$' => self.dollar(w, true)?,
            b'`' => {
                self.pos += 1;
                self.backtick(w)?;
            }
            _ => {
                w.push(c, true);
                self.pos += 1;
            }
        }
        Ok(())
    }

    /// A backtick substitution; the opening backtick is consumed.
    fn backtick(&mut self, w: &mut Word) -> Result<(), ShellError> {
        let mut body = Vec::new();
        loop {
            match self.peek() {
                None => return Err(ShellError::Unterminated("a backtick substitution")),
                Some(b'`') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(ch @ (b'`' | b'\\' | b'$')) => {
                            body.push(ch);
                            self.pos += 1;
                        }
                        _ => body.push(b'\\'),
                    }
                }
                Some(ch) => {
                    body.push(ch);
                    self.pos += 1;
                }
            }
        }
        self.out.substitution = true;
        w.dynamic = true;
        self.reparse(&body)
    }

    /// `$` and what follows: substitutions, parameter expansions, ANSI-C strings.
    fn dollar(&mut self, w: &mut Word, in_quotes: bool) -> Result<(), ShellError> {
        match self.peek_at(1) {
            Some(b'(') => {
                // `$(...)`, and `$((...))`, read as a substitution holding a subshell.
                self.pos += 2;
                self.out.substitution = true;
                w.dynamic = true;
                self.nest(|p| p.list(Until::Paren))
            }
            Some(b'{') => {
                self.pos += 2;
                w.dynamic = true;
                w.push_raw(b"${");
                self.braced()
            }
            Some(b'[') => {
                // `$[...]`: the old arithmetic expansion.
                self.pos += 1;
                self.out.substitution = true;
                w.dynamic = true;
                w.push_raw(b"$");
                Ok(())
            }
            Some(b'\'') if !in_quotes => {
                // `$'...'`: ANSI-C escapes (`$'\x72m'` is `rm`): its text is not what runs.
                self.pos += 2;
                w.dynamic = true;
                w.push_raw(b"$'");
                loop {
                    match self.peek() {
                        None => return Err(ShellError::Unterminated("a `$'` quote")),
                        Some(b'\\') => {
                            w.push_raw(&self.src[self.pos..(self.pos + 2).min(self.src.len())]);
                            self.pos += 2;
                        }
                        Some(b'\'') => {
                            self.pos += 1;
                            return Ok(());
                        }
                        Some(ch) => {
                            w.push(ch, true);
                            self.pos += 1;
                        }
                    }
                }
            }
            Some(c)
                if c.is_ascii_alphanumeric()
                    || matches!(c, b'_' | b'?' | b'#' | b'@' | b'*' | b'!' | b'-' | b'$') =>
            {
                w.dynamic = true;
                w.push_raw(b"$");
                self.pos += 1;
                if c.is_ascii_alphabetic() || c == b'_' {
                    while self
                        .peek()
                        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        w.push(self.peek().unwrap_or_default(), true);
                        self.pos += 1;
                    }
                } else {
                    w.push(c, true);
                    self.pos += 1;
                }
                Ok(())
            }
            _ => {
                w.push(b'$', in_quotes);
                self.pos += 1;
                Ok(())
            }
        }
    }

    /// The rest of `${...}`: nested quotes, substitutions and braces.
    fn braced(&mut self) -> Result<(), ShellError> {
        let mut depth = 1usize;
        let mut scratch = Word::default();
        loop {
            match self.peek() {
                None => return Err(ShellError::Unterminated("a `${` expansion")),
                Some(b'\\') => self.pos += 2,
                Some(b'\'') => {
                    self.pos += 1;
                    while self.peek().is_some_and(|b| b != b'\'') {
                        self.pos += 1;
                    }
                    if self.peek().is_none() {
                        return Err(ShellError::Unterminated("a `'` quote"));
                    }
                    self.pos += 1;
                }
                Some(b'"') => {
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => return Err(ShellError::Unterminated("a `\"` quote")),
                            Some(b'"') => {
                                self.pos += 1;
                                break;
                            }
                            Some(_) => self.double_quoted_char(&mut scratch)?,
                        }
                    }
                }
                Some(b'$') => self.dollar(&mut scratch, true)?,
                Some(b'`') => {
                    self.pos += 1;
                    self.backtick(&mut scratch)?;
                }
                Some(b'{') => {
                    depth += 1;
                    self.pos += 1;
                }
                Some(b'}') => {
                    self.pos += 1;
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// End the current simple command: drop reserved words, record it, look inside wrappers.
    fn finish(
        &mut self,
        words: &mut Vec<Word>,
        writes_file: &mut bool,
        in_case: &mut usize,
    ) -> Result<(), ShellError> {
        let mut ws: Vec<Word> = std::mem::take(words);
        let writes = std::mem::take(writes_file);
        let mut start = 0;
        // Reserved words in command position.
        while let Some(w) = ws.get(start) {
            if PREFIX_WORDS.iter().any(|k| w.unquoted_is(k)) {
                self.out.compound = true;
                start += 1;
                if w.unquoted_is("time") && ws.get(start).is_some_and(|n| n.unquoted_is("-p")) {
                    start += 1;
                }
            } else if END_WORDS.iter().any(|k| w.unquoted_is(k)) {
                self.out.compound = true;
                if w.unquoted_is("esac") {
                    *in_case = in_case.saturating_sub(1);
                }
                start += 1;
            } else if w.unquoted_is("function") {
                // `function NAME { ...`: the body follows the name.
                self.out.compound = true;
                start += 2;
            } else if w.unquoted_is("[[") {
                // A conditional expression: no commands up to `]]` (substitutions in it were
                // read as they were lexed).
                self.out.compound = true;
                start = ws[start..]
                    .iter()
                    .position(|w| w.unquoted_is("]]"))
                    .map_or(ws.len(), |e| start + e + 1);
            } else if HEAD_WORDS.iter().any(|k| w.unquoted_is(k)) {
                // `for x in a b`, `select`, `case x in`: names and patterns, not commands.
                self.out.compound = true;
                if w.unquoted_is("case") {
                    *in_case += 1;
                }
                return Ok(());
            } else {
                break;
            }
        }
        let ws = ws.split_off(start.min(ws.len()));
        if ws.is_empty() && !writes {
            return Ok(());
        }
        let assigns = ws.iter().take_while(|w| w.is_assignment()).count();
        let cmd_words = &ws[assigns..];
        let cmd = SimpleCommand {
            words: cmd_words.iter().map(Word::string).collect(),
            name_known: cmd_words.first().is_none_or(|w| w.literal()),
            literal: cmd_words.iter().all(Word::literal),
            assigns: assigns > 0,
            writes_file: writes,
            nested: self.nested,
        };
        if cmd.words.is_empty() && !cmd.assigns && !cmd.writes_file {
            return Ok(());
        }
        self.record(cmd.clone())?;
        let dynamic_tail = cmd_words.iter().skip(1).any(|w| !w.literal());
        self.unwrap(&cmd.words, dynamic_tail)
    }

    fn record(&mut self, cmd: SimpleCommand) -> Result<(), ShellError> {
        if self.out.commands.len() >= MAX_COMMANDS {
            return Err(ShellError::TooManyCommands);
        }
        self.out.commands.push(cmd);
        Ok(())
    }

    /// A command run by a wrapper (`sudo rm`, `xargs rm`, `find -exec rm`, `bash -c 'rm'`).
    fn unwrap(&mut self, words: &[String], dynamic_tail: bool) -> Result<(), ShellError> {
        let Some(name) = words.first() else {
            return Ok(());
        };
        let base = name.rsplit('/').next().unwrap_or(name);
        let from = |i: Option<usize>| i.filter(|i| *i < words.len());
        let inner: Option<usize> = match base {
            "sudo" => from(skip_options(
                words,
                1,
                &[
                    "-u", "-g", "-h", "-p", "-C", "-U", "-r", "-t", "-D", "-R", "-T",
                ],
                true,
            )),
            "doas" => from(skip_options(words, 1, &["-u", "-C"], false)),
            "env" => {
                let mut i = 1;
                while let Some(w) = words.get(i) {
                    if w == "-S" || w == "--split-string" {
                        if let Some(s) = words.get(i + 1) {
                            self.reparse_words(std::slice::from_ref(s), dynamic_tail)?;
                        }
                        return Ok(());
                    } else if w == "-u" || w == "-C" || w == "--unset" || w == "--chdir" {
                        i += 2;
                    } else if w == "--" {
                        i += 1;
                        break;
                    } else if w.starts_with('-') || w.contains('=') {
                        i += 1;
                    } else {
                        break;
                    }
                }
                from(Some(i))
            }
            "exec" => from(skip_options(words, 1, &["-a"], false)),
            "nohup" | "setsid" | "command" | "builtin" | "time" | "unbuffer" | "busybox"
            | "caffeinate" | "torsocks" | "proxychains" | "proxychains4" | "firejail"
            | "catchsegv" | "valgrind" | "fakeroot" | "sg" | "runuser" => {
                from(skip_options(words, 1, &["-o", "-u", "-g"], false))
            }
            "nice" => from(skip_options(words, 1, &["-n"], false)),
            "ionice" => {
                if words.iter().any(|w| w == "-p" || w == "-P") {
                    None
                } else {
                    from(skip_options(words, 1, &["-c", "-n"], false))
                }
            }
            "timeout" => from(skip_options(words, 1, &["-s", "-k"], false).map(|i| i + 1)),
            "stdbuf" => from(skip_options(words, 1, &["-i", "-o", "-e"], false)),
            "chrt" | "taskset" => from(skip_options(words, 1, &[], false).map(|i| i + 1)),
            "chroot" => from(skip_options(words, 1, &[], false).map(|i| i + 1)),
            "strace" | "ltrace" => from(skip_options(
                words,
                1,
                &[
                    "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-S", "-X",
                ],
                false,
            )),
            "xargs" => from(skip_options(
                words,
                1,
                &["-I", "-d", "-E", "-L", "-n", "-P", "-s", "-a"],
                false,
            )),
            "flock" => {
                if let Some(i) = words.iter().position(|w| w == "-c" || w == "--command") {
                    return self
                        .reparse_words(&words[i + 1..(i + 2).min(words.len())], dynamic_tail);
                }
                from(skip_options(words, 1, &["-w", "-E"], false).map(|i| i + 1))
            }
            "watch" => {
                let i = skip_options(words, 1, &["-n", "-d", "-g", "-q"], false);
                return match i {
                    Some(i) if i < words.len() => self.reparse_words(&words[i..], dynamic_tail),
                    _ => Ok(()),
                };
            }
            "ssh" => {
                let i = skip_options(
                    words,
                    1,
                    &[
                        "-p", "-i", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-b", "-c", "-E",
                        "-e", "-m", "-O", "-Q", "-S", "-W", "-w", "-B",
                    ],
                    false,
                );
                return match i {
                    Some(i) if i + 1 < words.len() => {
                        self.reparse_words(&words[i + 1..], dynamic_tail)
                    }
                    _ => Ok(()),
                };
            }
            "su" => {
                if let Some(i) = words.iter().position(|w| w == "-c" || w == "--command") {
                    return self
                        .reparse_words(&words[i + 1..(i + 2).min(words.len())], dynamic_tail);
                }
                None
            }
            "eval" => return self.reparse_words(&words[1..], dynamic_tail),
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "fish" | "csh" | "tcsh" => {
                // `-c SCRIPT`, also inside a cluster such as `-ec` or `-lc`.
                let mut script = None;
                let mut i = 1;
                while let Some(w) = words.get(i) {
                    if w == "-o" || w == "+o" || w == "-O" || w == "+O" {
                        i += 2;
                    } else if w.starts_with('-') && !w.starts_with("--") && w.contains('c') {
                        script = Some(i + 1);
                        break;
                    } else if w.starts_with('-') || w.starts_with('+') {
                        i += 1;
                    } else {
                        break;
                    }
                }
                return match script {
                    Some(i) if i < words.len() => {
                        self.reparse_words(&words[i..i + 1], dynamic_tail)
                    }
                    _ => Ok(()),
                };
            }
            "find" => {
                let mut i = 1;
                while i < words.len() {
                    if matches!(words[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                        let start = i + 1;
                        let end = words[start..]
                            .iter()
                            .position(|w| w == ";" || w == "+")
                            .map_or(words.len(), |e| start + e);
                        if start < end {
                            self.wrapped(&words[start..end], dynamic_tail)?;
                        }
                        i = end + 1;
                    } else {
                        i += 1;
                    }
                }
                return Ok(());
            }
            _ => None,
        };
        match inner {
            Some(i) => self.wrapped(&words[i..], dynamic_tail),
            None => Ok(()),
        }
    }

    /// Record the command a wrapper runs, and look inside it in turn.
    fn wrapped(&mut self, words: &[String], dynamic_tail: bool) -> Result<(), ShellError> {
        if self.depth + 1 > MAX_DEPTH {
            return Err(ShellError::TooDeep);
        }
        let cmd = SimpleCommand {
            words: words.to_vec(),
            // The words came out of an expanded tail: its name is not known before it runs.
            name_known: !dynamic_tail,
            literal: !dynamic_tail,
            assigns: false,
            writes_file: false,
            nested: true,
        };
        self.record(cmd)?;
        self.depth += 1;
        let r = self.unwrap(words, dynamic_tail);
        self.depth -= 1;
        r
    }

    /// Read words that a wrapper hands to a shell (`eval a b`, `bash -c 'a'`, `ssh host a b`).
    fn reparse_words(&mut self, words: &[String], dynamic: bool) -> Result<(), ShellError> {
        if dynamic {
            // What the shell gets is only known when the line runs.
            self.record(SimpleCommand {
                words: words.to_vec(),
                name_known: false,
                literal: false,
                nested: true,
                ..Default::default()
            })?;
        }
        let text = words.join(" ");
        self.reparse(text.as_bytes())
    }
}

/// The index of the first word after a wrapper's options (`with_arg` options take the next
/// word); `assignments`: `NAME=value` words are skipped too.
fn skip_options(
    words: &[String],
    start: usize,
    with_arg: &[&str],
    assignments: bool,
) -> Option<usize> {
    let mut i = start;
    while let Some(w) = words.get(i) {
        if w == "--" {
            return Some(i + 1);
        }
        if w.starts_with('-') && w.len() > 1 {
            i += if with_arg.contains(&w.as_str()) { 2 } else { 1 };
            continue;
        }
        if assignments && w.contains('=') && !w.starts_with('=') {
            i += 1;
            continue;
        }
        return Some(i);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(line: &str) -> Vec<String> {
        read(line)
            .unwrap()
            .commands
            .iter()
            .map(|c| c.basename().to_string())
            .collect()
    }

    fn has(line: &str, name: &str) -> bool {
        read(line)
            .unwrap()
            .commands
            .iter()
            .any(|c| c.name_known && c.basename() == name)
    }

    #[test]
    fn separators_split_commands() {
        assert_eq!(names("ls;rm -rf /"), ["ls", "rm"]);
        assert_eq!(names("ls && curl x | sh"), ["ls", "curl", "sh"]);
        assert_eq!(names("a || b |& c\nd & e"), ["a", "b", "c", "d", "e"]);
        assert!(read("ls -la && wc -l x | head").unwrap().plain());
        assert!(!read("ls & rm x").unwrap().plain());
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert!(has(r"l\s", "ls"));
        assert!(has("r''m -rf /", "rm"));
        assert!(has(r#""rm" -rf /"#, "rm"));
        assert!(has("/bin/rm x", "rm"));
        assert!(has("\\\nrm x", "rm"));
        // Inside quotes a separator is text.
        assert_eq!(names(r#"echo "a; rm -rf /""#), ["echo"]);
        assert_eq!(names("echo 'a && rm'"), ["echo"]);
        assert!(read("echo 'a b' \"c d\"").unwrap().plain());
    }

    #[test]
    fn substitutions_are_found_and_read() {
        for line in [
            "ls $(rm -rf /)",
            "ls `rm -rf /`",
            "echo \"$(rm -rf /)\"",
            "cat <(rm -rf /)",
            "tee >(rm x)",
            "echo $(( $(rm x) + 1 ))",
            "echo ${x:-$(rm x)}",
            "echo \"`rm x`\"",
            "echo $(echo $(echo $(rm x)))",
        ] {
            let r = read(line).unwrap();
            assert!(r.substitution, "{line}");
            assert!(!r.plain(), "{line}");
            assert!(has(line, "rm"), "{line}");
        }
        assert!(read("echo $[1+2]").unwrap().substitution);
        // Quoted substitution syntax is text.
        assert!(!read("echo '$(rm x)' \\`x\\`").unwrap().substitution);
    }

    #[test]
    fn expansions_make_names_unknown() {
        for line in [
            "$X -rf /",
            "${IFS}rm",
            "r$()m x",
            "$'\\x72m' x",
            "{rm,-rf,/}",
            "/bin/r? x",
        ] {
            let r = read(line).unwrap();
            assert!(!r.commands[0].name_known, "{line}");
            assert!(!r.plain(), "{line}");
        }
        let r = read("ls${IFS}-la").unwrap();
        assert!(!r.plain());
        // Plain literal arguments with globs are still literal names.
        assert!(read("[ -f x ]").unwrap().commands[0].name_known);
        assert!(read("ls *.txt").unwrap().commands[0].name_known);
    }

    #[test]
    fn assignments_wrappers_and_subshells() {
        let r = read("PATH=/tmp ls").unwrap();
        assert!(r.commands[0].assigns && !r.plain());
        assert_eq!(r.commands[0].words, ["ls"]);
        assert!(has("sudo -u root rm -rf /", "rm"));
        assert!(has("env -i FOO=1 rm x", "rm"));
        assert!(has("env -S 'rm x'", "rm"));
        assert!(has("nohup nice -n 5 timeout 10 rm x", "rm"));
        assert!(has("echo / | xargs -n 1 rm -rf", "rm"));
        assert!(has("find . -name x -exec rm {} \\;", "rm"));
        assert!(has("bash -c 'ls; rm -rf /'", "rm"));
        assert!(has("sh -ec \"rm x\"", "rm"));
        assert!(has("eval rm x", "rm"));
        assert!(has("ssh host rm -rf /", "rm"));
        assert!(has("watch -n 1 rm x", "rm"));
        assert!(has("(ls; rm x)", "rm"));
        assert!(has("{ ls; rm x; }", "rm"));
        assert!(has("if true; then rm x; fi", "rm"));
        assert!(has("for f in a b; do rm $f; done", "rm"));
        assert!(has("while :; do rm x; done", "rm"));
        assert!(has("case x in a) rm x;; esac", "rm"));
        assert!(has("f() { rm x; }; f", "rm"));
        assert!(has("function f { rm x; }", "rm"));
        assert!(has("[[ -f x ]] && rm y", "rm"));
        assert!(has("bash -o pipefail -c 'rm x'", "rm"));
        assert!(has("echo $(case x in a) rm x;; esac)", "rm"));
        assert!(has("! rm x", "rm"));
        assert!(!read("(ls)").unwrap().plain());
        // A wrapper fed an expansion runs a command nobody can name in advance.
        let r = read("xargs $CMD").unwrap();
        assert!(r.commands.iter().any(|c| !c.name_known));
    }

    #[test]
    fn redirections() {
        let r = read("ls > out.txt").unwrap();
        assert!(!r.plain());
        assert_eq!(r.redirects, [">"]);
        assert!(read("ls 2>&1 >/dev/null").unwrap().plain());
        assert!(read("wc -l < in.txt").unwrap().plain());
        assert_eq!(read("echo x >> log").unwrap().redirects, [">>"]);
        assert_eq!(read("echo x &> log").unwrap().redirects, ["&>"]);
        assert!(!read("echo x 2>err").unwrap().plain());
        // Redirect targets are read too.
        assert!(has("echo x > $(rm y)", "rm"));
    }

    #[test]
    fn heredocs_and_comments() {
        let r = read("cat <<EOF\n$(rm x)\nEOF\nls").unwrap();
        assert!(r.substitution);
        assert!(has("cat <<EOF\n$(rm x)\nEOF\nls", "rm"));
        assert!(has("cat <<EOF\n$(rm x)\nEOF\nls", "ls"));
        let quoted = read("cat <<'EOF'\n$(rm x)\nEOF\n").unwrap();
        assert!(!quoted.substitution);
        assert_eq!(names("ls # rm -rf /"), ["ls"]);
        assert_eq!(names("echo a#b"), ["echo"]);
    }

    #[test]
    fn broken_and_hostile_lines_are_errors() {
        assert_eq!(
            read("echo 'x"),
            Err(ShellError::Unterminated("a `'` quote"))
        );
        assert!(read("echo \"x").is_err());
        assert!(read("echo $(ls").is_err());
        assert!(read("echo `ls").is_err());
        assert!(read("echo ${x").is_err());
        assert_eq!(read("ls )"), Err(ShellError::Unbalanced));
        let deep = "$(".repeat(200) + &")".repeat(200);
        assert_eq!(read(&deep), Err(ShellError::TooDeep));
        let parens = "(".repeat(100_000);
        assert_eq!(read(&parens), Err(ShellError::TooDeep));
        let evals = "eval ".repeat(1000) + "rm";
        assert!(read(&evals).is_err() || has(&evals, "rm"));
        let many = "a;".repeat(MAX_COMMANDS + 1);
        assert_eq!(read(&many), Err(ShellError::TooManyCommands));
        let long = "a".repeat(MAX_LINE_BYTES + 1);
        assert_eq!(read(&long), Err(ShellError::TooLong));
        // Not a panic on odd bytes.
        for line in [
            "\\", "$", "<", ">", "&", "|", ";;", "2>", "<<", "$'", "${}", "é`é`",
        ] {
            let _ = read(line);
        }
    }
}
