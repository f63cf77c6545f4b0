//! Every statement of the store, written once for both databases: plain SQL
//! that SQLite and PostgreSQL read alike, parameters `$1, $2, ...` in order
//! of first use (an untyped parameter is `CAST` where PostgreSQL could not
//! infer its type). A substring test is `replace(x, $n, '') <> x`: the same,
//! case-sensitive, on both (SQLite has no strpos, PostgreSQL no instr, and
//! LIKE differs in case and wildcards).

pub const INSERT_RUN: &str = "INSERT INTO runs \
     (digest, run_id, dataset, environment, imported_at, lab, lab_digest, machine_class, acceleration, finished_at, origin) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
     ON CONFLICT (digest) DO NOTHING";

pub const INSERT_TOOL: &str = "INSERT INTO run_tools (digest, name, version) VALUES ($1, $2, $3) \
     ON CONFLICT DO NOTHING";

pub const INSERT_SAMPLE: &str = "INSERT INTO samples \
     (digest, seq, metric, value, unit, tool, cycle, step, ok, timed) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// A run imported by an older labrun (schema 1) gets its pack on import.
pub const INSERT_PACK: &str =
    "INSERT INTO packs (digest, content) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING";

pub const PACK: &str = "SELECT content FROM packs WHERE digest = $1";

pub const HAS_RUN: &str = "SELECT 1 FROM runs WHERE digest = $1";

pub const SAMPLES: &str = "SELECT s.metric, s.value, s.unit, s.tool, s.cycle, s.step, s.ok, s.timed, r.run_id \
     FROM samples s JOIN runs r ON r.digest = s.digest \
     WHERE s.digest = $1 ORDER BY s.seq";

/// `$1` tool, `$2` run id prefix, `$3` lab, `$4` dataset substring, `$5`
/// machine class substring, `$6` finished at or after, `$7` finished
/// before, `$8` digest prefix; each NULL matches every run.
pub const RUNS: &str = "SELECT r.digest, r.run_id, r.imported_at, r.lab, r.lab_digest, r.dataset, \
     r.machine_class, r.acceleration, r.finished_at, r.origin FROM runs r \
     WHERE (CAST($1 AS TEXT) IS NULL OR EXISTS \
        (SELECT 1 FROM run_tools t WHERE t.digest = r.digest AND t.name = $1)) \
     AND (CAST($2 AS TEXT) IS NULL OR substr(r.run_id, 1, length($2)) = $2) \
     AND (CAST($3 AS TEXT) IS NULL OR r.lab = $3) \
     AND (CAST($4 AS TEXT) IS NULL OR replace(r.dataset, $4, '') <> r.dataset) \
     AND (CAST($5 AS TEXT) IS NULL OR replace(r.machine_class, $5, '') <> r.machine_class) \
     AND (CAST($6 AS TEXT) IS NULL OR r.finished_at >= $6) \
     AND (CAST($7 AS TEXT) IS NULL OR r.finished_at < $7) \
     AND (CAST($8 AS TEXT) IS NULL OR substr(r.digest, 1, length($8)) = $8) \
     ORDER BY r.imported_at, r.run_id, r.digest";

/// Every run's tools, by run, each run's by name.
pub const TOOLS: &str = "SELECT digest, name, version FROM run_tools ORDER BY digest, name";
