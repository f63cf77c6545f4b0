#!/usr/bin/env python3
"""The harness's share of a `labrun bench` run, from its raw evidence alone
(issue 12: at most 5% at scale 0.01 and above): the wall time that is no
record's (neither a protocol step, timed or not, nor the dataset work), and
where it went: bench's own phases before the agent's first record and after
its last (raw/host-phases.jsonl), and the agent's gaps between records
(cache drops before timed steps; helper commands, repository sizes and
cleanup after steps).

    python3 benches/harness.py RUN_DIR...

The wall time is bench's own, from its first phase's start to its last
phase's end; benches/scale_fit.py passes the host's start and end instead.
"""
import json
import pathlib
import sys


def read_lines(path):
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def breakdown(recs, start, wall):
    """Returns (harness_secs, parts) for records `recs` of a run that began at
    `start` (unix seconds) and took `wall` seconds."""
    begin = lambda x: x["started_unix_ms"] / 1000
    recs = sorted(recs, key=begin)
    harness = wall - sum(x["wall_secs"] for x in recs)
    before_timed = after_step = 0.0
    for prev, rec in zip(recs, recs[1:]):
        gap = max(0.0, begin(rec) - begin(prev) - prev["wall_secs"])
        if rec["timed"]:
            before_timed += gap
        else:
            after_step += gap
    parts = {
        "before the first record": begin(recs[0]) - start,
        "cache drops": before_timed,
        "after steps (helpers, sizes, cleanup)": after_step,
        "after the last record": start + wall - (begin(recs[-1]) + recs[-1]["wall_secs"]),
    }
    return harness, parts


def describe(label, recs, start, wall, phases, judged):
    harness, parts = breakdown(recs, start, wall)
    verdict = ""
    if judged:
        verdict = "  (target <= 5%: met)" if harness <= 0.05 * wall else "  (target <= 5%: NOT met)"
    lines = [f"  {label}: {harness:6.1f} s of {wall:6.1f} s = {harness / wall:5.1%}{verdict}",
             "    " + ", ".join(f"{k} {v:5.1f} s" for k, v in parts.items())]
    if phases:
        lines.append("    bench phases: " + ", ".join(
            f"{p['phase']} {p['secs']:.1f}" for p in phases if p["phase"] != "follow"))
    return "\n".join(lines)


def main(dirs):
    print("harness: the wall time that is no record's (protocol steps, timed or not)")
    for d in dirs:
        raw = pathlib.Path(d) / "raw"
        recs = read_lines(raw / "records.jsonl")
        phases = read_lines(raw / "host-phases.jsonl")
        start = phases[0]["started_unix_ms"] / 1000
        end = max(p["started_unix_ms"] / 1000 + p["secs"] for p in phases)
        plan = json.loads((raw / "plan.json").read_text())
        scale = plan["dataset"].get("scale")
        label = f"{pathlib.Path(d).resolve().name} (scale {scale}, {plan['cycles']} cycles)"
        print(describe(label, recs, start, end - start, phases, scale is not None and scale >= 0.01))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
