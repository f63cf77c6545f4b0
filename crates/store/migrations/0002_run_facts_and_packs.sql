-- Version 2: what a run is filtered and grouped by (its lab and the lab
-- file's digest, the machine class and acceleration, when it finished,
-- where it came from), and its pack inside the store, imported in the same
-- transaction as its rows, so a team's server holds the packs too and no
-- run is ever kept without the pack it can be rebuilt from.
ALTER TABLE runs ADD COLUMN lab TEXT;
ALTER TABLE runs ADD COLUMN lab_digest TEXT;
ALTER TABLE runs ADD COLUMN machine_class TEXT;
ALTER TABLE runs ADD COLUMN acceleration TEXT;
ALTER TABLE runs ADD COLUMN finished_at TEXT;
ALTER TABLE runs ADD COLUMN origin TEXT;
CREATE TABLE packs (
    digest   TEXT PRIMARY KEY REFERENCES runs(digest),
    content  BYTEA NOT NULL
);
CREATE INDEX runs_by_class ON runs (machine_class, lab);
