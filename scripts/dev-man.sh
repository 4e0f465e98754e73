#!/usr/bin/env bash
# `man kquotactl` in a development venv, as after a wheel install. An editable install (pip install -e, what
# bootstrap.sh does) leaves out the wheel's data files, so the pages never reach <venv>/share/man/man1. Instead
# <venv>/man/man1 becomes a link to the checkout's man/: man-db searches <dir>/../man for every <dir> on PATH,
# so `man kquotactl` finds every page with <venv>/bin on PATH, including pages `make docs` adds later.
# Usage: scripts/dev-man.sh [VENV]   (default .venv)
set -euo pipefail
VENV=${1:-${VENV:-.venv}}
root=$(cd "$(dirname "$0")/.." && pwd)
link="$VENV/man/man1"
if [ -d "$link" ] && [ ! -L "$link" ]; then
  echo "dev-man: $link is a directory, not kquotactl's link: left as it is" >&2
  exit 1
fi
mkdir -p "$VENV/man"
ln -sfn "$root/man" "$link"  # -n: replace a link from an earlier run, not write into its target
