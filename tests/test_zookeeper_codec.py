"""The znode JSON written by hand in :mod:`kquotactl.backends.zookeeper.codec` is ``json.dumps``'s, byte for byte."""

from __future__ import annotations

import json

import pytest

from kquotactl.backends.zookeeper.codec import decode_entity, encode_entity, encode_notification
from kquotactl.core.javafmt import properties_order

PROPS = [
    {},
    {"producer_byte_rate": "1048576"},
    {"producer_byte_rate": "1000", "consumer_byte_rate": "2000", "request_percentage": "12.5"},
    {"SCRAM-SHA-256": 'salt=a"b\\c,stored=\u00e9\u4e2d\U0001f600', "controller_mutation_rate": "1.0E10"},
    {"x\n\t\u0001": "\u2028\u2029 \x7f", "connection_creation_rate": "10"},
]


@pytest.mark.parametrize("props", PROPS)
def test_entity_json_is_json_dumps_byte_for_byte(props: dict[str, str]) -> None:
    ordered = {k: props[k] for k in properties_order(props)}
    expected = json.dumps({"version": 1, "config": ordered}, separators=(",", ":"), ensure_ascii=False).encode()
    assert encode_entity(props) == expected
    assert decode_entity("/config/users/u", encode_entity(props)) == props


@pytest.mark.parametrize("path", ["users/alice", "users/%3Cdefault%3E/clients/app", "ips/10.0.0.1", 'clients/a"\u00e9'])
def test_notification_json_is_json_dumps_byte_for_byte(path: str) -> None:
    assert encode_notification(path) == json.dumps({"version": 2, "entity_path": path}, separators=(",", ":")).encode()
