//! The filter between the tokenizer and the tree builder that keeps a hostile page's tree small.
//!
//! html5gum tokenizes the page (linear time, whatever the input); every token passes through
//! [`Bound`] on its way to html5ever's tree builder, which asks back for the tokenizer states
//! (raw text after `<script>`, ...) as it does in html5ever's own parser. The filter keeps its
//! own model of the open elements and:
//! - lets at most [`MAX_OPEN`] elements be open at once and at most [`MAX_ELEMENTS`] in the
//!   whole page: start tags past either limit are dropped, their text is kept;
//! - closes elements explicitly, innermost first, whenever an end tag or an implied end (a new
//!   `<p>` closing the open one, a `<li>` the previous item, ...) closes several, so the tree
//!   builder never has to recover misnested tags (its recovery re-opens formatting elements,
//!   which could otherwise nest without bound);
//! - drops end tags that close nothing it opened, comments, NUL characters, attributes past
//!   [`MAX_ATTRS`] per element (or longer than [`MAX_ATTR_BYTES`], or with odd names), and the
//!   contents of the elements the converter skips anyway (`script`, `style`, ...);
//! - keeps at most [`MAX_LINES`] line breaks in text (later ones become spaces), which bounds
//!   what the Markdown converter's per-line prefixes (`> `, list indents) can add;
//! - stops forwarding anything once `stop` is set (the caller's deadline or cancel).
//!
//! The tree builder may still hold a few more open elements than the model (implied `tbody` /
//! `tr`, re-opened formatting elements), a small factor of [`MAX_OPEN`]; the flattening pass
//! ([`super::flatten`]) bounds the depth the converter walks exactly.

use std::sync::atomic::{AtomicBool, Ordering};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{Tag, TagKind, Token, TokenSink, TokenSinkResult};
use html5ever::tree_builder::TreeBuilder;
use html5ever::{ns, Attribute, LocalName, QualName};
use html5gum::emitters::callback::{Callback, CallbackEmitter, CallbackEvent};
use html5gum::{Emitter, ForwardingEmitter, Span, State};
use markup5ever_rcdom::{Handle, RcDom};

/// Elements open at once, as the filter counts them.
pub const MAX_OPEN: usize = 256;
/// Elements in the whole page.
pub const MAX_ELEMENTS: usize = 100_000;
/// Line breaks kept in the page's text.
pub const MAX_LINES: usize = 100_000;
/// Attributes kept per element.
pub const MAX_ATTRS: usize = 32;
/// The longest attribute value kept (a longer one, such as an inline `data:` image, is dropped).
pub const MAX_ATTR_BYTES: usize = 8 * 1024;
/// Tokens between two looks at the stop flag.
pub(super) const STOP_CHECK_EVERY: u32 = 4096;

/// Tokenize `html` and build its tree through the filter. The tree is partial when `stop` was
/// set on the way.
pub fn parse(html: &[u8], stop: &AtomicBool) -> Handle {
    let builder = TreeBuilder::new(
        RcDom::default(),
        html5ever::tree_builder::TreeBuilderOpts {
            // As htmd parses: `<noscript>` is raw text (and skipped).
            scripting_enabled: true,
            ..Default::default()
        },
    );
    {
        let emitter = BoundEmitter {
            inner: CallbackEmitter::new(Bound::new(&builder, stop)),
        };
        let tokenizer = html5gum::Tokenizer::new_with_emitter(html, emitter);
        // Reading a byte slice cannot fail.
        let Ok(()) = tokenizer.finish();
    }
    builder.sink.document.clone()
}

/// The filter: receives html5gum's events, forwards bounded tokens to the tree builder.
struct Bound<'a> {
    builder: &'a TreeBuilder<Handle, RcDom>,
    stop: &'a AtomicBool,
    stopped: bool,
    since_check: u32,
    /// The model of the open elements, outermost first.
    open: Vec<LocalName>,
    /// How many of `open` are `svg` or `math` (inside them every element nests; none is void).
    foreign: usize,
    /// Start tags forwarded so far.
    elements: usize,
    /// Line breaks forwarded so far.
    lines: usize,
    /// Inside a raw-text element whose start tag was dropped: its text is dropped up to its end
    /// tag.
    skipping: Option<LocalName>,
    /// The start tag being read, and whether its current attribute is kept.
    tag: Option<Tag>,
    keep_value: bool,
    /// The tokenizer state the tree builder (or the filter) asked for after the last tag.
    next_state: Option<State>,
}

impl<'a> Bound<'a> {
    fn new(builder: &'a TreeBuilder<Handle, RcDom>, stop: &'a AtomicBool) -> Self {
        Bound {
            builder,
            stop,
            stopped: false,
            since_check: 0,
            open: Vec::new(),
            foreign: 0,
            elements: 0,
            lines: 0,
            skipping: None,
            tag: None,
            keep_value: false,
            next_state: None,
        }
    }

    fn forward(&mut self, token: Token) {
        let state = match self.builder.process_token(token, 1) {
            TokenSinkResult::Continue | TokenSinkResult::EncodingIndicator(_) => return,
            TokenSinkResult::Script(_) => State::Data,
            TokenSinkResult::Plaintext => State::PlainText,
            TokenSinkResult::RawData(RawKind::Rcdata) => State::RcData,
            TokenSinkResult::RawData(RawKind::Rawtext) => State::RawText,
            TokenSinkResult::RawData(RawKind::ScriptData | RawKind::ScriptDataEscaped(_)) => {
                State::ScriptData
            }
        };
        self.next_state = Some(state);
    }

    fn end_tag(name: LocalName) -> Token {
        Token::TagToken(Tag {
            kind: TagKind::EndTag,
            name,
            self_closing: false,
            attrs: Vec::new(),
        })
    }

    /// Close the open elements from the innermost down to index `at`, one end tag each.
    fn close_to(&mut self, at: usize) {
        while self.open.len() > at {
            let Some(name) = self.open.pop() else { break };
            if is_foreign_root(&name) {
                self.foreign -= 1;
            }
            self.forward(Self::end_tag(name));
        }
    }

    /// The elements a start tag `name` implicitly closes, as browsers do for the common cases
    /// (`<p>` in a `<p>`, `<li>` after `<li>`, table cells and rows, ...), so well-formed pages
    /// that leave those open are not counted as deep.
    fn close_implied(&mut self, name: &str) {
        let (targets, stops): (&[&str], &[&str]) =
            match name {
                "li" => (&["li"], &["ul", "ol", "menu", "dir"]),
                "dd" | "dt" => (&["dd", "dt"], &["dl"]),
                "tr" => (&["tr"], &["table", "thead", "tbody", "tfoot"]),
                "td" | "th" => (&["td", "th"], &["tr", "table"]),
                "thead" | "tbody" | "tfoot" => (&["thead", "tbody", "tfoot"], &["table"]),
                "option" => (&["option"], &["select", "datalist"]),
                "optgroup" => (&["option", "optgroup"], &["select"]),
                "body" => (&["head"], &[]),
                "a" => (&["a"], &[]),
                "button" => (&["button"], &[]),
                "nobr" => (&["nobr"], &[]),
                "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                    if self.open.last().is_some_and(|top| {
                        matches!(&**top, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
                    }) {
                        self.close_to(self.open.len() - 1);
                    }
                    (&["p"], &[])
                }
                _ if closes_p(name) => (&["p"], &[]),
                _ => return,
            };
        let found = self.open.iter().rposition(|open| {
            targets.contains(&&**open) || stops.contains(&&**open) || is_scope_boundary(open)
        });
        if let Some(at) = found {
            if targets.contains(&&*self.open[at]) {
                self.close_to(at);
            }
        }
    }

    fn start_tag(&mut self, mut tag: Tag) {
        let name = tag.name.clone();
        if !clean_name(&name) {
            return;
        }
        let raw = raw_text_state(&name);
        let full = self.elements >= MAX_ELEMENTS || self.open.len() >= MAX_OPEN;
        if skipped_contents(&name) || full {
            // Dropped. A raw-text element's contents still need the raw-text state (a script's
            // `"<div>"` is not a tag); the contents of the ones the converter skips go too.
            if let Some(state) = raw {
                self.next_state = Some(state);
                if skipped_contents(&name) {
                    self.skipping = Some(name);
                }
            }
            return;
        }
        self.close_implied(&name);
        // The self-closing flag only counts in svg / math, where the model nests every element
        // anyway; forwarding it would let the tree builder keep fewer open than the model, and
        // never more, so it is dropped for one rule everywhere: non-void elements nest.
        tag.self_closing = false;
        self.elements += 1;
        if self.foreign == 0 && is_void(&name) {
            self.forward(Token::TagToken(tag));
            return;
        }
        if is_foreign_root(&name) {
            self.foreign += 1;
        }
        self.open.push(name);
        self.forward(Token::TagToken(tag));
    }

    fn end_tag_named(&mut self, name: LocalName) {
        if let Some(skipped) = &self.skipping {
            if *skipped == name {
                self.skipping = None;
            }
            return;
        }
        if let Some(at) = self.open.iter().rposition(|open| *open == name) {
            self.close_to(at);
        }
    }

    fn text(&mut self, bytes: &[u8]) {
        if self.skipping.is_some() {
            return;
        }
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        if text.contains('\0') {
            text.retain(|c| c != '\0');
        }
        let breaks = text.matches('\n').count();
        if self.lines + breaks > MAX_LINES {
            let mut room = MAX_LINES.saturating_sub(self.lines);
            text = text
                .chars()
                .map(|c| match c {
                    '\n' if room > 0 => {
                        room -= 1;
                        '\n'
                    }
                    '\n' => ' ',
                    c => c,
                })
                .collect();
            self.lines = MAX_LINES;
        } else {
            self.lines += breaks;
        }
        if !text.is_empty() {
            self.forward(Token::CharacterTokens(StrTendril::from(text)));
        }
    }

    fn stopped(&mut self) -> bool {
        if !self.stopped {
            self.since_check += 1;
            if self.since_check >= STOP_CHECK_EVERY {
                self.since_check = 0;
                self.stopped = self.stop.load(Ordering::Relaxed);
            }
        }
        self.stopped
    }
}

impl Callback<std::convert::Infallible, ()> for Bound<'_> {
    fn handle_event(
        &mut self,
        event: CallbackEvent<'_>,
        _span: Span<()>,
    ) -> Option<std::convert::Infallible> {
        if self.stopped() {
            return None;
        }
        match event {
            CallbackEvent::OpenStartTag { name } => {
                self.tag = Some(Tag {
                    kind: TagKind::StartTag,
                    name: LocalName::from(&*String::from_utf8_lossy(name)),
                    self_closing: false,
                    attrs: Vec::new(),
                });
                self.keep_value = false;
            }
            CallbackEvent::AttributeName { name } => {
                self.keep_value = false;
                let Some(tag) = &mut self.tag else {
                    return None; // attributes on an end tag
                };
                let name = String::from_utf8_lossy(name);
                if tag.attrs.len() < MAX_ATTRS
                    && clean_name(&name)
                    && !tag.attrs.iter().any(|a| *a.name.local == *name)
                {
                    tag.attrs.push(Attribute {
                        name: QualName::new(None, ns!(), LocalName::from(&*name)),
                        value: StrTendril::new(),
                    });
                    self.keep_value = true;
                }
            }
            CallbackEvent::AttributeValue { value } => {
                if let (true, Some(tag)) = (self.keep_value, &mut self.tag) {
                    if let Some(attr) = tag.attrs.last_mut() {
                        if attr.value.len() + value.len() > MAX_ATTR_BYTES {
                            tag.attrs.pop();
                            self.keep_value = false;
                        } else {
                            attr.value.push_slice(&String::from_utf8_lossy(value));
                        }
                    }
                }
            }
            CallbackEvent::CloseStartTag { .. } => {
                if let Some(tag) = self.tag.take() {
                    self.start_tag(tag);
                }
            }
            CallbackEvent::EndTag { name } => {
                self.end_tag_named(LocalName::from(&*String::from_utf8_lossy(name)));
            }
            CallbackEvent::String { value } => self.text(value),
            CallbackEvent::Doctype {
                name,
                public_identifier,
                system_identifier,
                force_quirks,
            } => {
                let tendril = |b: &[u8]| StrTendril::from(&*String::from_utf8_lossy(b));
                self.forward(Token::DoctypeToken(html5ever::tokenizer::Doctype {
                    name: Some(name).filter(|n| !n.is_empty()).map(tendril),
                    public_id: public_identifier.map(tendril),
                    system_id: system_identifier.map(tendril),
                    force_quirks,
                }));
            }
            CallbackEvent::Comment { .. } | CallbackEvent::Error(_) => {}
        }
        None
    }
}

/// html5gum's callback emitter, with the tokenizer states and the end of input handed over
/// between the tree builder and the tokenizer (what html5gum's own html5ever bridge does, for
/// the html5ever version htmd uses).
struct BoundEmitter<'a> {
    inner: CallbackEmitter<Bound<'a>>,
}

impl ForwardingEmitter for BoundEmitter<'_> {
    type Token = std::convert::Infallible;

    fn inner(&mut self) -> &mut impl Emitter<Token = Self::Token> {
        &mut self.inner
    }

    fn emit_current_tag(&mut self) -> Option<State> {
        // The callback emitter asks for no state itself (naive switching is off).
        let _ = self.inner.emit_current_tag();
        self.inner.callback_mut().next_state.take()
    }

    fn emit_eof(&mut self) {
        self.inner.emit_eof();
        let bound = self.inner.callback_mut();
        bound.forward(Token::EOFToken);
        bound.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&mut self) -> bool {
        self.inner
            .callback_mut()
            .builder
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// Tag and attribute names the filter forwards: ASCII letters first, then letters, digits and
/// `-_:.`; anything else (quotes, `<`, control characters) is dropped.
fn clean_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        && name.len() <= 64
}

/// The tokenizer state an element's contents are read in (raw text for `script`, ...).
fn raw_text_state(name: &str) -> Option<State> {
    html5gum::naive_next_state(name.as_bytes()).or(match name {
        // naive_next_state spells it `noframe`.
        "noframes" => Some(State::RawText),
        _ => None,
    })
}

/// Elements whose contents the converter skips: dropped here with their contents.
fn skipped_contents(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "noscript" | "iframe" | "noembed" | "noframes"
    )
}

fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "basefont"
            | "bgsound"
            | "br"
            | "col"
            | "embed"
            | "frame"
            | "hr"
            | "image"
            | "img"
            | "input"
            | "keygen"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
    )
}

fn is_foreign_root(name: &str) -> bool {
    matches!(name, "svg" | "math")
}

/// Start tags that close an open `<p>` (the HTML standard's list).
fn closes_p(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "header"
            | "hgroup"
            | "hr"
            | "li"
            | "dd"
            | "dt"
            | "listing"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "search"
            | "section"
            | "summary"
            | "table"
            | "ul"
            | "xmp"
            | "plaintext"
    )
}

/// Elements an implied close does not look past.
fn is_scope_boundary(name: &str) -> bool {
    matches!(
        name,
        "html"
            | "table"
            | "td"
            | "th"
            | "caption"
            | "template"
            | "applet"
            | "marquee"
            | "object"
            | "button"
            | "svg"
            | "math"
    )
}
