//! What can go wrong with a lab file, said so that the user can fix it: the
//! file, line and column, the field path, what was expected, and for a typo
//! the nearest valid spelling.

use std::fmt;
use std::path::PathBuf;

/// One problem in a lab file.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Field path such as `tools[1].artifact.sha256`; empty for the whole file.
    pub path: String,
    /// 1-based line and column, when the problem points at written text.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// What is wrong and what was expected (with "did you mean" when known).
    pub message: String,
}

impl Problem {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            path: path.into(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// `file:line:column: path: message`, the form editors jump to.
    /// One line: the path and message quote the lab, and a line break or
    /// control character in a quoted value must not start a line of its
    /// own (a fake "ok" after an error).
    pub fn render(&self, file: &str) -> String {
        use labrun_evidence::printable::printable;
        let mut out = printable(file).into_owned();
        if let Some(line) = self.line {
            out.push_str(&format!(":{line}"));
            if let Some(col) = self.column {
                out.push_str(&format!(":{col}"));
            }
        }
        out.push_str(": ");
        if !self.path.is_empty() {
            out.push_str(&printable(&self.path));
            out.push_str(": ");
        }
        out.push_str(&printable(&self.message));
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(
        "cannot read the lab file {}: {cause} (pass another with `-f FILE` or LABRUN_LAB)",
        path.display()
    )]
    Read {
        path: PathBuf,
        /// In the message itself, not as a source: a chain printer would
        /// say it twice.
        cause: std::io::Error,
    },

    #[error(
        "the lab file {} is {size} bytes; a lab file may be at most {max} bytes",
        path.display()
    )]
    TooLarge { path: PathBuf, size: u64, max: u64 },

    /// The YAML could not be read into the schema (syntax, type, unknown or
    /// missing key). The deserializer stops at the first such problem.
    #[error("{}", problem.render(file))]
    Parse { file: String, problem: Box<Problem> },

    /// The file parsed but breaks rules of the schema; every problem found.
    #[error("{}", render_all(file, problems))]
    Invalid {
        file: String,
        problems: Vec<Problem>,
    },

    /// A `--tools` (or similar) override names a tool the lab does not have.
    #[error("the lab {lab} has no tool `{name}`{}; its tools are: {}",
        suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(),
        known.join(", "))]
    UnknownTool {
        lab: String,
        name: String,
        known: Vec<String>,
        suggestion: Option<String>,
    },

    /// A command-line override that the lab file would not have allowed.
    #[error("{option}: {message}")]
    BadOverride {
        option: &'static str,
        message: String,
    },
}

impl LabError {
    /// Every located problem, for callers that print their own way.
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            LabError::Parse { problem, .. } => vec![(**problem).clone()],
            LabError::Invalid { problems, .. } => problems.clone(),
            _ => Vec::new(),
        }
    }
}

fn render_all(file: &str, problems: &[Problem]) -> String {
    let mut out = format!(
        "{file}: {} problem{} in the lab file:",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        out.push_str("\n  ");
        out.push_str(&p.render(file));
    }
    out
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.render("<lab>"))
    }
}
