//! Writing a pin into a lab file by editing its text, so comments, order and
//! layout survive (a YAML round trip would drop the comments that say where
//! each digest came from).
//!
//! The edit is line-based and deliberately narrow: block-style mappings only.
//! Anything it cannot edit with certainty (flow style, block scalars,
//! anchors, a duplicated key or tool) is refused with the reason, and the
//! file is left for a human.

/// What to write into one tool's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinEdit {
    pub tool: String,
    /// The tool's `version:`.
    pub version: Option<String>,
    /// `artifact.url`.
    pub url: Option<String>,
    /// `artifact.apt.version`.
    pub apt_version: Option<String>,
    /// The member path under `extract:` (`tar:`, `deb-member:`, ...), which
    /// often holds the version too.
    pub extract_member: Option<String>,
    pub sha256: String,
    pub sha256_source: String,
}

/// What a tool's block says now (to derive a URL template from it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolView {
    pub version: Option<String>,
    pub url: Option<String>,
    pub sha256: Option<String>,
    pub apt_package: Option<String>,
    pub apt_version: Option<String>,
    /// `artifact.apt.suite`, when the package is another suite's.
    pub apt_suite: Option<String>,
    pub extract_member: Option<String>,
}

/// One line, split as far as this editor needs.
struct Line<'a> {
    text: &'a str,
    indent: usize,
    /// Column of the key (after a `- ` list marker, if any).
    key_col: usize,
    list_item: bool,
    key: Option<&'a str>,
    /// The value with any trailing comment removed, not unquoted.
    value: &'a str,
}

impl Line<'_> {
    fn is_blank(&self) -> bool {
        let t = self.text.trim();
        t.is_empty() || t.starts_with('#')
    }
}

fn parse_line(text: &str) -> Line<'_> {
    let body = text.trim_end_matches(['\n', '\r']);
    let indent = body.len() - body.trim_start_matches(' ').len();
    let mut rest = &body[indent..];
    let mut key_col = indent;
    let mut list_item = false;
    if rest == "-" || rest.starts_with("- ") {
        list_item = true;
        let after = rest[1..].trim_start_matches(' ');
        key_col = indent + (rest.len() - after.len());
        rest = after;
    }
    let (key, value) = match rest.find(':') {
        Some(i)
            if i > 0
                && rest[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                && rest[i + 1..].chars().next().is_none_or(|c| c == ' ') =>
        {
            (Some(&rest[..i]), strip_comment(rest[i + 1..].trim()))
        }
        _ => (None, rest.trim()),
    };
    Line {
        text,
        indent,
        key_col,
        list_item,
        key,
        value,
    }
}

/// `abc # note` -> `abc`; a `#` inside quotes is kept.
fn strip_comment(v: &str) -> &str {
    if let Some(q @ ('"' | '\'')) = v.chars().next() {
        if let Some(end) = v[1..].find(q) {
            return &v[..end + 2];
        }
        return v;
    }
    if v.starts_with('#') {
        return "";
    }
    match v.find(" #") {
        Some(i) => v[..i].trim_end(),
        None => v,
    }
}

fn unquote(v: &str) -> String {
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        let inner = &v[1..v.len() - 1];
        if b[0] == b'\'' {
            inner.replace("''", "'")
        } else {
            inner.replace("\\\"", "\"").replace("\\\\", "\\")
        }
    } else {
        v.to_string()
    }
}

/// A scalar as YAML will read it back as the same string: plain when that is
/// safe, double-quoted otherwise (numbers, booleans, `: `, ` #`, ...).
pub fn yaml_scalar(v: &str) -> String {
    let special_start = v.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`".contains(c));
    let keyword = matches!(
        v.to_ascii_lowercase().as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~" | "y" | "n"
    );
    let numeric = v.parse::<f64>().is_ok()
        || v.parse::<i128>().is_ok()
        || v.starts_with("0x")
        || v.starts_with("0o")
        || (v.contains(':') && v.bytes().all(|b| b.is_ascii_digit() || b == b':'));
    let needs_quotes = v.is_empty()
        || special_start
        || keyword
        || numeric
        || v.contains(": ")
        || v.contains(" #")
        || v.ends_with(':')
        || v.trim() != v
        || v.contains(['\n', '\t', '"', '\\']);
    if needs_quotes {
        format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        v.to_string()
    }
}

/// Line indexes `[start, end)` of the children of the key line at `at`:
/// following lines indented deeper, blank and comment lines inside included.
fn children(lines: &[Line], at: usize) -> (usize, usize) {
    let col = lines[at].key_col;
    let mut end = at + 1;
    let mut last_real = at + 1;
    while end < lines.len() {
        let l = &lines[end];
        if !l.is_blank() {
            if l.indent <= col {
                break;
            }
            last_real = end + 1;
        }
        end += 1;
    }
    (at + 1, last_real)
}

/// The one line in `[start, end)` with key `key` at column `col`.
fn find_key(
    lines: &[Line],
    start: usize,
    end: usize,
    col: usize,
    key: &str,
) -> Result<Option<usize>, String> {
    let hits: Vec<usize> = (start..end)
        .filter(|&i| !lines[i].is_blank() && lines[i].key_col == col && lines[i].key == Some(key))
        .collect();
    match hits.len() {
        0 => Ok(None),
        1 => Ok(Some(hits[0])),
        _ => Err(format!("`{key}` appears {} times in one block", hits.len())),
    }
}

/// The column of the first real line in `[start, end)`.
fn block_col(lines: &[Line], start: usize, end: usize) -> Option<usize> {
    (start..end)
        .find(|&i| !lines[i].is_blank())
        .map(|i| lines[i].key_col)
}

fn refuse_odd(value: &str, what: &str) -> Result<(), String> {
    if value.starts_with(['|', '>', '&', '*', '{', '[', '!']) {
        return Err(format!(
            "`{what}` uses YAML this editor does not rewrite ({value:?}); write it in plain \
             block style or edit the file by hand"
        ));
    }
    Ok(())
}

/// Where a tool's block and its keys are.
struct Located {
    item_start: usize,
    item_end: usize,
    key_col: usize,
    artifact: Option<usize>,
}

fn locate(lines: &[Line], tool: &str) -> Result<Located, String> {
    let tools = find_key(lines, 0, lines.len(), 0, "tools")?
        .ok_or("there is no top-level `tools:` list")?;
    if !lines[tools].value.is_empty() {
        refuse_odd(lines[tools].value, "tools")?;
    }
    // The list may sit at the key's own column (`tools:\n- name: x`).
    let mut end = tools + 1;
    while end < lines.len() {
        let l = &lines[end];
        if !l.is_blank() && l.indent == 0 && !l.list_item {
            break;
        }
        end += 1;
    }
    let item_indent = (tools + 1..end)
        .find(|&i| !lines[i].is_blank())
        .filter(|&i| lines[i].list_item)
        .map(|i| lines[i].indent)
        .ok_or("`tools:` is not a block list of tools (`- name: ...`)")?;
    let starts: Vec<usize> = (tools + 1..end)
        .filter(|&i| lines[i].list_item && lines[i].indent == item_indent)
        .collect();
    let mut names = Vec::new();
    let mut matches = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let item_end = starts.get(n + 1).copied().unwrap_or(end);
        let key_col = lines[start].key_col;
        if let Some(i) = find_key(lines, start, item_end, key_col, "name")? {
            let name = unquote(lines[i].value);
            if name == tool {
                matches.push((start, item_end, key_col));
            }
            names.push(name);
        }
    }
    let (item_start, item_end, key_col) = match matches.len() {
        1 => matches[0],
        0 => {
            return Err(format!(
                "no tool named `{tool}`; the tools are: {}",
                names.join(", ")
            ));
        }
        n => {
            return Err(format!(
                "{n} tools are named `{tool}`; make the names unique first"
            ));
        }
    };
    let artifact = find_key(lines, item_start, item_end, key_col, "artifact")?;
    if let Some(a) = artifact
        && !lines[a].value.is_empty()
    {
        refuse_odd(lines[a].value, "artifact")?;
        return Err("`artifact:` must be a block mapping (one key per line)".into());
    }
    Ok(Located {
        item_start,
        item_end,
        key_col,
        artifact,
    })
}

/// What the tool's block says now.
pub fn read_tool(text: &str, tool: &str) -> Result<ToolView, String> {
    let lines: Vec<Line> = text.split_inclusive('\n').map(parse_line).collect();
    let at = locate(&lines, tool)?;
    let value = |start, end, col, key| -> Result<Option<String>, String> {
        Ok(find_key(&lines, start, end, col, key)?.map(|i| unquote(lines[i].value)))
    };
    let mut view = ToolView {
        version: value(at.item_start, at.item_end, at.key_col, "version")?,
        ..ToolView::default()
    };
    if let Some(a) = at.artifact {
        let (s, e) = children(&lines, a);
        if let Some(col) = block_col(&lines, s, e) {
            view.url = value(s, e, col, "url")?;
            view.sha256 = value(s, e, col, "sha256")?;
            if let Some(i) = extract_member_line(&lines, s, e, col)? {
                view.extract_member = Some(unquote(lines[i].value));
            }
            if let Some(apt) = find_key(&lines, s, e, col, "apt")? {
                if let Some(map) = flow_map(lines[apt].value) {
                    let get =
                        |k: &str| map.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
                    view.apt_package = get("package");
                    view.apt_version = get("version");
                    view.apt_suite = get("suite");
                } else {
                    let (s2, e2) = children(&lines, apt);
                    if let Some(c2) = block_col(&lines, s2, e2) {
                        view.apt_package = value(s2, e2, c2, "package")?;
                        view.apt_version = value(s2, e2, c2, "version")?;
                        view.apt_suite = value(s2, e2, c2, "suite")?;
                    }
                }
            }
        }
    }
    Ok(view)
}

/// The lab text with the pin written in. `binary_sha256` is removed when the
/// file's digest changes (it belonged to the old file; `labrun fetch`
/// records the new one).
pub fn apply_pin(text: &str, edit: &PinEdit) -> Result<String, String> {
    let lines: Vec<Line> = text.split_inclusive('\n').map(parse_line).collect();
    let at = locate(&lines, &edit.tool)?;
    let a = at
        .artifact
        .ok_or_else(|| {
            format!(
                "tool `{}` has no `artifact:` block to pin (one that takes it from another tool through a merge key, `<<: *name`, is pinned there)",
                edit.tool
            )
        })?;
    let (s, e) = children(&lines, a);
    let col = block_col(&lines, s, e).ok_or("`artifact:` is empty")?;
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let set = |col: usize, key: &str, value: &str| {
        format!("{}{key}: {}{newline}", " ".repeat(col), yaml_scalar(value))
    };

    // Line index -> replacement (None deletes); plus lines to insert after an index.
    let mut replace: Vec<(usize, Option<String>)> = Vec::new();
    let mut insert_after: Vec<(usize, String)> = Vec::new();
    let mut touch = |key: &str,
                     idx: Option<usize>,
                     line: String,
                     fallback_after: usize|
     -> Result<(), String> {
        match idx {
            Some(i) => {
                let v = lines[i].value;
                if v.starts_with(['|', '>']) {
                    // A block scalar (`>-` and indented text): its lines go
                    // with it.
                    let (s, e) = children(&lines, i);
                    replace.extend((s..e).map(|j| (j, None)));
                } else if key != "apt" {
                    // (A flow `apt:` mapping was parsed and rebuilt by the caller.)
                    refuse_odd(v, key)?;
                }
                replace.push((i, Some(line)));
            }
            None => insert_after.push((fallback_after, line)),
        }
        Ok(())
    };

    let sha_idx = find_key(&lines, s, e, col, "sha256")?;
    let old_sha = sha_idx.map(|i| unquote(lines[i].value));
    let last_child = e - 1;
    touch(
        "sha256",
        sha_idx,
        set(col, "sha256", &edit.sha256),
        last_child,
    )?;
    let src_idx = find_key(&lines, s, e, col, "sha256_source")?;
    touch(
        "sha256_source",
        src_idx,
        set(col, "sha256_source", &edit.sha256_source),
        sha_idx.unwrap_or(last_child),
    )?;
    if let Some(url) = &edit.url {
        let idx = find_key(&lines, s, e, col, "url")?
            .ok_or("the artifact has no `url:` (its source is `file:` or `apt:`)")?;
        touch("url", Some(idx), set(col, "url", url), idx)?;
    }
    if let Some(v) = &edit.apt_version {
        let apt = find_key(&lines, s, e, col, "apt")?.ok_or("the artifact has no `apt:` source")?;
        if let Some(mut map) = flow_map(lines[apt].value) {
            // `apt: {package: restic, version: 0.14.0-1+b5}` stays on one line.
            let slot = map
                .iter_mut()
                .find(|(k, _)| k == "version")
                .ok_or("`apt:` has no `version:`")?;
            slot.1 = v.clone();
            let inner: Vec<String> = map
                .iter()
                .map(|(k, val)| format!("{k}: {}", yaml_scalar(val)))
                .collect();
            let line = format!("{}apt: {{{}}}{newline}", " ".repeat(col), inner.join(", "));
            touch("apt", Some(apt), line, apt)?;
        } else {
            if !lines[apt].value.is_empty() {
                return Err("`apt:` must be a mapping of `package:` and `version:`".into());
            }
            let (s2, e2) = children(&lines, apt);
            let c2 = block_col(&lines, s2, e2).ok_or("`apt:` is empty")?;
            let idx = find_key(&lines, s2, e2, c2, "version")?.ok_or("`apt:` has no `version:`")?;
            touch("apt.version", Some(idx), set(c2, "version", v), idx)?;
        }
    }
    if let Some(m) = &edit.extract_member {
        let idx = extract_member_line(&lines, s, e, col)?.ok_or("`extract:` names no member")?;
        let key = lines[idx].key.unwrap_or("tar");
        touch("extract", Some(idx), set(lines[idx].key_col, key, m), idx)?;
    }
    if let Some(v) = &edit.version {
        let idx = find_key(&lines, at.item_start, at.item_end, at.key_col, "version")?;
        let first_key = find_key(&lines, at.item_start, at.item_end, at.key_col, "name")?
            .unwrap_or(at.item_start);
        touch("version", idx, set(at.key_col, "version", v), first_key)?;
    }
    if old_sha.as_deref() != Some(edit.sha256.as_str())
        && let Some(i) = find_key(&lines, s, e, col, "binary_sha256")?
    {
        replace.push((i, None));
    }

    let mut out = String::with_capacity(text.len() + 200);
    for (i, line) in lines.iter().enumerate() {
        match replace.iter().find(|(r, _)| *r == i) {
            Some((_, Some(new))) => out.push_str(new),
            Some((_, None)) => {}
            None => {
                out.push_str(line.text);
                if !line.text.ends_with('\n') && insert_after.iter().any(|(j, _)| *j == i) {
                    out.push_str(newline);
                }
            }
        }
        for (_, new) in insert_after.iter().filter(|(j, _)| *j == i) {
            out.push_str(new);
        }
    }
    // Read back what was written: the editor must agree with itself.
    let check = read_tool(&out, &edit.tool)?;
    let agrees = check.sha256.as_deref() == Some(edit.sha256.as_str())
        && edit
            .url
            .as_ref()
            .is_none_or(|u| check.url.as_ref() == Some(u))
        && edit
            .version
            .as_ref()
            .is_none_or(|v| check.version.as_ref() == Some(v))
        && edit
            .apt_version
            .as_ref()
            .is_none_or(|v| check.apt_version.as_ref() == Some(v))
        && edit
            .extract_member
            .as_ref()
            .is_none_or(|m| check.extract_member.as_ref() == Some(m));
    if !agrees {
        return Err("the edited text does not read back as intended; edit the file by hand".into());
    }
    Ok(out)
}

/// The line of the one key under a block `extract:` (e.g. `tar: dir/kopia`).
fn extract_member_line(
    lines: &[Line],
    s: usize,
    e: usize,
    col: usize,
) -> Result<Option<usize>, String> {
    let Some(x) = find_key(lines, s, e, col, "extract")? else {
        return Ok(None);
    };
    if !lines[x].value.is_empty() {
        return Ok(None);
    }
    let (s2, e2) = children(lines, x);
    let real: Vec<usize> = (s2..e2).filter(|&i| !lines[i].is_blank()).collect();
    match real.as_slice() {
        [one] if lines[*one].key.is_some() => Ok(Some(*one)),
        _ => Ok(None),
    }
}

/// `{package: restic, version: "1.0"}` as key/value pairs; `None` for
/// anything fancier (nesting, commas or braces inside values).
fn flow_map(value: &str) -> Option<Vec<(String, String)>> {
    let inner = value.strip_prefix('{')?.strip_suffix('}')?;
    if inner.contains(['{', '}', '[', ']']) {
        return None;
    }
    let mut out = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once(':')?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty()
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return None;
        }
        if out.iter().any(|(seen, _): &(String, String)| seen == k) {
            return None;
        }
        out.push((k.to_string(), unquote(v)));
    }
    Some(out)
}

/// The pins of one version of a series (`versions:` of a tool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesPinEdit {
    pub tool: String,
    pub version: String,
    /// The Go module's hash; None for an artifact that is not a go build.
    pub sum: Option<String>,
    pub sha256: String,
}

/// The lab text with one series entry's `sum:` and `sha256:` written in.
/// An entry is a flow mapping on one line (`- {version: 0.16.4, sha256:
/// ...}`: rewritten on that line, other keys and a trailing comment kept)
/// or a block (`- version: 0.16.4` and its keys below: each pin's line
/// replaced, or added after `version:`).
pub fn apply_series_pin(text: &str, edit: &SeriesPinEdit) -> Result<String, String> {
    let lines: Vec<Line> = text.split_inclusive('\n').map(parse_line).collect();
    let at = locate(&lines, &edit.tool)?;
    let list = find_key(&lines, at.item_start, at.item_end, at.key_col, "versions")?
        .ok_or_else(|| format!("tool `{}` has no `versions:` list", edit.tool))?;
    if !lines[list].value.is_empty() {
        refuse_odd(lines[list].value, "versions")?;
    }
    let (s, e) = children(&lines, list);
    let items: Vec<usize> = (s..e)
        .filter(|&i| !lines[i].is_blank() && lines[i].list_item)
        .collect();
    let mut pins: Vec<(&str, String)> = Vec::new();
    if let Some(sum) = &edit.sum {
        pins.push(("sum", sum.clone()));
    }
    pins.push(("sha256", edit.sha256.clone()));
    let mut out: Vec<String> = lines.iter().map(|l| l.text.to_string()).collect();
    for (n, &i) in items.iter().enumerate() {
        let line = &lines[i];
        let item_end = items.get(n + 1).copied().unwrap_or(e);
        // A flow entry has no key of its own: its value is the whole rest.
        let flow = strip_comment(line.value);
        if let Some(map) = flow.starts_with('{').then(|| flow_map(flow)) {
            let mut map = map.ok_or_else(|| {
                format!("a `versions:` entry of `{}` is a flow mapping this editor cannot rewrite: write it in block style", edit.tool)
            })?;
            if !map
                .iter()
                .any(|(k, v)| k == "version" && *v == edit.version)
            {
                continue;
            }
            for (key, value) in &pins {
                match map.iter_mut().find(|(k, _)| k == key) {
                    Some(slot) => slot.1 = value.clone(),
                    None => map.push((key.to_string(), value.clone())),
                }
            }
            let body = map
                .iter()
                .map(|(k, v)| format!("{k}: {}", flow_scalar(v)))
                .collect::<Vec<_>>()
                .join(", ");
            let raw = line.text.trim_end_matches(['\n', '\r']);
            let close = raw.rfind('}').unwrap_or(raw.len() - 1);
            let tail = &raw[close + 1..];
            let newline = &line.text[raw.len()..];
            out[i] = format!("{}- {{{body}}}{tail}{newline}", " ".repeat(line.indent));
            return Ok(out.concat());
        }
        // Block style: the entry's keys sit at the key column of its `- `.
        let col = line.key_col;
        let version = find_key(&lines, i, item_end, col, "version")?;
        if version.map(|v| unquote(lines[v].value)) != Some(edit.version.clone()) {
            continue;
        }
        let mut inserts = Vec::new();
        for (key, value) in &pins {
            let written = format!("{}{key}: {}\n", " ".repeat(col), yaml_scalar(value));
            match find_key(&lines, i, item_end, col, key)? {
                Some(k) => out[k] = keep_comment(&lines[k], written),
                None => inserts.push(written),
            }
        }
        let after = version.unwrap_or(i);
        out[after].push_str(&inserts.concat());
        return Ok(out.concat());
    }
    Err(format!(
        "tool `{}` lists no version {} under `versions:`",
        edit.tool, edit.version
    ))
}

/// A value inside a flow mapping: quoted whenever it holds a `:` too, so
/// `h1:...=` never reads as a key.
fn flow_scalar(v: &str) -> String {
    if v.contains([':', ',', '{', '}', '[', ']']) {
        format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        yaml_scalar(v)
    }
}

/// `written` (a whole `key: value` line) with the old line's trailing comment.
fn keep_comment(old: &Line, written: String) -> String {
    let raw = old.text.trim_end_matches(['\n', '\r']);
    let after_key = raw.find(':').map_or("", |c| &raw[c + 1..]);
    let value_and_comment = after_key.trim();
    match value_and_comment
        .strip_prefix(old.value)
        .map(str::trim_start)
    {
        Some(comment) if comment.starts_with('#') => {
            format!("{} {comment}\n", written.trim_end_matches('\n'))
        }
        _ => written,
    }
}

/// The lab text with fields of a tool's build block (`artifact.go` or
/// `artifact.crate`) set: `version`, `sum`. A block mapping's lines are
/// replaced (comments kept) or added at its end; a flow mapping on one line
/// is rebuilt on that line.
pub fn apply_build_fields(
    text: &str,
    tool: &str,
    kind: &str,
    fields: &[(&str, String)],
) -> Result<String, String> {
    let lines: Vec<Line> = text.split_inclusive('\n').map(parse_line).collect();
    let at = locate(&lines, tool)?;
    let a = at
        .artifact
        .ok_or_else(|| format!("tool `{tool}` has no `artifact:` block"))?;
    let (s, e) = children(&lines, a);
    let col = block_col(&lines, s, e).ok_or("`artifact:` is empty")?;
    let b = find_key(&lines, s, e, col, kind)?
        .ok_or_else(|| format!("the artifact has no `{kind}:` build"))?;
    let mut out: Vec<String> = lines.iter().map(|l| l.text.to_string()).collect();
    let value = lines[b].value;
    if value.starts_with('{') {
        let mut map = flow_map(value).ok_or_else(|| {
            format!(
                "`{kind}:` is a flow mapping this editor cannot rewrite: write it in block style"
            )
        })?;
        for (key, v) in fields {
            match map.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = v.clone(),
                None => map.push((key.to_string(), v.clone())),
            }
        }
        let body = map
            .iter()
            .map(|(k, v)| format!("{k}: {}", flow_scalar(v)))
            .collect::<Vec<_>>()
            .join(", ");
        let raw = lines[b].text.trim_end_matches(['\n', '\r']);
        let close = raw.rfind('}').unwrap_or(raw.len() - 1);
        let newline = &lines[b].text[raw.len()..];
        out[b] = format!(
            "{}{kind}: {{{body}}}{}{newline}",
            " ".repeat(col),
            &raw[close + 1..]
        );
        return Ok(out.concat());
    }
    if !value.is_empty() {
        return Err(format!("`{kind}:` must be a mapping"));
    }
    let (s2, e2) = children(&lines, b);
    let c2 = block_col(&lines, s2, e2).ok_or_else(|| format!("`{kind}:` is empty"))?;
    let mut added = String::new();
    for (key, v) in fields {
        let written = format!("{}{key}: {}\n", " ".repeat(c2), yaml_scalar(v));
        match find_key(&lines, s2, e2, c2, key)? {
            Some(k) => {
                refuse_odd(lines[k].value, key)?;
                out[k] = keep_comment(&lines[k], written);
            }
            None => added.push_str(&written),
        }
    }
    out[e2 - 1].push_str(&added);
    Ok(out.concat())
}

/// The lab text with a series tool's `versions:` replaced by `members`
/// (each a version and its binary's SHA-256) and its `anchor:` set: how
/// `labrun bisect` writes the lab of one probe from the user's. Everything
/// else of the text, comments included, is kept.
pub fn set_series_members(
    text: &str,
    tool: &str,
    members: &[(String, String)],
    anchor: &str,
) -> Result<String, String> {
    let lines: Vec<Line> = text.split_inclusive('\n').map(parse_line).collect();
    let at = locate(&lines, tool)?;
    let col = at.key_col;
    let list = find_key(&lines, at.item_start, at.item_end, col, "versions")?.ok_or_else(|| {
        format!("tool `{tool}` has no `versions:` list (bisect needs a series template)")
    })?;
    let (_, list_end) = children(&lines, list);
    let anchor_line = find_key(&lines, at.item_start, at.item_end, col, "anchor")?;
    let pad = " ".repeat(col);
    let mut block = format!("{pad}anchor: {}\n{pad}versions:\n", yaml_scalar(anchor));
    for (version, sha256) in members {
        block.push_str(&format!(
            "{pad}  - {{version: {}, sha256: {}}}\n",
            flow_scalar(version),
            flow_scalar(sha256)
        ));
    }
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if Some(i) == anchor_line || (list < i && i < list_end) {
            continue;
        }
        if i == list {
            out.push_str(&block);
            continue;
        }
        out.push_str(line.text);
    }
    Ok(out)
}

#[cfg(test)]
mod series_members_tests {
    use super::*;

    #[test]
    fn the_versions_and_anchor_are_replaced_and_the_rest_kept() {
        let text = "name: x  # the lab\ntools:\n  - name: toy\n    version: \"{version}\"\n    anchor: old\n    versions:\n      # the commits\n      - {version: a, sha256: \"{sha256}\"}\n      - version: b\n        sha256: c\n    artifact:\n      sha256: \"{sha256}\"\n  - name: other\n    version: 1\n";
        let members = [
            ("1111".to_string(), "aa".to_string()),
            ("2222".to_string(), "bb".to_string()),
        ];
        let out = set_series_members(text, "toy", &members, "1111").unwrap();
        assert_eq!(
            out,
            "name: x  # the lab\ntools:\n  - name: toy\n    version: \"{version}\"\n    anchor: \"1111\"\n    versions:\n      - {version: \"1111\", sha256: aa}\n      - {version: \"2222\", sha256: bb}\n    artifact:\n      sha256: \"{sha256}\"\n  - name: other\n    version: 1\n"
        );
        assert!(set_series_members(text, "other", &members, "1").is_err());
    }
}
