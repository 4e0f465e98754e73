"""Lint never contradicts explain: every "never applies" warning is confirmed by the resolver over every
connection that matters, and every quota the resolver never applies is reported (property tests)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.lint import lint, shadowing_entity
from kquotactl.core.manifest import Manifest
from kquotactl.core.precedence import QuotaIndex
from kquotactl.manifests.export import dump_manifest_yaml, export_document
from kquotactl.manifests.loader import load_text

KEYS = ("producer_byte_rate", "consumer_byte_rate")
NAMES = ("u", "v", "<default>", "unnamed-0")  # "unnamed-0": the name lint would pick for "any other" first

parts = st.sampled_from((None, DEFAULT, *NAMES))
entities = st.builds(lambda u, c: Entity(user=u, client_id=c), parts, parts).filter(
    lambda e: e.user is not None or e.client_id is not None
)
configs = st.dictionaries(st.sampled_from(KEYS), st.sampled_from((1, 1024)), min_size=1, max_size=2)
quota_sets = st.dictionaries(entities, configs, max_size=8)


def _manifest(quotas: dict[Entity, dict[str, int]]) -> Manifest:
    """The quota set as a manifest file, through the real export and load paths."""
    return load_text(dump_manifest_yaml(export_document([QuotaRecord(e, c) for e, c in quotas.items()])), "m.yaml")


def _every_connection(quotas: dict[Entity, dict[str, int]]) -> list[tuple[str, str]]:
    """Every name any entry mentions, the empty name and a name none mentions: all classes, by brute force."""
    users = {e.user for e in quotas if isinstance(e.user, str)} | {"", "zz-other"}
    clients = {e.client_id for e in quotas if isinstance(e.client_id, str)} | {"", "zz-other"}
    return [(u, c) for u in sorted(users) for c in sorted(clients)]


@settings(max_examples=400)
@given(quota_sets)
def test_lint_reports_exactly_the_quotas_the_resolver_never_applies(quotas) -> None:
    index = QuotaIndex(quotas)
    applied: dict[tuple[Entity, str], list[tuple[str, str]]] = {}
    for user, client in _every_connection(quotas):
        for key in KEYS:
            r = index.resolve(key, user, client)
            if r.entity is not None:
                applied.setdefault((r.entity, key), []).append((user, client))
    warned = {(w.entity, k): w for w in lint(_manifest(quotas)) if w.code == "shadowed" for k in w.keys}
    for entity, cfg in quotas.items():
        for key in cfg:
            reached = applied.get((entity, key), [])
            assert ((entity, key) in warned) == (not reached), (entity.path, key, reached, warned.get((entity, key)))
            hider = shadowing_entity(entity, key, quotas)
            if reached:
                assert hider is None
            elif hider is not None:
                # the entry named as hiding it really is what applies, for some connection the entry could match
                assert applied.get((hider, key)), (entity.path, key, hider.path)
                assert hider.path in str(warned[(entity, key)])


def test_a_user_quota_under_its_default_client_pair_still_applies_to_empty_client_ids() -> None:
    quotas = {Entity(user="u", client_id=DEFAULT): {KEYS[0]: 1}, Entity(user="u"): {KEYS[0]: 2}}
    assert QuotaIndex(quotas).resolve(KEYS[0], "u", "").entity == Entity(user="u")
    assert [w for w in lint(_manifest(quotas)) if w.code == "shadowed"] == []


def test_a_client_quota_under_a_default_user_quota_never_applies() -> None:
    quotas = {Entity(user=DEFAULT): {KEYS[0]: 1}, Entity(client_id="c"): {KEYS[0]: 2}}
    (w,) = lint(_manifest(quotas))
    assert w.entity == Entity(client_id="c")
    assert "never applies" in w.message and "users/<default>" in w.message
