//! Bounds the tree the Markdown converter walks. htmd converts recursively (a few KiB of stack
//! per level) and copies each element's output into its parent's, so both the depth and the
//! per-line prefixes (`> ` for quotes, indents for list items) must be capped before it runs.
//!
//! Iterative, one visit per node: an element at depth [`MAX_DEPTH`] keeps its text and loses
//! its structure (its descendants become text, with a line break at each block boundary); a
//! quote or list item inside [`MAX_INDENT`] others becomes a plain `div`, its text kept.

use std::cell::RefCell;
use std::rc::Rc;

use html5ever::tendril::StrTendril;
use html5ever::{ns, LocalName, QualName};
use markup5ever_rcdom::{Handle, Node, NodeData};

use super::SKIPPED_TAGS;

/// Element depth below the document at which the structure is flattened to text.
pub const MAX_DEPTH: usize = 128;
/// Quotes and list items nested in each other before they become plain blocks.
pub const MAX_INDENT: usize = 8;

/// Flatten `document` in place.
pub fn flatten(document: &Handle) {
    let mut work = vec![(document.clone(), 0usize, 0usize)];
    while let Some((node, depth, indent)) = work.pop() {
        let children: Vec<Handle> = node.children.borrow().clone();
        for (index, child) in children.into_iter().enumerate() {
            let Some(tag) = tag_of(&child) else { continue };
            if SKIPPED_TAGS.contains(&tag.as_str()) {
                continue; // the converter does not look inside
            }
            let mut child = child;
            let mut indents = matches!(tag.as_str(), "blockquote" | "li");
            if indents && indent >= MAX_INDENT {
                child = rename(&node, index, &child, "div");
                indents = false;
            }
            if depth + 1 >= MAX_DEPTH {
                to_text(&child);
            } else {
                work.push((child, depth + 1, indent + usize::from(indents)));
            }
        }
    }
}

fn tag_of(node: &Handle) -> Option<String> {
    match &node.data {
        NodeData::Element { name, .. } => Some(name.local.to_string()),
        _ => None,
    }
}

fn element(tag: &str) -> Handle {
    Node::new(NodeData::Element {
        name: QualName::new(None, ns!(html), LocalName::from(tag)),
        attrs: RefCell::new(Vec::new()),
        template_contents: RefCell::new(None),
        mathml_annotation_xml_integration_point: false,
    })
}

fn adopt(parent: &Handle, children: Vec<Handle>) {
    for child in &children {
        child.parent.set(Some(Rc::downgrade(parent)));
    }
    *parent.children.borrow_mut() = children;
}

/// Put a `tag` element with `old`'s children in `old`'s place (child `index` of `parent`).
fn rename(parent: &Handle, index: usize, old: &Handle, tag: &str) -> Handle {
    let new = element(tag);
    adopt(&new, std::mem::take(&mut *old.children.borrow_mut()));
    new.parent.set(Some(Rc::downgrade(parent)));
    parent.children.borrow_mut()[index] = new.clone();
    new
}

/// Replace `node`'s descendants by their text, a `<br>` at each block boundary.
fn to_text(node: &Handle) {
    enum Visit {
        Node(Handle),
        Break,
    }
    let mut out: Vec<Handle> = Vec::new();
    let mut text = String::new();
    let flush = |out: &mut Vec<Handle>, text: &mut String, line_break: bool| {
        if !text.is_empty() {
            out.push(Node::new(NodeData::Text {
                contents: RefCell::new(StrTendril::from(std::mem::take(text))),
            }));
        }
        if line_break && out.last().is_some_and(|last| tag_of(last).is_none()) {
            out.push(element("br"));
        }
    };
    let mut work: Vec<Visit> = std::mem::take(&mut *node.children.borrow_mut())
        .into_iter()
        .rev()
        .map(Visit::Node)
        .collect();
    while let Some(visit) = work.pop() {
        let node = match visit {
            Visit::Break => {
                flush(&mut out, &mut text, true);
                continue;
            }
            Visit::Node(node) => node,
        };
        match &node.data {
            NodeData::Text { contents } => text.push_str(&contents.borrow()),
            NodeData::Element { name, .. } => {
                let tag = &*name.local;
                if SKIPPED_TAGS.contains(&tag) {
                    continue;
                }
                let block = tag == "br" || is_block(tag);
                if block {
                    flush(&mut out, &mut text, true);
                    work.push(Visit::Break);
                }
                let kids = std::mem::take(&mut *node.children.borrow_mut());
                work.extend(kids.into_iter().rev().map(Visit::Node));
            }
            _ => {}
        }
    }
    flush(&mut out, &mut text, false);
    adopt(node, out);
}

fn is_block(tag: &str) -> bool {
    matches!(
        tag,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "dd"
            | "details"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hr"
            | "li"
            | "main"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "section"
            | "summary"
            | "table"
            | "td"
            | "th"
            | "tr"
            | "ul"
    )
}
