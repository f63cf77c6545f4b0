//! `{bin}` `{repo}` `{source}` `{target}` `{snapshot}` `{work}` in command
//! templates, environment values and working directories.
//!
//! A brace pair around a lowercase identifier (`{[a-z_][a-z0-9_]*}`) is a
//! placeholder, and an unknown one is refused when the plan is checked, so a
//! typo like `{rep}` never runs. Anything else in braces is left alone, so a
//! `sh -c` script can still say `${HOME}` or `find -exec ... {} +`.

use labrun_evidence::{CommandTemplate, PLACEHOLDERS};
use std::path::PathBuf;

/// The values of one step's placeholders.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vars {
    pub bin: String,
    pub repo: String,
    pub source: String,
    pub target: String,
    pub snapshot: String,
    pub work: String,
}

impl Vars {
    fn get(&self, name: &str) -> Option<&str> {
        match name {
            "bin" => Some(&self.bin),
            "repo" => Some(&self.repo),
            "source" => Some(&self.source),
            "target" => Some(&self.target),
            "snapshot" => Some(&self.snapshot),
            "work" => Some(&self.work),
            _ => None,
        }
    }
}

/// Replaces every known placeholder in `text`.
pub fn substitute(text: &str, vars: &Vars) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((before, name, after)) = next_placeholder(rest) {
        out.push_str(before);
        match vars.get(name) {
            Some(value) => out.push_str(value),
            // Unknown names were refused by `unknown_placeholders`; keep the
            // text as written rather than guess.
            None => {
                out.push('{');
                out.push_str(name);
                out.push('}');
            }
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A command template made concrete: its argv with placeholders filled in,
/// and its working directory (the tool's work folder unless it names one).
pub fn resolve(template: &CommandTemplate, vars: &Vars) -> (Vec<String>, PathBuf) {
    let argv = template.argv.iter().map(|a| substitute(a, vars)).collect();
    let cwd = PathBuf::from(
        template
            .cwd
            .as_deref()
            .map_or_else(|| vars.work.clone(), |c| substitute(c, vars)),
    );
    (argv, cwd)
}

/// The placeholder-shaped names in `text` that are not placeholders.
pub fn unknown_placeholders(text: &str) -> Vec<String> {
    let mut unknown = Vec::new();
    let mut rest = text;
    while let Some((_, name, after)) = next_placeholder(rest) {
        if !PLACEHOLDERS.contains(&name) {
            unknown.push(name.to_string());
        }
        rest = after;
    }
    unknown
}

/// Finds the next `{name}` whose name looks like a placeholder, returning the
/// text before it, the name, and the text after it.
fn next_placeholder(text: &str) -> Option<(&str, &str, &str)> {
    let mut from = 0;
    while let Some(open) = text[from..].find('{').map(|i| from + i) {
        let tail = &text[open + 1..];
        if let Some(close) = tail.find('}') {
            let name = &tail[..close];
            if is_placeholder_name(name) {
                return Some((&text[..open], name, &tail[close + 1..]));
            }
        }
        from = open + 1;
    }
    None
}

fn is_placeholder_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        Vars {
            bin: "/usr/bin/restic".into(),
            repo: "/w/repo".into(),
            source: "/w/src".into(),
            target: "/w/restore".into(),
            snapshot: "s2".into(),
            work: "/w/work".into(),
        }
    }

    #[test]
    fn substitutes_every_placeholder_and_repeats() {
        let v = vars();
        assert_eq!(substitute("{bin}", &v), "/usr/bin/restic");
        assert_eq!(substitute("{repo}::{snapshot}", &v), "/w/repo::s2");
        assert_eq!(
            substitute("--target={target} {source} {work}/{work}", &v),
            "--target=/w/restore /w/src /w/work//w/work"
        );
        assert_eq!(substitute("no placeholders", &v), "no placeholders");
        assert_eq!(substitute("", &v), "");
    }

    #[test]
    fn leaves_shell_braces_alone() {
        let v = vars();
        assert_eq!(substitute("${HOME}/x", &v), "${HOME}/x");
        assert_eq!(
            substitute("find . -exec ls {} +", &v),
            "find . -exec ls {} +"
        );
        assert_eq!(substitute("{ {repo} }", &v), "{ /w/repo }");
        assert_eq!(substitute("{{repo}}", &v), "{/w/repo}");
        assert_eq!(substitute("{unclosed", &v), "{unclosed");
        assert_eq!(substitute("é{repo}é", &v), "é/w/repoé");
        assert!(unknown_placeholders("${HOME} {} {A_B} { x }").is_empty());
    }

    #[test]
    fn finds_typos() {
        assert_eq!(unknown_placeholders("{rep}::{snapshot}"), vec!["rep"]);
        assert_eq!(
            unknown_placeholders("{bin} {targt} {x1}"),
            vec!["targt", "x1"]
        );
        assert!(unknown_placeholders("{bin} {repo}").is_empty());
    }
}
