-- Version 1: a run by its pack's manifest digest, its tools, and every
-- sample of every figure. Plain SQL that SQLite and PostgreSQL both accept.
CREATE TABLE runs (
    digest       TEXT PRIMARY KEY,
    run_id       TEXT NOT NULL,
    dataset      TEXT,
    environment  TEXT,
    imported_at  TEXT NOT NULL
);
CREATE TABLE run_tools (
    digest   TEXT NOT NULL REFERENCES runs(digest),
    name     TEXT NOT NULL,
    version  TEXT,
    PRIMARY KEY (digest, name)
);
CREATE TABLE samples (
    digest  TEXT NOT NULL REFERENCES runs(digest),
    seq     BIGINT NOT NULL,
    metric  TEXT NOT NULL,
    value   DOUBLE PRECISION NOT NULL,
    unit    TEXT NOT NULL,
    tool    TEXT NOT NULL,
    cycle   BIGINT NOT NULL,
    step    TEXT NOT NULL,
    ok      BOOLEAN NOT NULL,
    timed   BOOLEAN NOT NULL,
    PRIMARY KEY (digest, seq)
);
CREATE INDEX samples_by_metric ON samples (metric, tool);
