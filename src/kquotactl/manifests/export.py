"""Live quotas as a manifest (``kquotactl export``): the document, and YAML written in chunks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO, Any

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, DEFAULT_MARKER, Name
from kquotactl.core.keys import KEY_ORDER, KEYS, Number, exact_unit_text


def _export_name(name: Name) -> Any:
    if name is DEFAULT:
        return DEFAULT_MARKER
    return {"name": name} if name == DEFAULT_MARKER else name


def export_document(records: Iterable[QuotaRecord], units: bool = False) -> dict[str, Any]:
    """Live quotas as a manifest: lossless (defaults, real ``<default>`` names, pairs, ips), in ``describe``
    order, keys in the core's order, integers for LONG/INT keys — so applying it to the same cluster is a no-op.
    ``units``: byte rates that a unit divides exactly are written with it (``5MiB``), which reads back the same."""
    quotas = []
    for r in sorted(records, key=lambda r: r.entity.sort_key()):
        entity = {t.value: _export_name(n) for t, n in r.entity.components().items()}
        numbers = {
            k: (int(v) if KEYS[k].integral else float(v))
            for k, v in sorted(r.config.items(), key=lambda kv: KEY_ORDER.get(kv[0], 99))
        }
        config: Mapping[str, Number | str] = numbers
        if units:
            config = {k: exact_unit_text(KEYS[k], v) or v for k, v in numbers.items()}
        quotas.append({"entity": entity, "config": config})
    return {"quotas": quotas}


def dump_manifest_yaml(doc: Mapping[str, Any], out: IO[str] | None = None, chunk: int = 1000) -> str | None:
    """YAML with one flow mapping per entity and per config (``- entity: {user: alice}``), C emitter if present;
    ``"<default>"`` is quoted as in the documentation. With ``out``, entries are written in chunks, so
    memory does not grow with a whole document's representation; without it, the text is returned."""
    import io

    import yaml

    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[valid-type,misc]
        pass

    def str_repr(dumper: Any, data: str) -> Any:
        style = '"' if data == DEFAULT_MARKER else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    def flow_repr(dumper: Any, data: dict[str, Any]) -> Any:
        return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=True)

    Dumper.add_representer(str, str_repr)
    Dumper.add_representer(_Flow, flow_repr)

    def dump(data: Any, stream: IO[str]) -> None:
        yaml.dump(
            data, stream, Dumper=Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1 << 20
        )

    target = out if out is not None else io.StringIO()
    body = dict(doc)
    quotas = body.pop("quotas", None)
    if body:
        dump(body, target)
    if isinstance(quotas, list):
        if not quotas:
            target.write("quotas: []\n")
        else:
            target.write("quotas:\n")
            for start in range(0, len(quotas), chunk):
                items = [
                    {k: _Flow(v) if isinstance(v, dict) else v for k, v in q.items()}
                    for q in quotas[start : start + chunk]
                ]
                dump(items, target)
    return target.getvalue() if out is None else None  # type: ignore[attr-defined]


class _Flow(dict[str, Any]):
    """A mapping written in flow style (``{user: alice}``)."""
