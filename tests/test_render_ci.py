"""plan / validate -o markdown, junit, sarif: checked against the formats' own schemas (tests/schemas/) and, for
markdown, against a CommonMark + GFM-table parser; offline and against a real ZooKeeper chroot."""

from __future__ import annotations

import json
import re
import textwrap
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.core.lint import lint
from kquotactl.core.plan import make_plan
from kquotactl.manifests.loader import load_text
from kquotactl.render.ci import (
    COLLAPSE_ROWS,
    MAX_CHARS,
    MAX_ROWS,
    code,
    invalid_report,
    junit_xml,
    markdown,
    md,
    plan_report,
    sarif,
    validate_report,
)

SCHEMAS = Path(__file__).parent / "schemas"

# line numbers matter: the SARIF and JUnit locations are asserted against them
MANIFEST = """\
prune: ["users/svc-*"]
quotas:
  - entity: {user: "<default>"}
    config: {consumer_byte_rate: 1MiB}
  - entity: {client-id: "app|1 *x* <b>&amp;"}
    config: {consumer_byte_rate: 2048, request_rate: 5}
  - entity: {user: alice}
    config: {producer_byte_rate: 10MiB}
    owner: team-a
  - entity: {user: bob}
    config: {request_percentage: 50}
"""
LIVE = [
    QuotaRecord(Entity.of(user="alice"), {"producer_byte_rate": 1024}),
    QuotaRecord(Entity.of(user="bob"), {"request_percentage": 50.0}),
    QuotaRecord(Entity.of(user="svc-old"), {"request_percentage": 25.0}),
]
NAME = "app|1 *x* <b>&amp;"
SHOWN = repr(NAME)  # a name holding spaces is shown quoted, as one token


@cache
def sarif_validator():
    import jsonschema

    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@cache
def junit_schema():
    import xmlschema

    return xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))


URI_REFERENCE = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-F]{2}")


def check_sarif(log: dict) -> dict:
    errors = sorted(sarif_validator().iter_errors(log), key=str)
    assert not errors, errors[0]
    for r in log["runs"][0]["results"]:  # the schema's "uri-reference" format, which jsonschema leaves unchecked
        for loc in r.get("locations", []):
            uri = loc["physicalLocation"]["artifactLocation"]["uri"]
            assert "".join(URI_REFERENCE.findall(uri)) == uri, uri
    return log


def check_junit(text: str) -> ET.Element:
    junit_schema().validate(text)
    return ET.fromstring(text)


def plan_fixture(name: str = "quotas.yaml"):
    manifest = load_text(MANIFEST, name)
    plan = make_plan(manifest, LIVE, prune=True)
    return plan_report(plan, manifest, lint(manifest), {"backend": "zookeeper", "cluster": "zk:2181/kafka"})


def results_by_rule(log: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in log["runs"][0]["results"]:
        out.setdefault(r["ruleId"], []).append(r)
    return out


def line_of(result: dict) -> tuple[str, int | None]:
    loc = result["locations"][0]["physicalLocation"]
    return loc["artifactLocation"]["uri"], loc.get("region", {}).get("startLine")


# -- the validators themselves can say no ----------------------------------------------------------------


def test_the_schema_validators_reject_broken_documents() -> None:
    log = sarif(plan_fixture())
    check_sarif(log)
    bad = json.loads(json.dumps(log))
    bad["runs"][0]["results"][0]["level"] = "fatal"
    assert list(sarif_validator().iter_errors(bad))
    bad = json.loads(json.dumps(log))
    bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert list(sarif_validator().iter_errors(bad))
    import xmlschema

    text = junit_xml(plan_fixture())
    check_junit(text)
    with pytest.raises(xmlschema.XMLSchemaValidationError):  # a suite without its failure count
        junit_schema().validate(text.replace('" failures="', '" failed="', 2))
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        junit_schema().validate(
            '<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase/></testsuite></testsuites>'
        )


# -- SARIF ---------------------------------------------------------------------------------------------


def test_sarif_plan_locates_changes_warnings_and_prunes_at_the_manifest_lines() -> None:
    log = check_sarif(sarif(plan_fixture()))
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    by = results_by_rule(log)
    assert set(by) == {"plan/create", "plan/update", "plan/delete", "lint/shadowed", "lint/not-enforced"}
    for rid, results in by.items():
        for r in results:
            assert rules[r["ruleIndex"]] == rid
    assert sorted(line_of(r) for r in by["plan/create"]) == [("quotas.yaml", 3), ("quotas.yaml", 5)]
    assert [line_of(r) for r in by["plan/update"]] == [("quotas.yaml", 7)]
    assert [line_of(r) for r in by["plan/delete"]] == [("quotas.yaml", 1)]  # the prune pattern that owns it
    assert (
        "svc-old" in by["plan/delete"][0]["message"]["text"]
        and "users/svc-*" in by["plan/delete"][0]["message"]["text"]
    )
    update = by["plan/update"][0]
    assert (
        "1 KiB/s (1024) -> 10 MiB/s (10485760)" in update["message"]["text"]
        and "owner=team-a" in update["message"]["text"]
    )
    assert update["level"] == "note" and update["properties"]["entity"] == "users/alice"
    # the client-id entry: both warnings on the line of the key they are about (line 6, its config)
    assert [line_of(r) for r in by["lint/shadowed"]] == [("quotas.yaml", 6)]
    assert [line_of(r) for r in by["lint/not-enforced"]] == [("quotas.yaml", 6)]
    assert {r["level"] for r in by["lint/shadowed"] + by["lint/not-enforced"]} == {"warning"}
    assert by["lint/shadowed"][0]["properties"]["entity"] == f"clients/{SHOWN}"
    assert run["invocations"][0]["executionSuccessful"] is True
    assert not any("users/bob" in r["message"]["text"] for r in run["results"])  # in sync: no result


def test_sarif_validate_errors_strict_warnings_and_uris() -> None:
    problems = ["quotas/a bé.yaml:6: invalid value '1.5' for consumer_byte_rate", "quotas/c.yaml: no such file", "odd"]
    log = check_sarif(sarif(invalid_report("validate", problems, "3 problems")))
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["manifest/invalid"] * 3
    assert {r["level"] for r in results} == {"error"}
    assert line_of(results[0]) == ("quotas/a%20b%C3%A9.yaml", 6)
    assert results[0]["message"]["text"] == "invalid value '1.5' for consumer_byte_rate"
    assert line_of(results[1]) == ("quotas/c.yaml", None)
    assert "locations" not in results[2]
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False

    manifest = load_text(MANIFEST, "/abs/dir/q.yaml")
    strict = check_sarif(sarif(validate_report(manifest, lint(manifest), True, "valid")))
    assert {r["level"] for r in strict["runs"][0]["results"]} == {"error"}
    assert line_of(strict["runs"][0]["results"][0]) == ("file:///abs/dir/q.yaml", 6)
    relaxed = check_sarif(sarif(validate_report(manifest, lint(manifest), False, "valid")))
    assert {r["level"] for r in relaxed["runs"][0]["results"]} == {"warning"}


# -- JUnit ---------------------------------------------------------------------------------------------


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {tc.get("name"): tc for tc in root.iter("testcase")}


def test_junit_plan_one_case_per_entry_prune_and_warning() -> None:
    root = check_junit(junit_xml(plan_fixture()))
    suite = root.find("testsuite")
    tc = cases(root)
    assert set(tc) == {
        "users/<default>",
        f"clients/{SHOWN}",
        "users/alice",
        "users/bob",
        "users/svc-old",
        f"clients/{SHOWN}: lint/shadowed",
        f"clients/{SHOWN}: lint/not-enforced",
    }
    assert suite.get("tests") == root.get("tests") == "7"
    assert suite.get("failures") == root.get("failures") == "4"  # 2 creates, 1 update, 1 prune
    assert suite.get("skipped") == "2" and suite.get("errors") == "0"
    assert tc["users/bob"].find("failure") is None  # in sync: passes
    fail = tc["users/alice"].find("failure")
    assert (
        fail.get("type") == "plan/update"
        and "producer_byte_rate: change 1 KiB/s (1024) -> 10 MiB/s (10485760)" in fail.text
    )
    assert tc["users/alice"].get("classname") == "quotas.yaml"
    assert tc["users/svc-old"].find("failure").get("type") == "plan/delete"
    assert tc[f"clients/{SHOWN}: lint/shadowed"].find("skipped").get("type") == "lint/shadowed"
    assert tc[f"clients/{SHOWN}: lint/shadowed"].find("failure") is None


def test_junit_validate_strict_fails_warnings_and_errors_fail() -> None:
    manifest = load_text(MANIFEST, "q.yaml")
    root = check_junit(junit_xml(validate_report(manifest, lint(manifest), True, "valid")))
    assert root.get("failures") == "2" and root.get("tests") == "6"
    assert all(tc.find("failure") is None for name, tc in cases(root).items() if "lint/" not in name)
    root = check_junit(junit_xml(validate_report(manifest, lint(manifest), False, "valid")))
    assert root.get("failures") == "0" and root.find("testsuite").get("skipped") == "2"
    root = check_junit(junit_xml(invalid_report("validate", ["q.yaml:3: bad \x01 value", "q.yaml:9: dup"], "2")))
    assert root.get("failures") == root.get("tests") == "2"
    first = next(root.iter("failure"))
    assert first.get("type") == "manifest/invalid" and "bad \\x01 value" in first.get("message")  # XML 1.0 safe


# -- markdown ------------------------------------------------------------------------------------------


def md_tables(text: str) -> list[list[list[str]]]:
    """Every GFM table: rows of cell texts (as a renderer shows them), header row first."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text)
    tables: list[list[list[str]]] = []
    row: list[str] = []
    cell = False
    for t in tokens:
        if t.type == "table_open":
            tables.append([])
        elif t.type == "tr_open":
            row = []
        elif t.type == "tr_close":
            tables[-1].append(row)
        elif t.type in ("th_open", "td_open"):
            cell = True
            row.append("")
        elif t.type in ("th_close", "td_close"):
            cell = False
        elif t.type == "inline" and cell:
            row[-1] = "".join(c.content for c in t.children if c.type in ("text", "code_inline"))
    return tables


def md_html(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)


def test_markdown_plan_comment_structure() -> None:
    text = markdown(plan_fixture())
    assert text.startswith("<!-- kquotactl:plan -->\n### ")
    assert "kquotactl plan: 4 entities to change" in text
    counts, changes = md_tables(text)
    assert counts == [["create", "update", "delete", "unchanged", "left alone (unmanaged)"], ["2", "1", "1", "1", "0"]]
    assert changes[0] == ["action", "entity", "key", "op", "old", "new", "source"]
    assert all(len(r) == 7 for r in changes)  # the | in a name does not split a cell
    rows = {(r[1], r[2]): r for r in changes[1:] if r[1]}
    assert rows[("users/<default>", "consumer_byte_rate")][5] == "1 MiB/s (1048576)"  # human unit and raw value
    assert rows[("users/alice", "producer_byte_rate")][4:] == [
        "1 KiB/s (1024)",
        "10 MiB/s (10485760)",
        "quotas.yaml:7 owner=team-a",
    ]
    assert rows[(f"clients/{SHOWN}", "consumer_byte_rate")][0] == "create"  # *x* not emphasis, <b> not a tag
    assert ["", "", "request_rate", "add", "-", "5 requests/s", ""] in changes  # the same entity's next key
    assert rows[("users/svc-old", "request_percentage")][:4] == [
        "delete",
        "users/svc-old",
        "request_percentage",
        "remove",
    ]
    assert rows[("users/svc-old", "request_percentage")][6] == "quotas.yaml:1 (prune)"  # the owning prune pattern
    html = md_html(text)
    assert "<b>" not in html and "<em>" not in html
    assert (
        "#### Lint warnings (2)" in text
        and html.count("<li><code>quotas.yaml:6</code>: clients/'app|1 *x* &lt;b&gt;") == 2
    )
    assert "<p>Target: zk:2181/kafka (zookeeper)</p>" in html


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_markdown_text_and_code_spans_render_as_themselves(text: str) -> None:
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    rendered = md_tables(f"| a | b |\n|---|---|\n| {md(text)} | {code(text)} |\n")[0][1]
    assert rendered == [shown.strip(" "), shown]  # a table cell trims spaces around plain text, not in code
    html = md_html(f"x {md(text)} {code(text)}")
    assert re.findall(r"<(\w+)", html) == ["p"] + ["code"] * bool(text)  # no emphasis, link, strike, html


def test_markdown_large_plans_collapse_and_stay_under_a_comment_limit() -> None:
    n = 3 * MAX_ROWS
    text = "quotas:\n" + "".join(
        f"  - entity: {{user: u{i:05d}}}\n    config: {{producer_byte_rate: {1024 * (i + 1)}}}\n" for i in range(n)
    )
    manifest = load_text(text, "big.yaml")
    report = plan_report(make_plan(manifest, []), manifest, [], None)
    out = markdown(report)
    assert len(out) < MAX_CHARS
    assert f"<details><summary>{n} key changes on {n} entities</summary>" in out and "</details>" in out
    changes = md_tables(out)[1]
    assert 1 < len(changes) - 1 <= MAX_ROWS
    assert f"… and {n - (len(changes) - 1)} more key changes" in out
    few = load_text(MANIFEST, "s.yaml")
    small = plan_report(make_plan(few, []), few, [], None)
    assert 1 < len(small.plan_rows) <= COLLAPSE_ROWS and "<details>" not in markdown(small)


def test_markdown_validate_and_errors() -> None:
    manifest = load_text(MANIFEST, "q.yaml")
    text = markdown(validate_report(manifest, lint(manifest), False, "valid: 4 entities, 2 warnings"))
    assert text.startswith("<!-- kquotactl:validate -->\n### ✅ kquotactl validate: valid: 4 entities, 2 warnings")
    assert md_html(text).count("<li><code>q.yaml:6</code>: ") == 2
    text = markdown(invalid_report("plan", ["q.yaml:3: bad value", "q.yaml:9: entity users/<x> twice"], "2 problems"))
    assert "### ❌ kquotactl plan: 2 problems in the manifest" in text
    assert "users/&lt;x&gt;" in text and "<x>" not in md_html(text).replace("&lt;x&gt;", "")


# -- the CLI -----------------------------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "quotas.yaml") -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_cli_validate_reports_and_exit_codes(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, MANIFEST)
    r = run_cli("validate", "-f", "quotas.yaml", "-o", "sarif")
    assert r.exit_code == 0, r.stderr
    log = check_sarif(json.loads(r.stdout))
    assert {line_of(x) for x in log["runs"][0]["results"]} == {("quotas.yaml", 6)}
    assert "valid: 4 entities" in r.stderr  # the summary line stays off stdout
    r = run_cli("validate", "-f", "quotas.yaml", "--strict", "-o", "junit")
    assert r.exit_code == 1 and check_junit(r.stdout).get("failures") == "2"
    write(tmp_path, "quotas:\n  - entity: {user: a}\n    config: {consumer_byte_rate: 1.5}\n", "bad.yaml")
    for fmt in ("sarif", "junit", "markdown"):
        r = run_cli("validate", "-f", "bad.yaml", "-o", fmt)
        assert r.exit_code == 1 and "1 problem in the manifest" in r.stderr
        if fmt == "sarif":
            assert line_of(check_sarif(json.loads(r.stdout))["runs"][0]["results"][0]) == ("bad.yaml", 3)
        elif fmt == "junit":
            assert check_junit(r.stdout).get("failures") == "1"
        else:
            assert "\n- `bad.yaml:3`: invalid value" in r.stdout
    r = run_cli("plan", "-f", "bad.yaml", "--live-from", "bad.yaml", "-o", "sarif")  # plan on a bad manifest
    assert (
        r.exit_code == 1 and check_sarif(json.loads(r.stdout))["runs"][0]["results"][0]["ruleId"] == "manifest/invalid"
    )


def test_cli_other_commands_refuse_ci_formats_before_doing_anything(tmp_path) -> None:
    for args in (
        ["describe"],
        ["apply", "-f", "x.yaml", "--yes"],
        ["alter", "--user", "a", "--add-config", "producer_byte_rate=1"],
        ["--alter", "--entity-type", "users", "--entity-name", "a", "--add-config", "producer_byte_rate=1"],
        ["export"],
    ):
        r = run_cli("--zookeeper", "127.0.0.1:1", *args, "-o", "junit")
        assert r.exit_code == 1 and "-o junit is a CI report of validate and plan" in r.stderr, (args, r.stderr)


@pytest.mark.zookeeper
def test_plan_reports_against_zookeeper_then_in_sync(chroot, tmp_path, monkeypatch) -> None:
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.core.changes import EntityChange

    monkeypatch.chdir(tmp_path)
    # request_rate is refused by every live plan (no Apache Kafka release knows it): keep the lines, drop the key
    write(tmp_path, MANIFEST.replace(", request_rate: 5", ""))
    with ZooKeeperBackend(ZkSettings(connect=chroot.connect, connect_timeout=10, op_timeout=15)) as b:
        b.alter([EntityChange(r.entity, dict(r.config)) for r in LIVE])
    before = chroot.snapshot()
    zk = ("--zookeeper", chroot.connect)
    r = run_cli(*zk, "plan", "-f", "quotas.yaml", "--prune", "-o", "sarif")
    assert r.exit_code == 2, r.stderr
    by = results_by_rule(check_sarif(json.loads(r.stdout)))
    assert [line_of(x) for x in by["plan/update"]] == [("quotas.yaml", 7)]
    assert [line_of(x) for x in by["plan/delete"]] == [("quotas.yaml", 1)]
    r = run_cli(*zk, "plan", "-f", "quotas.yaml", "--prune", "-o", "junit")
    assert r.exit_code == 2 and check_junit(r.stdout).get("failures") == "4"
    r = run_cli(*zk, "plan", "-f", "quotas.yaml", "--prune", "-o", "markdown")
    assert r.exit_code == 2 and f"<p>Target: {chroot.connect} (zookeeper)</p>" in md_html(r.stdout)
    assert md_tables(r.stdout)[0][1] == ["2", "1", "1", "1", "0"]
    assert chroot.snapshot() == before  # plans write nothing

    assert run_cli(*zk, "apply", "-f", "quotas.yaml", "--prune", "--yes").exit_code == 0
    r = run_cli(*zk, "plan", "-f", "quotas.yaml", "--prune", "-o", "junit")
    assert r.exit_code == 0, r.stderr
    root = check_junit(r.stdout)
    assert root.get("failures") == "0" and root.get("tests") == "5"  # 4 entries pass, 1 lint warning skipped
    r = run_cli(*zk, "plan", "-f", "quotas.yaml", "--prune", "-o", "sarif")
    assert r.exit_code == 0 and not any(
        k.startswith("plan/") for k in results_by_rule(check_sarif(json.loads(r.stdout)))
    )
    r = run_cli(*zk, "plan", "-f", "quotas.yaml", "--prune", "-o", "markdown")
    assert "### ✅ kquotactl plan: in sync" in r.stdout
