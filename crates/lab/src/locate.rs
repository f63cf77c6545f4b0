//! Where each field of a lab file is written: a map from field paths
//! (`tools[1].artifact.sha256`) to line and column, built from the YAML
//! parser's events. It lets an error found after parsing (by `validate()`)
//! point at the line that caused it, and gives a parse error its field path.

use serde_saphyr::granit_parser::{Event, Parser};

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone)]
struct Entry {
    path: String,
    /// Where the key is written (`sha256:`), for mapping values.
    key: Option<Pos>,
    /// Where the value starts.
    value: Pos,
    /// The value's text, when it is a scalar.
    scalar: Option<String>,
}

/// Field paths of one YAML document, in document order.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    entries: Vec<Entry>,
    /// Where the YAML stopped being well-formed, if it did.
    pub syntax_error: Option<Pos>,
}

/// Bounds for the walk: the file was size-checked already, these keep a
/// hostile file (deep nesting, millions of tiny nodes) cheap.
const MAX_EVENTS: usize = 200_000;
const MAX_DEPTH: usize = 64;

enum Frame {
    Map {
        path: String,
        key: Option<(String, Pos)>,
        want_key: bool,
    },
    Seq {
        path: String,
        next: usize,
    },
}

impl SourceMap {
    /// Walks the events of `text`. Stops quietly at the first syntax error
    /// (the deserializer reports it) or at the bounds above; what was seen
    /// until then is kept.
    pub fn build(text: &str) -> SourceMap {
        let mut map = SourceMap::default();
        let mut stack: Vec<Frame> = Vec::new();
        let mut documents = 0;
        for (n, item) in Parser::new_from_str(text).enumerate() {
            let (event, span) = match item {
                Ok(ok) => ok,
                Err(e) => {
                    map.syntax_error = Some(Pos {
                        line: e.marker().line(),
                        column: e.marker().col() + 1,
                    });
                    break;
                }
            };
            if n > MAX_EVENTS || stack.len() > MAX_DEPTH {
                break;
            }
            let pos = Pos {
                line: span.start.line(),
                column: span.start.col() + 1,
            };
            match event {
                Event::DocumentStart(..) => {
                    documents += 1;
                    if documents > 1 {
                        break; // a lab is one document; the rest is an error
                    }
                }
                Event::Scalar(..) | Event::Alias(..) => {
                    let key_text = match &event {
                        Event::Scalar(v, ..) => Some(v.to_string()),
                        _ => None,
                    };
                    map.node(&mut stack, pos, key_text, false);
                }
                Event::MappingStart(..) => {
                    if let Some(path) = map.node(&mut stack, pos, None, true) {
                        stack.push(Frame::Map {
                            path,
                            key: None,
                            want_key: true,
                        });
                    }
                }
                Event::SequenceStart(..) => {
                    if let Some(path) = map.node(&mut stack, pos, None, true) {
                        stack.push(Frame::Seq { path, next: 0 });
                    }
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                }
                _ => {}
            }
        }
        map
    }

    /// Records one node; returns its path when it is a value (not a key).
    fn node(
        &mut self,
        stack: &mut [Frame],
        pos: Pos,
        scalar: Option<String>,
        collection: bool,
    ) -> Option<String> {
        let (path, key_pos) = match stack.last_mut() {
            None => (String::new(), None),
            Some(Frame::Seq { path, next }) => {
                let p = format!("{path}[{next}]");
                *next += 1;
                (p, None)
            }
            Some(Frame::Map {
                path,
                key,
                want_key,
            }) => {
                if *want_key {
                    *want_key = false;
                    // A key: remember it. A complex key (a mapping used as a
                    // key) gets a path of its own that no field will match.
                    let name = scalar.unwrap_or_else(|| "<key>".into());
                    *key = Some((name.clone(), pos));
                    if !collection {
                        return None;
                    }
                    return Some(join(path, &name));
                }
                *want_key = true;
                let (name, kpos) = key.take().unwrap_or_else(|| ("<key>".into(), pos));
                (join(path, &name), Some(kpos))
            }
        };
        self.entries.push(Entry {
            path: path.clone(),
            key: key_pos,
            value: pos,
            scalar: if collection { None } else { scalar },
        });
        Some(path)
    }

    /// The value's position of `path`, or of the nearest written ancestor
    /// (a missing field is reported at the mapping that lacks it), and the
    /// path actually found. A command written as a bare list has no `argv`
    /// key: `x.argv[2]` is also looked up as `x[2]`.
    pub fn locate(&self, path: &str) -> Option<(Pos, String)> {
        let mut candidate = path.to_string();
        loop {
            if let Some(e) = self.get(&candidate) {
                return Some((e.value, candidate));
            }
            let alias = candidate.replace(".argv[", "[");
            if let Some(e) = self.get(&alias) {
                return Some((e.value, alias));
            }
            let alias = candidate.strip_suffix(".argv").map(str::to_string);
            if let Some(e) = alias.as_deref().and_then(|a| self.get(a)) {
                return Some((e.value, e.path.clone()));
            }
            candidate = parent(&candidate)?.to_string();
        }
    }

    /// The path of the field written at `pos` (key or value), or of the last
    /// field that starts before it.
    pub fn path_at(&self, pos: Pos) -> Option<&str> {
        if let Some(e) = self
            .entries
            .iter()
            .find(|e| e.key == Some(pos) || e.value == pos)
        {
            return Some(&e.path);
        }
        self.entries
            .iter()
            .filter(|e| e.key.unwrap_or(e.value) <= pos)
            .max_by_key(|e| e.key.unwrap_or(e.value))
            .map(|e| e.path.as_str())
    }

    /// The first field named `name` at or after `from` that sits under
    /// `parent` (used to point at an unknown key when the deserializer only
    /// knew the mapping it was in).
    pub fn find_child(&self, parent: &str, name: &str, from: Pos) -> Option<(Pos, &str)> {
        let want = join(parent, name);
        self.entries
            .iter()
            .filter(|e| e.key.unwrap_or(e.value) >= from)
            .find(|e| e.path == want || (e.path.ends_with(&format!(".{name}"))))
            .map(|e| (e.key.unwrap_or(e.value), e.path.as_str()))
    }

    /// When `pos` is where a key is written: the mapping holding that key,
    /// with the mapping's position (a missing field is reported there).
    pub fn mapping_of_key(&self, pos: Pos) -> Option<(Pos, String)> {
        let e = self.entries.iter().find(|e| e.key == Some(pos))?;
        let parent = parent(&e.path)?;
        match self.get(parent) {
            Some(p) => Some((p.value, parent.to_string())),
            None => Some((pos, parent.to_string())),
        }
    }

    /// A scalar written as `text` at or below `under`, at or after `from`:
    /// finds the field behind an error the deserializer could only place
    /// at the enclosing mapping (inside a `kind:`-tagged block).
    pub fn find_scalar(&self, under: &str, text: &str, from: Pos) -> Option<(Pos, &str)> {
        self.entries
            .iter()
            .filter(|e| e.value >= from && e.path.starts_with(under))
            .find(|e| e.scalar.as_deref() == Some(text))
            .map(|e| (e.value, e.path.as_str()))
    }

    /// The scalar text written at `pos`, if a scalar value starts there.
    pub fn scalar_at(&self, pos: Pos) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.value == pos)
            .and_then(|e| e.scalar.as_deref())
    }

    fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.path == path)
    }
}

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// `a.b[2].c` -> `a.b[2]` -> `a.b` -> `a` -> `` -> None.
fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    match path.rfind(['.', '[']) {
        Some(i) => Some(&path[..i]),
        None => Some(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "name: x\ntools:\n  - name: a\n    artifact: {sha256: abc}\n  - name: b\n    commands:\n      init: [\"{bin}\", init]\n";

    #[test]
    fn paths_point_at_values() {
        let m = SourceMap::build(DOC);
        let at = |p: &str| m.locate(p).map(|(pos, _)| (pos.line, pos.column));
        assert_eq!(at("name"), Some((1, 7)));
        assert_eq!(at("tools[0].artifact.sha256"), Some((4, 24)));
        assert_eq!(at("tools[1].name"), Some((5, 11)));
        // a missing field is reported at its mapping
        assert_eq!(at("tools[1].version"), Some((5, 5)));
        // argv of a bare-list command
        let (pos, found) = m.locate("tools[1].commands.init.argv[1]").unwrap();
        assert_eq!(
            (pos.line, pos.column, found.as_str()),
            (7, 23, "tools[1].commands.init[1]")
        );
    }

    #[test]
    fn positions_give_paths() {
        let m = SourceMap::build(DOC);
        assert_eq!(
            m.path_at(Pos {
                line: 4,
                column: 24
            }),
            Some("tools[0].artifact.sha256")
        );
        assert_eq!(
            m.path_at(Pos {
                line: 4,
                column: 16
            }),
            Some("tools[0].artifact.sha256")
        );
    }

    #[test]
    fn broken_yaml_keeps_what_it_saw() {
        let m = SourceMap::build("name: x\ntools: [\n");
        assert!(m.locate("name").is_some());
    }
}
