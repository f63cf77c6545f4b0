//! Guest commands run side by side in one exec: under emulation each of a
//! tool's `--version` or a `sha256sum` of a binary of tens of MB takes
//! seconds, and one exec a command would add a round trip and a shell start
//! to each. Each command's stdout goes to a file of its own, so the outputs
//! come back in the given order however the commands interleave.

/// A POSIX sh script that starts every command in the background, its
/// stdout into a temporary file and then the redirections `more` (e.g.
/// `2>&1 < /dev/null`), waits for all, then, in the given order, runs the
/// text `then(i, file)` returns for command `i` (its output file, quoted)
/// and removes the files. Empty for no commands.
pub fn script(commands: &[String], more: &str, then: impl Fn(usize, &str) -> String) -> String {
    if commands.is_empty() {
        return String::new();
    }
    let mut script = String::from("v=$(mktemp -d)\n");
    for (i, cmd) in commands.iter().enumerate() {
        script.push_str(&format!("{cmd} > \"$v/{i}\" {more} &\n"));
    }
    script.push_str("wait\n");
    for i in 0..commands.len() {
        script.push_str(&then(i, &format!("\"$v/{i}\"")));
    }
    script.push_str("rm -rf \"$v\"\n");
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_come_in_order_though_the_first_ends_last() {
        let commands = [
            "sh -c 'sleep 0.3; echo first'".to_string(),
            "sh -c 'echo second; echo oops >&2'".to_string(),
        ];
        let text = script(&commands, "", |i, f| format!("echo [{i}]\ncat {f}\n"));
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&text)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "[0]\nfirst\n[1]\nsecond\n"
        );
        // stderr is the command's own business (here: the exec's)...
        assert_eq!(String::from_utf8(out.stderr).unwrap(), "oops\n");
        // ...unless `more` sends it along.
        let text = script(&commands[1..], "2>&1", |_, f| format!("cat {f}\n"));
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&text)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "second\noops\n");
        assert_eq!(script(&[], "", |_, _| unreachable!()), "");
    }
}
