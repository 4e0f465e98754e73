"""plan's apply order against the resolver: a connection limited before and after a plan is never left
unlimited in between (property test over every connection class with non-empty names).

Connections with an *empty* user name are the known exception: for them the broker's two phases make the
safe order depend on levels the plan cannot order without giving up its describe order for additions (adding
``users/<default>`` before ``users/<default>/clients/c`` leaves ("", "c") unlimited for one write).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.plan import make_plan
from kquotactl.core.precedence import QuotaIndex
from kquotactl.manifests.export import dump_manifest_yaml, export_document
from kquotactl.manifests.loader import load_text

KEY = "producer_byte_rate"
PRUNE_ALL = [  # every user/client entity, defaults included
    "users/*",
    "users/<default>",
    "users/*/clients/*",
    "users/*/clients/<default>",
    "users/<default>/clients/*",
    "users/<default>/clients/<default>",
    "clients/*",
    "clients/<default>",
]

parts = st.sampled_from((None, DEFAULT, "u", "c"))
entities = st.builds(lambda u, c: Entity(user=u, client_id=c), parts, parts).filter(
    lambda e: e.user is not None or e.client_id is not None
)
states = st.dictionaries(entities, st.fixed_dictionaries({KEY: st.sampled_from((1, 2))}), max_size=6)


def _limited(state: dict[Entity, dict[str, int]], user: str, client: str) -> bool:
    return QuotaIndex(state).resolve(KEY, user, client).limit is not None


@settings(max_examples=300)
@given(states, states)
def test_no_named_connection_is_left_unlimited_while_a_plan_is_applied(live, want) -> None:
    doc = {"prune": PRUNE_ALL, **export_document([QuotaRecord(e, c) for e, c in want.items()])}
    plan = make_plan(load_text(dump_manifest_yaml(doc), "m.yaml"), [QuotaRecord(e, c) for e, c in live.items()], True)
    names = ("u", "c", "other")
    connections = [(u, c) for u in names for c in (*names, "")]
    guarded = [x for x in connections if _limited(live, *x) and _limited(want, *x)]
    state = {e: dict(c) for e, c in live.items()}
    for change in plan.changes():
        cfg = {k: v for k, v in state.get(change.entity, {}).items() if k not in change.remove}
        cfg.update(change.set)
        state = {**{e: c for e, c in state.items() if e != change.entity}, **({change.entity: cfg} if cfg else {})}
        assert all(_limited(state, *x) for x in guarded), (change.entity.path, state)
    assert state == {e: c for e, c in want.items()}
