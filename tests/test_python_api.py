"""The public Python API (kquotactl.api): docs/python-api.md's examples run against a real ZooKeeper, and the
result types' fields are the checked-in contract of their RESULT_SCHEMA_VERSION."""

from __future__ import annotations

import dataclasses
import doctest
import json
import os
import re
from pathlib import Path

import pytest

from kquotactl import api

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "python-api.md"
CONTRACT = Path(__file__).parent / "data" / "api_results.json"


def result_fields() -> dict[str, dict[str, str]]:
    """Each result type's fields and their annotations, as written."""
    return {t.__name__: {f.name: str(f.type) for f in dataclasses.fields(t)} for t in api.RESULT_TYPES}


@pytest.mark.zookeeper
def test_the_documented_examples_run(chroot) -> None:
    """Every ```pycon block of docs/python-api.md, in order, as one doctest session."""
    blocks = re.findall(r"```pycon\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4
    test = doctest.DocTestParser().get_doctest(
        "\n".join(blocks), {"ZOOKEEPER": chroot.connect}, "python-api.md", str(DOC), 0
    )
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL)
    out: list[str] = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def test_all_names_exist_and_every_service_is_exported() -> None:
    missing = [n for n in api.__all__ if not hasattr(api, n)]
    assert not missing
    for name in ("connect", "describe", "alter", "plan", "apply", "explain_lines", "wait_applied"):
        assert name in api.__all__


def test_result_types_match_the_contract_of_their_version() -> None:
    """Changing a result type's fields means regenerating the contract (KQUOTACTL_UPDATE_API_CONTRACT=1), and
    removing or renaming one also means raising RESULT_SCHEMA_VERSION (docs/python-api.md, "Compatibility")."""
    now = {"version": api.RESULT_SCHEMA_VERSION, "types": result_fields()}
    if os.environ.get("KQUOTACTL_UPDATE_API_CONTRACT"):
        CONTRACT.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    saved = json.loads(CONTRACT.read_text(encoding="utf-8"))
    if saved["version"] == now["version"]:
        removed = {
            t: sorted(set(fields) - set(now["types"].get(t, {})))
            for t, fields in saved["types"].items()
            if set(fields) - set(now["types"].get(t, {}))
        }
        assert not removed, f"fields removed without raising RESULT_SCHEMA_VERSION: {removed}"
    assert now == saved, "the result types changed: regenerate tests/data/api_results.json (see this test)"


def test_the_contract_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert f"(now {api.RESULT_SCHEMA_VERSION})" in text
    for t in api.RESULT_TYPES:
        assert f"`{t.__name__}`" in text
