"""No user-facing text names a file of the repository: a pip user has no ``docs/``, README or Makefile.

Scanned: every string literal in ``src/kquotactl`` that is not a docstring (error messages, warnings, printed
text), every command's ``--help`` (docstrings of commands, option help, epilogs) and every man page as rendered.
Not scanned: ``docsgen.py``, the generator that writes the repository's own files (``man/``, ``docs/cli.md``).
Point users at ``kquotactl ... --help`` or ``man kquotactl-...`` instead.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kquotactl.cli import docsgen

SRC = Path(__file__).resolve().parent.parent / "src" / "kquotactl"
REPO_PATH = re.compile(
    r"(?<![\w.~/-])(?:docs|man|tests|scripts|bench|completions|changelog\.d|src)/"
    r"|README|CHANGELOG|Makefile|\bmake (?:setup|docs|docs-check|test|demo|lint|lock)\b|\b[\w-]+\.md\b"
)
SKIP = {"docsgen.py"}


def _literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_the_pattern_catches_repository_paths() -> None:
    for bad in ("see docs/contexts.md", "(see README)", "make setup installs one", "contexts.md", "man/x.1"):
        assert REPO_PATH.search(bad), bad
    for fine in ("man kquotactl-config", "kquotactl config --help", "~/.config/kquotactl/config.yaml", "10MiB/s"):
        assert not REPO_PATH.search(fine), fine


def test_no_message_in_the_sources_names_a_repository_file() -> None:
    hits = [
        f"{path.relative_to(SRC)}:{line}: {text[:80]!r}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name not in SKIP
        for line, text in _literals(path)
        if REPO_PATH.search(text)
    ]
    assert not hits, "user-facing text names a repository file (point at `kquotactl ... --help` or man):\n" + "\n".join(
        hits
    )


@pytest.mark.parametrize("page", docsgen.pages(), ids=lambda p: p.name)
def test_no_help_or_man_page_names_a_repository_file(page: docsgen.Page) -> None:
    texts = {"--help": docsgen.help_text(page), "man page": docsgen.man_page(page, docsgen.pages())}
    for where, text in texts.items():
        m = REPO_PATH.search(text)
        assert m is None, (
            f"{page.name} {where} names a repository file: ...{text[max(0, m.start() - 60) : m.end() + 20]}..."
        )


# -- issue 26: messages in the user's words, the source of a bad value named ---------------------------------------
# (the CLI in-process through main, and the real console entry where bytes on argv matter; a real ZooKeeper where a
# fallback to the wrong cluster would write)

PYTHON_WORDS = re.compile(
    r"JSONDecodeError|Expecting value|\(char \d+\)|codec can't decode|could not convert|invalid literal|KeyError|"
    r"TypeError|UnicodeDecodeError|\\udc[89a-f][0-9a-f]|Traceback|internal error|illegal repetition|dangling|"
    r"unclosed group|Command must include exactly one action"
)


def _one_line(r, *fragments: str) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1, (r.exit_code, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("kquotactl: error: "), r.stderr
    assert not PYTHON_WORDS.search(lines[0]), lines[0]
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


def test_a_byte_that_is_not_utf8_on_the_command_line_is_named_with_where_it_is(tmp_path) -> None:
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "kquotactl", "--zookeeper", "127.0.0.1:1", "alter", b"--user", b"caf\xe9",
         "--add-config", "producer_byte_rate=5"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert r.returncode == 1 and r.stderr.strip() == (
        "kquotactl: error: --user 'caf\\xe9': byte 0xE9 at character 4 is not UTF-8; kquotactl reads its arguments "
        "as UTF-8 (check the terminal's encoding or the variable that holds the value)"
    ), r.stderr
    from conftest import run_cli

    _one_line(run_cli("alter", "--user", "a", "--add-config", "producer_byte_rate=\udce9"), "byte 0xE9 at character 20")
    _one_line(run_cli("validate", "-f", "q\udcff.yaml"), "-f 'q\\xff.yaml': byte 0xFF at character 2")
    latin = tmp_path / "caf\udce9.yaml"  # an existing file whose name is not UTF-8 is still read
    latin.write_text("quotas: []\n")
    assert run_cli("validate", "-f", str(latin)).exit_code == 0


def test_files_that_are_not_utf8_or_not_json_say_where_and_what_was_expected(tmp_path) -> None:
    from conftest import run_cli

    def file(name: str, data: bytes) -> str:
        (tmp_path / name).write_bytes(data)
        return str(tmp_path / name)

    z = ["--zookeeper", "127.0.0.1:1"]  # refused before any connection
    _one_line(run_cli(*z, "apply", "--plan", file("e.json", b"")), "is not JSON: the file is empty")
    _one_line(run_cli(*z, "apply", "--plan", file("n.json", b"nope")), "line 1, column 1: expected a value")
    _one_line(run_cli(*z, "apply", "--plan", file("c.json", b'{"a": 1,\n "b" 2}')), "line 2, column 6: expected ':'")
    _one_line(run_cli(*z, "apply", "--plan", file("u.json", b'{"a": "caf\xe9"}')), "byte 0xE9 on line 1, column 11")
    plan = file("m.json", b'{"format": "kquotactl-plan", "version": 1}')
    _one_line(run_cli(*z, "apply", "--plan", plan), "malformed plan (the field 'changes' is missing)")
    r = run_cli("validate", "-f", file("l.yaml", b"quotas:\n- {entity: {user: caf\xe9}}\n"))
    assert "l.yaml: byte 0xE9 on line 2, column 22 is not UTF-8" in r.stderr and r.exit_code == 1, r.stderr
    assert not PYTHON_WORDS.search(r.stderr), r.stderr
    r = run_cli("validate", "-f", "-", input="quotas: []\n")
    assert r.exit_code == 0, r.stderr
    cfg = file("config.yaml", b"current-context: p\ncontexts:\n  p: {zookeeper: 'caf\xe9:1'}\n")
    _one_line(run_cli("--config", cfg, "describe"), "config file", "byte 0xE9 on line 3, column 22 is not UTF-8")
    log = file("stages.log", b'{"staged": \n')
    _one_line(run_cli(*z, "apply", "--resume", log, "--yes"), "stages.log:1:", "line 1, column 12: expected a value")


@pytest.mark.parametrize(
    ("rules", "words"),
    [
        ("RULE:^CN=(.*$/$1/", "a '(' is never closed (add ')', or write \\( for the character itself)"),
        ("RULE:^CN=([a-z)$/$1/", "a '[' is never closed"),
        ("RULE:^CN=(a{2,1})$/$1/", "the count at character 7 has its minimum above its maximum"),
        ("RULE:^CN=(a{x})$/$1/", "the '{' at character 7 starts no count {n}, {n,} or {n,m}"),
        ("RULE:^CN=(*a)$/$1/", "'*' at character 6 repeats nothing (write \\* for the character)"),
        ("RULE:^CN=(a))$/$1/", "the ')' at character 8 closes no group"),
        ("RULE:^CN=([z-a])$/$1/", "the character range z-a runs backwards"),
        ("RULE:^CN=(.*)$/$x/", "a '$' is followed by no group number or {name} (write \\$ for a dollar sign)"),
    ],
)
def test_regex_errors_say_which_character_and_what_was_expected(rules, words) -> None:
    from conftest import run_cli

    r = run_cli("--zookeeper", "127.0.0.1:1", "alter", "--principal", "CN=a", "--ssl-principal-mapping-rules", rules,
                "--add-config", "producer_byte_rate=1")  # fmt: skip
    _one_line(r, words)


NO_VALUE = [
    (["--zookeeper", "alter", "--user", "a", "--add-config", "producer_byte_rate=5"], "--zookeeper", "'alter'"),
    (["--zookeeper", "describe"], "--zookeeper", "'describe'"),
    (["--zookeeper"], "--zookeeper", "give it one"),
    (["describe", "--zookeeper"], "--zookeeper", "give it one"),
    (["alter", "--user", "a", "--add-config", "producer_byte_rate=5", "--zookeeper"], "--zookeeper", "give it one"),
    (["--bootstrap-server", "plan", "-f", "q.yaml"], "--bootstrap-server", "'plan'"),
    (["--bootstrap-server", "apply", "-f", "q.yaml", "--yes"], "--bootstrap-server", "'apply'"),
    (["--zookeeper", "--alter", "--entity-type", "users", "--entity-name", "a", "--add-config", "producer_byte_rate=5"],
     "--zookeeper '--alter' is one of kquotactl's options", ""),
    (["--context", "export"], "--context", "'export'"),
]  # fmt: skip


@pytest.mark.zookeeper
@pytest.mark.parametrize(
    ("args", "option", "detail"), NO_VALUE, ids=lambda x: " ".join(x) if isinstance(x, list) else ""
)
def test_an_unset_cluster_variable_says_the_option_has_no_value(chroot, tmp_path, monkeypatch, args, option, detail):
    """`--zookeeper $ZK alter ...` with ZK unset: never "must include exactly one action", never a write through the
    cluster the environment names."""
    from conftest import run_cli

    (tmp_path / "q.yaml").write_text("quotas:\n- {entity: {user: a}, config: {producer_byte_rate: 5}}\n")
    monkeypatch.chdir(tmp_path)
    before = chroot.snapshot()
    r = run_cli(*args, env={"KQUOTACTL_ZOOKEEPER": chroot.connect})
    _one_line(r, option, "has no value", "an unset variable?", detail)
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_a_bad_value_from_the_environment_or_a_context_is_named_as_such(chroot, tmp_path) -> None:
    from conftest import run_cli

    env_zk = {"KQUOTACTL_ZOOKEEPER": "127.0.0.1:99999"}
    line = _one_line(run_cli("describe", env=env_zk), "KQUOTACTL_ZOOKEEPER='127.0.0.1:99999': the port '99999' is")
    assert "--zookeeper" not in line
    line = _one_line(run_cli("describe", env={"KQUOTACTL_ZOOKEEPER": "127.0.0.1:1"}), "(from KQUOTACTL_ZOOKEEPER)")
    assert "--zookeeper" not in line and "connection refused" in line
    env_bs = {"KQUOTACTL_BOOTSTRAP_SERVER": "127.0.0.1:1", "KQUOTACTL_COMMAND_CONFIG": str(tmp_path / "nope")}
    line = _one_line(run_cli("describe", env=env_bs), f"KQUOTACTL_COMMAND_CONFIG={tmp_path / 'nope'}: no such file")
    assert "--command-config" not in line
    env_auth = {"KQUOTACTL_ZOOKEEPER": chroot.connect, "KQUOTACTL_ZK_AUTH": "secret"}
    line = _one_line(run_cli("describe", env=env_auth), "KQUOTACTL_ZK_AUTH must be digest:USER:PASSWORD")
    assert "secret" not in line and "--zk-auth" not in line
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "current-context: prod\ncontexts:\n"
        "  prod: {zookeeper: '127.0.0.1:99999'}\n"
        "  auth: {zookeeper: '" + chroot.connect + "', zk-auth: secret}\n"
        "  kafka: {bootstrap-server: '127.0.0.1:1', command-config: /no/such/file}\n"
        "  down: {bootstrap-server: '127.0.0.1:1'}\n"
    )
    c = ["--config", str(cfg)]
    line = _one_line(run_cli(*c, "describe"), "zookeeper '127.0.0.1:99999' (context 'prod'): the port '99999'")
    assert "--zookeeper" not in line
    _one_line(run_cli(*c, "--context", "auth", "describe"), "zk-auth (context 'auth') must be digest:")
    _one_line(run_cli(*c, "--context", "kafka", "describe"), "command-config /no/such/file (context 'kafka'): no such")
    _one_line(run_cli(*c, "--context", "down", "describe"), "connection refused (the address from context 'down')")
    # typed on the command line, the flag is named
    _one_line(run_cli("--zookeeper", "127.0.0.1:0", "describe"), "--zookeeper '127.0.0.1:0': the port '0'")


def test_a_bad_value_is_named_by_the_option_it_came_from(tmp_path) -> None:
    """`verify --drive abc` said `--observed`; `explain --limit abc` named only the key."""
    from conftest import run_cli

    events = tmp_path / "events.txt"
    events.write_text("0 400\n")
    r = run_cli("explain", "--replay", str(events), "--key", "producer_byte_rate", "--limit", "abc")
    _one_line(r, "--limit 'abc': ", "not a number")
    r = run_cli("--bootstrap-server", "127.0.0.1:1", "verify", "--user", "a", "--drive", "abc")
    assert "--observed" not in _one_line(r, "--drive 'abc': 'abc' is not a rate")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("quotas: [\n", "a value is missing (a '[' or '{' not closed"),
        (
            "quotas:\n- {entity: {user: a}, config: {producer_byte_rate: 1}\n",
            "expected ',' or '}': a '{' is not closed",
        ),
        ("quotas: a: b\n", "a ': ' where no key can start (quote a value that holds ': ')"),
        ("quotas: 'abc\n", "a quoted value is not closed"),
        ("quotas: *nope\n", "an alias '*NAME' that refers to no anchor '&NAME'"),
        ("a:\n  b: 1\n c: 2\n", "the indentation does not line up"),
    ],
)
def test_bad_yaml_is_said_in_words_in_manifests_and_the_contexts_file(tmp_path, text, words) -> None:
    from conftest import run_cli

    f = tmp_path / "q.yaml"
    f.write_text(text)
    r = run_cli("validate", "-f", str(f))
    assert r.exit_code == 1 and f"invalid YAML: {words}" in r.stderr, r.stderr
    assert not re.search(r"while (parsing|scanning)|<stream end>|<block end>", r.stderr), r.stderr
    r = run_cli("--config", str(f), "describe")
    _one_line(r, "is not valid YAML", words)


def test_a_context_or_config_file_named_by_the_environment_is_named_as_such(tmp_path) -> None:
    from conftest import run_cli

    cfg = tmp_path / "config.yaml"
    cfg.write_text("contexts:\n  prod: {zookeeper: '127.0.0.1:1'}\n")
    r = run_cli("--config", str(cfg), "describe", env={"KQUOTACTL_CONTEXT": "prd"})
    _one_line(r, "KQUOTACTL_CONTEXT='prd': context 'prd' not found", "did you mean prod?")
    missing = tmp_path / "nope.yaml"
    r = run_cli("--context", "prod", "describe", env={"KQUOTACTL_CONFIG": str(missing)})
    _one_line(r, f"the config file {missing} does not exist (from KQUOTACTL_CONFIG)")


@pytest.mark.zookeeper
def test_a_chroot_from_the_environment_is_named_as_such(zk_server, zk_admin) -> None:
    """A forgotten or mistyped chroot in KQUOTACTL_ZOOKEEPER: the hint names the variable, not --zookeeper."""
    import uuid

    from conftest import run_cli

    root = f"/bare-{uuid.uuid4().hex[:12]}"
    zk_admin.ensure_path(root)
    try:
        env = {"KQUOTACTL_ZOOKEEPER": f"{zk_server.connect}{root}"}
        r = run_cli("alter", "--user", "a", "--add-config", "producer_byte_rate=5", env=env)
        assert "--zookeeper?" not in _one_line(r, "(forgotten chroot in KQUOTACTL_ZOOKEEPER?); nothing written")
        env = {"KQUOTACTL_ZOOKEEPER": f"{zk_server.connect}{root}/nope"}
        _one_line(run_cli("describe", env=env), "check the chroot in KQUOTACTL_ZOOKEEPER ")
        assert zk_admin.get_children(root) == []
    finally:
        zk_admin.delete(root, recursive=True)
