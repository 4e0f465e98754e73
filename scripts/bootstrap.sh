#!/usr/bin/env bash
# Install everything kquotactl's demo, tests and benchmarks need on a fresh Debian machine:
# Java 17 + Maven (apt, only if missing), a virtualenv with the package and its extras, and the
# Apache ZooKeeper/Kafka jars from Maven Central (cached under ~/.cache/kquotactl).
set -euo pipefail
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

need_apt=()
# a JDK, not only a JRE: the differential tests compile small drivers against Kafka's jars
command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
command -v mvn  >/dev/null 2>&1 || need_apt+=(maven)
# docs and completion tests: man pages found by man-db and rendered by groff, completion driven in real bash
# (tmux), zsh, fish
command -v man   >/dev/null 2>&1 || need_apt+=(man-db)
command -v groff >/dev/null 2>&1 || need_apt+=(groff-base)
command -v tmux  >/dev/null 2>&1 || need_apt+=(tmux)
command -v zsh   >/dev/null 2>&1 || need_apt+=(zsh)
command -v fish  >/dev/null 2>&1 || need_apt+=(fish)
# `kquotactl top`'s tests scrape brokers with a real Prometheus server (started by the tests, never the service)
[ -x /usr/bin/prometheus ] || need_apt+=(prometheus)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: installing ${need_apt[*]} with apt-get"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
# Exactly the versions the tests passed with (requirements-dev.txt, hashes checked; `make lock` refreshes it),
# then the package itself without letting pip pick anything else. Users get pyproject's loose ranges instead.
"$VENV/bin/python" -m pip install -q --require-hashes -r requirements-dev.txt
"$VENV/bin/python" -m pip install -q --no-deps -e .
# `man kquotactl` in this venv, as after a wheel install (an editable install leaves the man pages out)
bash scripts/dev-man.sh "$VENV"

# Java artifacts: resolved once, reused by tests, the demo and benchmarks.
"$VENV/bin/python" -m kquotactl.testing.fetch
echo "bootstrap: ready ($("$VENV/bin/python" -m kquotactl --version))"
echo "bootstrap: man pages: 'man kquotactl' once $VENV/bin is on PATH ('. $VENV/bin/activate'), or 'man -M $VENV/man kquotactl'"
