//! The rules of `storage:`, `servers:` and the tools' `repository:` forms.

use crate::artifact_check::{ArtifactUse, validate_artifact};
use crate::error::Problem;
use crate::schema::Lab;
use labrun_evidence::Server;

impl Lab {
    pub(crate) fn validate_storage(&self, out: &mut Vec<Problem>) {
        let server = self.storage.server;
        if server == Server::Local && self.storage.network.is_some() {
            out.push(Problem::new(
                "storage.network",
                "a network needs a server at its other end: set `storage.server` (sftp, rest, s3), or remove `network`",
            ));
        }
        if server.needs_binary() && !self.servers.contains_key(&server) {
            out.push(Problem::new(
                "storage.server",
                format!("`{server}` runs a binary of the lab's: pin it under `servers: {{{server}: {{version: ..., artifact: ...}}}}`"),
            ));
        }
        for (kind, spec) in &self.servers {
            let at = format!("servers.{kind}");
            if !kind.needs_binary() {
                out.push(Problem::new(
                    at.clone(),
                    format!("`{kind}` uses the machine's own programs: labrun installs no binary for it; remove this entry"),
                ));
            }
            if spec.version.trim().is_empty() {
                out.push(Problem::new(
                    format!("{at}.version"),
                    "expected the server's version, e.g. `0.14.0`",
                ));
            }
            out.extend(validate_artifact(
                &spec.artifact,
                &format!("{at}.artifact"),
                ArtifactUse::ToolBinary,
            ));
        }
        for (i, tool) in self.tools.iter().enumerate() {
            for (kind, form) in &tool.repository {
                let at = format!("tools[{i}].repository.{kind}");
                if *kind == Server::Local {
                    out.push(Problem::new(
                        at.clone(),
                        "a local repository is the tool's own commands with `{repo}` the folder: remove this entry",
                    ));
                }
                crate::validate::check_argument(&form.repo, &format!("{at}.repo"), out);
                for (key, args) in &form.args {
                    if !tool.commands.contains_key(key) && !form.commands.contains_key(key) {
                        out.push(Problem::new(
                            format!("{at}.args.{key}"),
                            format!("the tool has no `{key}` command to add arguments to"),
                        ));
                    }
                    for a in args {
                        crate::validate::check_argument(a, &format!("{at}.args.{key}"), out);
                    }
                }
                for (name, value) in &form.env {
                    crate::validate::check_argument(value, &format!("{at}.env.{name}"), out);
                }
                for (key, cmd) in &form.commands {
                    for a in cmd.argv.iter().chain(cmd.cwd.iter()) {
                        crate::validate::check_argument(a, &format!("{at}.commands.{key}"), out);
                    }
                }
            }
            // On S3 a tool cycle's folder (`c1-restic`) is a bucket.
            if server == Server::S3
                && let Some(bad) = tool.name.chars().find(|c| *c == '@' || *c == '_')
            {
                out.push(Problem::new(
                    format!("tools[{i}].name"),
                    format!(
                        "`{}` cannot use an S3 server: its cycle folders are buckets, whose names cannot have `{bad}`; give the tool a name of lowercase letters, digits, `.` and `-`",
                        tool.name
                    ),
                ));
            }
            if server != Server::Local && !tool.repository.contains_key(&server) {
                out.push(Problem::new(
                    format!("tools[{i}].repository"),
                    format!(
                        "`{}` does not say how it names a repository on `{server}` (storage.server): add `repository: {{{server}: {{repo: ...}}}}` to the tool, or leave it out of this lab",
                        tool.name
                    ),
                ));
            }
        }
    }
}
