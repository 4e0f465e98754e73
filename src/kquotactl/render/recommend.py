"""A recommendation as a manifest to review: the current quotas with the proposed limits merged in, each proposed
value followed by its evidence as a YAML comment (``# 3.3 MiB/s: p99 2.7 MiB/s over 14 d, 3 brokers``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, DEFAULT_MARKER, Entity, Name
from kquotactl.core.keys import KEY_ORDER, KEYS, Number, format_value, limit_text
from kquotactl.core.recommend import Distribution, GroupId, ProposedLimit, Recommendation, evidence, span_words


def _name(name: Name) -> str:
    if name is DEFAULT:
        return json.dumps(DEFAULT_MARKER)
    if name == DEFAULT_MARKER:
        return "{name: " + json.dumps(name) + "}"
    return json.dumps(name)


def entity_flow(entity: Entity) -> str:
    """``{user: "alice", client-id: "app"}``: names JSON-quoted (valid YAML, whatever they hold)."""
    return "{" + ", ".join(f"{t.value}: {_name(n)}" for t, n in entity.components().items()) + "}"


def manifest_text(rec: Recommendation, current: Sequence[QuotaRecord] = ()) -> str:
    """The manifest: every current quota, with each recommended value replacing or adding its key; each
    recommended value has its evidence on the comment line above it (the lines fit 80 columns)."""
    p = rec.policy
    lines = [
        "# Recommended limits: each quota-id's rate per quota window sample, as",
        f"# the broker's Rate measures it; the busiest broker's p{p.percentile:g} + {p.headroom * 100:g} % headroom,",
        "# rounded up to 2 significant digits. Values without a comment above",
        "# them are the current quotas, kept as they are.",
    ]
    lines += [f"# Exempt from limits: {entity_flow(g.entity())}" for g in rec.exempted]
    if rec.kept_keys:
        lines.append(f"# Left alone: {', '.join(rec.kept_keys)}")
    configs: dict[Entity, dict[str, tuple[Number, ProposedLimit | None]]] = {}
    for r in current:
        configs.setdefault(r.entity, {}).update({k: (v, None) for k, v in r.config.items()})
    for lim in rec.limits:
        configs.setdefault(lim.entity, {})[lim.key] = (lim.value, lim)
    lines.append("quotas:" if configs else "quotas: []")
    for entity in sorted(configs, key=lambda e: e.sort_key()):
        lines.append(f"  - entity: {entity_flow(entity)}")
        lines.append("    config:")
        for key, (value, why) in sorted(configs[entity].items(), key=lambda kv: KEY_ORDER.get(kv[0], 99)):
            if why is not None:
                lines.append(f"      # {limit_text(KEYS[key], value)}: {evidence(why, p.percentile, rec.span_s)}")
            text = format_value(KEYS[key], value) if key in KEYS else str(value)
            lines.append(f"      {key}: {text}")
    return "\n".join(lines) + "\n"


def recommendation_json(rec: Recommendation, dists: Mapping[tuple[GroupId, str], Mapping[str, Distribution]]) -> Any:
    """The recommendation as data: each limit with its evidence, and every quota-id's distribution per broker."""
    p = rec.policy
    return {
        "policy": {
            "percentile": p.percentile,
            "headroom": p.headroom,
            "level": p.level.value,
            "tail_share": p.tail_share,
            "floors": dict(p.floors),
            "keys": list(p.keys),
            "keep": sorted(p.keep),
            "exempt": sorted(p.exempt),
        },
        "span_s": rec.span_s,
        "limits": [
            {
                "entity": entity_json(lim.entity),
                "key": lim.key,
                "value": lim.value,
                "basis": lim.basis,
                "brokers": lim.brokers,
                "samples": lim.samples,
                "over": lim.over,
                "share": lim.share,
                "raised_to_floor": lim.raised_to_floor,
                "quota_ids": lim.quota_ids,
                "evidence": evidence(lim, p.percentile, rec.span_s),
            }
            for lim in rec.limits
        ],
        "exempted": [entity_json(g.entity()) for g in rec.exempted],
        "kept_keys": rec.kept_keys,
        "distributions": [
            {
                "quota_id": {k: v for k, v in (("user", g.user), ("client-id", g.client_id), ("ip", g.ip)) if v},
                "key": key,
                "brokers": {
                    b: {
                        "samples": d.samples,
                        "percentiles": {f"p{q:g}": v for q, v in sorted(d.percentiles.items())},
                        "max": d.peak,
                        "over": {f"p{q:g}": n for q, n in sorted(d.over.items())},
                    }
                    for b, d in sorted(per.items())
                },
            }
            for (g, key), per in sorted(dists.items(), key=lambda kv: (kv[0][0].sort_key(), kv[0][1]))
        ],
    }


def entity_json(entity: Entity) -> dict[str, Any]:
    return {t.value: (DEFAULT_MARKER if n is DEFAULT else n) for t, n in entity.components().items()}


def replay_lines(replayed: Mapping[str, Any], most: int = 10) -> list[str]:
    """The replay of the recommendation in words: how many quota-ids it would have throttled, and the ``most``
    throttled of them with how long and how hard."""
    from kquotactl.core.wording import counted, shown_name

    s = replayed["summary"]
    throttled = [q for q in replayed["quota_ids"] if q["seconds_throttled"] > 0]
    lines = [
        f"replayed on the same traffic ({s['seconds']:,} s): {len(throttled)} of "
        f"{counted(s['quota_ids'], 'quota-id')} would have been throttled"
    ]
    for q in throttled[:most]:
        who = ", ".join(f"{k} {shown_name(v)}" for k, v in q["quota_id"].items() if v) or "(no user, no client-id)"
        lines.append(f"  {who}: {q['key']} at {limit_text(KEYS[q['key']], q['limit'])}")
        lines.append(f"    throttled {q['seconds_throttled']:,} s, at most {q['max_throttle_ms']:,} ms")
    if len(throttled) > most:
        lines.append(f"  and {counted(len(throttled) - most, 'more quota-id')}")
    return lines


def markdown_report(rec: Recommendation, current: Sequence[QuotaRecord], replayed: Mapping[str, Any]) -> str:
    """A pull-request comment: the policy, each proposed limit next to the current one with its evidence, and the
    replay on the same traffic. Names are code spans (``<default>``, ``*`` shown as they are)."""
    from kquotactl.render.ci import MAX_ROWS, code, md

    p = rec.policy
    now = {(r.entity, k): v for r in current for k, v in r.config.items()}
    changed = sorted(
        (lim for lim in rec.limits if now.get((lim.entity, lim.key)) != lim.value),
        key=lambda lim: (lim.entity.sort_key(), KEY_ORDER.get(lim.key, 99)),
    )
    out = [
        f"### kquotactl recommend: {len(changed)} limit{'s' if len(changed) != 1 else ''} to set",
        "",
        f"Policy: the busiest broker's p{p.percentile:g} + {p.headroom * 100:g} % headroom, level {code(p.level.value)}"
        + (f", long tail ≤ {p.tail_share * 100:g} % of a key's traffic on one default" if p.tail_share else "")
        + f"; evidence over {md(span_words(rec.span_s))}.",
        "",
        "| entity | key | now | recommended | evidence |",
        "|---|---|---:|---:|---|",
    ]
    for lim in changed[:MAX_ROWS]:
        k = KEYS[lim.key]
        before = now.get((lim.entity, lim.key))
        out.append(
            f"| {code(lim.entity.path)} | {code(lim.key)} | {md(limit_text(k, before)) if before is not None else '-'}"
            f" | {md(limit_text(k, lim.value))} | {md(evidence(lim, p.percentile, rec.span_s))} |"
        )
    if len(changed) > MAX_ROWS:
        out.append(f"| … | {len(changed) - MAX_ROWS} more | | | |")
    if rec.exempted:
        out += ["", "Exempt from limits: " + ", ".join(code(g.entity().path) for g in rec.exempted)]
    out += ["", "#### Replayed on the same traffic", ""]
    lines = replay_lines(replayed)
    out.append(md(lines[0]))
    throttled = [q for q in replayed["quota_ids"] if q["seconds_throttled"] > 0]
    if throttled:
        out += ["", "| quota-id | key | limit | throttled | at most |", "|---|---|---:|---:|---:|"]
        for q in throttled[:MAX_ROWS]:
            who = ", ".join(f"{k} {v}" for k, v in q["quota_id"].items() if v)
            out.append(
                f"| {code(who)} | {code(q['key'])} | {md(limit_text(KEYS[q['key']], q['limit']))}"
                f" | {q['seconds_throttled']:,} s | {q['max_throttle_ms']:,} ms |"
            )
    return "\n".join(out) + "\n"
