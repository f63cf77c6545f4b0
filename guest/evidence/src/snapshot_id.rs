//! A snapshot's id read from the backup's own output, where the tool
//! prints it (kopia: "Created snapshot with root k… and ID 1b2c… in 10s"),
//! instead of asked for with another run of the tool after the backup
//! (the `snapshot_id` command): under emulation each start of a Go or
//! Python tool costs seconds of harness time, three times a cycle.
//!
//! A tool's `snapshot_id_pattern` is a regular expression (the `regex`
//! syntax, without Unicode classes) with one capture group: the id is that
//! group of its last match in the step's stdout, else in its stderr.

use regex_lite::Regex;

/// The pattern, compiled, or why it cannot be used.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    let re = Regex::new(pattern).map_err(|e| format!("not a regular expression: {e}"))?;
    // captures_len counts the whole match as group 0.
    match re.captures_len() {
        2 => Ok(re),
        1 => {
            Err("it has no capture group: put the id in parentheses, e.g. 'ID ([0-9a-f]+)'".into())
        }
        n => Err(format!(
            "it has {} capture groups: write exactly one, around the id (use (?:...) for the others)",
            n - 1
        )),
    }
}

/// The id in the last match of `re` in the first of `outputs` that has one.
pub fn find<'t>(re: &Regex, outputs: &[&'t str]) -> Option<&'t str> {
    outputs.iter().find_map(|text| {
        re.captures_iter(text)
            .filter_map(|c| c.get(1))
            .last()
            .map(|m| m.as_str())
            .filter(|id| !id.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KOPIA: &str = r"snapshot with root \S+ and ID ([0-9a-f]+)";

    #[test]
    fn kopias_line_gives_its_id() {
        let re = compile(KOPIA).unwrap();
        let stderr = "Snapshotting root@host:/src ...\n\
             Created snapshot with root kecd7ed894ba638871caa9f61d8bd8c81 and ID b62c19970c952a4f5c2ec9186980a1af in 10s\n\
             Running full maintenance...\n";
        assert_eq!(
            find(&re, &["", stderr]),
            Some("b62c19970c952a4f5c2ec9186980a1af")
        );
        // A partial snapshot (kopia says so) has an id too; the last wins.
        let two = format!("{stderr}Created partial snapshot with root k1 and ID 77 in 1s\n");
        assert_eq!(find(&re, &[&two]), Some("77"));
        // stdout first.
        assert_eq!(
            find(&re, &["snapshot with root x and ID aa", stderr]),
            Some("aa")
        );
        assert_eq!(find(&re, &["nothing", "here"]), None);
    }

    #[test]
    fn a_pattern_needs_exactly_one_group() {
        assert!(compile(KOPIA).is_ok());
        let e = compile(r"ID [0-9a-f]+").unwrap_err();
        assert!(e.contains("no capture group"), "{e}");
        let e = compile(r"(root) (\S+)").unwrap_err();
        assert!(e.contains("2 capture groups"), "{e}");
        let e = compile(r"ID ([0-9a-f+").unwrap_err();
        assert!(e.contains("not a regular expression"), "{e}");
        assert!(compile(r"(?:root|base) \S+ ID (\w+)").is_ok());
    }
}
