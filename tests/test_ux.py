"""Operator experience: --version, --verbose/--debug traces (never a password), colour only on a terminal and
never with NO_COLOR, and errors that name the bad part and the fix."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli, run_subprocess
from kquotactl import __version__

SRC = str(Path(__file__).resolve().parent.parent / "src")


def run_in_terminal(*args: str, env: dict[str, str] | None = None) -> bytes:
    """Run the CLI with stdout/stderr on a pseudo-terminal (what a person sees)."""
    master, slave = pty.openpty()
    full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full.update({"PYTHONPATH": SRC, "TERM": "xterm-256color", "COLUMNS": "120", **(env or {})})
    p = subprocess.Popen([sys.executable, "-m", "kquotactl", *args], stdout=slave, stderr=slave, env=full)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=60)
    os.close(master)
    return out


def test_version() -> None:
    r = run_cli("--version")
    assert r.exit_code == 0 and r.stdout == f"kquotactl, version {__version__}\n"


def test_version_is_the_newest_release_in_the_changelog() -> None:
    """Keep a Changelog: the first ``## [X.Y.Z] - YYYY-MM-DD`` heading is the version the package reports."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, re.MULTILINE)
    assert released, "CHANGELOG.md has no released version heading"
    assert released[0][0] == __version__, (released[0], __version__)
    assert text.index("## [Unreleased]") < text.index(f"## [{__version__}]")


@pytest.mark.zookeeper
def test_verbose_names_the_znodes_written_and_debug_traces_reads_without_secrets(chroot) -> None:
    auth = ("--zk-auth", "digest:admin:TOPSECRET-pw")
    r = run_subprocess(
        "--zookeeper",
        chroot.connect,
        *auth,
        "-v",
        "alter",
        "--user",
        "alice",
        "--add-config",
        "producer_byte_rate=1024",
        "-o",
        "json",
    )
    assert r.exit_code == 0, r.stderr
    assert "kquotactl: wrote /config/users/alice + /config/changes notification" in r.stderr
    r = run_subprocess("--zookeeper", chroot.connect, *auth, "--debug", "describe", "--user", "alice", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert "get /config/users/alice" in r.stderr
    assert "Auth(" in r.stderr  # kazoo's request trace is there...
    assert "TOPSECRET" not in r.stderr + r.stdout  # ...with the credentials blanked
    r = run_subprocess("--zookeeper", chroot.connect, *auth, "describe", "-o", "json")
    assert r.stderr == ""  # quiet by default


@pytest.mark.zookeeper
def test_colour_only_on_a_terminal_and_never_with_no_color(chroot, cli) -> None:
    assert (
        cli("--zookeeper", chroot.connect, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1").exit_code
        == 0
    )
    tty = run_in_terminal("--zookeeper", chroot.connect, "describe")
    assert b"\x1b[" in tty and b"alice" in tty
    # no-color.org: an empty NO_COLOR is as good as unset
    assert b"\x1b[" in run_in_terminal("--zookeeper", chroot.connect, "describe", env={"NO_COLOR": ""})
    for extra_env, extra_args in (({"NO_COLOR": "1"}, ()), ({}, ("--no-color",))):
        plain = run_in_terminal(*extra_args, "--zookeeper", chroot.connect, "describe", env=extra_env)
        assert b"\x1b" not in plain and b"alice" in plain
    piped = run_subprocess("--zookeeper", chroot.connect, "describe", "-o", "table")
    assert "\x1b" not in piped.stdout and "alice" in piped.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (
            ["alter", "--user", "a", "--add-config", "producer_byte_rat=5"],
            ["'producer_byte_rat'", "did you mean producer_byte_rate?"],
        ),
        (["alter", "--ip", "192.0.2.1", "--add-config", "producer_byte_rate=5"], ["producer_byte_rate", "ips"]),
        (["describe"], ["no cluster given", "--zookeeper", "--bootstrap-server", "--context"]),
        (["--context", "nope", "describe"], ["context 'nope' not found", "does not exist", "config set-context nope"]),
        (["alter", "--user", "a", "--add-config", "producer_byte_rate=-1"], ["producer_byte_rate", "-1"]),
        (["alter", "--entity-type", "userz"], ["userz", "users"]),
        (["completion", "tcsh"], ["'SHELL'", "tcsh", "bash"]),
        (["describe", "--usr", "a"], ["'--usr'", "Did you mean '--user'?", "kquotactl describe --help"]),
        (["descibe"], ["'descibe'", "Did you mean 'describe'?"]),
        (["plna"], ["'plna'", "Did you mean 'plan'?"]),  # a command loaded only when named: hinted all the same
        (
            ["alter", "--user", "a", "--add-config-file", "/nonexistent.properties"],
            ["--add-config-file", "no such file"],
        ),
        (
            ["--zookeeper", "z:1", "--zk-tls-config-file", "/nonexistent", "describe"],
            ["--zk-tls-config-file", "no such"],
        ),
    ],
)
def test_errors_name_the_bad_part_and_the_fix(args: list[str], needles: list[str], tmp_path) -> None:
    env = {
        "KQUOTACTL_ZOOKEEPER": "",
        "KQUOTACTL_BOOTSTRAP_SERVER": "",
        "KQUOTACTL_CONTEXT": "",
        "XDG_CONFIG_HOME": str(tmp_path),
        "KQUOTACTL_CONFIG": "",
    }
    if args[0] == "alter" and "--entity-type" not in args:
        args = ["--zookeeper", "127.0.0.1:9", *args]
    r = run_cli(*args, env=env)
    assert r.exit_code == 1
    assert r.stderr.startswith("kquotactl: error: ") and r.stderr.count("\n") == 1, r.stderr  # one line
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)
