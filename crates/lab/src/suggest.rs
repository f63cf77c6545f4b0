//! "did you mean ...?" for misspelled keys, units and placeholders.

/// The candidate closest to `word`, when it is close enough to be a likely
/// typo (Jaro-Winkler similarity, which rewards a shared prefix: `cycels` ->
/// `cycles`, `sha265` -> `sha256`).
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(&str, f64)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&word.to_ascii_lowercase(), &c.to_ascii_lowercase());
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((c, score));
        }
    }
    best.filter(|(_, s)| *s >= 0.7).map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::nearest;

    #[test]
    fn finds_typos_and_ignores_strangers() {
        assert_eq!(
            nearest("cycels", ["name", "cycles", "tools"]),
            Some("cycles")
        );
        assert_eq!(nearest("sha265", ["sha256", "url", "file"]), Some("sha256"));
        assert_eq!(nearest("Gib", ["B", "MiB", "GiB"]), Some("GiB"));
        assert_eq!(nearest("zzzz", ["name", "cycles"]), None);
    }
}
