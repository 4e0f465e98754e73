"""Names that hold control characters or spaces, or are blank, are shown escaped (issue 26): one entity reads as one
entity in every output (tables, kafka-configs lines, plans, apply and alter reports, explain, verify, top, errors).
Against a real ZooKeeper and a real KRaft broker; the pure escaping on its own at the top.
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli, write_manifest
from kquotactl.core.entities import DEFAULT, Entity, display_name
from kquotactl.core.wording import escaped, shown_name

#: (name, how every human output shows it)
HOSTILE = [
    (" ", "' '"),
    ("a\tb", "'a\\tb'"),
    ("a\nb", "'a\\nb'"),
    ("\x1b[31mred", "'\\x1b[31mred'"),
    ("zero\u200bwidth", "'zero\\u200bwidth'"),
    ("\u202eevil", "'\\u202eevil'"),
    ("two words", "'two words'"),
    ("'quoted'", "\"'quoted'\""),
]
PLAIN = ["alice", "CN=svc-a,OU=payments,O=acme", "ünïcødé", "日本語", "a/b", "100%", "semi;colon=eq"]


@pytest.mark.parametrize(("name", "shown"), HOSTILE)
def test_a_hostile_name_is_one_quoted_escaped_token(name, shown) -> None:
    assert shown_name(name) == shown
    assert display_name(name) == shown
    assert shown.isprintable() and "\n" not in shown
    assert Entity(user=name, client_id=DEFAULT).label() == f"user={shown} client-id=<default>"


@pytest.mark.parametrize("name", PLAIN)
def test_a_plain_name_is_shown_as_itself(name) -> None:
    assert shown_name(name) == display_name(name) == name
    assert escaped(name) == name


def test_quoting_is_never_ambiguous() -> None:
    names = [n for n, _ in HOSTILE] + PLAIN + ["' '", '"x"', "'", "x'"]
    assert len({shown_name(n) for n in names}) == len(names)


def test_escaped_keeps_printable_text_and_escapes_the_rest() -> None:
    assert escaped("it's a\tb\u202e\udce9") == "it's a\\tb\\u202e\\xe9"  # a byte that was not UTF-8: the byte


def _only_visible(text: str, lines: int | None = None) -> None:
    assert "\x1b" not in text and "\u202e" not in text and "\u200b" not in text and "\t" not in text, text
    if lines is not None:
        assert len(text.strip("\n").splitlines()) == lines, text


def _users(chroot) -> None:
    for name, _ in HOSTILE:
        r = run_cli("--zookeeper", chroot.connect, "alter", "--user", name, "--add-config", "producer_byte_rate=5")
        assert r.exit_code == 0, (name, r.stderr)


@pytest.mark.zookeeper
def test_zookeeper_describe_alter_and_kafka_lines_show_each_name_as_one_entity(chroot) -> None:
    z = ["--zookeeper", chroot.connect]
    r = run_cli(*z, "alter", "--user", " ", "--add-config", "producer_byte_rate=5", "-o", "table")
    assert r.stdout.startswith("updated user=' ': producer_byte_rate = 5"), r.stdout
    _users(chroot)
    table = run_cli(*z, "describe", "-o", "table").stdout
    _only_visible(table, lines=1 + len(HOSTILE))
    for _, shown in HOSTILE:
        assert any(line.startswith(shown + " ") for line in table.splitlines()), (shown, table)
    kafka = run_cli(*z, "describe", "-o", "kafka").stdout
    _only_visible(kafka, lines=len(HOSTILE))
    assert "Configs for user-principal ' ' are producer_byte_rate=5" in kafka  # kafka-configs' own line
    assert "Configs for user-principal 'a\\tb' are producer_byte_rate=5" in kafka
    assert "Configs for user-principal '\\u202eevil' are producer_byte_rate=5" in kafka
    assert "Configs for user-principal 'two words' are producer_byte_rate=5" in kafka  # parity: as kafka-configs
    # JSON carries the names themselves
    names = {x["entity"]["user"] for x in json.loads(run_cli(*z, "describe", "-o", "json").stdout)}
    assert names == {n for n, _ in HOSTILE}
    # an error naming the entity
    r = run_cli(*z, "alter", "--user", "a\nb", "--delete-config", "consumer_byte_rate")
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1 and "user='a\\nb'" in r.stderr, r.stderr


@pytest.mark.zookeeper
def test_plan_apply_and_prune_name_a_blank_user_as_itself(chroot, tmp_path) -> None:
    z = ["--zookeeper", chroot.connect]
    entries = "".join(
        f"- {{entity: {{user: {json.dumps(n)}}}, config: {{producer_byte_rate: 7}}}}\n" for n, _ in HOSTILE
    )
    m = write_manifest(tmp_path, "quotas:\n" + entries)
    plan = run_cli(*z, "plan", "-f", m, "-o", "table")
    assert plan.exit_code == 2, plan.stderr
    _only_visible(plan.stdout)
    assert "users/' '" in plan.stdout and "users/\n" not in plan.stdout and "users/ " not in plan.stdout
    for _, shown in HOSTILE:
        assert f"users/{shown}" in plan.stdout, (shown, plan.stdout)
    r = run_cli(*z, "apply", "-f", m, "--yes", "-o", "table")
    assert r.exit_code == 0, r.stderr
    _only_visible(r.stdout + r.stderr)
    # prune: the blank user is named as itself in what would be removed
    keep = write_manifest(tmp_path, "prune: ['users/*']\nquotas: []\n", "empty.yaml")
    r = run_cli(*z, "plan", "-f", keep, "--prune", "-o", "table")
    _only_visible(r.stdout)
    assert "users/' '" in r.stdout, r.stdout


@pytest.mark.zookeeper
def test_explain_names_the_connection_and_its_entity_escaped(chroot, tmp_path) -> None:
    m = write_manifest(tmp_path, 'quotas:\n- {entity: {user: "a\\tb"}, config: {producer_byte_rate: 9}}\n')
    r = run_cli("-o", "table", "explain", "-f", m, "--user", "a\tb", "--client-id", "\x1b[2J")
    assert r.exit_code == 0, r.stderr
    _only_visible(r.stdout)
    assert "user 'a\\tb', client-id '\\x1b[2J'" in r.stdout, r.stdout
    assert "shared by every client of user 'a\\tb'" in r.stdout, r.stdout
    # where the limit comes from, and each precedence level, name the entity as plan does: never the stored form
    assert "users/'a\\tb'/clients/'\\x1b[2J'" in r.stdout and "%09" not in r.stdout, r.stdout
    assert any(line.split()[:2] == ["3", "users/'a\\tb'"] for line in r.stdout.splitlines()), r.stdout
    r = run_cli("-o", "json", "explain", "-f", m, "--user", "a\tb")
    assert json.loads(r.stdout)["quotas"][0]["entity_path"] == "users/a%09b"  # JSON keeps Kafka's stored path
    r = run_cli("-o", "table", "explain", "-f", m, "--user", " ")
    assert "user ' ', client-id ''" in r.stdout, r.stdout


def test_top_names_a_quota_id_escaped() -> None:
    from kquotactl.observe.throttled import QuotaIdKey

    assert QuotaIdKey(user="a\tb", client_id=" ").words() == "user 'a\\tb', client-id ' '"
    assert QuotaIdKey(user="alice", client_id="app").words() == "user alice, client-id app"


@pytest.mark.kafka
def test_through_a_real_broker_kafka_lines_verify_and_alter_show_names_escaped(kraft) -> None:
    b = ["--bootstrap-server", kraft.bootstrap]
    for name, _ in HOSTILE:
        r = run_cli(*b, "alter", "--user", name, "--add-config", "producer_byte_rate=5")
        assert r.exit_code == 0, (name, r.stderr)
    kafka = run_cli(*b, "describe", "-o", "kafka").stdout
    _only_visible(kafka, lines=len(HOSTILE))
    assert "Quota configs for user-principal ' ' are producer_byte_rate=5.0" in kafka
    assert "Quota configs for user-principal 'a\\nb' are producer_byte_rate=5.0" in kafka
    r = run_cli(*b, "--alter", "--user", "a\tb", "--add-config", "producer_byte_rate=6")
    assert r.stdout.strip() == "Completed updating config for user a\\tb.", r.stdout
    r = run_cli(*b, "--alter", "--user", " ", "--add-config", "producer_byte_rate=6")
    assert r.stdout.strip() == "Completed updating config for user ' '.", r.stdout
    r = run_cli(*b, "--alter", "--user", "alice", "--add-config", "producer_byte_rate=6")
    assert r.stdout.strip() == "Completed updating config for user alice.", r.stdout  # parity for a plain name
    r = run_cli(*b, "verify", "--user", "\u202eevil", "-o", "table")
    assert r.exit_code == 0, r.stderr
    _only_visible(r.stdout)
    assert "user='\\u202eevil'" in r.stdout, r.stdout


def test_impact_names_a_quota_id_escaped_and_keeps_the_metric_tag_spelling() -> None:
    from kquotactl.impact.output import qid_label

    assert qid_label({"user": "svc-700", "client-id": ""}) == "user=svc-700,client-id="  # empty: not in the quota-id
    assert qid_label({"user": " ", "client-id": "a\nb"}) == "user=' ',client-id='a\\nb'"
    assert qid_label({"ip": "10.0.0.1"}) == "ip=10.0.0.1"


@pytest.mark.jvm
@pytest.mark.kafka
def test_o_kafka_is_kafka_configs_own_output_with_control_characters_escaped(kraft, kafka_oracle) -> None:
    """The differential: kafka-configs 4.x's describe lines for hostile names, byte for byte, once its control
    characters are escaped; a blank, spaced or quoted name is exactly kafka-configs' line."""
    from fixtures_oracle import NEWEST_VERSION

    b = ["--bootstrap-server", kraft.bootstrap]
    for name, _ in HOSTILE:
        assert run_cli(*b, "alter", "--user", name, "--add-config", "producer_byte_rate=5").exit_code == 0
    forms = [["--entity-type", "users"], *(["--entity-type", "users", "--entity-name", n] for n, _ in HOSTILE)]
    head = ["--bootstrap-server", kraft.bootstrap, "--describe"]
    kafka = kafka_oracle(NEWEST_VERSION, "ConfigCommandOracle").ask_many([{"args": [*head, *f]} for f in forms])
    for form, k in zip(forms, kafka, strict=True):
        assert k["exit"] == 0, (form, k)
        ours = run_cli("-o", "kafka", *head, *form)
        lines = [ln for ln in k["out"].split("\n") if ln and not ln.startswith("SCRAM credential configs")]
        # a name holding a line break splits kafka-configs' own line in two: rejoin what one record printed
        records: list[str] = []
        for ln in lines:
            if ln.startswith("Quota configs for ") or not records:
                records.append(ln)
            else:
                records[-1] += "\n" + ln
        assert records and ours.exit_code == 0, (form, k, ours.stderr)
        assert sorted(ours.stdout.splitlines()) == sorted(escaped(r) for r in records), (form, ours.stdout, k["out"])
        assert len(records) == (len(HOSTILE) if form == forms[0] else 1), (form, records)  # one line per entity
