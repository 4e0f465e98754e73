"""Shell completion, driven through click's own protocol (COMP_WORDS/COMP_CWORD/_KQUOTACTL_COMPLETE) for
bash, zsh and fish, the shipped scripts against the generator, real fish and bash (in tmux) sessions, and
live names from a real ZooKeeper."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kquotactl.completion import (
    key_candidates,
    manifest_names,
    merge_bash_equals,
    normalize_completion_args,
    source,
    split_key_list,
)

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# -- the protocol, as each shell's script speaks it -------------------------------------------------


def bash_env(line: str) -> dict[str, str]:
    """What click's bash script sends: COMP_WORDS as bash splits them (``=`` is a word break)."""
    words = [w for tok in line.split() for w in re.split(r"(=)", tok) if w != ""]
    cword = len(words) if line.endswith((" ", "\t")) or not line else len(words) - 1
    return {"COMP_WORDS": " ".join(words), "COMP_CWORD": str(cword), "_KQUOTACTL_COMPLETE": "bash_complete"}


def zsh_env(line: str) -> dict[str, str]:
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    return {"COMP_WORDS": line, "COMP_CWORD": str(cword), "_KQUOTACTL_COMPLETE": "zsh_complete"}


def fish_env(line: str) -> dict[str, str]:
    current = "" if line.endswith(" ") else line.split()[-1]
    return {"COMP_WORDS": line, "COMP_CWORD": current, "_KQUOTACTL_COMPLETE": "fish_complete"}


def parse(shell: str, out: str) -> list[str]:
    if shell == "zsh":
        lines = out.split("\n")
        return [lines[i + 1] for i in range(0, len(lines) - 2, 3) if lines[i] == "plain"]
    return [line.split(",", 1)[1].split("\t")[0] for line in out.splitlines() if line.startswith("plain,")]


def complete(shell: str, line: str, env: dict[str, str] | None = None, subprocess_: bool = False) -> list[str]:
    """Ask kquotactl for completions of ``line`` (cursor at its end) the way ``shell``'s script does."""
    proto = {"bash": bash_env, "zsh": zsh_env, "fish": fish_env}[shell](line)
    if subprocess_:
        full = {**os.environ, "PYTHONPATH": str(SRC), **(env or {}), **proto}
        p = subprocess.run([sys.executable, "-m", "kquotactl"], env=full, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert p.stderr == ""
        return parse(shell, p.stdout)
    from conftest import run_cli  # the same main() as the console script, in-process

    result = run_cli(env={**(env or {}), **proto})
    assert result.exit_code == 0, result.stderr
    return parse(shell, result.stdout)


SHELLS = ["bash", "zsh", "fish"]


# -- static completion ------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_commands_and_options(shell: str) -> None:
    assert {"alter", "describe", "completion", "config"} <= set(complete(shell, "kquotactl "))
    assert complete(shell, "kquotactl desc") == ["describe"]
    opts = complete(shell, "kquotactl alter --add")
    assert opts == ["--add-config", "--add-config-file"]


@pytest.mark.parametrize("shell", SHELLS)
def test_entity_type_and_output_formats(shell: str) -> None:
    assert complete(shell, "kquotactl alter --entity-type ") == ["users", "clients", "ips"]
    assert complete(shell, "kquotactl describe --entity-type u") == ["users"]
    assert complete(shell, "kquotactl -o ") == ["table", "json", "yaml", "kafka", "markdown", "junit", "sarif"]
    assert complete(shell, "kquotactl --output y") == ["yaml"]


@pytest.mark.parametrize("shell", SHELLS)
def test_add_config_offers_the_keys_of_the_entity_type_on_the_line(shell: str) -> None:
    ips = complete(shell, "kquotactl alter --entity-type ips --entity-name 192.0.2.1 --add-config ")
    assert ips == ["connection_creation_rate="]
    assert complete(shell, "kquotactl alter --ip 192.0.2.1 --add-config ") == ["connection_creation_rate="]
    users = complete(shell, "kquotactl alter --user alice --add-config ")
    assert users == [
        "producer_byte_rate=",
        "consumer_byte_rate=",
        "request_rate=",
        "request_percentage=",
        "controller_mutation_rate=",
    ]
    assert complete(shell, "kquotactl alter --client-defaults --add-config cons") == ["consumer_byte_rate="]
    # no entity yet: every key
    assert "connection_creation_rate=" in complete(shell, "kquotactl alter --add-config ")


def test_add_config_after_a_finished_pair_offers_the_remaining_keys() -> None:
    # zsh and fish see the whole word; bash sees only what follows the last '=' and gets just that part back
    line = "kquotactl alter --user alice --add-config producer_byte_rate=10MiB,c"
    want = ["consumer_byte_rate=", "controller_mutation_rate="]
    assert complete("zsh", line) == ["producer_byte_rate=10MiB," + w for w in want]
    assert complete("fish", line) == ["producer_byte_rate=10MiB," + w for w in want]
    assert complete("bash", line) == ["10MiB," + w for w in want]
    # a key already on the line is not offered again; typing a value offers nothing
    assert "producer_byte_rate=" not in complete("zsh", "kquotactl alter --user a --add-config producer_byte_rate=1,")
    assert complete("bash", "kquotactl alter --user alice --add-config producer_byte_rate=") == []


def test_option_equals_value_form() -> None:
    # zsh/fish replace the whole word, bash only what follows the '=' (its word break)
    line = "kquotactl alter --ip 192.0.2.1 --add-config=c"
    assert complete("zsh", line) == ["--add-config=connection_creation_rate="]
    assert complete("fish", line) == ["--add-config=connection_creation_rate="]
    assert complete("bash", line) == ["connection_creation_rate="]
    assert complete("bash", "kquotactl --output=") == [
        "=table",
        "=json",
        "=yaml",
        "=kafka",
        "=markdown",
        "=junit",
        "=sarif",
    ]  # bash's word is '='
    assert complete("zsh", "kquotactl --output=js") == ["--output=json"]


@pytest.mark.parametrize("shell", SHELLS)
def test_group_options_after_the_command_and_the_flat_form(shell: str) -> None:
    line = "kquotactl alter --zookeeper 127.0.0.1:9 --ip 192.0.2.1 --add-config "
    assert complete(shell, line) == ["connection_creation_rate="]
    assert complete(shell, "kquotactl --alter --entity-type ips --add-config ") == ["connection_creation_rate="]


def test_completion_through_the_real_entry_point_prints_nothing_on_stderr() -> None:
    assert complete("bash", "kquotactl alter --ip 192.0.2.1 --add-config ", subprocess_=True) == [
        "connection_creation_rate="
    ]


def test_a_dead_cluster_is_silent_and_bounded() -> None:
    t = time.perf_counter()
    out = complete("bash", "kquotactl --zookeeper 127.0.0.1:9 describe --user ", subprocess_=True)
    assert out == []
    assert time.perf_counter() - t < 30  # generous: only proves it does not hang


# -- live names and keys from a real ZooKeeper -----------------------------------------------------


@pytest.fixture
def populated(chroot, cli):
    for args in (
        ["--user", "alice", "--add-config", "producer_byte_rate=1024,request_percentage=50"],
        ["--user", "bob", "--client-id", "app1", "--add-config", "consumer_byte_rate=2048"],
        ["--user-defaults", "--add-config", "producer_byte_rate=1"],
        ["--client-id", "batch", "--add-config", "request_percentage=10"],
        ["--ip", "192.0.2.10", "--add-config", "connection_creation_rate=5"],
    ):
        assert cli("--zookeeper", chroot.connect, "alter", *args).exit_code == 0
    return chroot


@pytest.mark.zookeeper
@pytest.mark.parametrize("shell", SHELLS)
def test_names_come_from_the_live_cluster(populated, shell: str) -> None:
    z = f"kquotactl --zookeeper {populated.connect}"
    assert complete(shell, f"{z} alter --user ") == ["alice", "bob"]
    assert complete(shell, f"{z} alter --user a") == ["alice"]
    assert complete(shell, f"{z} describe --client-id ") == ["app1", "batch"]
    assert complete(shell, f"{z} describe --ip ") == ["192.0.2.10"]
    assert complete(shell, f"{z} describe --entity-type users --entity-type clients --entity-name ") == [
        "alice",
        "bob",
    ]


@pytest.mark.zookeeper
@pytest.mark.parametrize("shell", SHELLS)
def test_delete_config_offers_the_keys_set_on_that_entity(populated, shell: str) -> None:
    z = f"kquotactl --zookeeper {populated.connect}"
    assert complete(shell, f"{z} alter --user alice --delete-config ") == ["producer_byte_rate", "request_percentage"]
    assert complete(shell, f"{z} alter --user bob --client-id app1 --delete-config ") == ["consumer_byte_rate"]
    assert complete(shell, f"{z} alter --user nobody --delete-config ") == []
    assert complete(shell, f"{z} alter --delete-config ") == []  # no entity yet


@pytest.mark.zookeeper
def test_live_names_through_a_context(populated, tmp_path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"current-context: lab\ncontexts:\n  lab:\n    zookeeper: {populated.connect}\n  other:\n"
        "    zookeeper: 127.0.0.1:9\n"
    )
    assert complete("bash", f"kquotactl --config {cfg} describe --user ") == ["alice", "bob"]
    assert complete("zsh", f"kquotactl --config {cfg} --context ") == ["lab", "other"]
    env = {"KQUOTACTL_CONFIG": str(cfg)}
    assert complete("fish", "kquotactl --context lab describe --user b", env=env) == ["bob"]
    assert complete("bash", "kquotactl config use-context o", env=env) == ["other"]


@pytest.mark.kafka
def test_names_and_keys_through_the_admin_api(kraft) -> None:
    from conftest import run_cli, run_subprocess

    b = f"kquotactl --bootstrap-server {kraft.bootstrap}"
    for args in (
        ["--user", "alice", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"],
        ["--client-id", "app1", "--add-config", "request_percentage=10"],
    ):
        assert run_cli("--bootstrap-server", kraft.bootstrap, "alter", *args).exit_code == 0
    assert complete("bash", f"{b} describe --user ") == ["alice"]
    assert complete("zsh", f"{b} describe --client-id ") == ["app1"]
    assert complete("fish", f"{b} alter --user alice --delete-config ") == ["producer_byte_rate", "consumer_byte_rate"]
    # --verbose names the Kafka request that writes
    r = run_subprocess(
        "--bootstrap-server",
        kraft.bootstrap,
        "-v",
        "alter",
        "--ip",
        "192.0.2.9",
        "--add-config",
        "connection_creation_rate=3",
        "-o",
        "json",
    )
    assert r.exit_code == 0 and "kquotactl: AlterClientQuotas 1 entries" in r.stderr, r.stderr


# -- names from a manifest given with -f -----------------------------------------------------------


def test_names_come_from_the_manifest_given_with_f(tmp_path) -> None:
    from click.shell_completion import ShellComplete

    from kquotactl import completion as comp

    manifest = tmp_path / "quotas.yaml"
    manifest.write_text(
        "quotas:\n"
        "  - entity: {user: alice, client-id: app1}\n    config: {producer_byte_rate: 1MiB}\n"
        "  - entity: {user: anna}\n    config: {consumer_byte_rate: 1}\n"
        "  - entity: {ip: 192.0.2.1}\n    config: {connection_creation_rate: 3}\n"
    )

    @click.command()
    @click.option("-f", "--file", "file")
    @click.option("--user", shell_complete=comp.complete_user)
    @click.option("--client", shell_complete=comp.complete_client)
    @click.option("--ip", shell_complete=comp.complete_ip)
    def plan(**kw: object) -> None:
        pass

    def values(args: list[str], incomplete: str) -> list[str]:
        return [c.value for c in ShellComplete(plan, {}, "plan", "X").get_completions(args, incomplete)]

    assert values(["-f", str(manifest), "--user"], "") == ["alice", "anna"]
    assert values(["-f", str(manifest), "--user"], "al") == ["alice"]
    assert values(["-f", str(manifest), "--client"], "") == ["app1"]
    assert values(["-f", str(manifest), "--ip"], "") == ["192.0.2.1"]
    assert values(["-f", str(tmp_path / "missing.yaml"), "--user"], "") == []  # no file, no cluster: nothing
    # a directory of manifests, and a half-edited file that does not load yet: names still come
    more = tmp_path / "more"
    more.mkdir()
    (more / "a.yaml").write_text("quotas:\n  - entity: {user: zed}\n    config: {producer_byte_rate: 1}\n")
    (more / "b.yaml").write_text("quotas:\n  - entity: {user: yan}\n    config: {producer_byte_rate: 1}\n")
    assert values(["-f", str(more), "--user"], "") == ["yan", "zed"]
    broken = tmp_path / "broken.yaml"
    broken.write_text("quotas:\n  - entity: {user: wip}\n    config: {producer_byte_rat: 1}\n")
    assert values(["-f", str(broken), "--user"], "") == ["wip"]


def test_commands_added_later_get_name_and_key_completion(tmp_path) -> None:
    """install() attaches our callbacks to same-named options of commands that brought none."""
    from click.shell_completion import ShellComplete

    from kquotactl.completion import install

    manifest = tmp_path / "m.yaml"
    manifest.write_text("- {entity: {user: zoe, client-id: c9}}\n")

    @click.group()
    def root() -> None:
        pass

    @root.command()
    @click.option("-f", "manifest")
    @click.option("--client-id", "client_id")
    @click.option("--user")
    @click.option("--add-config")
    def explain(**kw: object) -> None:
        pass

    install(root)

    def values(args: list[str], incomplete: str) -> list[str]:
        return [c.value for c in ShellComplete(root, {}, "k", "X").get_completions(args, incomplete)]

    assert values(["explain", "-f", str(manifest), "--user"], "") == ["zoe"]
    assert values(["explain", "-f", str(manifest), "--client-id"], "") == ["c9"]
    assert values(["explain", "--client-id", "c9", "--add-config"], "con") == [
        "consumer_byte_rate=",
        "controller_mutation_rate=",
    ]


def test_manifest_names_whatever_the_layout() -> None:
    doc = {
        "users": {"alice": {"clients": {"app1": {}}}, "<default>": {}},
        "entities": [{"entity": {"client_id": "c2", "ip": "::1"}}],
    }
    names = manifest_names(doc)
    assert names["user"] == {"alice"}
    assert names["client"] == {"c2"}
    assert names["ip"] == {"::1"}


# -- pure helpers ----------------------------------------------------------------------------------


@given(st.text(alphabet="abcdeprot_=,[]01", max_size=40))
def test_key_candidates_extend_what_was_typed(typed: str) -> None:
    from kquotactl.keys import KEYS

    for candidate in key_candidates(typed, list(KEYS)):
        assert candidate.startswith(split_key_list(typed)[0])
        assert candidate.endswith("=") and candidate.startswith(typed)


def test_split_key_list_respects_brackets() -> None:
    assert split_key_list("a=1,b=[x,y],con") == ("a=1,b=[x,y],", "con")
    assert split_key_list("a=[x,y") == ("", "a=[x,y")
    assert key_candidates("a=[x,", ["abc"]) == []


def test_merge_bash_equals() -> None:
    assert merge_bash_equals(["k", "--add-config", "a", "=", "1,b"], 4) == (["k", "--add-config", "a=1,b"], 2)
    assert merge_bash_equals(["k", "--add-config", "a", "="], 3) == (["k", "--add-config", "a="], 2)
    assert merge_bash_equals(["k", "--output", "=", "js"], 3) == (["k", "--output=js"], 1)
    assert merge_bash_equals(["k", "x", ""], 2) == (["k", "x", ""], 2)


def test_normalize_moves_group_options_and_keeps_a_pending_one() -> None:
    from kquotactl.cli import cli

    assert normalize_completion_args(cli, ["alter", "--zookeeper", "z:1", "--user", "a"]) == [
        "--zookeeper",
        "z:1",
        "alter",
        "--user",
        "a",
    ]
    assert normalize_completion_args(cli, ["--zookeeper", "z:1", "alter", "-o"]) == ["--zookeeper", "z:1", "-o"]


# -- the scripts: generated, shipped, valid, and working in real shells ----------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_shipped_scripts_are_what_the_command_prints(shell: str) -> None:
    shipped = (ROOT / "completions" / f"kquotactl.{shell}").read_text()
    assert _run_completion_command(shell) == shipped, "completions/ drifted: run `make docs`"


def _run_completion_command(shell: str) -> str:
    p = subprocess.run(
        [sys.executable, "-m", "kquotactl", "completion", shell],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return p.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_command_prints_what_clicks_own_source_instruction_prints(shell: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "kquotactl"],
        env={**os.environ, "PYTHONPATH": str(SRC), "_KQUOTACTL_COMPLETE": f"{shell}_source"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0 and p.stdout == _run_completion_command(shell)


@pytest.mark.parametrize("shell", SHELLS)
def test_scripts_are_valid_shell(shell: str) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.fail(f"{shell} not installed: run scripts/bootstrap.sh (make setup)")
    script = source(shell)
    p = subprocess.run([exe, "-n"], input=script, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr


def test_real_fish_session_completes_keys_and_types(tmp_path) -> None:
    fish = shutil.which("fish")
    if fish is None:
        pytest.fail("fish not installed: run scripts/bootstrap.sh (make setup)")
    script = tmp_path / "kquotactl.fish"
    script.write_text(source("fish"))
    bindir = _shim_dir(tmp_path)

    def fish_complete(line: str) -> list[str]:
        p = subprocess.run(
            [fish, "--no-config", "-c", f"source {script}; complete -C '{line}'"],
            env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert p.returncode == 0, p.stderr
        return [x.split("\t")[0] for x in p.stdout.splitlines()]

    assert fish_complete("kquotactl alter --entity-type ips --entity-name 192.0.2.1 --add-config ") == [
        "connection_creation_rate="
    ]
    assert fish_complete("kquotactl describe --entity-type ") == ["clients", "ips", "users"] or fish_complete(
        "kquotactl describe --entity-type "
    ) == ["users", "clients", "ips"]


def _shim_dir(tmp_path: Path) -> Path:
    """A ``kquotactl`` on PATH that runs this checkout's sources with this interpreter."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "kquotactl"
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{SRC}" exec "{sys.executable}" -m kquotactl "$@"\n')
    shim.chmod(0o755)
    return bindir


def _tmux(*args: str, sock: str) -> str:
    return subprocess.run(["tmux", "-S", sock, *args], capture_output=True, text=True, timeout=30, check=True).stdout


class TmuxShell:
    """An interactive shell in a detached tmux session: type, press Tab, read the screen."""

    def __init__(self, command: str) -> None:
        # a private socket file (removed on close), so no server or socket outlives the test
        self.sock = f"/tmp/kq-tmux-{uuid.uuid4().hex[:12]}"
        _tmux("new-session", "-d", "-s", "t", "-x", "200", "-y", "20", command, sock=self.sock)

    def type(self, *keys: str, literal: bool = False) -> None:
        _tmux("send-keys", "-t", "t", *(("-l", "--") if literal else ()), *keys, sock=self.sock)

    def wait_for(self, pattern: str) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = _tmux("capture-pane", "-p", "-t", "t", sock=self.sock)
            if re.search(pattern, text, re.M):
                return text
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} never appeared:\n{text}")

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True, timeout=30)
        Path(self.sock).unlink(missing_ok=True)


def _need(*programs: str) -> None:
    for prog in programs:
        if shutil.which(prog) is None:
            pytest.fail(f"{prog} not installed: run scripts/bootstrap.sh (make setup)")


def test_real_bash_session_in_tmux_completes_add_config_for_ips(tmp_path) -> None:
    _need("tmux", "bash")
    script = tmp_path / "kquotactl.bash"
    script.write_text(source("bash"))
    rc = tmp_path / "bashrc"
    rc.write_text(f"PS1='$ '\nexport PATH={_shim_dir(tmp_path)}:$PATH\nsource {script}\n")
    sh = TmuxShell(f"bash --noprofile --rcfile {rc} -i")
    try:
        sh.wait_for(r"^\$ ?$")
        sh.type("kquotactl alter --entity-type ips --entity-name 192.0.2.1 --add-config ", "Tab")
        # the only candidate is inserted with its '=' and no space, so the value goes straight after it
        sh.wait_for(r"--add-config connection_creation_rate=")
        sh.type("20")
        sh.wait_for(r"--add-config connection_creation_rate=20$")
        sh.type("C-u")
        sh.type("kquotactl alter --entity-type u", "Tab")
        sh.wait_for(r"--entity-type users")
        sh.type("--user-defaults", literal=True)
        sh.wait_for(r"--entity-type users --user-defaults$")  # a plain word: followed by a space
        sh.type("C-u")
        sh.type("kquotactl alter --user alice --add-config producer_byte_rate=1,cons", "Tab")
        sh.wait_for(r"--add-config producer_byte_rate=1,consumer_byte_rate=")  # bash's '=' word break undone
        sh.type("C-u")
        sh.type("kquotactl alter --ip 192.0.2.1 --add-config=c", "Tab")
        sh.wait_for(r"--add-config=connection_creation_rate=")
    finally:
        sh.close()


def test_real_zsh_session_in_tmux(tmp_path) -> None:
    _need("tmux", "zsh")
    script = tmp_path / "kquotactl.zsh"
    script.write_text(source("zsh"))
    (tmp_path / ".zshrc").write_text(
        f"PS1='%% '\nexport PATH={_shim_dir(tmp_path)}:$PATH\nautoload -U compinit && compinit -u\nsource {script}\n"
    )
    sh = TmuxShell(f"env ZDOTDIR={tmp_path} zsh -i")
    try:
        sh.wait_for(r"^% ?$")
        sh.type("kquotactl alter --ip 192.0.2.1 --add-config ", "Tab")
        sh.wait_for(r"--add-config connection_creation_rate=")
        sh.type("7")
        sh.wait_for(r"--add-config connection_creation_rate=7$")
        sh.type("C-u")
        sh.type("kquotactl describe -o y", "Tab")
        sh.wait_for(r"-o yaml")
        sh.type("X")
        sh.wait_for(r"-o yaml X$")
    finally:
        sh.close()


def test_real_fish_session_in_tmux(tmp_path) -> None:
    _need("tmux", "fish")
    script = tmp_path / "kquotactl.fish"
    script.write_text(source("fish"))
    conf = tmp_path / "fish"
    conf.mkdir()
    (conf / "config.fish").write_text(
        f"set -gx PATH {_shim_dir(tmp_path)} $PATH\nsource {script}\nfunction fish_prompt; echo '> '; end\n"
    )
    sh = TmuxShell(f"env XDG_CONFIG_HOME={tmp_path} fish -i")
    try:
        sh.wait_for(r"^> ?$")
        sh.type("kquotactl alter --ip 192.0.2.1 --add-config ", "Tab")
        sh.wait_for(r"--add-config connection_creation_rate=")
        sh.type("20")
        sh.wait_for(r"--add-config connection_creation_rate=20$")  # fish adds no space after '='
    finally:
        sh.close()


def test_our_additions_to_clicks_scripts_are_in_place() -> None:
    """The scripts are click's templates plus two small edits; fail loudly if a click upgrade moved the lines."""
    assert "[[ $value == *= ]] && compopt -o nospace" in source("bash")
    assert "compadd -U -S '' -V unsorted -a completions_nospace" in source("zsh")
    assert 'completions_nospace+=("$key")' in source("zsh")
    assert "_KQUOTACTL_COMPLETE=fish_complete" in source("fish")


@pytest.mark.parametrize("shell", SHELLS)
def test_explain_completes_names_from_its_manifest(shell: str, tmp_path) -> None:
    """explain defines its own --user/--client-id options; install() gives them our completion."""
    manifest = tmp_path / "quotas.yaml"
    manifest.write_text(
        "quotas:\n  - entity: {user: alice, client-id: ingest}\n    config: {producer_byte_rate: 2MiB}\n"
        "  - entity: {user: bob}\n    config: {consumer_byte_rate: 1MiB}\n"
    )
    assert complete(shell, f"kquotactl explain -f {manifest} --user ") == ["alice", "bob"]
    assert complete(shell, f"kquotactl explain -f {manifest} --user alice --client-id ") == ["ingest"]
