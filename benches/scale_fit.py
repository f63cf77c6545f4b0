#!/usr/bin/env python3
"""The analysis half of benches/scale.sh: reads OUT/runs.txt (scale, host
start and end of `labrun bench`, run id) and each run's raw evidence, fits
wall = fixed + per_gb * GB per tool and phase, projects the full scale at 3
cycles, and sets `bench`'s own estimate (raw/estimate.json) beside it.
Writes OUT/scale.svg; prints the table.

Projection of the whole run at full scale, 3 cycles: the dataset generation
once, plus 3 times everything else of a one-cycle run (each fitted from the
runs' total wall time less their generation). The published cycle's phases
are fitted one by one; the harness (SSH, pushes, pulls, cache drops, the
report) is what the total has beyond the records.
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import harness  # noqa: E402

out = pathlib.Path(sys.argv[1])
CYCLES = 3
runs = []
for line in (out / "runs.txt").read_text().split("\n"):
    if not line.strip():
        continue
    scale, start, end, run_id = line.split()
    raw = out / "runs" / run_id / "raw"
    recs = [json.loads(l) for l in (raw / "records.jsonl").read_text().splitlines() if l.strip()]
    est_file = raw / "estimate.json"
    est = json.loads(est_file.read_text()) if est_file.exists() else None
    gen = next(r for r in recs if r["step"] == "generate" and r["tool"] == "")
    phases_file = raw / "host-phases.jsonl"
    phases = ([json.loads(l) for l in phases_file.read_text().splitlines() if l.strip()]
              if phases_file.exists() else [])
    runs.append({
        "start": float(start),
        "phases": phases,
        "scale": float(scale),
        "wall": float(end) - float(start),
        "recs": recs,
        "est": est,
        "gb": gen["bytes"] / 1e9,
    })
runs.sort(key=lambda r: r["scale"])
full_gb = runs[-1]["gb"] / runs[-1]["scale"]


def fit(points):
    """Least squares y = a + b x; (a, b, r2)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return my, 0.0, float("nan")
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for _, y in points)
    ss_res = sum((y - a - b * x) ** 2 for x, y in points)
    r2 = 1 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    return a, b, r2


# (tool, phase) -> [(GB, wall)]; the dataset's own generation is ("dataset", "generate").
series = {}
for r in runs:
    for rec in r["recs"]:
        if not rec["ok"]:
            continue
        if rec["tool"] == "":
            key = ("dataset", rec["step"])
        elif rec["timed"] or rec["step"] in ("generate", "change", "verify"):
            key = (rec["tool"], rec["step"] if rec["timed"] else rec["step"] + " (untimed)")
        else:
            continue
        series.setdefault(key, []).append((r["gb"], rec["wall_secs"]))
series[("labrun bench", "whole run")] = [(r["gb"], r["wall"]) for r in runs]
series[("labrun bench", "harness")] = [
    (r["gb"], r["wall"] - sum(x["wall_secs"] for x in r["recs"])) for r in runs
]

scales = ", ".join(str(r["scale"]) for r in runs)
sizes = ", ".join(f"{r['gb'] * 1000:.0f} MB" for r in runs)
print(f"scales {scales}: {sizes}; full scale {full_gb:.2f} GB")
print(f"{'tool':<13} {'phase':<30} {'fixed s':>9} {'s per GB':>10} {'R^2':>6} {'at full scale':>14}")
fits = {}
for key in sorted(series, key=lambda k: (k[0] == "labrun bench", k)):
    pts = series[key]
    if len(pts) < 2:
        continue
    a, b, r2 = fit(pts)
    fits[key] = (a, b, r2)
    print(f"{key[0]:<13} {key[1]:<30} {a:9.1f} {b:10.1f} {r2:6.3f} {a + b * full_gb:12.0f} s")

whole = fits[("labrun bench", "whole run")]
gen = fits.get(("dataset", "generate"), (0.0, 0.0, 0.0))
at = lambda f: f[0] + f[1] * full_gb
projected = at(gen) + CYCLES * (at(whole) - at(gen))
print(f"\nprojected: the full scale, {CYCLES} cycles: {projected / 3600:.1f} h "
      f"(generation {at(gen) / 60:.0f} min once, then {CYCLES} x {(at(whole) - at(gen)) / 3600:.2f} h)")

# The estimate scales exactly: its fixed part with the runs (tools x
# cycles), its data part with the runs and the bytes.
est_run = next((r for r in reversed(runs) if r["est"]), None)
if est_run:
    e = est_run["est"]
    fixed, data = e["fixed_secs"], e["secs"] - e["fixed_secs"]
    full_est = CYCLES * (fixed + data * full_gb * 1e9 / e["dataset_bytes"])
    print(f"bench's estimate for the same (from its scale {est_run['scale']} run's rates): "
          f"{full_est / 3600:.1f} h; projection / estimate = {projected / full_est:.2f}")
    for r in runs:
        if r["est"]:
            print(f"  scale {r['scale']}: estimated {r['est']['secs'] / 60:.1f} min, "
                  f"took {r['wall'] / 60:.1f} min ({r['wall'] / r['est']['secs']:.2f}x)")
else:
    print("bench's estimate: none recorded (raw/estimate.json missing)")

# The harness per run: its share of the wall time and where it went
# (benches/harness.py says how it is taken apart).
print("\nharness: the wall time that is no record's (protocol steps, timed or not)")
for r in runs:
    print(harness.describe(f"scale {r['scale']}", r["recs"], r["start"], r["wall"],
                           r["phases"], r["scale"] >= 0.01))

# The chart: the published cycle's phases per tool, points and fitted lines.
W, H, L, B = 760, 460, 70, 50
phases = ["backup_full", "backup_incremental", "restore"]
keys = [k for k in fits if k[1] in phases]
if keys:
    xmax = max(g for k in keys for g, _ in series[k]) * 1.05
    ymax = max(w for k in keys for _, w in series[k]) * 1.1
    X = lambda g: L + (W - L - 20) * g / xmax
    Y = lambda w: H - B - (H - B - 30) * w / ymax
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
    dashes = {"backup_full": "", "backup_incremental": "6,3", "restore": "2,3"}
    tools = sorted({k[0] for k in keys})
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18">wall time against dataset size, one cycle (lines: fixed + per GB)</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - 20}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{H - B}" x2="{L}" y2="30" stroke="black"/>',
           f'<text x="{(W + L) / 2}" y="{H - 12}" text-anchor="middle">dataset, GB</text>',
           f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle">seconds</text>']
    for i in range(5):
        g, w = xmax * i / 4, ymax * i / 4
        svg.append(f'<text x="{X(g)}" y="{H - B + 16}" text-anchor="middle">{g:.3f}</text>')
        svg.append(f'<text x="{L - 6}" y="{Y(w) + 4}" text-anchor="end">{w:.0f}</text>')
    for n, k in enumerate(sorted(keys)):
        c = colours[tools.index(k[0]) % len(colours)]
        a, b, _ = fits[k]
        svg.append(f'<line x1="{X(0)}" y1="{Y(a)}" x2="{X(xmax)}" y2="{Y(a + b * xmax)}" stroke="{c}" stroke-dasharray="{dashes[k[1]]}"/>')
        for g, w in series[k]:
            svg.append(f'<circle cx="{X(g)}" cy="{Y(w)}" r="3" fill="{c}"/>')
        svg.append(f'<text x="{L + 10}" y="{40 + 15 * n}" fill="{c}">{k[0]} {k[1]}</text>')
    svg.append("</svg>")
    (out / "scale.svg").write_text("\n".join(svg) + "\n")
    print(f"\nchart: {out / 'scale.svg'}")
