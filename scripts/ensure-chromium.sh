#!/usr/bin/env bash
# Installs Debian's chromium when it is missing, for the browser tests
# (make test-browser). Prints the path of the browser.
set -euo pipefail
for c in "${DAGEVAL_CHROMIUM:-}" chromium chromium-browser; do
  if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1; then
    command -v "$c"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: chromium is missing and apt-get is not available; set DAGEVAL_CHROMIUM to a Chromium binary" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "ensure-chromium: installing Debian's chromium" >&2
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >&2
command -v chromium
