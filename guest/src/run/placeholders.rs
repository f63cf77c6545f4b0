//! `{bin}` `{repo}` `{source}` `{target}` `{snapshot}` `{work}`, and where
//! the repository is ([`RepoLocation`]: `{repo_path}` `{repo_url}` ...), in
//! command templates, environment values and working directories.
//!
//! A brace pair around a lowercase identifier (`{[a-z_][a-z0-9_]*}`) is a
//! placeholder, and an unknown one is refused when the plan is checked, so a
//! typo like `{rep}` never runs. Anything else in braces is left alone, so a
//! `sh -c` script can still say `${HOME}` or `find -exec ... {} +`.

use labrun_evidence::command::next_placeholder;
use labrun_evidence::storage::placeholders as repo_at;
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
    pub location: RepoLocation,
}

/// Where a tool cycle's repository is and how the tool reaches it (see
/// [`labrun_evidence::storage::placeholders`]): on the machine's own disk,
/// `path` and `url` are the folder and the rest is empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepoLocation {
    pub path: String,
    pub host: String,
    pub port: String,
    pub user: String,
    pub url: String,
    pub ssh_config: String,
    pub ssh_key: String,
    pub known_hosts: String,
    pub s3_bucket: String,
    pub s3_access_key: String,
    pub s3_secret_key: String,
}

impl Vars {
    fn get(&self, name: &str) -> Option<&str> {
        let l = &self.location;
        match name {
            "bin" => Some(&self.bin),
            "repo" => Some(&self.repo),
            "source" => Some(&self.source),
            "target" => Some(&self.target),
            "snapshot" => Some(&self.snapshot),
            "work" => Some(&self.work),
            repo_at::REPO_PATH => Some(&l.path),
            repo_at::REPO_HOST => Some(&l.host),
            repo_at::REPO_PORT => Some(&l.port),
            repo_at::REPO_USER => Some(&l.user),
            repo_at::REPO_URL => Some(&l.url),
            repo_at::SSH_CONFIG => Some(&l.ssh_config),
            repo_at::SSH_KEY => Some(&l.ssh_key),
            repo_at::KNOWN_HOSTS => Some(&l.known_hosts),
            repo_at::S3_BUCKET => Some(&l.s3_bucket),
            repo_at::S3_ACCESS_KEY => Some(&l.s3_access_key),
            repo_at::S3_SECRET_KEY => Some(&l.s3_secret_key),
            _ => None,
        }
    }

    /// The placeholders of a tool cycle: `{repo}` is the tool's `form` with
    /// the location filled in, or the repository folder when it has none.
    pub fn for_cycle(
        bin: String,
        source: String,
        target: String,
        work: String,
        location: RepoLocation,
        form: Option<&str>,
    ) -> Vars {
        let mut vars = Vars {
            bin,
            repo: location.path.clone(),
            source,
            target,
            snapshot: String::new(),
            work,
            location,
        };
        if let Some(form) = form {
            vars.repo = substitute(form, &vars);
        }
        vars
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
            location: RepoLocation::default(),
        }
    }

    fn sftp_location() -> RepoLocation {
        RepoLocation {
            path: "/w/c1-restic/repo".into(),
            host: "10.250.0.2".into(),
            port: "22".into(),
            user: "root".into(),
            url: "sftp://root@10.250.0.2:22//w/c1-restic/repo".into(),
            ssh_config: "/w/storage/ssh_config".into(),
            ssh_key: "/w/storage/key".into(),
            known_hosts: "/w/storage/known_hosts".into(),
            ..RepoLocation::default()
        }
    }

    #[test]
    fn repo_is_the_tools_form_with_the_location_filled_in() {
        let cycle = |form: Option<&str>| {
            Vars::for_cycle(
                "/usr/bin/restic".into(),
                "/w/src".into(),
                "/w/restore".into(),
                "/w/work".into(),
                sftp_location(),
                form,
            )
        };
        let v = cycle(Some("sftp:{repo_user}@{repo_host}:{repo_path}"));
        assert_eq!(v.repo, "sftp:root@10.250.0.2:/w/c1-restic/repo");
        assert_eq!(
            substitute(
                "sftp.command=ssh -F {ssh_config} {repo_user}@{repo_host} -s sftp",
                &v
            ),
            "sftp.command=ssh -F /w/storage/ssh_config root@10.250.0.2 -s sftp"
        );
        assert_eq!(
            substitute("{repo}::{snapshot}", &v),
            "sftp:root@10.250.0.2:/w/c1-restic/repo::"
        );
        assert_eq!(
            substitute("{repo_url} {repo_port} {ssh_key} {known_hosts}", &v),
            "sftp://root@10.250.0.2:22//w/c1-restic/repo 22 /w/storage/key /w/storage/known_hosts"
        );
        // No form: the folder, as on the machine's own disk.
        assert_eq!(cycle(None).repo, "/w/c1-restic/repo");
    }

    #[test]
    fn every_placeholder_has_a_value() {
        let v = Vars::for_cycle(
            "b".into(),
            "s".into(),
            "t".into(),
            "w".into(),
            sftp_location(),
            None,
        );
        for name in PLACEHOLDERS {
            assert!(v.get(name).is_some(), "{{{name}}} has no value");
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
