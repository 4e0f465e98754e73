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
from hypothesis import given, settings
from hypothesis import strategies as st

from kquotactl.cli.completion import (
    key_candidates,
    manifest_names,
    normalize_completion_args,
    source,
    split_key_list,
)

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# -- the protocol, as each shell's script speaks it -------------------------------------------------


_BREAKS = " \t\n\"'><=;|&(:"


def readline_word(line: str) -> str:
    """bash's ``$2``: the text after the last unquoted COMP_WORDBREAKS character, or after an open quote."""
    quote, start, i = None, 0, 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote, start = None, i + 1
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote, start = ch, i + 1
        elif ch in _BREAKS:
            start = i + 1
        i += 1
    return line[start:]


def bash_env(line: str) -> dict[str, str]:
    """What our bash script sends: the raw line up to the cursor and readline's word."""
    return {
        "KQUOTACTL_COMP_LINE": line,
        "KQUOTACTL_COMP_WORD": readline_word(line),
        "_KQUOTACTL_COMPLETE": "bash_complete",
    }


def zsh_env(line: str) -> dict[str, str]:
    """zsh's ``words[1,CURRENT]`` as typed, one a line (the tests' lines quote no blanks)."""
    words = line.split(" ")
    return {"KQUOTACTL_COMP_WORDS": "\n".join(words), "_KQUOTACTL_COMPLETE": "zsh_complete"}


def fish_env(line: str) -> dict[str, str]:
    """fish's ``commandline -opc`` (tokens before the cursor's, unescaped) and ``commandline -ct`` (raw)."""
    words = line.split(" ")
    return {
        "KQUOTACTL_COMP_WORDS": "\n".join(words[:-1]),
        "KQUOTACTL_COMP_CUR": words[-1],
        "_KQUOTACTL_COMPLETE": "fish_complete",
    }


def parse(shell: str, out: str) -> list[str]:
    if shell == "zsh":
        lines = out.split("\n")
        return [lines[i + 1] for i in range(0, len(lines) - 2, 3) if lines[i] in ("plain", "nospace")]
    return [
        line.split(",", 1)[1].split("\t")[0] for line in out.splitlines() if line.startswith(("plain,", "nospace,"))
    ]


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
        "table",
        "json",
        "yaml",
        "kafka",
        "markdown",
        "junit",
        "sarif",
    ]  # bash's word is ''
    assert complete("zsh", "kquotactl --output=js") == ["--output=json"]


@pytest.mark.parametrize("shell", SHELLS)
def test_group_options_after_the_command_and_the_flat_form(shell: str) -> None:
    line = "kquotactl alter --zookeeper 127.0.0.1:9 --ip 192.0.2.1 --add-config "
    assert complete(shell, line) == ["connection_creation_rate="]
    assert complete(shell, "kquotactl --alter --entity-type ips --add-config ") == ["connection_creation_rate="]


@pytest.mark.parametrize("shell", SHELLS)
def test_group_options_are_offered_after_the_command_name(shell: str, tmp_path) -> None:
    """The parser takes the group's options after the command (kafka-configs' habit), so Tab offers them there:
    after the command's own, before ``--help``; not the eager ``--version``, not one already on the line."""
    from kquotactl.cli.app import cli

    group = [o for p in cli.params if isinstance(p, click.Option) and not p.is_eager for o in p.opts if o[:2] == "--"]
    assert {"--zookeeper", "--bootstrap-server", "--context", "--config", "--output"} <= set(group)
    offered = complete(shell, "kquotactl describe --")
    own = offered[: offered.index("--zookeeper")]
    assert "--user" in own and "--entity-type" in own and "--help" not in own
    assert offered[len(own) :] == [*group, "--help"]
    assert "--version" not in offered
    assert complete(shell, "kquotactl describe --zoo") == ["--zookeeper"]
    assert complete(shell, "kquotactl plan -f q.yaml --cont") == ["--context"]
    assert complete(shell, "kquotactl config set-context lab --bootstrap-s") == ["--bootstrap-server"]
    assert complete(shell, "kquotactl --alter --entity-type users --zo") == ["--zookeeper"]  # the flat form
    # given once, before or after the command: not offered again (the parser refuses it twice)
    assert complete(shell, "kquotactl describe --zookeeper z:1 --zoo") == []
    assert complete(shell, "kquotactl --zookeeper z:1 describe --zoo") == []
    # a command's own option of the same name is offered once, with the command's own values
    assert complete(shell, "kquotactl config get-contexts --out") == ["--output"]
    assert complete(shell, "kquotactl config get-contexts -o ") == ["table", "json", "yaml"]
    assert complete(shell, "kquotactl top -o ") == ["table", "json"]
    assert complete(shell, "kquotactl top --output=j") == (["json"] if shell == "bash" else ["--output=json"])
    # and their values, in both spellings
    config = tmp_path / "config.yaml"
    config.write_text("contexts:\n  lab-east: {zookeeper: 'z:1'}\n  lab-west: {zookeeper: 'z:2'}\n")
    env = {"KQUOTACTL_CONFIG": str(config)}
    assert complete(shell, "kquotactl describe --context lab-e", env=env) == ["lab-east"]
    eq = complete(shell, "kquotactl describe --context=lab-w", env=env)
    assert eq == (["lab-west"] if shell == "bash" else ["--context=lab-west"])  # bash's word starts after '='
    assert complete(shell, "kquotactl describe --output=ya") == (["yaml"] if shell == "bash" else ["--output=yaml"])


def test_the_parser_takes_group_options_after_the_command_name() -> None:
    """What completion offers after the command is what a run accepts there."""
    from conftest import run_cli

    r = run_cli("describe", "--user", "a", "--zookeeper", "127.0.0.1:9", "--connect-timeout", "1", "-o", "json")
    assert r.exit_code == 1 and r.stderr.startswith("kquotactl: error: cannot connect to ZooKeeper at 127.0.0.1:9")


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

    from kquotactl.cli import completion as comp

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

    from kquotactl.cli.completion import install

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
    from kquotactl.core.keys import KEYS

    for candidate in key_candidates(typed, list(KEYS)):
        assert candidate.startswith(split_key_list(typed)[0])
        assert candidate.endswith("=") and candidate.startswith(typed)


_NAME = st.text(st.sampled_from(list("aZ9 ,=:'\"\\$*!<>~#{}()[];&|`?\tüé名-_.@%+")), min_size=1, max_size=12)


def _typed(name: str, k: int, style: str) -> str:
    """The first ``k`` characters of ``name`` as a user would type them: escaped, or after an opening quote."""
    from kquotactl.cli.completion import bash_quote_rest

    head = name[:k]
    if style == "'":
        return "'" + head.replace("'", "'\\''")
    if style == '"':
        return '"' + "".join("\\" + c if c in '"$`\\' else c for c in head if c != "!")
    return bash_quote_rest(head, None)


_BASH_CASES = st.lists(st.tuples(_NAME, st.integers(0, 12), st.sampled_from(["", "'", '"'])), min_size=50, max_size=50)


@given(_BASH_CASES)
def test_bash_reply_makes_the_word_the_name_as_bash_itself_reads_it(cases: list[tuple[str, int, str]]) -> None:
    """Differential against bash: the typed prefix, minus readline's word, plus our reply is one word that bash
    reads back as exactly the name (50 random names, prefixes and opening quotes per example)."""
    from kquotactl.cli.completion import bash_reply, lex

    lines, names = [], []
    for name, k, style in cases:
        if style == '"' and "!" in name[:k]:
            k = name.index("!")
        line = "kquotactl --user " + _typed(name, k, style)
        word = readline_word(line)
        reply = bash_reply(name, line, word)
        assert reply is not None, (name, line)
        full = line[: len(line) - len(word)] + reply
        words, _, quote = lex(full)
        assert words[-1] == name and quote is None, (name, line, reply)
        lines.append(full)
        names.append(name)
    script = "".join(f"printf '%s\\0' {ln.split(' ', 2)[2]}\n" for ln in lines)
    p = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\0")[:-1] == names


def _spell(name: str, style: str, dialect: str) -> str:
    """``name`` as one word in ``style`` (``'``, ``"`` or backslashes) of the dialect."""
    if style == "'":
        if dialect == "fish":
            return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + name.replace("'", "'\\''") + "'"
    if style == '"':
        specials = '"$\\' if dialect == "fish" else '"$`\\'
        return '"' + "".join("\\" + c if c in specials else c for c in name) + '"'
    return "".join(c if c.isalnum() else "\\" + c for c in name)


@pytest.mark.parametrize("shell", SHELLS)
@given(
    st.lists(st.tuples(_NAME.filter(lambda n: "!" not in n), st.sampled_from(["", "'", '"'])), min_size=40, max_size=60)
)
@settings(max_examples=20)
def test_lex_removes_quoting_as_the_shell_itself_does(shell: str, cases: list[tuple[str, str]]) -> None:
    """Differential against each shell: a name spelt escaped, single- or double-quoted (and every prefix of that
    spelling that stops inside the quote) reads back as the shell reads it (20 examples x 40+ names)."""
    from kquotactl.cli.completion import lex

    dialect = "fish" if shell == "fish" else "posix"
    words = [_spell(name, style, dialect) for name, style in cases]
    for (name, style), word in zip(cases, words, strict=True):
        assert lex(word, dialect)[0] == [name], (word, name)
        if style:
            assert lex(word[:-1], dialect) == ([name], 0, style), (word, name)
    script = "".join(f"printf '%s\\0' {w}\n" for w in words)
    args = {"bash": ["bash", "--norc", "-c"], "zsh": ["zsh", "-f", "-c"], "fish": ["fish", "--no-config", "-c"]}[shell]
    p = subprocess.run([*args, script], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\0")[:-1] == [name for name, _ in cases]


def test_lex_reads_words_as_the_shells_do() -> None:
    from kquotactl.cli.completion import lex

    assert lex("k --user 'CN=svc o") == (["k", "--user", "CN=svc o"], 9, "'")
    assert lex('k --user CN="svc o') == (["k", "--user", "CN=svc o"], 9, '"')
    assert lex("k --user CN=svc\\ o") == (["k", "--user", "CN=svc o"], 9, None)
    assert lex("k --user ") == (["k", "--user", ""], 9, None)
    assert lex("'it\\'s'", "fish")[0] == ["it's"]
    assert lex("'it'\\''s'")[0] == ["it's"]


def test_split_key_list_respects_brackets() -> None:
    assert split_key_list("a=1,b=[x,y],con") == ("a=1,b=[x,y],", "con")
    assert split_key_list("a=[x,y") == ("", "a=[x,y")
    assert key_candidates("a=[x,", ["abc"]) == []


def test_normalize_moves_group_options_and_keeps_a_pending_one() -> None:
    from kquotactl.cli.app import cli

    assert normalize_completion_args(cli, ["alter", "--zookeeper", "z:1", "--user", "a"]) == [
        "--zookeeper",
        "z:1",
        "alter",
        "--user",
        "a",
    ]
    assert normalize_completion_args(cli, ["--zookeeper", "z:1", "alter", "-o"]) == ["--zookeeper", "z:1", "-o"]
    # unless the command has an option of that name itself: its values are the ones it takes
    assert normalize_completion_args(cli, ["config", "get-contexts", "-o"]) == ["config", "get-contexts", "-o"]


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

    def __init__(self, command: str, cwd: Path | None = None) -> None:
        # a private socket file (removed on close), so no server or socket outlives the test
        self.sock = f"/tmp/kq-tmux-{uuid.uuid4().hex[:12]}"
        where = ("-c", str(cwd)) if cwd else ()
        _tmux("new-session", "-d", "-s", "t", *where, "-x", "200", "-y", "20", command, sock=self.sock)

    def screen(self) -> str:
        return _tmux("capture-pane", "-p", "-t", "t", sock=self.sock)

    def wait_changed(self, before: str, settle: float = 0.3) -> str:
        """Wait until the screen differs from ``before`` and then stays the same for ``settle`` seconds."""
        deadline = time.monotonic() + 30
        last = before
        stable_since = time.monotonic()
        while time.monotonic() < deadline:
            text = self.screen()
            if text != last:
                last, stable_since = text, time.monotonic()
            elif text != before and time.monotonic() - stable_since >= settle:
                return text
            time.sleep(0.05)
        raise AssertionError(f"the screen never changed:\n{last}")

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


@pytest.mark.parametrize("shell", SHELLS)
def test_real_shells_complete_group_options_after_the_command_name(shell: str, tmp_path) -> None:
    """In a real interactive shell, Tab after the command name completes the group's options and their
    values, and the line it builds runs with exactly those words."""
    _need("tmux", shell)
    (tmp_path / "config.yaml").write_text("contexts:\n  lab-east: {zookeeper: 'z:1'}\n  lab-west: {zookeeper: 'z:2'}\n")
    sh, prompt = _start(shell, tmp_path)
    out = tmp_path / "argv.json"
    try:
        sh.wait_for(prompt + r"?$")
        argv = _argv_after_tab(sh, prompt, "kquotactl describe --user a --zook", out, then="z:1")
        assert argv == ["describe", "--user", "a", "--zookeeper", "z:1"], (shell, argv)
        argv = _argv_after_tab(sh, prompt, "kquotactl describe --cont", out, more=("lab-e",))
        assert argv == ["describe", "--context", "lab-east"], (shell, argv)
        argv = _argv_after_tab(sh, prompt, "kquotactl config set-context lab --bootstrap-s", out, then="b:9092")
        assert argv == ["config", "set-context", "lab", "--bootstrap-server", "b:9092"], (shell, argv)
    finally:
        sh.close()


def test_our_additions_to_clicks_scripts_are_in_place() -> None:
    """zsh and fish are click's templates plus small edits; fail loudly if a click upgrade moved the lines."""
    assert 'nospace) COMPREPLY+=("$value"); compopt -o nospace' in source("bash")
    assert 'elif [[ "$type" == "nospace" ]]; then\n            completions_nospace+=("$key")' in source("zsh")
    assert "KQUOTACTL_COMP_WORDS=" in source("zsh") and 'in "${response[@]}"' in source("zsh")
    assert "KQUOTACTL_COMP_CUR=(commandline -ct" in source("fish") and "string split -m1" in source("fish")
    assert "compadd -U -S '' -V unsorted -a completions_nospace" in source("zsh")
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


# -- any name, in real terminals: what the shell inserts is exactly one argument, the real name ------------

TRICKY_USERS = [
    "CN=svc one,O=acme",
    "CN=svc one,O=beta",
    "CN=svc two,O=acme",
    'it\'s "q" \\b $HOME *:=!',
    "ünï cödé 名前",
    "<default>",  # a user really named so (kafka-configs writes one); the default user is set too
]
TRICKY_CLIENTS = ["app 1", "app,2"]

# (typed after the option, the name the program must receive); each prefix names one name only
TRICKY_CASES = [
    ("CN=svc\\ t", "CN=svc two,O=acme"),
    ("'CN=svc one,O=b", "CN=svc one,O=beta"),
    ('"CN=svc one,O=a', "CN=svc one,O=acme"),
    ("CN=svc\\ one,O=a", "CN=svc one,O=acme"),
    ("it", TRICKY_USERS[3]),
    ("'it", TRICKY_USERS[3]),
    ('"it', TRICKY_USERS[3]),
    ("ü", TRICKY_USERS[4]),
    ("\\<", "<default>"),
]


@pytest.fixture
def tricky(chroot, cli):
    z = ("--zookeeper", chroot.connect, "alter", "--literal-names")  # a user really named <default> is among them
    for name in TRICKY_USERS:
        assert cli(*z, "--user", name, "--add-config", "producer_byte_rate=1").exit_code == 0
    for name in TRICKY_CLIENTS:
        assert cli(*z, "--client-id", name, "--add-config", "request_percentage=1").exit_code == 0
    assert cli(*z, "--user-defaults", "--add-config", "producer_byte_rate=2").exit_code == 0
    assert cli(*z, "--ip", "2001:db8::7", "--add-config", "connection_creation_rate=2").exit_code == 0
    return chroot


@pytest.mark.zookeeper
@pytest.mark.parametrize("shell", SHELLS)
def test_names_are_offered_whole_and_once_over_the_protocol(tricky, shell: str) -> None:
    """bash gets each name quoted (it inserts replies verbatim), zsh and fish the name itself (they quote); the
    default user is not a name (--user-defaults), the user really named <default> is, and said to be."""
    z = f"kquotactl --zookeeper {tricky.connect}"
    users = sorted(TRICKY_USERS)
    # describe has --literal-names: only with it on the line is the user really named <default> a name to offer
    assert complete(shell, f"{z} describe --literal-names --user ") == (
        _bash_quoted(users) if shell == "bash" else users
    )
    assert "<default>" not in complete(shell, f"{z} describe --user ")
    assert complete(shell, f"{z} describe --client-id ") == (
        ["app\\ 1", "app,2"] if shell == "bash" else TRICKY_CLIENTS
    )
    from conftest import run_cli

    fish = run_cli(env=fish_env(f"{z} describe --literal-names --user <")).stdout
    assert fish == "plain,<default>\tthe user named <default>, not the default user\n"


def _bash_quoted(names: list[str]) -> list[str]:
    from kquotactl.cli.completion import bash_quote_rest

    return [bash_quote_rest(n, None) for n in names]


def _record_shim(tmp_path: Path) -> Path:
    """The kquotactl shim, which records its argv instead of running when KQ_ARGV names a file."""
    bindir = _shim_dir(tmp_path)
    record = "import json, os, sys; json.dump(sys.argv[1:], open(os.environ['KQ_ARGV'], 'w'))"
    (bindir / "kquotactl").write_text(
        f'#!/bin/sh\nif [ -n "$KQ_ARGV" ]; then exec "{sys.executable}" -c "{record}" "$@"; fi\n'
        f'PYTHONPATH="{SRC}" exec "{sys.executable}" -m kquotactl "$@"\n'
    )
    return bindir


def _start(shell: str, tmp_path: Path, rc_extra: str = "") -> tuple[TmuxShell, str]:
    """A real interactive ``shell`` with our script loaded (then ``rc_extra``, bash only), in ``tmp_path``;
    returns it and its prompt."""
    bindir = _record_shim(tmp_path)
    env = f"KQUOTACTL_CONFIG={tmp_path / 'config.yaml'}"
    script = tmp_path / f"kquotactl.{shell}"
    script.write_text(source(shell))
    if shell == "bash":
        rc = tmp_path / "bashrc"
        rc.write_text(f"PS1='$ '\nexport PATH={bindir}:$PATH\nsource {script}\n{rc_extra}")
        return TmuxShell(f"env {env} bash --noprofile --rcfile {rc} -i", cwd=tmp_path), r"^\$ "
    if shell == "zsh":
        (tmp_path / ".zshrc").write_text(
            f"PS1='%% '\nbindkey -e\nexport PATH={bindir}:$PATH\nautoload -U compinit && compinit -u\nsource {script}\n"
        )
        return TmuxShell(f"env {env} ZDOTDIR={tmp_path} zsh -i", cwd=tmp_path), r"^% "
    conf = tmp_path / "fish"
    conf.mkdir(exist_ok=True)
    (conf / "config.fish").write_text(
        f"set -gx PATH {bindir} $PATH\nsource {script}\nfunction fish_prompt; echo '> '; end\n"
        "function fish_greeting; end\n"
    )
    return TmuxShell(f"env {env} XDG_CONFIG_HOME={tmp_path} fish -i", cwd=tmp_path), r"^> "


def _argv_after_tab(
    sh: TmuxShell, prompt: str, line: str, out: Path, then: str = "", more: tuple[str, ...] = ()
) -> list[str]:
    """Type ``line``, press Tab, wait for the shell to insert (again for each of ``more``: type it, Tab), type
    ``then``, run the line and return the argv the program received."""
    out.unlink(missing_ok=True)
    sh.type(line, literal=True)
    before = sh.wait_for(prompt + ".*" + re.escape(line.rstrip()[-20:]) + r"\s*$")
    sh.type("Tab")
    before = sh.wait_changed(before)
    for typed in more:
        sh.type(typed, literal=True)
        before = sh.wait_for(".*" + re.escape(typed) + r"\s*$")
        sh.type("Tab")
        before = sh.wait_changed(before)
    if then:
        sh.type(then, literal=True)
    sh.type("C-a")
    sh.type(f"KQ_ARGV={out} ", literal=True)
    sh.type("Enter")
    deadline = time.monotonic() + 30
    while not out.exists() or not out.read_text():
        assert time.monotonic() < deadline, sh.screen()
        time.sleep(0.05)
    time.sleep(0.05)
    import json

    argv = json.loads(out.read_text())
    sh.type("C-l")
    return argv


@pytest.mark.zookeeper
@pytest.mark.parametrize("shell", SHELLS)
def test_real_shells_insert_exactly_the_real_name(tricky, shell: str, tmp_path) -> None:
    _need("tmux", shell)
    (tmp_path / "my quotas.yaml").write_text("quotas: []\n")
    (tmp_path / "config.yaml").write_text(
        f"contexts:\n  lab:east@eu/1:\n    zookeeper: {tricky.connect}\n  lab:west:\n    zookeeper: z:1\n"
    )
    sh, prompt = _start(shell, tmp_path)
    out = tmp_path / "argv.json"
    z = f"kquotactl --zookeeper {tricky.connect} describe --literal-names"  # the user named <default> is a name
    try:
        sh.wait_for(prompt + r"?$")
        for typed, name in TRICKY_CASES:
            argv = _argv_after_tab(sh, prompt, f"{z} --user {typed}", out)
            assert argv[-1] == name and argv[-2] == "--user", (shell, typed, argv)
        for typed, name in [("app\\ ", "app 1"), ("'app,", "app,2")]:
            argv = _argv_after_tab(sh, prompt, f"{z} --client-id {typed}", out)
            assert argv[-2:] == ["--client-id", name], (shell, typed, argv)
        # names sharing a prefix: the first Tab stops where they part, the next one finishes the chosen name
        argv = _argv_after_tab(sh, prompt, f"{z} --user CN=svc\\ one", out, more=("b",))
        assert argv[-2:] == ["--user", "CN=svc one,O=beta"], (shell, argv)
        argv = _argv_after_tab(sh, prompt, f"{z} --ip 2001:db8::", out)
        assert argv[-2:] == ["--ip", "2001:db8::7"], (shell, argv)
        argv = _argv_after_tab(sh, prompt, "kquotactl --context lab:e", out)  # described items (zsh: _describe)
        assert argv[-2:] == ["--context", "lab:east@eu/1"], (shell, argv)
        line = f"kquotactl --zookeeper {tricky.connect} alter --user 'CN=svc two,O=acme' --delete-config p"
        argv = _argv_after_tab(sh, prompt, line, out)
        assert argv[-4:] == ["--user", "CN=svc two,O=acme", "--delete-config", "producer_byte_rate"], (shell, argv)
        argv = _argv_after_tab(sh, prompt, f"{z} --entity-type users --entity-name CN=svc\\ t", out)
        assert argv[-2:] == ["--entity-name", "CN=svc two,O=acme"], (shell, argv)
        argv = _argv_after_tab(sh, prompt, "kquotactl alter --user 'x y' --add-config cons", out, then="7")
        assert argv[-4:] == ["--user", "x y", "--add-config", "consumer_byte_rate=7"], (shell, argv)
        argv = _argv_after_tab(sh, prompt, "kquotactl explain -f my\\ q", out)
        assert argv[-2:] == ["-f", "my quotas.yaml"], (shell, argv)
    finally:
        sh.close()


@pytest.mark.zookeeper
def test_bash_with_commas_and_no_colons_in_comp_wordbreaks(tricky, tmp_path) -> None:
    """COMP_WORDBREAKS is the user's: the replies follow readline's word, whatever splits it."""
    _need("tmux", "bash")
    sh, prompt = _start("bash", tmp_path, rc_extra="COMP_WORDBREAKS=${COMP_WORDBREAKS//:/}\nCOMP_WORDBREAKS+=,\n")
    out = tmp_path / "argv.json"
    z = f"kquotactl --zookeeper {tricky.connect} describe --literal-names"  # the user named <default> is a name
    try:
        sh.wait_for(prompt + r"?$")
        for typed, name in [("CN=svc\\ one,O=a", "CN=svc one,O=acme"), ("it", TRICKY_USERS[3])]:
            assert _argv_after_tab(sh, prompt, f"{z} --user {typed}", out)[-2:] == ["--user", name]
        assert _argv_after_tab(sh, prompt, f"{z} --client-id app,", out)[-1] == "app,2"
        assert _argv_after_tab(sh, prompt, f"{z} --ip 2001:db8::", out)[-1] == "2001:db8::7"
        line = "kquotactl alter --user a --add-config producer_byte_rate=1,cons"
        assert _argv_after_tab(sh, prompt, line, out, then="2")[-1] == "producer_byte_rate=1,consumer_byte_rate=2"
    finally:
        sh.close()


@pytest.mark.zookeeper
def test_a_user_named_default_needs_literal_names_where_the_command_has_it(tricky) -> None:
    """On a command with --literal-names (which refuses --user '<default>' without it), the real user named
    <default> is offered only once --literal-names is on the line; the default user is never a name."""
    from click.shell_completion import ShellComplete

    from kquotactl.cli import completion as comp

    @click.command()
    @click.option("--zookeeper")
    @click.option("--user", shell_complete=comp.complete_user)
    @click.option("--literal-names", is_flag=True)
    def describe(**kw: object) -> None:
        pass

    def items(*args: str) -> list[tuple[str, str | None]]:
        got = ShellComplete(describe, {}, "k", "X").get_completions(["--zookeeper", tricky.connect, *args], "<")
        return [(c.value, c.help) for c in got]

    assert items("--user") == []
    assert items("--literal-names", "--user") == [("<default>", "the user named <default>, not the default user")]
