"""`kquotactl explain --bootstrap-server` against a real Kafka 4.x KRaft broker: the same answers as the pure
resolver with KRaft's per-key level bookkeeping (the admin API path of state.backend)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from kquotactl.core.explain import explain_json
from kquotactl.core.precedence import QuotaIndex
from test_explain_cli import CONNECTIONS, SETUP, conn_args

pytestmark = pytest.mark.kafka

# The admin API refuses request_rate (the KIP-124 draft key), so it is left out here.
KRAFT_SETUP = [
    (args, e, {k: v for k, v in cfg.items() if k != "request_rate"})
    for args, e, cfg in SETUP
    if any(k != "request_rate" for k in cfg)
]


def test_explain_over_the_admin_api_matches_the_resolver(kraft) -> None:
    for args, _, cfg in KRAFT_SETUP:
        add = ",".join(f"{k}={v}" for k, v in cfg.items())
        r = run_cli("--bootstrap-server", kraft.bootstrap, "alter", *args, "--add-config", add)
        assert r.exit_code == 0, r.stderr
    index = QuotaIndex({e: cfg for _, e, cfg in KRAFT_SETUP}, per_key_levels=True)
    for conn in CONNECTIONS:
        r = run_cli("--bootstrap-server", kraft.bootstrap, "explain", *conn_args(conn), "-o", "json", "--chain")
        assert r.exit_code == 0, r.stderr
        assert json.loads(r.stdout) == explain_json(index, conn, chain=True), conn
