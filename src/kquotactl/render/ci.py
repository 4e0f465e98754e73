"""Plans and validations in CI's languages: a pull-request comment (GitHub-flavoured markdown), a JUnit XML report
and a SARIF 2.1.0 log (pure: text and dicts out, no I/O).

Everything a CI report says is first gathered into a :class:`CiReport` of :class:`Finding` objects, each with the
manifest's ``file:line`` where there is one:

- ``manifest/invalid``: a manifest error (``validate``, or ``plan`` on a bad manifest); always an error.
- ``lint/<code>`` (``lint/shadowed``, ``lint/not-enforced``): a lint warning; an error under ``validate --strict``.
- ``plan/create``, ``plan/update``, ``plan/delete``: a pending change of one entity (``plan``), located at its
  manifest entry, or for an entity ``--prune`` removes, at the ``prune`` pattern that owns it.

Then :func:`markdown`, :func:`junit_xml` and :func:`sarif` render the same report. How each CI shows what:

- JUnit: one test case per manifest entry (passing when valid / in sync, failing when it has a pending change),
  one per entity ``--prune`` removes (failing), one per manifest error (failing) and one per lint warning:
  *skipped* (GitLab, Jenkins and the GitHub test-report actions list skipped cases, with the message, without
  turning the pipeline red; the exit status agrees) or, under ``--strict``, failing.
- SARIF: errors are ``error``, lint warnings ``warning`` (``error`` under ``--strict``), pending changes ``note``.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kquotactl import __version__
from kquotactl.core.lint import LintWarning
from kquotactl.core.manifest import ENTITY_KINDS, Manifest, entity_path_text
from kquotactl.core.plan import EntityDiff, Plan
from kquotactl.core.wording import escaped
from kquotactl.render.plans import plan_summary, value_text

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
MARKER = "<!-- kquotactl:{command} -->"  # lets a CI job find and update its own earlier comment
COLLAPSE_ROWS = 15  # more table rows than this go into a collapsed <details> block
MAX_ROWS = 300  # rows shown in a comment at most; the rest are counted
MAX_ITEMS = 100  # warnings / errors / notes listed at most
MAX_CHARS = 60_000  # GitHub refuses comments over 65,536 characters

RULES: dict[str, tuple[str, str]] = {  # rule id -> (short description, help)
    "manifest/invalid": (
        "The manifest is invalid",
        "A manifest value, key or entity kquotactl (and Kafka) would refuse; nothing is written until it is fixed.",
    ),
    "lint/shadowed": (
        "A quota that can never apply",
        "Every connection this entry could match resolves the key at another entry first (the broker's precedence).",
    ),
    "lint/not-enforced": (
        "A key stock Apache Kafka brokers do not enforce",
        "The key is accepted and stored but no stock broker throttles on it.",
    ),
    "plan/create": ("A quota entity to create", "apply would give this entity its first quotas."),
    "plan/update": ("A quota entity to update", "apply would add, change or remove some of this entity's quotas."),
    "plan/delete": ("A quota entity to delete (prune)", "apply --prune would remove every quota of this entity."),
}
_PROBLEM = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<message>.*)$", re.DOTALL)
_PROBLEM_NO_LINE = re.compile(r"^(?P<file>[^:]+): (?P<message>.*)$", re.DOTALL)


@dataclass(frozen=True)
class Finding:
    """One thing a CI system should show, where it was written."""

    rule: str  # a key of RULES (lint codes not listed there still work)
    message: str
    file: str | None = None
    line: int | None = None
    entity: str | None = None  # entity path text
    details: tuple[str, ...] = ()  # more lines (per-key changes)

    @property
    def where(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass(frozen=True)
class Entry:
    """A manifest entry, for the JUnit test case it becomes."""

    entity: str
    file: str
    line: int


@dataclass
class CiReport:
    command: str  # validate | plan
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    changes: list[Finding] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)  # empty when the manifest did not load
    strict: bool = False
    summary: str = ""  # the command's summary line
    counts: Mapping[str, int] = field(default_factory=dict)  # plan counts (create, update, ...)
    notes: list[str] = field(default_factory=list)  # what the plan noticed in the live state
    target: Mapping[str, str] = field(default_factory=dict)
    plan_rows: list[tuple[str, str, str, str, str, str, str]] = field(default_factory=list)

    def level(self, f: Finding) -> str:
        if f.rule.startswith("plan/"):
            return "note"
        if f.rule.startswith("lint/") and not self.strict:
            return "warning"
        return "error"


# -- gathering --------------------------------------------------------------------------------------------


def error_finding(problem: str) -> Finding:
    """A manifest problem (``file:line: message``, ``file: message`` or a bare message) as a finding."""
    m = _PROBLEM.match(problem)
    if m:
        return Finding("manifest/invalid", m["message"], m["file"], int(m["line"]))
    m = _PROBLEM_NO_LINE.match(problem)
    if m:
        return Finding("manifest/invalid", m["message"], m["file"])
    return Finding("manifest/invalid", problem)


def problem_json(problem: str) -> dict[str, str | None]:
    """A manifest problem as ``validate -o json`` gives it: ``{source: "FILE:LINE" or null, message}``."""
    m = _PROBLEM.match(problem)
    if m:
        return {"source": f"{m['file']}:{m['line']}", "message": m["message"]}
    return {"source": None, "message": problem}


def validate_document(
    manifest: Manifest | None, problems: Sequence[str], warnings: Sequence[LintWarning], strict: bool
) -> dict[str, Any]:
    """``validate -o json/yaml``: one object, valid or not (``manifest`` None: it did not load, ``problems`` say
    why)."""
    return {
        "valid": manifest is not None and not (strict and warnings),
        "entities": len(manifest) if manifest is not None else 0,
        "kinds": manifest.kinds() if manifest is not None else dict.fromkeys(ENTITY_KINDS, 0),
        "prune": [r.pattern for r in manifest.prune] if manifest is not None else [],
        "errors": [problem_json(p) for p in problems],
        "warnings": [w.to_json() for w in warnings],
    }


def lint_finding(w: LintWarning) -> Finding:
    src = w.source
    return Finding(
        f"lint/{w.code}",
        w.message,
        src.file if src else None,
        src.line if src else None,
        entity_path_text(w.entity),
        tuple(w.keys),
    )


def change_lines(d: EntityDiff) -> tuple[str, ...]:
    """``producer_byte_rate: add -> 1048576 (1 MiB/s)`` per key."""
    out = []
    for k in d.keys:
        if k.old is None:
            out.append(f"{k.key}: add {value_text(k.key, k.new)}")
        elif k.new is None:
            out.append(f"{k.key}: remove (was {value_text(k.key, k.old)})")
        else:
            out.append(f"{k.key}: change {value_text(k.key, k.old)} -> {value_text(k.key, k.new)}")
    return tuple(out)


def _split_source(source: str | None) -> tuple[str | None, int | None]:
    if not source:
        return None, None
    file, _, line = source.rpartition(":")
    return (file, int(line)) if file and line.isdigit() else (source, None)


def change_finding(d: EntityDiff, manifest: Manifest | None) -> Finding:
    path = entity_path_text(d.entity)
    file, line = _split_source(d.source)
    how = ""
    if d.source is None and manifest is not None:  # pruned: point at the prune pattern that owns it
        rule = next((r for r in manifest.prune if r.matches(d.entity)), None)
        if rule is not None:
            file, line = rule.source.file, rule.source.line
            how = f" (not in the manifest; owned by prune pattern {rule.pattern})"
    meta = "".join(f"; {k}={v}" for k, v in d.meta.items())
    lines = change_lines(d)
    return Finding(
        f"plan/{d.action.value}",
        f"{d.action.value} {path}{how}: {', '.join(lines)}{meta}",
        file,
        line,
        path,
        lines,
    )


def _entries(manifest: Manifest) -> list[Entry]:
    return [Entry(entity_path_text(e.entity), e.source.file, e.source.line) for e in manifest.entries]


def invalid_report(command: str, problems: Sequence[str], summary: str) -> CiReport:
    return CiReport(command, errors=[error_finding(p) for p in problems], summary=summary)


def validate_report(manifest: Manifest, warnings: Sequence[LintWarning], strict: bool, summary: str) -> CiReport:
    return CiReport(
        "validate",
        warnings=[lint_finding(w) for w in warnings],
        entries=_entries(manifest),
        strict=strict,
        summary=summary,
    )


def plan_report(
    plan: Plan,
    manifest: Manifest,
    warnings: Sequence[LintWarning],
    target: Mapping[str, str] | None = None,
) -> CiReport:
    rows = []
    changes = [change_finding(d, manifest) for d in plan.diffs]
    for d, f in zip(plan.diffs, changes, strict=True):
        path = entity_path_text(d.entity)
        where = f.where if d.source else f"{f.where or 'not in the manifest'} (prune)"
        origin = " ".join([where, *(f"{k}={v}" for k, v in d.meta.items())])
        for k in d.keys:
            rows.append(
                (d.action.value, path, k.key, k.op.value, value_text(k.key, k.old), value_text(k.key, k.new), origin)
            )
    return CiReport(
        "plan",
        warnings=[lint_finding(w) for w in warnings],
        changes=changes,
        entries=_entries(manifest),
        summary=plan_summary(plan),
        counts=plan.counts(),
        notes=list(plan.notes),
        target=dict(target or {}),
        plan_rows=rows,
    )


# -- markdown -----------------------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")  # inline syntax; block syntax never starts our text


def md(text: str) -> str:
    """Text as itself in GitHub-flavoured markdown, table cells included: ``<default>`` stays visible (not an HTML
    tag), ``|`` does not split a cell, ``*``/``_`` do not emphasise, control characters and newlines are escaped.
    For inline use only (after a list marker, in a headline or a table cell), never at the start of a line."""
    text = escaped(text)
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def code(text: str) -> str:
    """Text as a code span, safe in a table cell: shown verbatim (``<default>``, ``*``), and GitHub turns no
    ``@name`` into a mention, no ``#12`` into a link and no ``:rocket:`` into an emoji inside one."""
    text = escaped(text)
    if not text:
        return ""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.strip(" ") and (text[0] in "` " or text[-1] in "` ") else ""  # CommonMark strips one
    cell = text.replace("|", "\\|")
    return f"{fence}{pad}{cell}{pad}{fence}"


def _md_list(items: Sequence[str], limit: int = MAX_ITEMS) -> list[str]:
    out = [f"- {x}" for x in items[:limit]]
    if len(items) > limit:
        out.append(f"- … and {len(items) - limit} more")
    return out


def _md_finding(f: Finding) -> str:
    where = f"{code(f.where)}: " if f.where else ""
    return where + md(f.message)


def markdown(report: CiReport) -> str:
    """A pull-request comment: a headline, the counts, the changes as a table, lint warnings, notes."""
    out = [MARKER.format(command=report.command)]
    icon = "❌" if report.errors or (report.strict and report.warnings) else "🟡" if report.changes else "✅"
    if report.errors:
        n = len(report.errors)
        out += [f"### {icon} kquotactl {report.command}: {n} problem{'s' if n != 1 else ''} in the manifest", ""]
        out += ["Nothing was planned or written until these are fixed:", ""]
        out += _md_list([_md_finding(f) for f in report.errors])
        return _finish(out)
    if report.command == "plan":
        c = report.counts
        head = f"{len(report.changes)} entities to change" if report.changes else "in sync"
        out += [f"### {icon} kquotactl plan: {head}", ""]
        cells = [("create", c.get("create", 0)), ("update", c.get("update", 0)), ("delete", c.get("delete", 0))]
        cells += [("unchanged", c.get("unchanged", 0)), ("left alone (unmanaged)", c.get("unmanaged", 0))]
        out += ["| " + " | ".join(k for k, _ in cells) + " |", "|" + "---:|" * len(cells)]
        out += ["| " + " | ".join(str(v) for _, v in cells) + " |", ""]
        cluster = report.target.get("cluster", "?")
        if cluster not in ("", "?"):
            out += [f"Target: {md(cluster)} ({md(report.target.get('backend', '?'))})", ""]
        out += _md_changes(report)
    else:
        out += [f"### {icon} kquotactl validate: {md(report.summary)}"]
    if report.warnings:
        n = len(report.warnings)
        word = "errors (--strict)" if report.strict else "warnings"
        out += ["", f"#### Lint {word} ({n})", ""]
        out += _md_list([_md_finding(f) for f in report.warnings])
    if report.notes:
        out += ["", "<details><summary>Notes on the live quotas</summary>", ""]
        out += [*_md_list([md(n) for n in report.notes]), "", "</details>"]
    if report.command == "plan":
        out += ["", f"<sub>{md(report.summary)}</sub>"]
    return _finish(out)


def _md_changes(report: CiReport) -> list[str]:
    rows = report.plan_rows
    if not rows:
        return ["Nothing to change: every declared entity is as declared."]
    table = [
        "| action | entity | key | op | old | new | source |",
        "|---|---|---|---|---:|---:|---|",
    ]
    used = sum(len(x) for x in table)
    shown = 0
    last_entity = None
    for action, path, key, op, old, new, origin in rows[:MAX_ROWS]:
        first = (action, path) != last_entity
        last_entity = (action, path)
        line = (
            f"| {action if first else ''} | {code(path) if first else ''} | {key} | {op} | {old} | {new} "
            f"| {code(origin) if first else ''} |"
        )
        if used + len(line) > MAX_CHARS - 4000:
            break
        table.append(line)
        used += len(line) + 1
        shown += 1
    if shown < len(rows):
        table += ["", f"… and {len(rows) - shown} more key changes (the whole plan: `kquotactl plan -o json`)."]
    if len(rows) <= COLLAPSE_ROWS:
        return table
    n = len(report.changes)
    return [f"<details><summary>{len(rows)} key changes on {n} entities</summary>", "", *table, "", "</details>"]


def _finish(lines: list[str]) -> str:
    text = "\n".join(lines).rstrip() + "\n"
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS].rsplit("\n", 1)[0] + "\n\n… (cut to fit a comment)\n"
    return text


# -- JUnit XML ----------------------------------------------------------------------------------------------

_XML_BAD = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: str) -> str:
    """Text XML 1.0 can carry (control characters shown escaped, as \\x01)."""
    return _XML_BAD.sub(lambda m: repr(m.group())[1:-1], text)


def junit_xml(report: CiReport) -> str:
    """JUnit XML (the Jenkins/Surefire schema GitLab, Jenkins and the GitHub test-report actions read)."""
    import xml.etree.ElementTree as ET

    name = f"kquotactl {report.command}"
    suite = ET.Element("testsuite", name=name)
    failures = skipped = 0
    by_entry: dict[tuple[str, int], list[Finding]] = {}
    pruned: list[Finding] = []
    entry_at = {(e.file, e.line) for e in report.entries}
    for f in report.changes:
        key = (f.file or "", f.line or 0)
        (by_entry.setdefault(key, []) if key in entry_at else pruned).append(f)

    def case(case_name: str, classname: str) -> ET.Element:
        return ET.SubElement(suite, "testcase", name=_x(case_name), classname=_x(classname))

    def fail(tc: ET.Element, f: Finding) -> None:
        el = ET.SubElement(tc, "failure", message=_x(f.message), type=f.rule)
        el.text = _x("\n".join([f"{f.where}: {f.message}" if f.where else f.message, *f.details]))

    for f in report.errors:
        fail(case(f"{f.where or 'manifest'}: {f.message}", f.file or "manifest"), f)
        failures += 1
    for e in report.entries:
        tc = case(e.entity, e.file)
        found = by_entry.get((e.file, e.line), [])
        for f in found:
            fail(tc, f)
        failures += bool(found)
        out = ET.SubElement(tc, "system-out")
        out.text = _x(f"{e.file}:{e.line}: {e.entity}" + (": pending changes" if found else ""))
    for f in pruned:
        fail(case(f.entity or f.message, f.file or "prune"), f)
        failures += 1
    for f in report.warnings:
        tc = case(f"{f.entity}: {f.rule}", f.file or "manifest")
        if report.strict:
            fail(tc, f)
            failures += 1
        else:
            el = ET.SubElement(tc, "skipped", message=_x(f"warning: {f.message}"), type=f.rule)
            el.text = _x(f"{f.where}: warning: {f.message}" if f.where else f.message)
            skipped += 1
    tests = len(suite)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    if report.summary:
        ET.SubElement(suite, "system-out").text = _x(report.summary)
    root = ET.Element("testsuites", name=name, tests=str(tests), failures=str(failures), errors="0")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# -- SARIF 2.1.0 --------------------------------------------------------------------------------------------


def artifact_uri(file: str) -> str:
    """A manifest path as a SARIF ``uri``: relative paths stay relative (to the checkout, for code scanning),
    absolute ones become ``file://`` URIs; spaces and other reserved characters are %-encoded."""
    if file.startswith("/"):
        return "file://" + urllib.parse.quote(file)
    return urllib.parse.quote(file.removeprefix("./"))


def _rules(findings: Iterable[Finding]) -> list[str]:
    seen = dict.fromkeys(RULES)
    for f in findings:
        seen.setdefault(f.rule)
    return list(seen)


def sarif(report: CiReport) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, one result per finding, located at the manifest's ``file:line``."""
    findings = [*report.errors, *report.warnings, *report.changes]
    rule_ids = _rules(findings)
    index = {r: i for i, r in enumerate(rule_ids)}
    rules = []
    for r in rule_ids:
        short, full = RULES.get(r, (r, r))
        level = "note" if r.startswith("plan/") else "warning" if r.startswith("lint/") else "error"
        rules.append(
            {
                "id": r,
                "name": "".join(p.title() for p in re.split(r"[/-]", r)),
                "shortDescription": {"text": short},
                "fullDescription": {"text": full},
                "help": {"text": full},
                "defaultConfiguration": {"level": level},
            }
        )
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": report.level(f),
            "message": {"text": f.message},
        }
        if f.file is not None:
            physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(f.file)}}
            if f.line is not None:
                physical["region"] = {"startLine": f.line}
            result["locations"] = [{"physicalLocation": physical}]
        props: dict[str, Any] = {}
        if f.entity is not None:
            props["entity"] = f.entity
        if f.details:
            props["details"] = list(f.details)
        if props:
            result["properties"] = props
        results.append(result)
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "kquotactl", "version": __version__, "rules": rules}},
        "results": results,
        "invocations": [{"executionSuccessful": not report.errors, "commandLine": f"kquotactl {report.command}"}],
    }
    if report.summary or report.notes:
        run["properties"] = {"summary": report.summary, **({"notes": report.notes} if report.notes else {})}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render(report: CiReport, fmt: str) -> str:
    """``markdown``, ``junit`` or ``sarif`` text."""
    if fmt == "markdown":
        return markdown(report)
    if fmt == "junit":
        return junit_xml(report)
    import json

    return json.dumps(sarif(report), indent=2, ensure_ascii=False) + "\n"
