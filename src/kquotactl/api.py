"""kquotactl's public Python API: the services the commands call, and the types they take and return.

Import from here (``from kquotactl import api``); these names keep their meaning within a major version, and the
fields of the result types are a versioned contract (:data:`RESULT_SCHEMA_VERSION`, docs/python-api.md). This
module only re-exports: each name has its home in :mod:`kquotactl.services` or the core.
"""

from __future__ import annotations

from kquotactl.backends.base import QuotaBackend
from kquotactl.connection.cluster import ConnectionOptions
from kquotactl.core.changes import EntityChange, EntityResult, Outcome, QuotaRecord
from kquotactl.core.entities import Entity, EntityType
from kquotactl.core.errors import BackendUnavailable, PartialFailure, QuotaError, UsageError
from kquotactl.core.explain import Connection
from kquotactl.core.filters import EntityFilter
from kquotactl.core.plan import Plan
from kquotactl.manifests.loader import load_manifests
from kquotactl.observe.throttled import QuotaIdRow
from kquotactl.services.connect import connect
from kquotactl.services.connection_rate import RateChanged, change_connection_rate, connection_rates
from kquotactl.services.explain import Explained, ExplainedMany, Replayed, explain, explain_lines, explain_many, replay
from kquotactl.services.impact import QuotaSets, Replay, quota_sets
from kquotactl.services.impact import run as impact
from kquotactl.services.plans import Applied, Planned, apply, plan
from kquotactl.services.quotas import Altered, Described, QuotaSet, alter, describe, load_quota_set
from kquotactl.services.recommend import Recommended, policy_of, recommend_from_traffic
from kquotactl.services.top import top
from kquotactl.services.verify import Converged, verify_applied, wait_applied

#: The version of the result types' fields (docs/python-api.md): raised when a field is removed or changes meaning
#: (adding one does not); tests/test_python_api.py holds the fields to tests/data/api_results.json.
RESULT_SCHEMA_VERSION = 1

#: The result types whose fields RESULT_SCHEMA_VERSION covers
RESULT_TYPES = (
    Described,
    Altered,
    Planned,
    Applied,
    Converged,
    Explained,
    ExplainedMany,
    Replayed,
    RateChanged,
    QuotaIdRow,
    QuotaSet,
    QuotaRecord,
    EntityResult,
    Recommended,
)

__all__ = [
    "RESULT_SCHEMA_VERSION",
    "RESULT_TYPES",
    "Altered",
    "Applied",
    "BackendUnavailable",
    "Connection",
    "ConnectionOptions",
    "Converged",
    "Described",
    "Entity",
    "EntityChange",
    "EntityFilter",
    "EntityResult",
    "EntityType",
    "Explained",
    "ExplainedMany",
    "Outcome",
    "PartialFailure",
    "Plan",
    "Planned",
    "QuotaBackend",
    "QuotaError",
    "QuotaIdRow",
    "QuotaRecord",
    "QuotaSet",
    "QuotaSets",
    "RateChanged",
    "Recommended",
    "Replay",
    "Replayed",
    "UsageError",
    "alter",
    "apply",
    "change_connection_rate",
    "connect",
    "connection_rates",
    "describe",
    "explain",
    "explain_lines",
    "explain_many",
    "impact",
    "load_manifests",
    "load_quota_set",
    "plan",
    "policy_of",
    "quota_sets",
    "recommend_from_traffic",
    "replay",
    "top",
    "verify_applied",
    "wait_applied",
]
