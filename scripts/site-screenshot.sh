#!/usr/bin/env bash
# Re-makes docs/guide/site-index.png and docs/guide/site-tool.png, the user
# guide's pictures of the site: the site of the committed runs (and a
# synthetic release series) that crates/site/tests/chromium.rs opens in
# headless Chromium, saved from that test (which checks it first: no
# request left the page, its charts are in the DOM, it is not blank).
set -euo pipefail
cd "$(dirname "$0")/.."
LABRUN_SCREENSHOT_DIR="$PWD/docs/guide" cargo test -p labrun-site --test chromium -- --ignored --exact \
  chromium_opens_the_index_and_a_tool_page_without_a_request_and_shows_their_figures
echo "wrote $PWD/docs/guide/site-index.png $PWD/docs/guide/site-tool.png"
