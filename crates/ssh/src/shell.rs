//! Quoting for the remote POSIX shell: the exec request is one string that the
//! user's shell parses, so every path we interpolate must be quoted.

/// Quotes `s` as one word for a POSIX shell: a word of plain characters
/// (letters, digits, `/._-+:@,`) as it is, anything else wrapped in single
/// quotes, each embedded `'` written as `'\''`. The one quoting rule of
/// labrun: every path and id it puts in a remote command goes through it.
pub fn quote(s: &str) -> String {
    // No `=`: a first word `A=b` would be an assignment, not a command.
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@,".contains(&b))
    {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quotes_plain_and_awkward_words() {
        assert_eq!(quote("/a/b"), "/a/b");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("A=b"), "'A=b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("$(rm -rf /) `x` \"y\""), "'$(rm -rf /) `x` \"y\"'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn a_real_shell_reads_back_the_same_word() {
        for word in [
            "plain",
            "with space",
            "it's",
            "a'b'c",
            "$HOME",
            "new\nline",
            "*",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(word)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), word);
        }
    }
}
