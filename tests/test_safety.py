"""Operator safety (issue 16, rules 1 and 2), driven through the real CLI against a real ZooKeeper.

Rule 1: an ambiguous or empty target is refused, never guessed. Rule 2: every failure is one line that names the
cause, a non-zero exit, nothing half-done.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import run_cli


def zk(chroot, *args: str, input: str | None = None):
    return run_cli("--zookeeper", chroot.connect, *args, input=input)


def one_error_line(r, *fragments: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1, (r.exit_code, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("kquotactl: error: "), r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def manifest(tmp_path: Path, n: int, name: str = "q.yaml") -> str:
    p = tmp_path / name
    p.write_text(
        "quotas:\n"
        + "".join(f"- {{entity: {{user: u{i:05d}}}, config: {{producer_byte_rate: {i + 1}}}}}\n" for i in range(n))
    )
    return str(p)


# -- rule 1: empty names ----------------------------------------------------------------------------------------

EMPTY = [
    (["--user", ""], "--user is empty", "--user-defaults"),
    (["--client-id", ""], "--client-id is empty", "--client-defaults"),
    (["--client", ""], "--client-id is empty", "--client-defaults"),
    (["--ip", ""], "--ip is empty", "--ip-defaults"),
    (["--user", "alice", "--client-id", ""], "--client-id is empty", "--client-defaults"),
    (["--entity-type", "users", "--entity-name", ""], "--entity-name is empty", "--entity-default"),
    (
        ["--entity-type", "users", "--entity-name", "a", "--entity-type", "clients", "--entity-name", ""],
        "--entity-name is empty",
        "--client-defaults",
    ),
]


@pytest.mark.zookeeper
@pytest.mark.parametrize(("entity", "what", "hint"), EMPTY, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_an_empty_name_is_refused_and_never_becomes_the_default(chroot, entity, what, hint) -> None:
    before = chroot.snapshot()
    key = "connection_creation_rate=5" if "--ip" in entity else "producer_byte_rate=5"
    one_error_line(zk(chroot, "alter", *entity, "--add-config", key), what, hint)
    one_error_line(zk(chroot, "describe", *entity), what)
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_an_empty_name_is_refused_in_kafka_configs_flat_form_too(chroot) -> None:
    before = chroot.snapshot()
    r = zk(chroot, "--alter", "--entity-type", "users", "--entity-name", "", "--add-config", "producer_byte_rate=5")
    one_error_line(r, "--entity-name is empty")
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_the_defaults_are_still_named_by_the_default_flags(chroot) -> None:
    assert zk(chroot, "alter", "--user-defaults", "--add-config", "producer_byte_rate=5").exit_code == 0
    r = zk(chroot, "--alter", "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=6")
    assert r.exit_code == 0, r.stderr
    assert chroot.children("/config/users") == ["<default>"]
    assert chroot.children("/config/clients") == ["<default>"]


# -- rule 1: "<default>" ----------------------------------------------------------------------------------------


@pytest.mark.zookeeper
@pytest.mark.parametrize(
    ("entity", "hint"),
    [
        (["--user", "<default>"], "--user-defaults"),
        (["--client-id", "<default>"], "--client-defaults"),
        (["--user", "alice", "--client-id", "<default>"], "--client-defaults"),
        (["--entity-type", "users", "--entity-name", "<default>"], "--entity-default"),
    ],
)
def test_a_user_or_client_named_default_is_refused_as_ambiguous(chroot, entity, hint) -> None:
    before = chroot.snapshot()
    one_error_line(zk(chroot, "alter", *entity, "--add-config", "producer_byte_rate=5"), "ambiguous", hint)
    one_error_line(zk(chroot, "describe", *entity), "ambiguous", "--literal-names")
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_literal_names_reaches_the_real_user_and_every_output_tells_it_from_the_default(chroot) -> None:
    assert zk(chroot, "alter", "--user-defaults", "--add-config", "producer_byte_rate=1").exit_code == 0
    r = zk(chroot, "alter", "--user", "<default>", "--literal-names", "--add-config", "producer_byte_rate=2")
    assert r.exit_code == 0, r.stderr
    assert chroot.children("/config/users") == ["%3Cdefault%3E", "<default>"]
    # json: null is the default, the string is the name
    out = json.loads(zk(chroot, "describe", "-o", "json").stdout)
    assert [x["entity"] for x in out] == [{"user": None}, {"user": "<default>"}]
    # table: <default> and {name:<default>}
    table = zk(chroot, "describe", "-o", "table").stdout
    assert "{name:<default>}" in table and table.count("<default>") == 2
    # kafka-configs lines
    lines = zk(chroot, "describe", "-o", "kafka").stdout.splitlines()
    assert lines == [
        "Configs for default user-principal are producer_byte_rate=1",
        "Configs for user-principal '<default>' are producer_byte_rate=2",
    ]
    # one entity each, by the explicit spellings
    assert json.loads(zk(chroot, "describe", "--user-defaults", "-o", "json").stdout)[0]["config"] == {
        "producer_byte_rate": 1
    }
    r = zk(chroot, "describe", "--user", "<default>", "--literal-names", "-o", "json")
    assert json.loads(r.stdout) == [{"entity": {"user": "<default>"}, "config": {"producer_byte_rate": 2}}]
    # the result line of alter names it so too
    r = zk(
        chroot, "alter", "--user", "<default>", "--literal-names", "--add-config", "producer_byte_rate=3", "-o", "table"
    )
    assert r.stdout.startswith("updated user={name:<default>}:"), r.stdout
    r = zk(chroot, "--alter", "--entity-type", "users", "--entity-name", "<default>", "--literal-names",
           "--add-config", "producer_byte_rate=4")  # fmt: skip
    assert r.stdout.strip() == "Completed updating config for entity: user-principal '<default>'."


@pytest.mark.zookeeper
def test_ip_default_marker_is_the_default_ip_as_in_kafka_configs(chroot) -> None:
    assert zk(chroot, "alter", "--ip", "<default>", "--add-config", "connection_creation_rate=5").exit_code == 0
    assert chroot.children("/config/ips") == ["<default>"]


# -- rule 1: repeated options and keys --------------------------------------------------------------------------


@pytest.mark.zookeeper
@pytest.mark.parametrize(
    "args",
    [
        ["alter", "--user", "alice", "--user", "bob", "--add-config", "producer_byte_rate=5"],
        ["alter", "--user", "alice", "--user", "alice", "--add-config", "producer_byte_rate=5"],
        ["alter", "--client", "a", "--client-id", "b", "--add-config", "producer_byte_rate=5"],
        ["alter", "--user", "a", "--add-config", "producer_byte_rate=5", "--add-config", "consumer_byte_rate=5"],
        ["alter", "--user", "a", "--add-config", "producer_byte_rate=5", "-o", "json", "-o", "table"],
        ["--timeout", "5", "alter", "--user", "a", "--add-config", "producer_byte_rate=5", "--timeout", "9"],
        ["--alter", "--user", "a", "--user", "b", "--add-config", "producer_byte_rate=5"],
        ["describe", "--ip", "1.2.3.4", "--ip", "1.2.3.5"],
        ["export", "--out", "a.yaml", "--out", "b.yaml"],
        ["plan", "-f", "x.yaml", "--out", "a.json", "--out", "b.json"],
        ["explain", "--user", "a", "--user", "b", "--example"],
    ],
    ids=lambda a: " ".join(a),
)
def test_an_option_given_twice_is_refused_not_the_last_one_kept(chroot, args) -> None:
    before = chroot.snapshot()
    r = zk(chroot, *args)
    one_error_line(r, "given more than once")
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_the_zookeeper_option_given_twice_is_refused(chroot) -> None:
    r = run_cli("--zookeeper", chroot.connect, "describe", "--zookeeper", chroot.connect + "x")
    one_error_line(r, "--zookeeper given more than once")


@pytest.mark.zookeeper
def test_repeatable_options_and_positional_pairs_stay_accepted(chroot) -> None:
    pair = ["--entity-type", "users", "--entity-name", "a", "--entity-type", "clients", "--entity-name", "c"]
    deletes = ["--delete-config", "consumer_byte_rate,request_percentage", "--delete-config", "request_rate"]
    r = zk(chroot, "--alter", *pair, "--add-config", "producer_byte_rate=5", *deletes, "--if-exists", "--if-exists")
    assert r.exit_code == 0, r.stderr
    assert chroot.children("/config/users/a/clients") == ["c"]


@pytest.mark.zookeeper
@pytest.mark.parametrize(
    "config",
    ["producer_byte_rate=5,producer_byte_rate=6", "producer_byte_rate=5, producer_byte_rate = 5", "a=[1,2],a=3"],
)
def test_a_key_given_twice_in_add_config_is_refused(chroot, config) -> None:
    before = chroot.snapshot()
    one_error_line(zk(chroot, "alter", "--user", "a", "--add-config", config), "given twice", "give each key once")
    assert chroot.snapshot() == before


# -- rule 1: a chroot no broker uses ----------------------------------------------------------------------------


@pytest.fixture
def bare_chroot(zk_server, zk_admin):
    """A chroot with no /brokers: what a forgotten or mistyped chroot looks like."""
    root = f"/bare-{uuid.uuid4().hex[:12]}"
    zk_admin.ensure_path(root)
    yield f"{zk_server.connect}{root}", root
    zk_admin.delete(root, recursive=True)


@pytest.mark.zookeeper
def test_writes_into_a_chroot_without_brokers_are_refused_reads_warn(bare_chroot, zk_admin, tmp_path) -> None:
    connect, root = bare_chroot
    r = run_cli("--zookeeper", connect, "alter", "--user", "a", "--add-config", "producer_byte_rate=5")
    one_error_line(r, "has no /brokers node", "--allow-no-brokers", "nothing written")
    r = run_cli("--zookeeper", connect, "apply", "-f", manifest(tmp_path, 3), "--yes")
    one_error_line(r, "has no /brokers node", "nothing written")
    assert r.stdout == ""  # refused before the plan is shown
    assert zk_admin.get_children(root) == []  # not even /config
    r = run_cli("--zookeeper", connect, "describe", "-o", "json")
    assert r.exit_code == 0 and r.stdout.strip() == "[]" and "warning: " in r.stderr and "/brokers" in r.stderr
    r = run_cli("--zookeeper", connect, "alter", "--user", "a", "--add-config", "producer_byte_rate=5", "--dry-run")
    assert r.exit_code == 0 and "/brokers" in r.stderr
    assert zk_admin.get_children(root) == []
    # the override: preparing a cluster before its brokers start
    r = run_cli(
        "--zookeeper", connect, "--allow-no-brokers", "alter", "--user", "a", "--add-config", "producer_byte_rate=5"
    )
    assert r.exit_code == 0, r.stderr
    assert zk_admin.get_children(root + "/config/users") == ["a"]
    r = run_cli("--zookeeper", connect, "--allow-no-brokers", "apply", "-f", manifest(tmp_path, 3), "--yes")
    assert r.exit_code == 0, r.stderr


def test_allow_no_brokers_is_for_zookeeper_only() -> None:
    r = run_cli("--bootstrap-server", "127.0.0.1:1", "--allow-no-brokers", "describe")
    one_error_line(r, "--allow-no-brokers apply to --zookeeper only")


# -- rule 2: connection failures name the cause, at once --------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "cause"),
    [
        (["--zookeeper", "127.0.0.1:1"], "cannot connect to ZooKeeper at 127.0.0.1:1: connection refused"),
        (["--zookeeper", "127.0.0.1:1,127.0.0.1:2/kafka"], "127.0.0.1:2: connection refused"),
        (["--zookeeper", "no-such-host.invalid:2181"], "unknown host"),
        (["--bootstrap-server", "127.0.0.1:1"], "cannot connect to Kafka broker 127.0.0.1:1: connection refused"),
        (["--bootstrap-server", "no-such-host.invalid:9092"], "unknown host"),
        (["--bootstrap-controller", "127.0.0.1:1"], "Kafka controller 127.0.0.1:1: connection refused"),
    ],
)
def test_unreachable_clusters_fail_at_once_naming_why(target, cause) -> None:
    t = time.monotonic()
    r = run_cli(*target, "--connect-timeout", "20", "describe")
    assert time.monotonic() - t < 5  # not the 20 s connect timeout
    one_error_line(r, cause)


# -- rule 2: files ----------------------------------------------------------------------------------------------


@pytest.mark.zookeeper
def test_output_files_that_cannot_be_written_are_one_line_errors_before_any_work(chroot, tmp_path) -> None:
    m = manifest(tmp_path, 3)
    before = chroot.snapshot()
    missing = str(tmp_path / "nonexistent" / "x.yaml")
    one_error_line(zk(chroot, "export", "--out", missing), "--out", "no such directory")
    one_error_line(zk(chroot, "export", "--out", str(tmp_path)), "is a directory")
    one_error_line(zk(chroot, "plan", "-f", m, "--out", missing), "--out", "no such directory")
    one_error_line(zk(chroot, "apply", "-f", m, "--yes", "--log", missing), "--log", "no such directory")
    assert chroot.snapshot() == before  # the apply never started
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if not os.access(ro, os.W_OK):  # (root ignores permissions)
            one_error_line(zk(chroot, "export", "--out", str(ro / "x.yaml")), "permission denied")
            one_error_line(zk(chroot, "apply", "-f", m, "--yes", "--log", str(ro / "l")), "permission denied")
    finally:
        ro.chmod(0o700)
    assert chroot.snapshot() == before
    assert not (tmp_path / "nonexistent").exists()


def test_impact_outputs_never_create_missing_parent_directories(tmp_path) -> None:
    missing = tmp_path / "no" / "such"
    one_error_line(run_cli("impact", "generate", str(missing / "t.csv"), "--rows", "10"), "no such directory")
    r = run_cli("impact", "generate", str(tmp_path / "t.csv"), "--rows", "10", "--quotas-out", str(missing / "q.yaml"))
    one_error_line(r, "--quotas-out", "no such directory")
    assert not (tmp_path / "t.csv").exists()  # checked before anything was generated
    one_error_line(run_cli("impact", "generate", str(missing), "--rows", "10", "--files", "2"), "no such directory")
    assert not (tmp_path / "no").exists()
    assert run_cli("impact", "generate", str(tmp_path / "t.csv"), "--rows", "50").exit_code == 0
    q = manifest(tmp_path, 2)
    r = run_cli("impact", "run", str(tmp_path / "t.csv"), "-f", q, "--engine", "local", "--out", str(missing))
    one_error_line(r, "--out", "no such directory")
    assert not (tmp_path / "no").exists()


# -- rule 2: pipes, prompts, Ctrl-C -----------------------------------------------------------------------------


@pytest.mark.zookeeper
def test_describe_into_a_closed_pipe_is_not_a_failure(chroot, tmp_path) -> None:
    assert zk(chroot, "apply", "-f", manifest(tmp_path, 1500), "--yes").exit_code == 0
    p = subprocess.Popen(
        [sys.executable, "-m", "kquotactl", "--zookeeper", chroot.connect, "describe", "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout is not None and p.stdout.readline()
    p.stdout.close()  # `| head -1`
    rc = p.wait(timeout=60)
    err = p.stderr.read().decode() if p.stderr else ""
    assert rc == 0 and err == "", (rc, err)


@pytest.mark.zookeeper
def test_declining_the_apply_prompt_writes_nothing_and_exits_2(chroot, tmp_path) -> None:
    import pty

    before = chroot.snapshot()
    master, slave = pty.openpty()
    p = subprocess.Popen(
        [sys.executable, "-m", "kquotactl", "--zookeeper", chroot.connect, "apply", "-f", manifest(tmp_path, 2)],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    os.write(master, b"n\n")
    _out, err = p.communicate(timeout=60)
    os.close(master)
    assert p.returncode == 2, err
    assert "nothing was written" in err.decode() and "error" not in err.decode()
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_ctrl_c_during_apply_reports_what_was_applied_and_exits_130(chroot, tmp_path) -> None:
    n = 4000
    m = manifest(tmp_path, n)
    p = subprocess.Popen(
        [sys.executable, "-m", "kquotactl", "--zookeeper", chroot.connect, "apply", "-f", m, "--yes"],
        stdout=subprocess.DEVNULL,  # the plan table: a pipe nobody reads would block the apply
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # interrupt once the first transactions have landed
        if chroot.exists("/config/users") and len(chroot.children("/config/users")) >= 1000:
            break
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-2000:]
    lines = err.splitlines()
    assert lines[0] == "kquotactl: apply stopped: interrupted (Ctrl-C)" and len(lines) < 40, err[-2000:]
    (report,) = {w.rstrip(";:") for x in lines for w in x.split() if "kquotactl-apply-" in w}
    every = Path(report).read_text().splitlines()
    Path(report).unlink()
    applied = {x.split(": ", 1)[1] for x in every if x.startswith("applied: ")}
    missing = {x.split(": ", 1)[1] for x in every if x.startswith("not applied: ")}
    unknown = {x.split(": ", 1)[1] for x in every if x.startswith("outcome unknown: ")}
    assert applied and missing and not unknown, err[-2000:]  # the transaction in flight is read back
    assert len(applied) + len(missing) + len(unknown) == n
    assert lines[-1].startswith("kquotactl: error: interrupted apply: ") and "re-run apply" in lines[-1]
    assert "Traceback" not in err
    live = {f"user={u}" for u in chroot.children("/config/users")}
    assert applied == live  # what it says is what is there
    r = zk(chroot, "apply", "-f", m, "--yes")  # and a re-run converges
    assert r.exit_code == 0, r.stderr
    assert len(chroot.children("/config/users")) == n


@pytest.mark.kafka
def test_through_a_real_broker_default_and_literal_default_stay_apart(kraft) -> None:
    """The bootstrap path (TCP probe first, then the admin API): both spellings reach their own entity, and
    kafka-configs' alter lines and describe output tell them apart."""
    b = ["--bootstrap-server", kraft.bootstrap]
    r = run_cli(*b, "--alter", "--user-defaults", "--add-config", "producer_byte_rate=1")
    assert r.stdout.strip() == "Completed updating default config for users in the cluster.", r.stderr
    r = run_cli(*b, "--alter", "--user", "<default>", "--literal-names", "--add-config", "producer_byte_rate=2")
    assert r.stdout.strip() == "Completed updating config for user <default>.", r.stderr
    one_error_line(run_cli(*b, "--alter", "--user", "<default>", "--add-config", "producer_byte_rate=3"), "ambiguous")
    one_error_line(run_cli(*b, "--alter", "--user", "", "--add-config", "producer_byte_rate=3"), "--user-defaults")
    out = json.loads(run_cli(*b, "describe", "--entity-type", "users", "-o", "json").stdout)
    assert out == [
        {"entity": {"user": None}, "config": {"producer_byte_rate": 1}},
        {"entity": {"user": "<default>"}, "config": {"producer_byte_rate": 2}},
    ]
    lines = run_cli(*b, "describe", "--entity-type", "users", "-o", "kafka").stdout.splitlines()
    assert lines == [
        "Quota configs for the default user-principal are producer_byte_rate=1.0",
        "Quota configs for user-principal '<default>' are producer_byte_rate=2.0",
    ]


@pytest.mark.zookeeper
def test_completion_offers_a_real_name_default_only_with_literal_names(chroot) -> None:
    from test_completion import complete

    assert (
        zk(chroot, "alter", "--user", "<default>", "--literal-names", "--add-config", "producer_byte_rate=1").exit_code
        == 0
    )
    assert zk(chroot, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1").exit_code == 0
    line = f"kquotactl --zookeeper {chroot.connect} alter --user "
    assert complete("bash", line) == ["alice"]
    assert complete("bash", f"kquotactl --zookeeper {chroot.connect} alter --literal-names --user ") == [
        "\\<default\\>",  # bash inserts replies verbatim: quoted for it
        "alice",
    ]


@pytest.mark.zookeeper
@pytest.mark.parametrize("option", ["--zookeeper", "--bootstrap-server", "--context", "--config", "--command-config"])
def test_an_empty_cluster_option_never_falls_back_to_the_current_context(chroot, tmp_path, option) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"current-context: prod\ncontexts:\n  prod:\n    zookeeper: {chroot.connect}\n")
    before = chroot.snapshot()
    args = ["--config", str(cfg)] if option != "--config" else []
    r = run_cli(*args, option, "", "alter", "--user", "a", "--add-config", "producer_byte_rate=5")
    one_error_line(r, f"{option} is empty")
    assert chroot.snapshot() == before
    r = run_cli("--config", str(cfg), "alter", "--user", "a", "--add-config", "producer_byte_rate=5")
    assert r.exit_code == 0, r.stderr  # (the context itself works)


@pytest.mark.zookeeper
def test_export_and_plan_out_replace_the_file_whole_and_leave_no_temporary_behind(chroot, tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "q.yaml").write_text("old\n")
    assert zk(chroot, "alter", "--user", "a", "--add-config", "producer_byte_rate=5").exit_code == 0
    assert zk(chroot, "export", "--out", str(out / "q.yaml")).exit_code == 0
    assert "user: a" in (out / "q.yaml").read_text()
    r = zk(chroot, "plan", "-f", str(out / "q.yaml"), "--out", str(out / "plan.json"))
    assert r.exit_code == 0, r.stderr
    assert json.loads((out / "plan.json").read_text())["changes"] == []
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "q.yaml"]
    assert oct((out / "plan.json").stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


@pytest.mark.zookeeper
def test_completion_still_works_on_a_line_that_repeats_an_option(chroot) -> None:
    from test_completion import complete

    assert zk(chroot, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1").exit_code == 0
    assert complete("bash", f"kquotactl --zookeeper {chroot.connect} alter --user x --user al") == ["alice"]


# -- issue 26, rule 1: an unset variable is never a target; a name that is one of our options is a missing value --

OPTION_AS_NAME = [
    (["alter", "--user", "--client-defaults", "--add-config", "producer_byte_rate=5"], "--user '--client-defaults'"),
    (["alter", "--client-id", "--user-defaults", "--add-config", "producer_byte_rate=5"], "--client-id '--user-"),
    (["alter", "--ip", "--ip-defaults", "--add-config", "connection_creation_rate=5"], "--ip '--ip-defaults'"),
    (["describe", "--user", "--ip"], "--user '--ip'"),
    (
        [
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "--entity-default",
            "--add-config",
            "producer_byte_rate=5",
        ],
        "--entity-name '--entity-default'",
    ),
]


@pytest.mark.zookeeper
@pytest.mark.parametrize(("args", "what"), OPTION_AS_NAME, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_a_name_that_is_one_of_our_options_is_refused_as_a_missing_value(chroot, args, what) -> None:
    """`--user "$U" --client-defaults` with U unset: kafka-configs would create the user `--client-defaults`."""
    before = chroot.snapshot()
    one_error_line(zk(chroot, *args), what, "is one of kquotactl's options", "an unset variable?")
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_literal_names_reaches_an_entity_named_like_an_option(chroot) -> None:
    r = zk(chroot, "alter", "--literal-names", "--user", "--client-defaults", "--add-config", "producer_byte_rate=5")
    assert r.exit_code == 0, r.stderr
    assert chroot.zk.exists(f"{chroot.root}/config/users/--client-defaults")
    assert "--client-defaults" in zk(chroot, "describe", "--literal-names", "--user", "--client-defaults").stdout


@pytest.mark.zookeeper
@pytest.mark.parametrize("option", ["--zookeeper", "--bootstrap-server", "--context"])
def test_a_cluster_option_whose_value_is_one_of_our_options_is_refused(chroot, option) -> None:
    before = chroot.snapshot()
    r = run_cli(option, "--user", "alter", "--user", "a", "--add-config", "producer_byte_rate=5")
    one_error_line(r, f"{option} '--user' is one of kquotactl's options", "an unset variable?")
    assert chroot.snapshot() == before


EMPTY_PATHS = [
    (["validate", "-f", ""], "-f is empty"),
    (["plan", "-f", ""], "-f is empty"),
    (["apply", "-f", "", "--yes"], "-f is empty"),
    (["apply", "-f", "", "--prune", "--yes"], "-f is empty"),
    (["apply", "--plan", ""], "--plan is empty"),
    (["explain", "-f", "", "--user", "a"], "-f is empty"),
    (["explain", "--connections", "", "-f", "."], "--connections is empty"),
    (["impact", "run", "", "-f", "."], "TRAFFIC is empty"),
]


@pytest.mark.zookeeper
@pytest.mark.parametrize(("args", "what"), EMPTY_PATHS, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_an_empty_path_is_refused_never_read_as_the_current_directory(chroot, tmp_path, monkeypatch, args, what):
    """`apply -f "$QUOTA_DIR"` with the variable unset must not apply (or prune with) the current directory."""
    (tmp_path / "q.yaml").write_text("quotas:\n- {entity: {user: a}, config: {producer_byte_rate: 5}}\n")
    monkeypatch.chdir(tmp_path)  # a directory that holds a valid manifest: reading it would write
    before = chroot.snapshot()
    one_error_line(zk(chroot, *args), what, "an unset variable?")
    assert chroot.snapshot() == before


def test_a_context_takes_one_cluster_and_both_given_is_refused(tmp_path) -> None:
    cfg = tmp_path / "config.yaml"
    r = run_cli(
        "--config", str(cfg), "config", "set-context", "prod", "--zookeeper", "a:2181", "--bootstrap-server", "b:9092"
    )
    one_error_line(r, "give one cluster for context 'prod'", "--zookeeper and --bootstrap-server")
    assert not cfg.exists()
