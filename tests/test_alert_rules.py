"""The Prometheus rules kquotactl ships (``observe/rules/kquotactl-rules.yaml``), held by the real promtool.

``promtool check rules`` validates the file; ``promtool test rules`` runs ``tests/data/rules/*.test.yaml``:
series written for each alert, evaluated by Prometheus' own rule engine, each alert expected firing and not
firing at its edges (just below and above its threshold, just before and after its ``for:``), with the
summary and description it renders. Debian's ``prometheus`` package ships promtool (scripts/bootstrap.sh).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((ROOT / "tests" / "data" / "rules").glob("*.test.yaml"))
PROMTOOL = os.environ.get("KQUOTACTL_PROMTOOL", shutil.which("promtool") or "/usr/bin/promtool")


def rules_file() -> Path:
    """The rules file as installed (package data), the one docs/alerting.md tells operators to load."""
    return Path(str(files("kquotactl.observe").joinpath("rules/kquotactl-rules.yaml")))


def _rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(rules_file().read_text(encoding="utf-8"))
    return [rule for group in doc["groups"] for rule in group["rules"]]


ALERTS = [r for r in _rules() if "alert" in r]
RECORDS = [r for r in _rules() if "record" in r]


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert Path(PROMTOOL).exists(), f"{PROMTOOL} missing: install Debian's prometheus package (make setup)"
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120, check=False)


def test_promtool_checks_the_shipped_rules() -> None:
    r = _promtool("check", "rules", str(rules_file()))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(ALERTS) + len(RECORDS)} rules found" in r.stdout


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_promtool_unit_tests_pass(case: Path) -> None:
    r = _promtool("test", "rules", str(case))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout


def test_a_wrong_expectation_fails_the_unit_test(tmp_path: Path) -> None:
    """The runner above can fail: one edge moved by a minute is reported."""
    case = ROOT / "tests" / "data" / "rules" / "throttled.test.yaml"
    text = case.read_text(encoding="utf-8").replace("eval_time: 6m", "eval_time: 5m30s", 1)
    text = text.replace("../../../src/", f"{ROOT}/src/")
    (tmp_path / case.name).write_text(text, encoding="utf-8")
    r = _promtool("test", "rules", str(tmp_path / case.name))
    assert r.returncode != 0 and "alertname: KquotactlQuotaThrottled, time: 5m30s" in r.stdout + r.stderr


def test_every_case_loads_the_shipped_rules() -> None:
    for case in CASES:
        doc = yaml.safe_load(case.read_text(encoding="utf-8"))
        assert [(case.parent / f).resolve() for f in doc["rule_files"]] == [rules_file().resolve()], case.name


@pytest.mark.parametrize("rule", ALERTS, ids=[r["alert"] for r in ALERTS])
def test_every_alert_has_a_for_a_severity_and_its_words(rule: dict[str, Any]) -> None:
    assert rule["alert"].startswith("Kquotactl")
    assert rule.get("for"), "a `for:` keeps a blip from paging"
    assert rule["labels"]["severity"] in ("info", "warning", "critical")
    assert rule["annotations"]["summary"] and rule["annotations"]["description"]


#: a ``for:`` as the alerts' words and docs/alerting.md's table say it
FOR_WORDS = {"5m": ("5 minutes", "5 min"), "10m": ("10 minutes", "10 min"), "15m": ("15 minutes", "15 min")}
FOR_WORDS["7d"] = ("7 days", "7 days")


@pytest.mark.parametrize("rule", ALERTS, ids=[r["alert"] for r in ALERTS])
def test_the_words_and_the_docs_say_the_rules_for_and_threshold(rule: dict[str, Any]) -> None:
    """An operator reads the duration and the threshold in the alert and in the docs: both say the rule's."""
    in_words, in_docs = FOR_WORDS[rule["for"]]
    said = rule["annotations"]["description"]
    assert in_words in said or "$value | humanizeDuration" in said  # the duration, or the age measured
    doc = (ROOT / "docs" / "alerting.md").read_text(encoding="utf-8")
    (row,) = [line for line in doc.splitlines() if line.startswith(f"| `{rule['alert']}` |")]
    assert in_docs in row
    for threshold in re.findall(r"(?:>|==) ([0-9.]+)", rule["expr"]):
        assert threshold in row, f"{rule['alert']}: threshold {threshold} not in the docs' row"


def _expectations() -> tuple[dict[str, set[bool]], set[str]]:
    """Alert name -> {fired?} over every evaluation the cases expect; the expressions they query."""
    fired: dict[str, set[bool]] = {}
    queried: set[str] = set()
    for case in CASES:
        for test in yaml.safe_load(case.read_text(encoding="utf-8"))["tests"]:
            for t in test.get("alert_rule_test", []):
                fired.setdefault(t["alertname"], set()).add(bool(t.get("exp_alerts")))
            queried |= {t["expr"] for t in test.get("promql_expr_test", [])}
    return fired, queried


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    fired, _ = _expectations()
    assert {r["alert"]: {False, True} for r in ALERTS} == fired


def test_every_recording_rule_is_tested() -> None:
    _, queried = _expectations()
    untested = [r["record"] for r in RECORDS if not any(q.split("{")[0] == r["record"] for q in queried)]
    assert not untested


def test_the_docs_name_every_alert_and_recording_rule() -> None:
    doc = (ROOT / "docs" / "alerting.md").read_text(encoding="utf-8")
    missing = [n for n in [r["alert"] for r in ALERTS] + [r["record"] for r in RECORDS] if n not in doc]
    assert not missing
