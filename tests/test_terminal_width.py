"""What a person reads fits the terminal and speaks in units: the real CLI in real terminals (tmux at 80 and 100
columns, bash) against a real ZooKeeper chroot, plus CliRunner checks of the wording (units beside raw numbers,
plurals, one documented JSON shape, export --units that applies as a no-op)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from kquotactl.cli.app import cli
from kquotactl.cli.helpwrap import fold_command_line
from kquotactl.core.keys import KEYS, exact_unit_text, human_and_raw, parse_value
from kquotactl.render.records import counted

SRC = Path(__file__).resolve().parent.parent / "src"
LONG_CLIENT = "ingest-pipeline-eu-west-1-orders-v2"

MANIFEST = f"""\
quotas:
  - entity: {{user: alice}}
    config: {{producer_byte_rate: 10MiB}}
  - entity: {{user: alice, client-id: "<default>"}}
    config: {{producer_byte_rate: 2MiB}}
  - entity: {{client-id: {LONG_CLIENT}}}
    config: {{producer_byte_rate: 50MiB, consumer_byte_rate: 20MiB}}
  - entity: {{user: "<default>"}}
    config: {{consumer_byte_rate: 5MiB, request_percentage: 50}}
"""


def _many(n: int, rate: str) -> str:
    return "".join(
        f"  - entity: {{user: service-account-{i:03d}, client-id: {LONG_CLIENT}}}\n"
        f"    config: {{producer_byte_rate: {rate}, consumer_byte_rate: 6MiB}}\n"
        for i in range(n)
    )


class Terminal:
    """A bash in a detached tmux session of a given width, on a private socket (removed on close)."""

    def __init__(self, width: int, tmp_path: Path) -> None:
        self.width = width
        self.sock = f"/tmp/kq-width-{uuid.uuid4().hex[:12]}"
        rc = tmp_path / "bashrc"
        shim = tmp_path / "bin" / "kquotactl"
        shim.parent.mkdir(exist_ok=True)
        shim.write_text(f'#!/bin/sh\nPYTHONPATH="{SRC}" exec "{sys.executable}" -m kquotactl "$@"\n')
        shim.chmod(0o755)
        rc.write_text(f"PS1='$ '\nexport PATH={shim.parent}:$PATH\ncd {tmp_path}\nunset COLUMNS LINES\n")
        self._tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", "50", f"bash --noprofile --rcfile {rc} -i")
        self._tmux("set-option", "-t", "t", "history-limit", "20000")

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-S", self.sock, *args], capture_output=True, text=True, timeout=30, check=True
        ).stdout

    def run(self, command: str) -> tuple[str, str]:
        """Type ``command``, wait for it to end; return its output as screen rows and as logical lines (wraps
        joined: a line wider than the terminal shows up as one long line)."""
        tag = uuid.uuid4().hex[:8]
        start, done = f"__start_{tag}", f"__done_{tag}"
        line = f"clear; tmux clear-history; echo {start}; {command}; echo {done}"
        self._tmux("send-keys", "-t", "t", line, "Enter")
        deadline = time.monotonic() + 60
        joined = ""
        while time.monotonic() < deadline:
            joined = self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t")
            if re.search(rf"^{done}$", joined, re.M):
                rows = self._tmux("capture-pane", "-p", "-S", "-", "-t", "t")
                return _between(rows, start, done), _between(joined, start, done)
            time.sleep(0.2)
        raise AssertionError(f"{command!r} did not finish:\n{joined}")

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True, timeout=30)
        Path(self.sock).unlink(missing_ok=True)


def _between(screen: str, start: str, done: str) -> str:
    lines = screen.splitlines()
    return "\n".join(lines[lines.index(start) + 1 : lines.index(done)])


@pytest.fixture(params=[80, 100], ids=lambda w: f"{w}cols")
def terminal(request, tmp_path):
    if shutil.which("tmux") is None or shutil.which("bash") is None:
        pytest.fail("tmux and bash are needed: run scripts/bootstrap.sh (make setup)")
    term = Terminal(request.param, tmp_path)
    yield term
    term.close()


def _fits(term: Terminal, joined: str) -> None:
    too_long = [line for line in joined.splitlines() if len(line) > term.width]
    assert not too_long, f"lines wider than {term.width} columns:\n" + "\n".join(too_long)


@pytest.mark.zookeeper
def test_explain_plan_apply_and_help_fit_real_terminals_with_whole_paths(terminal, chroot, tmp_path) -> None:
    m = tmp_path / "quotas.yaml"
    m.write_text(MANIFEST)
    assert run_cli("--zookeeper", chroot.connect, "apply", "-f", str(m), "--yes").exit_code == 0
    zk = f"kquotactl --zookeeper {chroot.connect}"

    rows, joined = terminal.run(
        f"{zk} explain --user alice --client-id {LONG_CLIENT} --observed producer_byte_rate=4MiB"
    )
    _fits(terminal, joined)
    screen_rows = rows.splitlines()
    for path in ("users/alice/clients/<default>", f"users/alice/clients/{LONG_CLIENT}", f"clients/{LONG_CLIENT}"):
        assert any(path in row for row in screen_rows), f"{path} is not whole on any row:\n{rows}"
    assert "11 s delay per 11 s window" in joined  # (4 MiB/s - 2 MiB/s) / 2 MiB/s x an 11 s window
    assert (
        "users/alice's producer_byte_rate 10 MiB/s is shadowed by users/alice/clients/<default> (2 MiB/s); "
        "raise or remove it"
    ) in " ".join(joined.split())

    bigger = tmp_path / "bigger.yaml"
    bigger.write_text(MANIFEST.replace("10MiB", "12MiB") + _many(40, "3MiB"))
    rows, joined = terminal.run(f"{zk} plan -f bigger.yaml")
    _fits(terminal, joined)
    assert "10 MiB/s (10485760) -> 12 MiB/s (12582912)" in joined
    assert f"users/service-account-039/clients/{LONG_CLIENT}" in rows

    rows, joined = terminal.run(f"{zk} apply -f bigger.yaml --yes")
    _fits(terminal, joined)
    assert "... and 21 more entities (--verbose lists them all)\nin all: 40 to create, 1 to update\n" in joined
    assert "service-account-039" not in joined
    assert "applied 41 entities, 0 already as desired, 0 failed" in joined

    rows, joined = terminal.run(f"{zk} describe")
    _fits(terminal, joined)
    assert LONG_CLIENT in rows and "service-account-039" in rows
    assert "12 MiB/s (12582912)" in " ".join(joined.split())

    conns = tmp_path / "conns.csv"
    conns.write_text(f"user,client-id,ip\nalice,{LONG_CLIENT},\nservice-account-007,{LONG_CLIENT},\n")
    rows, joined = terminal.run(f"{zk} explain --connections conns.csv -o table --observed producer_byte_rate=4MiB")
    _fits(terminal, joined)
    assert f"user service-account-007, client-id {LONG_CLIENT}" in rows
    assert f"from users/service-account-007/clients/{LONG_CLIENT}" in " ".join(joined.split())

    rows, joined = terminal.run("kquotactl --help")
    _fits(terminal, joined)
    assert "--bootstrap-server HOST:PORT[,...]" in rows


@pytest.mark.zookeeper
def test_apply_verbose_lists_every_entity(chroot, tmp_path) -> None:
    m = tmp_path / "q.yaml"
    m.write_text("quotas:\n" + _many(25, "1MiB"))
    r = run_cli("--zookeeper", chroot.connect, "apply", "-f", str(m), "--yes", "--dry-run")
    assert "... and 5 more entities (--verbose lists them all)\nin all: 25 to create\n" in r.stdout
    r = run_cli("--zookeeper", chroot.connect, "apply", "-f", str(m), "--yes", "--verbose")
    assert r.exit_code == 0
    assert "service-account-024" in r.stdout and "more entities" not in r.stdout
    assert "applied 25 entities" in r.stdout


@pytest.mark.zookeeper
def test_export_units_is_lossless_and_applies_as_a_no_op_on_zookeeper(chroot, tmp_path) -> None:
    m = tmp_path / "q.yaml"
    m.write_text(
        "quotas:\n"
        "  - entity: {user: alice}\n    config: {producer_byte_rate: 5242880, consumer_byte_rate: 7001}\n"
        "  - entity: {client-id: app}\n    config: {producer_byte_rate: 3000000000000, request_percentage: 12.5}\n"
        "  - entity: {ip: 192.0.2.1}\n    config: {connection_creation_rate: 1024}\n"
    )
    assert run_cli("--zookeeper", chroot.connect, "apply", "-f", str(m), "--yes").exit_code == 0
    r = run_cli("--zookeeper", chroot.connect, "export", "--units")
    assert r.exit_code == 0 and "exported 3 entities" in r.stderr
    assert "producer_byte_rate: 5MiB" in r.stdout and "consumer_byte_rate: 7001" in r.stdout
    assert "producer_byte_rate: 3TB" in r.stdout and "connection_creation_rate: 1024" in r.stdout
    before = chroot.snapshot()
    again = run_cli("--zookeeper", chroot.connect, "apply", "-f", "-", "--yes", input=r.stdout)
    assert again.exit_code == 0, again.stderr
    assert "in sync: 3 entities as declared" in again.stdout
    assert chroot.snapshot() == before


@pytest.mark.parametrize("value", [1, 999, 1000, 1023, 1024, 7001, 10**6, 5 * 2**20, 3 * 10**12, 2**63 - 1])
def test_exact_units_read_back_the_same_number(value: int) -> None:
    key = KEYS["producer_byte_rate"]
    text = exact_unit_text(key, value)
    assert parse_value(key, text or str(value)) == value
    shown = human_and_raw(key, value)
    assert shown.endswith(f"({value})") if value >= 1024 else shown == f"{value} B/s"


def test_counted_plurals() -> None:
    assert human_and_raw(KEYS["connection_creation_rate"], 1) == "1 connection/s"
    from kquotactl.core.keys import human

    assert [human(KEYS["connection_creation_rate"], n) for n in (1, 2)] == ["1 connection/s", "2 connections/s"]
    assert [counted(n, "entity") for n in (0, 1, 2)] == ["0 entities", "1 entity", "2 entities"]
    assert counted(1, "warning") == "1 warning" and counted(3, "file") == "3 files"


def test_validate_json_is_one_shape_valid_or_not(tmp_path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("quotas:\n  - entity: {user: a}\n    config: {producer_byte_rate: 1MiB}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("quotas:\n  - entity: {user: a}\n    config: {producer_byte_rat: 5}\n")
    ok, err = (json.loads(run_cli("validate", "-f", str(p), "-o", "json").stdout) for p in (good, bad))
    assert set(ok) == set(err) == {"valid", "entities", "kinds", "prune", "errors", "warnings"}
    assert set(ok["kinds"]) == set(err["kinds"])
    assert err["errors"] == [
        {"source": f"{bad}:3", "message": "users/a: unknown key 'producer_byte_rat' — did you mean producer_byte_rate?"}
    ]
    r = run_cli("validate", "-f", str(good))
    assert "valid: 1 entity (1 user) in 1 file, 0 warnings" in r.stdout


def test_choice_errors_are_one_line_without_escapes() -> None:
    r = run_cli("completion")
    assert "Choose from: bash, zsh, fish" in r.stderr and "\\n" not in r.stderr


def test_explain_example_says_it_uses_example_quotas() -> None:
    r = run_cli("explain", "--example", "--user", "alice", "--client-id", "ingest", "-o", "table")
    assert "built-in example quotas" in r.stderr


def _commands(cmd: click.Command, path: list[str]):
    yield path
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):  # loads each lazily attached command
            sub = cmd.get_command(ctx, name)
            assert sub is not None, name
            yield from _commands(sub, [*path, name])


@pytest.mark.parametrize("width", [80, 100])
def test_every_help_fits_and_never_breaks_an_option_name(width: int) -> None:
    runner = CliRunner()
    for path in _commands(cli, []):
        out = runner.invoke(cli, [*path, "--help"], terminal_width=width).output
        for line in out.splitlines():
            assert len(line) <= width, f"kquotactl {' '.join(path)} --help: {line!r}"
            assert not re.search(r"[A-Za-z]-$", line), f"kquotactl {' '.join(path)} --help breaks a word: {line!r}"


def test_long_example_lines_fold_as_the_shell_reads_them() -> None:
    line = "  kquotactl completion zsh > ~/.zfunc/_kquotactl      # then: autoload -U compinit && compinit"
    assert fold_command_line(line, 60) == [
        "  # then: autoload -U compinit && compinit",
        "  kquotactl completion zsh > ~/.zfunc/_kquotactl",
    ]
    folded = fold_command_line('  a "b c" ' + "x" * 50 + " y", 30)
    assert folded == ['  a "b c" \\', "      " + "x" * 50 + " \\", "      y"]  # quotes kept whole; a long word alone


def test_a_bad_ts_names_its_row() -> None:
    import pyarrow as pa

    from kquotactl.core.errors import UsageError
    from kquotactl.impact.readers import ms_column

    column = pa.chunked_array([["2024-01-01T00:00:00Z"] * 5, ["2024-01-01T00:00:01Z", "yesterday", "x"]])
    with pytest.raises(UsageError, match=r"row 7 \('yesterday'\)"):
        ms_column(column)


@settings(max_examples=2000)
@given(
    st.integers(min_value=1, max_value=2**63 - 1)
    | st.builds(
        lambda a, b: a * b,
        st.integers(1, 10**6),
        st.sampled_from([1000, 1024, 10**6, 2**20, 10**9, 2**30, 10**12, 2**40]),
    )
)
def test_every_byte_rate_reads_back_exactly_from_its_unit_text(value: int) -> None:
    key = KEYS["consumer_byte_rate"]
    text = exact_unit_text(key, value)
    assert parse_value(key, text if text is not None else str(value)) == value
    assert human_and_raw(key, value).endswith(f"({value})") or value < 1024


def test_importing_and_running_kquotactl_leaves_clicks_own_wrapping_alone() -> None:
    """kquotactl's wrapping is its commands' formatter's, never a patch of click for every program in the process."""
    import click.formatting

    from kquotactl.cli import app
    from kquotactl.cli.helpwrap import wrap_text

    original = click.formatting.wrap_text
    assert original is not wrap_text
    CliRunner().invoke(app.cli, ["alter", "--help"])
    assert click.formatting.wrap_text is original
