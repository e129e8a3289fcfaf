//! Jupyter notebooks (nbformat 4): rendering for `read`, and cell edits for `notebook_edit`
//! that rewrite only the bytes of the cell they touch.
//!
//! An edit finds each cell's byte span in the file with a small JSON scanner, serializes the new
//! cell the way nbformat does (sorted keys, the file's own indentation, `source` as a list of
//! lines) and splices it in: every other byte of the file stays as it was.

use std::ops::Range;

use serde_json::{json, Map, Value};

use super::cut_chars;
use crate::tool::ToolError;

/// Characters of one cell output shown by `read`.
const MAX_OUTPUT_CHARS: usize = 10_000;

/// A notebook: its parsed JSON and where its cells are in the text.
pub(crate) struct Notebook<'a> {
    pub text: &'a str,
    pub json: Value,
    /// The span of the `cells` array, brackets included.
    pub array: Range<usize>,
    /// The span of each cell object.
    pub spans: Vec<Range<usize>>,
}

impl<'a> Notebook<'a> {
    pub fn parse(text: &'a str, shown: &str) -> Result<Self, ToolError> {
        let json: Value = serde_json::from_str(text)
            .map_err(|e| format!("{shown} is not a valid notebook (not JSON: {e})"))?;
        let major = json.get("nbformat").and_then(Value::as_u64);
        if major != Some(4) {
            return Err(format!(
                "{shown} is not an nbformat 4 notebook (nbformat {})",
                major.map_or("missing".to_string(), |m| m.to_string())
            )
            .into());
        }
        let cells = json
            .get("cells")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{shown} has no `cells` list"))?;
        let (array, spans) = cell_spans(text)
            .ok_or_else(|| format!("{shown}: cannot locate the cells in the file"))?;
        if spans.len() != cells.len() {
            return Err(format!("{shown}: cannot locate the cells in the file").into());
        }
        Ok(Notebook {
            text,
            json,
            array,
            spans,
        })
    }

    pub fn cells(&self) -> &[Value] {
        self.json["cells"].as_array().map_or(&[], Vec::as_slice)
    }

    /// nbformat_minor (ids exist from 4.5 on).
    pub fn minor(&self) -> u64 {
        self.json
            .get("nbformat_minor")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// The index of the cell with this id; `cell-N` names the N-th cell (from 0) of a notebook
    /// whose cells have no ids.
    pub fn find(&self, id: &str) -> Option<usize> {
        let cells = self.cells();
        cells
            .iter()
            .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
            .or_else(|| {
                let n: usize = id.strip_prefix("cell-")?.parse().ok()?;
                (n < cells.len() && cells[n].get("id").is_none()).then_some(n)
            })
    }

    /// The indentation unit of the file ("" when it is on one line).
    fn indent_unit(&self) -> String {
        let Some(nl) = self.text.find('\n') else {
            return String::new();
        };
        self.text[nl + 1..]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect()
    }

    /// The indentation of the cell objects.
    fn cell_indent(&self) -> String {
        if let Some(first) = self.spans.first() {
            let line_start = self.text[..first.start].rfind('\n').map_or(0, |i| i + 1);
            let before = &self.text[line_start..first.start];
            if before.chars().all(|c| c == ' ' || c == '\t') {
                return before.to_string();
            }
            return String::new();
        }
        let line_start = self.text[..self.array.start]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let key_indent: String = self.text[line_start..]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        format!("{key_indent}{}", self.indent_unit())
    }

    /// Serialize a cell as it would sit in this file.
    pub fn format_cell(&self, cell: &Value) -> String {
        let unit = self.indent_unit();
        if unit.is_empty() && !self.text.contains('\n') {
            // Cannot fail: a `Value` serializes (its map keys are strings).
            return serde_json::to_string(cell).expect("a cell serializes");
        }
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        // Cannot fail: a `Value` serializes into memory, and serde_json writes UTF-8.
        serde::Serialize::serialize(cell, &mut ser).expect("a cell serializes");
        let pretty = String::from_utf8(buf).expect("serde_json writes UTF-8");
        let indent = self.cell_indent();
        pretty.replace('\n', &format!("\n{indent}"))
    }

    /// The text with cell `index` replaced by `cell`.
    pub fn replace(&self, index: usize, cell: &Value) -> String {
        let span = &self.spans[index];
        format!(
            "{}{}{}",
            &self.text[..span.start],
            self.format_cell(cell),
            &self.text[span.end..]
        )
    }

    /// The text with `cell` inserted after cell `after` (`None`: first).
    pub fn insert(&self, after: Option<usize>, cell: &Value) -> String {
        let new = self.format_cell(cell);
        let indent = self.cell_indent();
        let multiline = self.text.contains('\n');
        let sep = if multiline {
            format!(",\n{indent}")
        } else {
            ",".to_string()
        };
        match (after, self.spans.first()) {
            (Some(i), _) => {
                let at = self.spans[i].end;
                format!("{}{sep}{new}{}", &self.text[..at], &self.text[at..])
            }
            (None, Some(first)) => {
                let at = first.start;
                format!("{}{new}{sep}{}", &self.text[..at], &self.text[at..])
            }
            (None, None) => {
                // `[]` becomes `[\n<indent><cell>\n<outer indent>]`.
                let outer = indent
                    .strip_suffix(self.indent_unit().as_str())
                    .unwrap_or("")
                    .to_string();
                let inner = if multiline {
                    format!("[\n{indent}{new}\n{outer}]")
                } else {
                    format!("[{new}]")
                };
                format!(
                    "{}{inner}{}",
                    &self.text[..self.array.start],
                    &self.text[self.array.end..]
                )
            }
        }
    }

    /// The text without cell `index` (and its separator).
    pub fn delete(&self, index: usize) -> String {
        let n = self.spans.len();
        let range = if n == 1 {
            self.array.start + 1..self.array.end - 1
        } else if index + 1 < n {
            self.spans[index].start..self.spans[index + 1].start
        } else {
            self.spans[index - 1].end..self.spans[index].end
        };
        format!("{}{}", &self.text[..range.start], &self.text[range.end..])
    }
}

/// nbformat's multiline string: a list of lines, each but the last keeping its `\n`.
pub(crate) fn source_lines(source: &str) -> Value {
    Value::Array(
        source
            .split_inclusive('\n')
            .map(|l| Value::String(l.to_string()))
            .collect(),
    )
}

/// A multiline string field (a string or a list of strings) as one string.
pub(crate) fn joined(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// A new cell of `cell_type` with `source`, in nbformat 4 shape.
pub(crate) fn new_cell(cell_type: &str, source: &str, id: Option<String>) -> Value {
    let mut cell = Map::new();
    cell.insert("cell_type".into(), json!(cell_type));
    if cell_type == "code" {
        cell.insert("execution_count".into(), Value::Null);
    }
    if let Some(id) = id {
        cell.insert("id".into(), json!(id));
    }
    cell.insert("metadata".into(), json!({}));
    if cell_type == "code" {
        cell.insert("outputs".into(), json!([]));
    }
    cell.insert("source".into(), source_lines(source));
    Value::Object(cell)
}

/// Render a notebook for `read`: each cell with its id, type and source, then its outputs.
/// `offset` (1-based) and `limit` count cells.
pub(crate) fn render(
    nb: &Notebook<'_>,
    offset: usize,
    limit: usize,
    shown: &str,
) -> Result<(String, Value), ToolError> {
    let cells = nb.cells();
    let total = cells.len();
    if total == 0 {
        return Ok((
            format!("({shown} is a notebook with no cells)"),
            json!({"cells": 0}),
        ));
    }
    if offset > total {
        return Err(
            format!("offset {offset} is past the end of {shown}, which has {total} cells").into(),
        );
    }
    let language = nb
        .json
        .pointer("/metadata/language_info/name")
        .or_else(|| nb.json.pointer("/metadata/kernelspec/language"))
        .and_then(Value::as_str)
        .unwrap_or("python");
    let mut out = String::new();
    let mut outputs_cut = 0;
    let end = (offset - 1).saturating_add(limit).min(total);
    for (i, cell) in cells.iter().enumerate().take(end).skip(offset - 1) {
        let id = cell
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("cell-{i}"), str::to_string);
        let kind = cell
            .get("cell_type")
            .and_then(Value::as_str)
            .unwrap_or("code");
        out.push_str(&format!("<cell id=\"{id}\" cell_type=\"{kind}\""));
        if kind == "code" {
            out.push_str(&format!(" language=\"{language}\""));
            if let Some(n) = cell.get("execution_count").and_then(Value::as_u64) {
                out.push_str(&format!(" execution_count=\"{n}\""));
            }
        }
        out.push_str(">\n");
        let source = joined(cell.get("source"));
        out.push_str(&source);
        if !source.is_empty() && !source.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("</cell>\n");
        let outputs = cell.get("outputs").and_then(Value::as_array);
        if let Some(outputs) = outputs.filter(|o| !o.is_empty()) {
            out.push_str(&format!("<outputs cell_id=\"{id}\">\n"));
            for o in outputs {
                let text = output_text(o);
                let (text, cut) = cut_chars(&text, MAX_OUTPUT_CHARS);
                if cut {
                    outputs_cut += 1;
                }
                out.push_str(text);
                if !text.is_empty() && !text.ends_with('\n') {
                    out.push('\n');
                }
            }
            out.push_str("</outputs>\n");
        }
    }
    let mut meta = json!({"cells": total});
    if end < total || offset > 1 {
        meta["truncated"] = json!(end < total);
        meta["total"] = json!(total);
        if end < total {
            meta["nextOffset"] = json!(end + 1);
        }
    }
    if outputs_cut > 0 {
        meta["truncated"] = json!(true);
        meta["outputsCut"] = json!(outputs_cut);
    }
    Ok((out, meta))
}

fn output_text(o: &Value) -> String {
    match o.get("output_type").and_then(Value::as_str) {
        Some("stream") => joined(o.get("text")),
        Some("error") => format!(
            "{}: {}",
            o.get("ename").and_then(Value::as_str).unwrap_or("Error"),
            o.get("evalue").and_then(Value::as_str).unwrap_or("")
        ),
        Some("execute_result") | Some("display_data") => {
            let data = o.get("data");
            let plain = data.and_then(|d| d.get("text/plain"));
            let mut text = joined(plain);
            if let Some(Value::Object(d)) = data {
                for mime in d.keys().filter(|k| *k != "text/plain") {
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(&format!("[{mime} output]"));
                }
            }
            text
        }
        _ => String::new(),
    }
}

/// The span of the top-level `cells` array and of each of its elements. Keys are compared
/// decoded (`"cel\u006cs"` is `cells` to a JSON parser too), and a document with more than one
/// `cells` key is refused: parsers keep the last copy, and an edit must not land in another.
fn cell_spans(text: &str) -> Option<(Range<usize>, Vec<Range<usize>>)> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut found = None;
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b'}' => return found,
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = skip_string(b, i)?;
        let raw = &text[i..key_end];
        let is_cells = raw == "\"cells\""
            || (raw.contains('\\') && serde_json::from_str::<String>(raw).ok()? == "cells");
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let value_end = skip_value(b, i)?;
        if is_cells {
            if found.is_some() || b[i] != b'[' {
                return None;
            }
            found = Some((i..value_end, array_spans(b, i)?));
        }
        i = value_end;
    }
}

/// The spans of the elements of the array starting at `start`.
fn array_spans(b: &[u8], start: usize) -> Option<Vec<Range<usize>>> {
    let mut spans = Vec::new();
    let mut j = skip_ws(b, start + 1);
    if b.get(j) == Some(&b']') {
        return Some(spans);
    }
    loop {
        let end = skip_value(b, j)?;
        spans.push(j..end);
        j = skip_ws(b, end);
        match b.get(j)? {
            b',' => j = skip_ws(b, j + 1),
            b']' => return Some(spans),
            _ => return None,
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string starting at `i`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end (exclusive) of the JSON value starting at `i`.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            Some(j)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A notebook as nbformat writes it (indent 1, sorted keys, trailing newline).
    pub const NB: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Title\n",
    "Some \"quoted\" text ]} with brackets"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "calc",
   "metadata": {
    "tags": []
   },
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "2\n"
     ]
    }
   ],
   "source": [
    "print(1 + 1)"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    #[test]
    fn spans_and_render() {
        let nb = Notebook::parse(NB, "nb.ipynb").unwrap();
        assert_eq!(nb.spans.len(), 2);
        assert!(NB[nb.spans[0].clone()].starts_with("{\n   \"cell_type\": \"markdown\""));
        assert!(NB[nb.spans[1].clone()].ends_with("]\n  }"));
        let (text, meta) = render(&nb, 1, 2000, "nb.ipynb").unwrap();
        assert_eq!(
            text,
            "<cell id=\"intro\" cell_type=\"markdown\">\n# Title\nSome \"quoted\" text ]} with brackets\n</cell>\n\
             <cell id=\"calc\" cell_type=\"code\" language=\"python\" execution_count=\"1\">\nprint(1 + 1)\n</cell>\n\
             <outputs cell_id=\"calc\">\n2\n</outputs>\n"
        );
        assert_eq!(meta, json!({"cells": 2}));
        let (text, meta) = render(&nb, 2, 1, "nb.ipynb").unwrap();
        assert!(text.starts_with("<cell id=\"calc\""));
        assert_eq!(meta["total"], 2);
        assert!(render(&nb, 3, 1, "nb.ipynb").is_err());
    }

    #[test]
    fn edits_touch_only_their_cell() {
        let nb = Notebook::parse(NB, "nb.ipynb").unwrap();
        let cell = new_cell("code", "x = 1\ny = 2\n", Some("new1".into()));
        let text = nb.insert(Some(0), &cell);
        let again = Notebook::parse(&text, "nb").unwrap();
        assert_eq!(again.cells().len(), 3);
        assert_eq!(again.cells()[1]["id"], "new1");
        assert_eq!(
            &text[again.spans[1].clone()],
            "{\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"id\": \"new1\",\n   \"metadata\": {},\n   \"outputs\": [],\n   \"source\": [\n    \"x = 1\\n\",\n    \"y = 2\\n\"\n   ]\n  }"
        );
        // Everything around the new cell is the old bytes.
        assert_eq!(&text[..nb.spans[0].end], &NB[..nb.spans[0].end]);
        assert!(text.ends_with(&NB[nb.spans[0].end..]));
        // At the top.
        let text = nb.insert(None, &cell);
        let again = Notebook::parse(&text, "nb").unwrap();
        assert_eq!(again.cells()[0]["id"], "new1");
        assert!(text.ends_with(&NB[nb.spans[0].start..]));
        // Delete each, and the only one.
        let text = nb.delete(0);
        let again = Notebook::parse(&text, "nb").unwrap();
        assert_eq!(again.cells().len(), 1);
        assert_eq!(again.cells()[0]["id"], "calc");
        let text = nb.delete(1);
        let again = Notebook::parse(&text, "nb").unwrap();
        assert_eq!(again.cells()[0]["id"], "intro");
        assert!(text.starts_with(&NB[..nb.spans[0].end]));
        let empty = again.delete(0);
        assert!(
            empty.starts_with("{\n \"cells\": [],\n \"metadata\""),
            "{empty}"
        );
        // Insert into an empty list.
        let nb_empty = Notebook::parse(&empty, "nb").unwrap();
        let text = nb_empty.insert(None, &new_cell("markdown", "hi", Some("m".into())));
        assert!(
            text.starts_with("{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\""),
            "{text}"
        );
        assert!(text.contains("  }\n ],\n \"metadata\""), "{text}");
        assert_eq!(Notebook::parse(&text, "nb").unwrap().cells().len(), 1);
        // Replace.
        let text = nb.replace(1, &new_cell("code", "print(3)", Some("calc".into())));
        assert!(text.starts_with(&NB[..nb.spans[1].start]));
        assert!(text.ends_with(&NB[nb.spans[1].end..]));
    }

    #[test]
    fn one_line_notebooks_and_ids() {
        let compact = r#"{"cells":[{"cell_type":"code","execution_count":null,"metadata":{},"outputs":[],"source":["a"]}],"metadata":{},"nbformat":4,"nbformat_minor":4}"#;
        let nb = Notebook::parse(compact, "c").unwrap();
        assert_eq!(nb.find("cell-0"), Some(0));
        assert_eq!(nb.find("cell-1"), None);
        let text = nb.insert(Some(0), &new_cell("markdown", "b", None));
        assert!(!text.contains('\n'));
        assert_eq!(Notebook::parse(&text, "c").unwrap().cells().len(), 2);
        assert!(Notebook::parse("{\"nbformat\": 3, \"cells\": []}", "x").is_err());
        assert!(Notebook::parse("not json", "x").is_err());
        assert_eq!(source_lines(""), json!([]));
        assert_eq!(source_lines("a\nb"), json!(["a\n", "b"]));
    }
}
