//! Reading a lab file: bytes -> YAML -> typed `Lab` -> `validate()`, with
//! every error pointed at its file, line, column and field path.

use crate::error::{LabError, Problem};
use crate::locate::{Pos, SourceMap};
use crate::schema::Lab;
use serde_saphyr::Error as YamlError;

use std::path::{Path, PathBuf};

/// A lab file is a page of settings; anything bigger is a mistake (or an
/// attack on the parser).
pub const MAX_LAB_BYTES: u64 = 1 << 20;

/// Where a lab came from, kept for run ids and for the evidence (the lab
/// file as run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabSource {
    /// The file as named by the user (`lab.yaml`, `labs/x.yaml`).
    pub file: PathBuf,
    /// The file's text, exactly as read.
    pub text: String,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
}

impl Lab {
    /// Reads, parses and validates the lab file at `path`.
    pub fn load(path: &Path) -> Result<Lab, LabError> {
        let read_err = |cause| LabError::Read {
            path: path.to_path_buf(),
            cause,
        };
        let size = std::fs::metadata(path).map_err(read_err)?.len();
        if size > MAX_LAB_BYTES {
            return Err(LabError::TooLarge {
                path: path.to_path_buf(),
                size,
                max: MAX_LAB_BYTES,
            });
        }
        let bytes = std::fs::read(path).map_err(read_err)?;
        let text = String::from_utf8(bytes).map_err(|e| {
            read_err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
            ))
        })?;
        let mut lab = Lab::from_text(&text, &path.display().to_string())?;
        lab.source.file = path.to_path_buf();
        Ok(lab)
    }

    /// Parses and validates `text`; `file` names it in errors.
    pub fn from_text(text: &str, file: &str) -> Result<Lab, LabError> {
        if text.len() as u64 > MAX_LAB_BYTES {
            return Err(LabError::TooLarge {
                path: PathBuf::from(file),
                size: text.len() as u64,
                max: MAX_LAB_BYTES,
            });
        }
        let mut lab: Lab = match serde_saphyr::from_str_with_options(text, options()) {
            Ok(lab) => lab,
            Err(e) => {
                let map = SourceMap::build(text);
                return Err(LabError::Parse {
                    file: file.to_string(),
                    problem: Box::new(problem_from_yaml(&e, &map, text)),
                });
            }
        };
        if lab.protocol.is_empty() {
            let history = lab.dataset.is_history();
            lab.protocol = labrun_evidence::protocol::default_for(history);
        }
        let mut problems = lab.validate();
        if !problems.is_empty() {
            let map = SourceMap::build(text);
            for p in &mut problems {
                if let Some((pos, found)) = map.locate(&p.path) {
                    p.line = Some(pos.line);
                    p.column = Some(pos.column);
                    // Name the path as written when only an alias matched
                    // (a command given as a bare list has no `argv` key).
                    if p.path.replace(".argv[", "[") == found {
                        p.path = found;
                    }
                }
            }
            return Err(LabError::Invalid {
                file: file.to_string(),
                problems,
            });
        }
        lab.source = LabSource {
            file: PathBuf::from(file),
            text: text.to_string(),
            sha256: labrun_evidence::digest::sha256_hex(text.as_bytes()),
        };
        lab.expand_series();
        lab.add_noise_floor();
        Ok(lab)
    }

    /// A problem found after loading, against facts of the host (the CPUs
    /// a pinning names), located in the file as `validate()`'s are.
    pub fn locate(&self, mut p: Problem) -> Problem {
        if let Some((pos, _)) = SourceMap::build(&self.source.text).locate(&p.path) {
            p.line = Some(pos.line);
            p.column = Some(pos.column);
        }
        p
    }

    /// A short hash of the lab file's bytes (6 hex digits), for run ids: two
    /// runs with the same digest ran the same lab file.
    pub fn digest(&self) -> &str {
        self.source.sha256.get(..6).unwrap_or("000000")
    }
}

/// The lab `text` holds, as typed, without the checks (`None` if it does
/// not parse): to read what a copy of the text carries (its secrets).
pub(crate) fn parse_unchecked(text: &str) -> Option<Lab> {
    serde_saphyr::from_str_with_options(text, options()).ok()
}

/// Parser limits sized for a lab file (a few hundred lines): a hostile or
/// broken file fails fast instead of eating memory.
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_events: 100_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_depth: 64,
            max_documents: 1,
            max_nodes: 100_000,
            max_total_scalar_bytes: MAX_LAB_BYTES as usize,
        },
    }
}

/// The deserializer's error as a located problem with a field path.
fn problem_from_yaml(err: &YamlError, map: &SourceMap, text: &str) -> Problem {
    let inner = err.without_snippet();
    let mut pos = inner.location().and_then(|l| {
        let (line, column) = (l.line() as usize, l.column() as usize);
        (line > 0).then_some(Pos { line, column })
    });
    let mut path = pos
        .and_then(|p| map.path_at(p))
        .unwrap_or_default()
        .to_string();
    let message = match inner {
        YamlError::SerdeUnknownField {
            field, expected, ..
        } => {
            // Point at the key itself, even when the deserializer only knew
            // the mapping it was reading (inside a `kind:`-tagged block).
            if last_segment(&path) != field.as_str()
                && let Some(at) = pos
                && let Some((p, found)) = map.find_child(&path, field, at)
            {
                pos = Some(p);
                path = found.to_string();
            }
            let hint = crate::suggest::nearest(field, expected.iter().copied())
                .map(|n| format!(", did you mean `{n}`?"))
                .unwrap_or_default();
            format!(
                "unknown field `{field}`{hint} (expected one of: {})",
                expected.join(", ")
            )
        }
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => {
            let hint = crate::suggest::nearest(variant, expected.iter().copied())
                .map(|n| format!(", did you mean `{n}`?"))
                .unwrap_or_default();
            format!(
                "unknown value `{variant}`{hint} (expected one of: {})",
                expected.join(", ")
            )
        }
        YamlError::SerdeMissingField { field, .. } => {
            // Reported at the mapping's last key: name the mapping itself.
            if let Some(at) = pos
                && let Some((p, owner)) = map.mapping_of_key(at)
            {
                pos = Some(p);
                path = owner;
            }
            format!("missing field `{field}`: add `{field}: ...` to this mapping")
        }
        YamlError::SerdeInvalidValue {
            unexpected,
            expected,
            ..
        }
        | YamlError::SerdeInvalidType {
            unexpected,
            expected,
            ..
        } => {
            // Inside a `kind:`-tagged block the deserializer only knows the
            // block; the offending value's text finds the field.
            let quoted = unexpected.split('`').nth(1);
            if let (Some(at), Some(value)) = (pos, quoted)
                && let Some((p, found)) = map.find_scalar(&path, value, at)
            {
                pos = Some(p);
                path = found.to_string();
            }
            let unexpected = match unexpected.as_str() {
                "unit value" => "an empty value",
                other => other,
            };
            format!("found {unexpected}, {}", explain_expected(expected))
        }
        YamlError::DuplicateMappingKey { key, .. } => match key {
            Some(k) => format!("the key `{k}` is written twice in this mapping: keep one"),
            None => "a key is written twice in this mapping: keep one".to_string(),
        },
        other => {
            let mut msg = plain_message(other);
            if let Some(found) = pos.and_then(|p| map.scalar_at(p))
                && msg.starts_with("expected ")
            {
                msg = format!("found `{found}`, {msg}");
            }
            if map.syntax_error.is_some() {
                msg.push_str(
                    " (YAML syntax: check brackets, quotes and indentation here and above)",
                );
            }
            msg
        }
    };
    let message = match pos.and_then(|p| unquoted_placeholder(text, p)) {
        Some(word) => format!(
            "{message}: `{{{word}}}` must be quoted, write \"{{{word}}}\" (unquoted, YAML reads it as a mapping)"
        ),
        None => message,
    };
    Problem {
        path,
        line: pos.map(|p| p.line),
        column: pos.map(|p| p.column),
        message,
    }
}

/// The error's text without the location the renderer adds (we add ours).
fn plain_message(err: &YamlError) -> String {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "line 8 column 13: invalid u64" -> "invalid u64"
    let msg = match first.strip_prefix("line ") {
        Some(rest) => rest.split_once(": ").map(|(_, m)| m).unwrap_or(first),
        None => first,
    };
    // "... at line 8 column 13" -> "..."
    let msg = match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    };
    explain_type(msg)
}

/// Rust type names mean little to a lab author: say what to write.
fn explain_type(msg: &str) -> String {
    // serde-saphyr's words for an empty value where text belongs.
    if msg.starts_with("cannot deserialize null into string") {
        return "found an empty value, expected text: write the value after the colon \
                (or remove the key)"
            .to_string();
    }
    // A one-key choice (`extract: {tar: bin/x}`) with more keys after it.
    if msg.starts_with("expected end of mapping after enum variant value") {
        return "this choice takes exactly one key (such as `tar: path/in/archive`): \
                remove the other keys"
            .to_string();
    }
    if let Some(i) = msg.find("internally tagged enum ") {
        let ty = msg[i + "internally tagged enum ".len()..].trim();
        return format!("{}{}", &msg[..i], tagged_block(ty));
    }
    let table = [
        ("invalid u64", "expected a whole number ≥ 0"),
        ("invalid u32", "expected a whole number ≥ 0"),
        ("invalid u16", "expected a whole number from 0 to 65535"),
        ("invalid f64", "expected a number such as 0.01"),
        ("invalid bool", "expected true or false"),
    ];
    for (from, to) in table {
        if msg == from {
            return to.to_string();
        }
    }
    msg.to_string()
}

/// Serde's `expected` for a type, as a lab author would say it.
fn explain_expected(expected: &str) -> String {
    match expected {
        "u64" | "u32" | "u8" | "usize" => "expected a whole number ≥ 0".into(),
        "u16" => "expected a whole number from 0 to 65535".into(),
        "f64" | "f32" => "expected a number such as 0.01".into(),
        "a boolean" | "bool" => "expected true or false".into(),
        "a string" => "expected text (quote it if YAML reads it as something else)".into(),
        other => match other.strip_prefix("internally tagged enum ") {
            Some(ty) => format!("expected {}", tagged_block(ty)),
            None => format!("expected {other}"),
        },
    }
}

/// A block chosen by its `kind:` key, named by what it is in the lab.
fn tagged_block(rust_type: &str) -> String {
    match rust_type {
        "DatasetSpec" => {
            "a dataset: a mapping with `kind: synthetic` (and `seed`, `scale`), `kind: git-history`, `kind: files` (and `path`), `kind: archive` (and `artifact`) or `kind: trees`"
                .into()
        }
        _ => "a mapping with a `kind:` key".into(),
    }
}

/// `{bin}` written without quotes at `pos` (YAML reads a flow mapping).
fn unquoted_placeholder(text: &str, pos: Pos) -> Option<&str> {
    let line = text.lines().nth(pos.line.checked_sub(1)?)?;
    let rest = line.get(pos.column.checked_sub(1)?..)?;
    let inner = rest.strip_prefix('{')?;
    let word = &inner[..inner.find('}')?];
    labrun_evidence::PLACEHOLDERS
        .contains(&word)
        .then_some(word)
}

fn last_segment(path: &str) -> &str {
    path.rsplit(['.', '[']).next().unwrap_or(path)
}
