//! Reading a plan and refusing, before anything runs, every plan that could
//! not run as written: wrong schema, unknown or missing fields (serde names
//! them), typos in placeholders, secrets where they could leak, missing or
//! altered tool binaries.

use crate::run::error::{PlanError, RunError};
use crate::run::placeholders::unknown_placeholders;
use labrun_evidence::digest::sha256_file;
use labrun_evidence::storage::MAX_RTT_MS;
use labrun_evidence::{
    CommitSelection, DatasetPlan, HistorySource, Plan, SCHEMA_VERSION, Server, StoragePlan,
    ToolPlan,
};
use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Reads and checks the plan at `path` (file-system checks not included:
/// see [`check_binaries`]).
pub fn load_plan(path: &Path) -> Result<Plan, RunError> {
    let text = std::fs::read_to_string(path).map_err(|source| RunError::ReadPlan {
        path: path.to_path_buf(),
        source,
    })?;
    parse_plan(&text).map_err(|e| match e {
        ParseError::Json(message) => RunError::ParsePlan {
            path: path.to_path_buf(),
            message,
        },
        ParseError::Plan(problem) => RunError::Plan {
            path: path.to_path_buf(),
            problem,
        },
    })
}

#[derive(Debug)]
pub enum ParseError {
    Json(String),
    Plan(PlanError),
}

pub fn parse_plan(text: &str) -> Result<Plan, ParseError> {
    // The version first: a plan from another labrun may well have fields this
    // agent does not know, and "wrong version" is the error worth showing.
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ParseError::Json(e.to_string()))?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        None => return Err(ParseError::Plan(PlanError::NoSchemaVersion)),
        Some(v) if v != u64::from(SCHEMA_VERSION) => {
            return Err(ParseError::Plan(PlanError::SchemaVersion {
                found: v,
                expected: SCHEMA_VERSION,
            }));
        }
        Some(_) => {}
    }
    // From the text again, not the Value, so serde's message keeps the line
    // and column of the offending field.
    let mut plan: Plan = serde_json::from_str(text).map_err(|e| ParseError::Json(e.to_string()))?;
    if plan.protocol.is_empty() {
        let history = plan.dataset.is_history();
        plan.protocol = labrun_evidence::protocol::default_for(history);
    }
    validate(&plan).map_err(ParseError::Plan)?;
    Ok(plan)
}

/// Every check that needs only the plan.
pub fn validate(plan: &Plan) -> Result<(), PlanError> {
    if !labrun_evidence::variant::is_run_id(&plan.run_id) {
        return Err(PlanError::BadName {
            what: "run_id",
            name: plan.run_id.clone(),
        });
    }
    if plan.cycles == 0 || plan.first_cycle == 0 {
        return Err(PlanError::NoCycles);
    }
    if plan.tools.is_empty() {
        return Err(PlanError::NoTools);
    }
    match &plan.dataset {
        DatasetPlan::Synthetic { scale, .. } => {
            if !(scale.is_finite() && *scale > 0.0) {
                return Err(PlanError::BadScale(*scale));
            }
        }
        DatasetPlan::GitHistory { source } => check_history(source)?,
        DatasetPlan::Tree(tree) => {
            check_tree_source(&tree.source)?;
            tree.change.validate().map_err(PlanError::BadTree)?;
            if let Some(s) = tree.sample
                && !(s.fraction > 0.0 && s.fraction <= 1.0)
            {
                return Err(PlanError::BadTree(format!(
                    "sample fraction {} is not in (0, 1]",
                    s.fraction
                )));
            }
        }
    }
    if plan.step_timeout_secs == Some(0) {
        return Err(PlanError::ZeroTimeout);
    }
    // The lab check's rule, again: a plan is the agent's input.
    let tools = plan.tools.iter().map(|t| (t.name.as_str(), &t.commands));
    let history = plan.dataset.is_history();
    if let Some((at, message)) = labrun_evidence::protocol::check(&plan.protocol, tools, history)
        .into_iter()
        .next()
    {
        return Err(PlanError::Protocol {
            at: at.to_string(),
            message,
        });
    }
    let mut names = HashSet::new();
    for tool in &plan.tools {
        if !labrun_evidence::variant::is_tool_name(&tool.name) {
            return Err(PlanError::BadToolName(tool.name.clone()));
        }
        if !names.insert(tool.name.as_str()) {
            return Err(PlanError::DuplicateTool(tool.name.clone()));
        }
        check_tool(tool)?;
    }
    if let Some(storage) = &plan.storage {
        check_storage(storage)?;
        if storage.server == Server::S3 {
            check_bucket_names(plan)?;
        }
    }
    Ok(())
}

/// On an S3 server each tool cycle's folder (`c1-restic`) is a bucket, so
/// it must be a bucket's name.
fn check_bucket_names(plan: &Plan) -> Result<(), PlanError> {
    let last = *plan.cycle_numbers().end();
    for tool in &plan.tools {
        let folder = format!("c{last}-{}", tool.name);
        if let Some(why) = crate::run::storage::s3::bucket_name_problem(&folder) {
            return Err(PlanError::Storage(format!(
                "tool {:?}: on an S3 server its cycle folders are buckets, and {why}: name the tool with lowercase letters, digits, `.` and `-` only (a tool variant `restic@x` cannot run against S3)",
                tool.name
            )));
        }
    }
    Ok(())
}

fn check_storage(storage: &StoragePlan) -> Result<(), PlanError> {
    let problem = |m: String| Err(PlanError::Storage(m));
    let server = storage.server;
    match &storage.binary {
        None if server.needs_binary() => {
            return problem(format!(
                "a {server} server needs its binary (`storage.binary`, installed by labrun from the lab's pin)"
            ));
        }
        Some(b) if !Path::new(b).is_absolute() => {
            return problem(format!("`binary` {b:?} must be an absolute path"));
        }
        _ => {}
    }
    if let Some(n) = &storage.network {
        if server == Server::Local {
            return problem(
                "`network` shapes the way to a server; a local repository has none: give `server: sftp`, `rest` or `s3`, or drop `network`".into(),
            );
        }
        if !(n.rtt_ms.is_finite() && (0.0..=MAX_RTT_MS).contains(&n.rtt_ms)) {
            return problem(format!(
                "`network.rtt_ms` {} must be from 0 to {MAX_RTT_MS} (10 s of round trip)",
                n.rtt_ms
            ));
        }
        if n.rate_bits_per_sec == Some(0) {
            return problem("`network.rate_bits_per_sec` is 0: leave it out for no limit".into());
        }
    }
    Ok(())
}

fn check_history(source: &HistorySource) -> Result<(), PlanError> {
    match source {
        HistorySource::Generate(params) => labrun_dataset::history::validate(params)
            .map_err(|e| PlanError::BadHistory(e.to_string())),
        HistorySource::Repository { path, commits } => {
            if !Path::new(path).is_absolute() {
                return Err(PlanError::BadHistory(format!(
                    "the repository {path:?} must be an absolute path on the machine under test"
                )));
            }
            match commits {
                CommitSelection::List(ids) if ids.is_empty() => Err(PlanError::BadHistory(
                    "the commit list is empty: name at least one commit".into(),
                )),
                CommitSelection::Every { n: 0, .. } => Err(PlanError::BadHistory(
                    "`every.n` is 0: take every 1st, 2nd... commit".into(),
                )),
                _ => Ok(()),
            }
        }
        HistorySource::Trees { trees, .. } => {
            if trees.is_empty() {
                return Err(PlanError::BadHistory("the series has no tree".into()));
            }
            trees.iter().try_for_each(check_tree_source)
        }
    }
}

/// A real tree must be on this machine, at an absolute path; an archive
/// comes with its digest and a bound (the host fills both in).
fn check_tree_source(source: &labrun_evidence::TreeSource) -> Result<(), PlanError> {
    if !Path::new(source.path()).is_absolute() {
        return Err(PlanError::BadTree(format!(
            "the tree {:?} must be an absolute path on the machine under test",
            source.path()
        )));
    }
    if let labrun_evidence::TreeSource::Archive {
        sha256, max_bytes, ..
    } = source
        && (!labrun_evidence::digest::is_sha256_hex(sha256) || *max_bytes == 0)
    {
        return Err(PlanError::BadTree(format!(
            "the archive {:?} comes without its SHA-256 or its size bound: the host fills both in when it copies it (a bug in labrun if it did not)",
            source.path()
        )));
    }
    Ok(())
}

fn check_tool(tool: &ToolPlan) -> Result<(), PlanError> {
    let name = || tool.name.clone();
    if !Path::new(&tool.binary).is_absolute() {
        return Err(PlanError::RelativeBinary {
            tool: name(),
            path: tool.binary.clone(),
        });
    }
    for (k, v) in &tool.env {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(PlanError::BadEnvName {
                tool: name(),
                name: k.clone(),
            });
        }
        if v.contains('\0') {
            return Err(PlanError::NulByte {
                tool: name(),
                what: format!("env {k}"),
            });
        }
        if let Some(p) = unknown_placeholders(v).into_iter().next() {
            return Err(PlanError::UnknownPlaceholder {
                tool: name(),
                command: format!("env {k}"),
                name: p,
            });
        }
    }
    for secret in &tool.secret_env {
        match tool.env.get(secret) {
            None => {
                return Err(PlanError::SecretNotInEnv {
                    tool: name(),
                    name: secret.clone(),
                });
            }
            Some(v) if v.is_empty() => {
                return Err(PlanError::EmptySecret {
                    tool: name(),
                    name: secret.clone(),
                });
            }
            Some(_) => {}
        }
    }
    if let Some(form) = &tool.repo {
        if form.contains('\0') {
            return Err(PlanError::NulByte {
                tool: name(),
                what: "`repo`".into(),
            });
        }
        let unknown = unknown_placeholders(form);
        if let Some(p) = unknown.into_iter().next() {
            return Err(PlanError::UnknownPlaceholder {
                tool: name(),
                command: "repo".into(),
                name: p,
            });
        }
        if form.contains("{repo}") {
            return Err(PlanError::RepoFormUsesRepo {
                tool: name(),
                form: form.clone(),
            });
        }
    }
    if let Some(pattern) = &tool.snapshot_id_pattern
        && let Err(why) = labrun_evidence::snapshot_id::compile(pattern)
    {
        return Err(PlanError::BadSnapshotIdPattern {
            tool: name(),
            pattern: pattern.clone(),
            why,
        });
    }
    for (command, t) in &tool.commands {
        if t.argv.is_empty() {
            return Err(PlanError::EmptyArgv {
                tool: name(),
                command: command.clone(),
            });
        }
        for text in t.argv.iter().chain(t.cwd.iter()) {
            if text.contains('\0') {
                return Err(PlanError::NulByte {
                    tool: name(),
                    what: format!("command `{command}`"),
                });
            }
            if let Some(p) = unknown_placeholders(text).into_iter().next() {
                return Err(PlanError::UnknownPlaceholder {
                    tool: name(),
                    command: command.to_string(),
                    name: p,
                });
            }
            for secret in &tool.secret_env {
                if let Some(value) = tool.env.get(secret)
                    && text.contains(value.as_str())
                {
                    return Err(PlanError::SecretInCommand {
                        tool: name(),
                        name: secret.clone(),
                        command: command.to_string(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Before the first cycle: every tool binary exists, is an executable file,
/// and has the pinned digest when the plan gives one. Returns every binary's
/// SHA-256 as `sha256sum` prints it (`<hex>  <path>` lines, in plan order):
/// the evidence's `binary-sha256.txt`, from this one pass over the binaries.
/// They are hashed side by side (tens of MB each, seconds under emulation).
pub fn check_binaries(plan: &Plan) -> Result<String, RunError> {
    // The tools', then the storage server's where labrun installs one.
    let mut binaries: Vec<(String, &str, Option<&str>)> = plan
        .tools
        .iter()
        .map(|t| {
            (
                format!("tool {:?}", t.name),
                t.binary.as_str(),
                t.binary_sha256.as_deref(),
            )
        })
        .collect();
    if let Some(s) = &plan.storage
        && s.server.needs_binary()
        && let Some(binary) = &s.binary
    {
        binaries.push((
            format!("the {} storage server", s.server),
            binary.as_str(),
            s.binary_sha256.as_deref(),
        ));
    }
    let results: Vec<Result<String, RunError>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = binaries
            .iter()
            .map(|(who, path, sha)| scope.spawn(move || check_binary(who, path, *sha)))
            .collect();
        jobs.into_iter()
            .zip(&binaries)
            .map(|(job, (who, path, _))| {
                job.join().unwrap_or_else(|_| {
                    Err(RunError::Binary {
                        tool: who.clone(),
                        path: path.into(),
                        problem: "could not be hashed (the hashing thread panicked)".into(),
                    })
                })
            })
            .collect()
    });
    let mut listing = String::new();
    for (digest, (_, path, _)) in results.into_iter().zip(&binaries) {
        listing.push_str(&format!("{}  {}\n", digest?, path));
    }
    Ok(listing)
}

/// `who` names the binary's owner in messages (`tool "restic"`).
fn check_binary(who: &str, path: &str, expected: Option<&str>) -> Result<String, RunError> {
    let path = Path::new(path);
    let problem = |p: &str| RunError::Binary {
        tool: who.to_string(),
        path: path.to_path_buf(),
        problem: p.to_string(),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(problem("does not exist"));
        }
        Err(e) => return Err(problem(&format!("cannot be read ({e})"))),
    };
    if !meta.is_file() {
        return Err(problem("is not a regular file"));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(problem("is not executable (chmod +x it)"));
    }
    let actual = sha256_file(path).map_err(|e| problem(&format!("cannot be read ({e})")))?;
    if let Some(expected) = expected
        && !actual.eq_ignore_ascii_case(expected.trim())
    {
        return Err(RunError::BinaryDigest {
            tool: who.to_string(),
            path: path.to_path_buf(),
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(actual)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A valid plan running `sh` as the tool, for tests here and elsewhere.
    pub fn plan_json(extra_tool_fields: &str) -> String {
        format!(
            r#"{{"schema_version":{SCHEMA_VERSION},"run_id":"t-1","cycles":2,
            "dataset":{{"kind":"synthetic","seed":1,"scale":0.001}},
            "tools":[{{"name":"fake","version":"1","binary":"/bin/sh",
              "env":{{"PW":"hunter2","PLAIN":"{{work}}/x"}},"secret_env":["PW"],
              {extra_tool_fields}
              "commands":{{
                "init":{{"argv":["{{bin}}","-c","mkdir -p {{repo}}/data"]}},
                "backup":{{"argv":["{{bin}}","-c","cp -a . {{repo}}/data/{{snapshot}}"],"cwd":"{{source}}"}},
                "restore":{{"argv":["{{bin}}","-c","cp -a {{repo}}/data/{{snapshot}}/. {{target}}"]}}}}}}]}}"#
        )
    }

    fn parse(text: &str) -> Result<Plan, String> {
        parse_plan(text).map_err(|e| match e {
            ParseError::Json(m) => m,
            ParseError::Plan(p) => p.to_string(),
        })
    }

    #[test]
    fn a_valid_plan_parses_with_defaults() {
        let plan = parse(&plan_json("")).unwrap();
        assert_eq!(plan.protocol, labrun_evidence::protocol::published());
        assert!(plan.drop_caches && plan.rotate_tools);
        check_binaries(&plan).unwrap();
    }

    #[test]
    fn unknown_and_missing_fields_are_named() {
        let bad = plan_json("").replace(r#""cycles":2"#, r#""cycels":2"#);
        let err = parse(&bad).unwrap_err();
        assert!(err.contains("cycels"), "{err}");
        let bad = plan_json(r#""colour":"red","#);
        assert!(parse(&bad).unwrap_err().contains("colour"));
        let bad = plan_json("").replace(r#""version":"1","#, "");
        let err = parse(&bad).unwrap_err();
        assert!(err.contains("missing field `version`"), "{err}");
    }

    #[test]
    fn schema_version_mismatch_is_said_as_such() {
        let bad = plan_json("").replace(
            &format!(r#""schema_version":{SCHEMA_VERSION}"#),
            r#""schema_version":99,"new_field":1"#,
        );
        let err = parse(&bad).unwrap_err();
        assert!(err.contains("schema_version 99"), "{err}");
        assert!(
            parse(r#"{"run_id":"x"}"#)
                .unwrap_err()
                .contains("schema_version")
        );
        assert!(parse("not json").is_err());
    }

    #[test]
    fn plan_level_mistakes() {
        let cases = [
            (r#""cycles":2"#, r#""cycles":0"#, "at least one cycle"),
            (r#""run_id":"t-1""#, r#""run_id":"../etc""#, "run_id"),
            (r#""scale":0.001"#, r#""scale":-1"#, "scale"),
            (
                r#""cycles":2"#,
                r#""cycles":2,"step_timeout_secs":0"#,
                "step_timeout_secs",
            ),
            (
                r#""cycles":2"#,
                r#""cycles":2,"protocol":["source",{"run":"init"},"verify"]"#,
                "follows a step with `restores:`",
            ),
            (
                r#""cycles":2"#,
                r#""cycles":2,"protocol":["source",{"run":"init"},{"run":"init"}]"#,
                "two steps are called init",
            ),
            (
                r#""cycles":2"#,
                r#""cycles":2,"protocol":["source",{"run":"check"}]"#,
                "no command for",
            ),
            (r#""name":"fake""#, r#""name":"a b""#, "tool name"),
            (r#""binary":"/bin/sh""#, r#""binary":"sh""#, "absolute"),
            (r#""secret_env":["PW"]"#, r#""secret_env":["PASS"]"#, "PASS"),
            (r#""PW":"hunter2""#, r#""PW":"""#, "empty"),
            (r#"mkdir -p {repo}"#, r#"mkdir -p {rep}"#, "{rep}"),
            (r#""{work}/x""#, r#""{wrk}/x""#, "{wrk}"),
            (r#"mkdir -p {repo}"#, r#"echo hunter2 {repo}"#, "secret"),
            (
                r#"["{bin}","-c","mkdir -p {repo}/data"]"#,
                r#"[]"#,
                "empty argv",
            ),
            (
                r#""cycles":2"#,
                r#""cycles":2,"storage":{"server":"rest"}"#,
                "needs its binary",
            ),
            (
                r#""cycles":2"#,
                r#""cycles":2,"storage":{"server":"rest","binary":"rest-server"}"#,
                "absolute",
            ),
            (
                r#""cycles":2"#,
                r#""cycles":2,"storage":{"server":"local","network":{"rtt_ms":5}}"#,
                "a local repository has none",
            ),
            (
                r#""cycles":2"#,
                r#""cycles":2,"storage":{"server":"sftp","network":{"rtt_ms":-1}}"#,
                "rtt_ms",
            ),
            (
                r#""cycles":2"#,
                r#""cycles":2,"storage":{"server":"sftp","network":{"rtt_ms":5,"rate_bits_per_sec":0}}"#,
                "rate_bits_per_sec",
            ),
            (
                r#""version":"1","#,
                r#""version":"1","repo":"sftp:{repo_host}:{repo}","#,
                "what it defines",
            ),
            (
                r#""version":"1","#,
                r#""version":"1","repo":"sftp:{repo_hots}:{repo_path}","#,
                "{repo_hots}",
            ),
        ];
        for (from, to, expect) in cases {
            let text = plan_json("").replacen(from, to, 1);
            assert_ne!(text, plan_json(""), "case {to} did not apply");
            let err = parse(&text).unwrap_err();
            assert!(err.contains(expect), "{to}: {err}");
        }
        let two = plan_json("").replace(r#""tools":[{"#, r#""tools":[{"name":"fake","version":"1","binary":"/bin/sh","commands":{"init":{"argv":["x"]},"backup":{"argv":["x"]},"restore":{"argv":["x"]}}},{"#);
        assert!(parse(&two).unwrap_err().contains("twice"));
    }

    /// Issue 33: values a lab can hold that the agent ran into mid-run
    /// (a panic, a shell word, `tc` refusing) are refused before anything
    /// runs, by the same rule as `labrun check`.
    #[test]
    fn values_that_failed_mid_run_are_refused_by_the_plan_check() {
        let protocol = |backup: &str, restore: &str| {
            format!(
                r#""cycles":2,"protocol":["source",{{"run":"init"}},{backup},{restore},"verify"]"#
            )
        };
        let cases = [
            (
                protocol(
                    r#"{"run":"backup","makes":"s1","kill_after_secs":18446744073709551615}"#,
                    r#"{"run":"restore","restores":"s1"}"#,
                ),
                "kill_after_secs",
            ),
            (
                protocol(
                    r#"{"run":"backup","makes":"s;touch X"}"#,
                    r#"{"run":"restore","restores":"s;touch X"}"#,
                ),
                "snapshot label",
            ),
            (
                protocol(
                    r#"{"run":"backup","makes":".."}"#,
                    r#"{"run":"restore","restores":".."}"#,
                ),
                "snapshot label",
            ),
            (
                r#""cycles":2,"storage":{"server":"sftp","network":{"rtt_ms":1e308}}"#.to_string(),
                "rtt_ms",
            ),
        ];
        // Every case is tried, and every one not refused as expected named.
        let mut accepted = Vec::new();
        for (to, expect) in &cases {
            let text = plan_json("").replacen(r#""cycles":2"#, to, 1);
            match parse(&text) {
                Err(err) if err.contains(expect) => {}
                other => accepted.push(format!("{to}: {other:?}")),
            }
        }
        assert!(accepted.is_empty(), "not refused:\n{}", accepted.join("\n"));
    }

    #[test]
    fn on_s3_every_tool_cycle_folder_must_be_a_bucket_name() {
        let s3 = r#""cycles":2,"storage":{"server":"s3","binary":"/usr/local/bin/s3-server"}"#;
        let plan = plan_json("").replacen(r#""cycles":2"#, s3, 1);
        assert!(parse(&plan).is_ok());
        let variant = plan.replacen(r#""name":"fake""#, r#""name":"fake@v2""#, 1);
        let err = parse(&variant).unwrap_err();
        assert!(err.contains("`c2-fake@v2` has `@`"), "{err}");
    }

    #[test]
    fn binaries_are_checked_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let with_binary = |path: &str, sha: Option<&str>| {
            let mut plan = parse(&plan_json("")).unwrap();
            plan.tools[0].binary = path.to_string();
            plan.tools[0].binary_sha256 = sha.map(str::to_string);
            check_binaries(&plan).map_err(|e| e.to_string())
        };
        let err = with_binary("/nonexistent/restic", None).unwrap_err();
        assert!(
            err.contains("/nonexistent/restic") && err.contains("does not exist"),
            "{err}"
        );

        let file = dir.path().join("tool");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let p = file.to_str().unwrap();
        assert!(with_binary(p, None).unwrap_err().contains("not executable"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        let digest = labrun_evidence::digest::sha256_hex(b"#!/bin/sh\n");
        // The listing is `sha256sum`'s, pinned or not.
        assert_eq!(with_binary(p, None).unwrap(), format!("{digest}  {p}\n"));
        with_binary(p, Some(&digest)).unwrap();
        with_binary(p, Some(&digest.to_uppercase())).unwrap();
        let err = with_binary(p, Some(&"0".repeat(64))).unwrap_err();
        assert!(
            err.contains(&digest) && err.contains(&"0".repeat(64)),
            "{err}"
        );
        assert!(
            with_binary(dir.path().to_str().unwrap(), None)
                .unwrap_err()
                .contains("not a regular file")
        );

        // The storage server's binary likewise, listed after the tools'.
        let with_server = |path: &str, sha: Option<&str>| {
            let mut plan = parse(&plan_json("")).unwrap();
            plan.storage = Some(labrun_evidence::StoragePlan {
                server: Server::Rest,
                network: None,
                binary: Some(path.to_string()),
                binary_sha256: sha.map(str::to_string),
                version: Some("0.14.0".into()),
            });
            check_binaries(&plan).map_err(|e| e.to_string())
        };
        let listing = with_server(p, Some(&digest)).unwrap();
        assert_eq!(listing.lines().last().unwrap(), format!("{digest}  {p}"));
        assert_eq!(listing.lines().count(), 2, "{listing}");
        let err = with_server(p, Some(&"0".repeat(64))).unwrap_err();
        assert!(err.contains("rest storage server"), "{err}");
        let err = with_server("/nonexistent/rest-server", None).unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
    }
}
