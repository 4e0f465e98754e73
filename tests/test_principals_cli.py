"""``--principal``, ``principal:`` and the principal lint offline: explain on the example set, validate, the pure
lint and the manifest loader (the broker side is tests/test_principals_kafka.py)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli, write_manifest
from kquotactl.core.entities import DEFAULT
from kquotactl.core.lint import lint
from kquotactl.core.manifest import ManifestError
from kquotactl.core.principals import BrokerPrincipals
from kquotactl.manifests.loader import load_text

RULES = "RULE:^CN=([^,]+),OU=payments,.*$/$1/L,DEFAULT"


def _principals(**kw: str) -> BrokerPrincipals:
    return BrokerPrincipals.of(
        {"super.users": kw.pop("super_users")} if "super_users" in kw else {}, None, ssl_rules=RULES, **kw
    )


def test_explain_maps_the_principal_with_the_given_rules():
    r = run_cli(
        "explain", "--example", "--principal", "CN=Alice, OU=payments, O=acme", "--ssl-principal-mapping-rules",
        RULES, "--client-id", "ingest", "-o", "json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["connection"]["user"] == "alice"
    assert "as the broker sees it: CN=Alice,OU=payments,O=acme" in r.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--principal", "CN=a,O=b"], "--ssl-principal-mapping-rules"),  # offline: rules neither given nor read
        (["--principal", "CN=a@R", "--kerberos-rules", "DEFAULT"], "--principal-type"),  # never guessed
        (["--principal", "a@R", "--kerberos-rules", "DEFAULT"], "--kerberos-realm"),
        (["--principal", "a@R", "--kerberos-rules", "RULE:[1:$1](a.*b)s/x/y/g/Q"], "unmatched substring"),
        (["--principal", "CN=a", "--ssl-principal-mapping-rules", "RULE:^CN=(?<=a)/$1/"], "not supported"),
        (["--principal", "CN=a", "--ssl-principal-mapping-rules", "RULE:^CN=(.*$/$1/"], "a '(' is never closed"),
        (["--principal", "CN=a", "--ssl-principal-mapping-rules", "RULE:^O=(.*)$/$1/"], "no ssl.principal"),
        (["--principal", "CN=a", "--user", "b", "--ssl-principal-mapping-rules", "DEFAULT"], "drop --user"),
        (["--principal-type", "ssl", "--user", "b"], "goes with --principal"),
        (["--principal", "T=a,CN=x", "--principal-type", "ssl", "--ssl-principal-mapping-rules",
          "DEFAULT"], "as the broker logs it"),
        (["--principal", "CN=a<b", "--ssl-principal-mapping-rules", "DEFAULT"], "X500Principal refuses it"),
    ],
)  # fmt: skip
def test_principal_errors_are_one_line_naming_the_problem(args, needle):
    r = run_cli("explain", "--example", *args)
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("kquotactl: error: ") and needle in lines[-1], r.stderr


def test_manifest_principal_entries_need_rules_and_map_with_them(tmp_path):
    text = """
    quotas:
      - entity: {principal: "CN=Svc-A,OU=payments,O=acme", client-id: app}
        config: {producer_byte_rate: 1MiB}
      - entity: {principal: {kerberos: "svc-b/host@EXAMPLE.COM"}}
        config: {producer_byte_rate: 2MiB}
    """
    path = write_manifest(tmp_path, text)
    r = run_cli("validate", "-f", path)
    assert r.exit_code == 1 and f"{path}:3: principal 'CN=Svc-A" in r.stderr and f"{path}:5: " in r.stderr
    r = run_cli(
        "validate", "-f", path, "--ssl-principal-mapping-rules", RULES, "--kerberos-rules", "DEFAULT",
        "--kerberos-realm", "EXAMPLE.COM", "-o", "json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    bp = _principals(kerberos_rules="DEFAULT", kerberos_realm="EXAMPLE.COM")
    m = load_text(text, "q.yaml", bp)
    assert [(e.entity.user, e.entity.client_id, e.principal) for e in m.entries] == [
        ("svc-a", "app", "CN=Svc-A,OU=payments,O=acme"),
        ("svc-b", None, "svc-b/host@EXAMPLE.COM"),
    ]


@pytest.mark.parametrize(
    ("entity", "needle"),
    [
        ('{principal: "CN=a,OU=payments,O=x", user: a}', "give user or principal, not both"),
        ("{principal: {ssl: CN=a, kerberos: a@R}}", "one of them"),
        ("{principal: {x509: CN=a}}", "x509"),
        ('{principal: "CN=a<b,OU=payments,O=x"}', "X500Principal refuses it"),
    ],
)
def test_manifest_principal_mistakes_have_line_numbers(entity, needle):
    with pytest.raises(ManifestError) as e:
        load_text(f"quotas:\n  - entity: {entity}\n    config: {{producer_byte_rate: 1}}\n", "q.yaml", _principals())
    assert e.value.problems[0].startswith("q.yaml:2") and needle in e.value.problems[0], e.value.problems


def test_lint_dn_like_users_and_defaults_that_capture_super_users():
    text = """
    quotas:
      - entity: {user: "<default>"}
        config: {producer_byte_rate: 1MiB}
      - entity: {user: "<default>", client-id: "<default>"}
        config: {consumer_byte_rate: 1MiB}
      - entity: {user: "CN=svc-a,OU=payments,O=acme"}
        config: {producer_byte_rate: 2MiB}
      - entity: {user: "CN=svc-b,OU=other,O=acme"}
        config: {producer_byte_rate: 2MiB}
      - entity: {user: admin}
        config: {producer_byte_rate: 100MiB}
    """
    m = load_text(text, "q.yaml")
    by_code = {}
    for w in lint(m, _principals(super_users="User:admin; User:ops;Group:x")):
        by_code.setdefault(w.code, []).append(w)
    dn = by_code["unmapped-dn"]
    assert len(dn) == 1 and "map that DN to the user 'svc-a'" in dn[0].message  # svc-b: DEFAULT keeps the DN
    captured = {(w.entity.user, w.entity.client_id): w.message for w in by_code["captures-super-user"]}
    # admin has its own producer_byte_rate entry, so users/<default> only captures ops there
    assert "'ops'" in captured[(DEFAULT, None)] and "'admin'" not in captured[(DEFAULT, None)]
    assert "'admin', 'ops'" in captured[(DEFAULT, DEFAULT)]
    # without the brokers' configs: a DN-like user is still pointed out, super users are unknown
    plain = lint(m)
    assert {w.code for w in plain} == {"unmapped-dn"} and len(plain) == 2


@pytest.mark.parametrize(
    ("text", "dn"), [("CN=a", True), (" ou = x,O=y", True), ("2.5.4.3=a", True), ("team=payments", False), ("a", False)]
)
def test_what_looks_like_a_dn(text, dn):
    from kquotactl.core.principals import looks_like_dn

    assert looks_like_dn(text) is dn


@pytest.mark.parametrize("command", ["describe", "alter"])
@pytest.mark.parametrize(
    ("flag", "value"),
    [("--ssl-principal-mapping-rules", RULES), ("--kerberos-rules", "DEFAULT"), ("--kerberos-realm", "EXAMPLE.COM")],
)
def test_rule_options_without_a_principal_are_refused_before_connecting(command, flag, value):
    """describe and alter use the rules only to map --principal: alone they would change nothing (a forgotten
    --principal?), so they are refused, naming the flag, before any cluster is asked (none is reachable here)."""
    extra = ["--add-config", "producer_byte_rate=1"] if command == "alter" else []
    r = run_cli("--zookeeper", "127.0.0.1:1/none", command, "--user", "alice", flag, value, *extra)
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert lines == [f"kquotactl: error: {flag} maps a --principal: give --principal, or drop {flag}"], r.stderr
