"""Hostile and bad input: fuzzed command lines and --add-config values, hostile entity names, secrets.

Fuzz sizes: a few hundred examples per test in CI; ``KQUOTACTL_FUZZ_EXAMPLES=10000`` (or more) for the long
mode (see docs/reliability.md). Every fuzzed command runs against a live chroot, so a command that parses
really writes; one that fails must leave the chroot byte-for-byte unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli, run_subprocess
from fixtures_reliability import COUNTS, check_layout, fuzz_examples, walk
from kquotactl.core.errors import QuotaError, one_line
from kquotactl.core.sanitizer import sanitize

pytestmark = pytest.mark.reliability

LONG = os.environ.get("KQUOTACTL_FUZZ_EXAMPLES") is not None
FUZZ = settings(
    max_examples=fuzz_examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

# -- the --add-config grammar and value validation (pure) ----------------------------------------------------

KEYS = ["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate", "request_rate"]
GRAMMAR_BITS = [
    *KEYS,
    "connection_creation_rate",
    "=",
    ",",
    "[",
    "]",
    " ",
    "\t",
    "1",
    "0",
    "-1",
    "1e3",
    "NaN",
    "10MiB",
    "5MB",
    "1_000",
    "0x10",
    "9223372036854775808",
    "1.5",
    "=[",
    "]=",
    "\\",
    "\n",
    "é",
    "\x00",
]
config_text = st.lists(st.one_of(st.sampled_from(GRAMMAR_BITS), st.text(max_size=6)), max_size=14).map("".join)


@FUZZ
@given(text=config_text, ip=st.booleans(), deletes=st.lists(st.sampled_from([*KEYS, "x", "", ",", " "]), max_size=3))
def test_add_config_grammar_never_raises_anything_but_a_one_line_quota_error(text, ip, deletes) -> None:
    from kquotactl.core.changes import build_change
    from kquotactl.core.entities import Entity
    from kquotactl.core.grammar import parse_add_config, parse_delete_config

    COUNTS.fuzzed += 1
    entity = Entity(ip="192.0.2.1") if ip else Entity(user="alice")
    try:
        adds = parse_add_config(text)
        change = build_change(entity, adds, parse_delete_config(deletes))
    except QuotaError as e:
        shown = one_line(str(e))
        assert shown and "\n" not in shown and len(shown) < 1100
        return
    for k, v in change.set.items():
        assert isinstance(v, int | float) and v > 0 and v == v and v != float("inf"), (k, v)


# -- the whole command line against a live chroot ---------------------------------------------------------------

OPTIONS = [
    "alter",
    "describe",
    "--user",
    "--client-id",
    "--client",
    "--ip",
    "--user-defaults",
    "--client-defaults",
    "--ip-defaults",
    "--entity-type",
    "--entity-name",
    "--entity-default",
    "users",
    "clients",
    "ips",
    "--add-config",
    "--delete-config",
    "--if-exists",
    "--dry-run",
    "--add-config-file",
    "-o",
    "json",
    "yaml",
    "kafka",
    "table",
    "--alter",
    "--describe",
    "-add-config",
    "--",
    "-",
    "=",
    "--timeout",
    "0",
    "-1",
    "nan",
    "--connect-timeout",
    "--output",
    "-v",
    "--help",
    "--version",
    "--zk-acl",
    "secure",
    "--command-config",
    "producer_byte_rate=1",
    "consumer_byte_rate=10MiB",
    "connection_creation_rate=5",
    "request_percentage=0.5",
    "producer_byte_rate",
    "alice",
    "<default>",
    "",
    "192.0.2.1",
    "::1",
    "1.2.3.999",
    "../x",
    "a/b",
    "%2F",
]
arg = st.one_of(
    st.sampled_from(OPTIONS),
    st.sampled_from(OPTIONS).map(lambda o: o + "="),
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=4).map(lambda t: "--" + t),
)


name = st.one_of(
    st.sampled_from(["alice", "<default>", "", "../x", "a/b", "%2F", ".", "..", "\x00"]), st.text(max_size=8)
)
entity_args = st.one_of(
    st.tuples(st.just("--user"), name),
    st.tuples(st.just("--client-id"), name),
    st.tuples(st.just("--ip"), st.sampled_from(["192.0.2.1", "::1", "<default>", "1.2.3.999", "h", ""])),
    st.tuples(st.just("--user"), name, st.just("--client-id"), name),
    st.tuples(st.just("--user-defaults")),
    st.tuples(st.just("--entity-type"), st.sampled_from(["users", "clients", "ips"]), st.just("--entity-name"), name),
    st.tuples(st.just("--entity-type"), st.sampled_from(["users", "clients"]), st.just("--entity-default")),
).map(list)
structured = st.builds(
    lambda cmd, ent, cfg, extra: [*cmd, *ent, "--add-config", cfg, *extra],
    st.sampled_from([["alter"], ["--alter"], ["alter", "--dry-run"]]),
    entity_args,
    st.one_of(
        config_text,
        st.sampled_from(
            [
                "producer_byte_rate=1024",
                "consumer_byte_rate=10MiB,request_percentage=12.5",
                "connection_creation_rate=5",
                "producer_byte_rate = 1e3 ,",
                "request_rate=[7]",
                "controller_mutation_rate=0.5",
            ]
        ),
    ),
    st.lists(
        st.sampled_from(["--if-exists", "--delete-config", "request_rate", "-o", "json", "--dry-run"]), max_size=3
    ),
)
OUTCOMES: dict[int, int] = {}


def _tree(chroot) -> dict[str, bytes]:
    return walk(chroot.zk, chroot.root)


@pytest.mark.zookeeper
@pytest.mark.timeout(0 if LONG else 600)  # long mode: 10,000 command lines take 30+ minutes on a busy machine
@FUZZ
@given(argv=st.one_of(st.lists(arg, max_size=9), structured))
def test_fuzzed_command_lines_never_trace_back_and_never_write_on_error(chroot, argv) -> None:
    COUNTS.fuzzed += 1
    if any(a in ("--add-config-file", "--command-config") for a in argv):
        argv = [a for a in argv if a not in ("--add-config-file", "--command-config")]  # no file-system probing
    before = _tree(chroot)
    r = run_cli("--zookeeper", chroot.connect, "--connect-timeout", "5", "--timeout", "5", *argv)
    assert r.exit_code in (0, 1), (argv, r.exit_code, r.stderr)
    OUTCOMES[r.exit_code] = OUTCOMES.get(r.exit_code, 0) + 1
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, (argv, r.stderr)
    if r.exit_code == 1:
        last = [x for x in r.stderr.splitlines() if x.strip()][-1]
        assert last.startswith(("kquotactl: error: ", "Error: ")), (argv, r.stderr)
        assert _tree(chroot) == before, f"a failed command wrote: {argv}"
    assert check_layout(_tree(chroot)) == []


# -- hostile entity names ----------------------------------------------------------------------------------

HOSTILE_NAMES = [
    "../",
    "../../etc/passwd",
    "/",
    "a/b",
    "/config/changes",
    "..",
    ".",
    "...",
    "\x00",
    "a\x00b",
    "\x01\x02\x1f\x7f",
    "line\nbreak",
    "tab\there",
    "<default>",
    "%2F",
    "%2e%2e",
    "%",
    "%%",
    "+",
    " ",
    "  padded  ",
    "*",
    "~",
    "ünïcødé",
    "\u202etxt.exe",
    "\ufeff",
    "😀",
    "x" * 4096,
    "x" * 4097,
    "x" * 1_000_000,
    "\udcff",  # a byte that is not UTF-8, as Python decodes it from argv
    "zookeeper",
    "CN=a,O=b",
]


def _ids(names: list[str]) -> list[str]:
    return [repr(n[:20]) + (f"..{len(n)}" if len(n) > 20 else "") for n in names]


@pytest.mark.zookeeper
@pytest.mark.parametrize("option", ["--user", "--client-id", "pair"])
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=_ids(HOSTILE_NAMES))
def test_hostile_names_are_stored_under_their_own_sanitized_znode_or_rejected(chroot, option, name) -> None:
    COUNTS.fuzzed += 1
    before = _tree(chroot)
    ent = ["--user", "svc", "--client-id", name] if option == "pair" else [option, name]
    r = run_cli("--zookeeper", chroot.connect, "alter", *ent, "--add-config", "producer_byte_rate=1024")
    after = _tree(chroot)
    assert check_layout(after) == []
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    if r.exit_code != 0:
        assert r.exit_code == 1
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert len(r.stderr) < 600  # a 1 MB name is not echoed back
        assert after == before
        return
    new = sorted(set(after) - set(before) - {"/config", "/config/users", "/config/clients", "/config/ips"})
    entity_nodes = [p for p in new if not p.startswith("/config/changes")]
    segment = sanitize(name)
    expected = {
        "--user": "/config/users/" + segment,
        "--client-id": "/config/clients/" + segment,
        "pair": "/config/users/svc/clients/" + segment,
    }[option]
    assert entity_nodes[-1] == expected
    assert "/" not in segment and segment not in (".", "..")
    # it reads back as the very same name
    d = run_cli("--zookeeper", chroot.connect, "describe", *ent, "-o", "json")
    [rec] = json.loads(d.stdout)
    key = "client-id" if option != "--user" else "user"
    assert rec["entity"][key] == name


@pytest.mark.zookeeper
@pytest.mark.parametrize(
    "ip", ["../", "/", "1.2.3.4/32", "1.2.3.4\x00", "<default>x", "%2F", "fe80::1%eth0", " 1.2.3.4", "x" * 100_000]
)
def test_hostile_ip_names_are_rejected_and_nothing_is_written(chroot, ip) -> None:
    COUNTS.fuzzed += 1
    before = _tree(chroot)
    r = run_cli("--zookeeper", chroot.connect, "alter", "--ip", ip, "--add-config", "connection_creation_rate=5")
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1 and len(r.stderr) < 600
    assert _tree(chroot) == before


@pytest.mark.zookeeper
def test_invalid_utf8_on_the_real_command_line_is_one_line_and_writes_nothing(chroot) -> None:
    before = _tree(chroot)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "kquotactl",
            "--zookeeper",
            chroot.connect,
            "alter",
            "--user",
            b"bad\xff\xfe",
            "--add-config",
            "producer_byte_rate=1",
        ],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 1
    assert p.stderr.decode(errors="replace").count("\n") == 1 and b"Traceback" not in p.stderr
    assert _tree(chroot) == before


@pytest.mark.zookeeper
@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\x00p\x00r\x00",  # UTF-16 with a BOM
        b"producer_byte_rate=\xff\xff",
        b"\xc3\x28=1",  # invalid UTF-8 sequence as a key
        b"producer_byte_rate=" + b"9" * 100_000,
        b"\\u12",  # a broken unicode escape
        b"key\\\n",
    ],
)
def test_bad_bytes_in_add_config_file_are_one_line_and_write_nothing(chroot, tmp_path, content) -> None:
    COUNTS.fuzzed += 1
    f = tmp_path / "q.properties"
    f.write_bytes(content)
    before = _tree(chroot)
    r = run_cli("--zookeeper", chroot.connect, "alter", "--user", "a", "--add-config-file", str(f))
    assert r.exit_code == 1, r.stdout
    assert len(r.stderr.strip().splitlines()) == 1 and len(r.stderr) < 1000, r.stderr
    assert _tree(chroot) == before


@pytest.mark.zookeeper
def test_nul_around_a_value_in_a_file_is_trimmed_as_java_trims_it(chroot, tmp_path) -> None:
    """``String.trim()`` strips every character up to U+0020, NUL included: kafka-configs reads 1."""
    f = tmp_path / "q.properties"
    f.write_bytes(b"producer_byte_rate=\x001\x00")
    r = run_cli("--zookeeper", chroot.connect, "alter", "--user", "a", "--add-config-file", str(f), "-o", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["after"] == {"producer_byte_rate": 1}


# -- secrets never appear in output, errors or --debug traces ---------------------------------------------

SECRET = "Pa55-w0rd-S3cr3t"


def _no_secret(r) -> None:
    text = r.stdout + r.stderr
    assert SECRET not in text, text[-2000:]


@pytest.mark.zookeeper
@pytest.mark.parametrize("debug", [[], ["--debug"], ["-v"]])
def test_zk_digest_password_never_printed(chroot, debug) -> None:
    for args in (
        ["--zk-auth", f"digest:admin:{SECRET}", "describe"],
        ["--zk-auth", f"digest:admin:{SECRET}", "alter", "--user", "a", "--add-config", "producer_byte_rate=1"],
        ["--zk-auth", f"digest:admin:{SECRET}", "alter", "--user", "a", "--add-config", "producer_byte_rat=1"],
        ["--zk-auth", f"bogus:admin:{SECRET}", "describe"],
        ["--zk-auth", f"digest{SECRET}", "describe"],
        ["--zk-auth", f"digest:admin:{SECRET}", "--bootstrap-server", "127.0.0.1:1", "describe"],
    ):
        _no_secret(run_cli(*debug, "--zookeeper", chroot.connect, *args))
    _no_secret(
        run_cli(*debug, "--zookeeper", chroot.connect, "describe", env={"KQUOTACTL_ZK_AUTH": f"digest:a:{SECRET}"})
    )


@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_jaas_and_command_config_passwords_never_printed(tmp_path, debug) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(
        'Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="zk" '
        f'password="{SECRET}"; }};\n'
    )
    broken_jaas = tmp_path / "broken.conf"
    broken_jaas.write_text(f'Client {{ com.example.Unknown required password="{SECRET}"; }};\n')
    props = tmp_path / "admin.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{SECRET}";\nssl.key.password={SECRET}\nssl.keystore.password={SECRET}\n'
    )
    bad_props = tmp_path / "bad.properties"
    bad_props.write_text(
        f"sasl.jaas.config=not a jaas line {SECRET}\nsecurity.protocol=SASL_SSL\nsasl.password={SECRET}\n"
    )
    for args in (
        ["--zookeeper", "127.0.0.1:1", "--connect-timeout", "1", "--zk-sasl-jaas", str(jaas), "describe"],
        ["--zookeeper", "127.0.0.1:1", "--connect-timeout", "1", "--zk-sasl-jaas", str(broken_jaas), "describe"],
        ["--bootstrap-server", "127.0.0.1:1", "--connect-timeout", "1", "--command-config", str(props), "describe"],
        ["--bootstrap-server", "127.0.0.1:1", "--connect-timeout", "1", "--command-config", str(bad_props), "describe"],
        ["--zookeeper", "127.0.0.1:1", "--command-config", str(props), "describe"],
    ):
        r = run_cli(*debug, *args)
        assert r.exit_code == 1
        _no_secret(r)
    r = run_subprocess(
        *debug,
        "--zookeeper",
        "127.0.0.1:1",
        "--connect-timeout",
        "1",
        "describe",
        env={"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"},
    )
    assert r.exit_code == 1
    _no_secret(r)


# -- manifests: bombs, huge and malformed files ------------------------------------------------------------

LAUGHS = "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['lol'] * 9)}]\n"
    for p, c in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
BAD_MANIFESTS = {
    "billion-laughs": (LAUGHS + "quotas: *i\n", ":1: unknown key"),
    "laughs-in-config": (
        LAUGHS + "quotas:\n- {entity: {user: a}, config: *i}\n",
        "config must be a mapping",
    ),
    "laughs-in-owner": (LAUGHS + "quotas:\n- {entity: {user: a}, config: {producer_byte_rate: 1}, owner: *i}\n", ":"),
    "nested-100k": ("quotas: " + "[" * 100_000 + "]" * 100_000 + "\n", ":1: invalid YAML: nested deeper"),
    "nested-maps": ("quotas: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", "nested deeper"),
    "self-alias": ("prune: &p [*p]\nquotas: []\n", ":1:"),
    "duplicate-top-key": ("quotas: []\nquotas: []\n", ":2: duplicate key 'quotas'"),
    "duplicate-config-key": (
        "quotas:\n- entity: {user: a}\n  config: {producer_byte_rate: 1, producer_byte_rate: 2}\n",
        ":3: duplicate key 'producer_byte_rate'",
    ),
    "duplicate-entity": (
        "quotas:\n- {entity: {user: a}, config: {producer_byte_rate: 1}}\n"
        "- {entity: {user: a}, config: {consumer_byte_rate: 1}}\n",
        "declared twice",
    ),
    "list-document": ("- 1\n- 2\n", ":1: the manifest must be a mapping"),
    "scalar-document": ("just words\n", ":1: the manifest must be a mapping"),
    "python-tag": ("!!python/object/apply:os.system ['touch /tmp/kquotactl-pwned']\n", ":1:"),
    "python-name-tag": ("quotas: !!python/name:os.system\n", ":1:"),
    "nul-byte": ("quotas: []\x00\n", "invalid YAML"),
    "second-document": ("quotas: []\n---\n- 1\n", ":3:"),
    "huge-scalar": ("quotas: '" + "x" * 20_000_000 + "'\n", ":1: quotas must be a list"),
    "huge-name": ("quotas:\n- {entity: {user: '" + "u" * 1_000_000 + "'}, config: {producer_byte_rate: 1}}\n", ":2:"),
    "bad-value": ("quotas:\n- {entity: {user: a}, config: {producer_byte_rate: 1e400}}\n", ":2:"),
    "ip-with-user": ("quotas:\n- {entity: {user: a, ip: 1.2.3.4}, config: {producer_byte_rate: 1}}\n", ":2:"),
}


@pytest.mark.zookeeper
@pytest.mark.parametrize("case", sorted(BAD_MANIFESTS))
def test_bad_manifests_are_rejected_quickly_with_a_line_and_nothing_is_written(chroot, tmp_path, case) -> None:
    import time

    COUNTS.fuzzed += 1
    text, needle = BAD_MANIFESTS[case]
    f = tmp_path / "q.yaml"
    f.write_text(text)
    before = _tree(chroot)
    for args in (["validate", "-f", str(f)], ["--zookeeper", chroot.connect, "apply", "-f", str(f), "--yes"]):
        t0 = time.monotonic()
        r = run_cli(*args)
        elapsed = time.monotonic() - t0
        assert r.exit_code == 1, (case, r.stdout[-500:])
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-2000:]
        assert f"{f}:" in r.stderr and needle in r.stderr, (case, r.stderr[-1000:])
        assert len(r.stderr) < 20_000  # a 1 MB name or 20 MB scalar is not echoed back
        assert elapsed < 20, (case, elapsed)
    assert _tree(chroot) == before
    assert not os.path.exists("/tmp/kquotactl-pwned")


def test_invalid_utf8_manifest_file_and_stdin_are_one_line_errors(tmp_path) -> None:
    f = tmp_path / "q.yaml"
    f.write_bytes(b"quotas:\n- {entity: {user: \xff\xfe}, config: {producer_byte_rate: 1}}\n")
    r = run_cli("validate", "-f", str(f))
    assert r.exit_code == 1 and str(f) in r.stderr and "Traceback" not in r.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}
    p = subprocess.run(
        [sys.executable, "-m", "kquotactl", "validate", "-f", "-"],
        input=b"quotas:\n- {entity: {user: \xff}, config: {producer_byte_rate: 1}}\n",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 1 and b"Traceback" not in p.stderr and b"internal error" not in p.stderr, p.stderr
    assert p.stderr.startswith(b"<stdin>: byte 0xFF on line 2, column 19 is not UTF-8"), p.stderr  # any locale


FRAGMENTS = [
    "quotas:", "prune:", "\n", "\n- ", "  ", "- ", "entity:", "config:", "{", "}", "[", "]", ", ", ": ",
    "user: alice", "client-id: <default>", "ip: 192.0.2.1", "producer_byte_rate: 10MiB", "request_percentage: 50",
    "connection_creation_rate: 5", "owner: x", "&a ", "*a", "!!str ", "!!binary ", "'", '"', "#", "---\n", "...\n",
    "~", "null", "1e309", "-1", "0x10", "users/*", "\t", "%YAML 1.1\n", "? ", "|", ">", "\\u0000", "\x00", "é",
]  # fmt: skip
manifest_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=30).map("".join)


@FUZZ
@given(text=manifest_text)
def test_fuzzed_manifests_load_or_fail_with_file_and_line(text) -> None:
    from kquotactl.core.manifest import ManifestError
    from kquotactl.manifests.loader import load_text

    COUNTS.fuzzed += 1
    try:
        load_text(text, "m.yaml")
    except ManifestError as e:
        assert str(e).startswith("m.yaml"), str(e)
        assert one_line(str(e))


@pytest.mark.zookeeper
@pytest.mark.parametrize("debug", [[], ["--debug", "-v"]])
def test_context_passwords_never_printed(chroot, tmp_path, debug) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(
        "Client { org.apache.zookeeper.server.auth.DigestLoginModule required "
        f'username="zk" password="{SECRET}"; }};\n'
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        "current-context: prod\ncontexts:\n"
        f"  prod: {{zookeeper: '{chroot.connect}', zk-auth: 'digest:admin:{SECRET}'}}\n"
        f"  down: {{zookeeper: '127.0.0.1:1', zk-auth: 'digest:admin:{SECRET}', connect-timeout: 1}}\n"
        f"  sasl: {{zookeeper: '127.0.0.1:1', zk-sasl-jaas: '{jaas}', connect-timeout: 1}}\n"
        f"  bad: {{zookeeper: '{chroot.connect}', zk-auth: 'bogus{SECRET}'}}\n"
    )
    cfg = ("--config", str(config))
    for args in (
        ["config", "get-contexts", "-o", "json"],
        ["config", "get-contexts", "-o", "yaml"],
        ["config", "get-contexts", "-o", "table"],
        ["config", "current-context"],
        ["describe"],
        ["alter", "--user", "a", "--add-config", "producer_byte_rate=1"],
        ["alter", "--user", "a", "--add-config", "producer_byte_rat=1"],
        ["--context", "down", "describe"],
        ["--context", "sasl", "describe"],
        ["--context", "bad", "describe"],
        ["--context", "nope", "describe"],
    ):
        r = run_cli(*debug, *cfg, *args)
        assert "Traceback" not in r.stderr
        _no_secret(r)


PROP_KEYS = [
    "security.protocol", "sasl.mechanism", "sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.type",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.key.password", "request.timeout.ms", "client.id",
    "ssl.endpoint.identification.algorithm", "sasl.kerberos.service.name", "x",
]  # fmt: skip
PROP_VALUES = [
    "SASL_SSL", "SASL_PLAINTEXT", "SSL", "PLAINTEXT", "PLAIN", "SCRAM-SHA-512", "GSSAPI", "PEM", "JKS", "/nonexistent",
    "-1", "0", "30000", "1e3", "", " ", 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
    f'password="{SECRET}";', f"com.x.Y required password={SECRET}", "required", ";", '"', "\\",
]  # fmt: skip


@FUZZ
@given(props=st.dictionaries(st.sampled_from(PROP_KEYS), st.one_of(st.sampled_from(PROP_VALUES), st.text(max_size=20))))
def test_fuzzed_command_config_and_jaas_never_raise_anything_else_and_never_echo_passwords(props) -> None:
    from kquotactl.connection.clientprops import parse_client_properties
    from kquotactl.connection.jaas import parse_module

    COUNTS.fuzzed += 1
    secret_keys = ("sasl.jaas.config", "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password")
    props = {k: v if k in secret_keys or SECRET not in v else "x" for k, v in props.items()}  # passwords where they go
    try:
        settings = parse_client_properties(props)
    except QuotaError as e:
        assert SECRET not in str(e)
    else:
        assert SECRET not in repr(settings)
    try:
        parse_module(props.get("sasl.jaas.config", ""))
    except QuotaError as e:
        assert SECRET not in str(e)
