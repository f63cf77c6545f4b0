#!/usr/bin/env bash
# Re-makes docs/guide/report.png, the user guide's picture of report.html:
# the committed run that crates/report/tests/html.rs opens in headless
# Chromium, saved from that test (which checks it first: no request left
# the page, its figures are in the DOM, the picture is not blank).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/docs/guide/report.png"
LABRUN_SCREENSHOT="$out" cargo test -p labrun-report --test html \
  chromium_opens_the_page_without_a_request_and_shows_its_figures -- --exact
echo "wrote $out"
