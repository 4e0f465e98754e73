"""Pure parts of the admin API backend: filters, wire entities, value types, planning, chunking, and
``--command-config`` parsing. No network, no Kafka client library."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from kquotactl.backends.kafka.quotas import (
    check_wire_exact,
    chunks,
    coerce_value,
    entity_from_wire,
    entity_to_wire,
    filter_components,
    plan_ops,
    typed_values,
    wire_key,
)
from kquotactl.connection.clientprops import load_client_settings, parse_client_properties, unknown_properties
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import DEFAULT, Entity, EntityType
from kquotactl.core.errors import InvalidConfigs, QuotaError, UsageError
from kquotactl.core.filters import EntityFilter, FilterComponent, MatchType
from kquotactl.core.keys import INT_MAX, LONG_MAX

# -- filters and entities ----------------------------------------------------------------------------


def test_filter_components_exact_default_any():
    flt = EntityFilter(
        (
            FilterComponent(EntityType.USER, MatchType.EXACT, "alice"),
            FilterComponent(EntityType.CLIENT_ID, MatchType.DEFAULT),
        ),
        strict=True,
    )
    assert filter_components(flt) == [("user", 0, "alice"), ("client-id", 1, None)]
    assert filter_components(EntityFilter((FilterComponent(EntityType.USER, MatchType.ANY),))) == [("user", 2, None)]
    assert filter_components(EntityFilter.all()) == []


def test_exact_ips_are_asked_as_any_and_matched_locally_by_address():
    flt = EntityFilter.exact(Entity.of(ip="2001:db8::1"))
    assert filter_components(flt) == [("ip", 2, None)]
    assert flt.matches(Entity.of(ip="2001:db8::1")) and not flt.matches(Entity.of(ip="2001:db8::2"))
    assert flt.matches(Entity(ip="2001:DB8:0::1"))  # stored as typed by another tool: the same address
    v4 = EntityFilter.exact(Entity.of(ip="192.0.2.1"))
    assert filter_components(v4) == [("ip", 2, None)]
    assert v4.matches(Entity(ip="::ffff:192.0.2.1")) and not v4.matches(Entity(ip="192.0.2.10"))


@pytest.mark.parametrize(
    "entity",
    [
        Entity.of(user="alice"),
        Entity.of(user=DEFAULT),
        Entity.of(user="a", client_id="c"),
        Entity.of(user=DEFAULT, client_id=DEFAULT),
        Entity.of(client_id="x y/z"),
        Entity.of(ip="192.0.2.1"),
        Entity.of(ip=DEFAULT),
    ],
)
def test_entity_wire_round_trip(entity):
    wire = entity_to_wire(entity)
    assert entity_from_wire(wire) == entity
    assert entity_from_wire(list(reversed(wire))) == entity
    assert wire_key(wire) == wire_key(reversed(wire))


def test_entity_to_wire_order_and_null_default():
    assert entity_to_wire(Entity.of(user="u", client_id=DEFAULT)) == [("user", "u"), ("client-id", None)]


def test_entity_from_wire_keeps_names_raw():
    # What a broker stores is shown as stored (a KRaft broker keeps names raw), not re-canonicalised.
    assert entity_from_wire([("ip", "2001:DB8::1")]).ip == "2001:DB8::1"
    assert entity_from_wire([("user", "<default>")]).user == "<default>"


# -- values ------------------------------------------------------------------------------------------


def test_coerce_values_to_key_types():
    assert coerce_value("producer_byte_rate", 1024.0) == 1024 and isinstance(
        coerce_value("producer_byte_rate", 1024.0), int
    )
    assert coerce_value("connection_creation_rate", 20.0) == 20
    assert coerce_value("request_percentage", 12.5) == 12.5
    assert isinstance(coerce_value("controller_mutation_rate", 2.0), float)
    assert coerce_value("producer_byte_rate", 9.223372036854776e18) == LONG_MAX  # Long.MAX as a double
    assert coerce_value("connection_creation_rate", 2.147483647e9) == INT_MAX
    assert coerce_value("producer_byte_rate", 10.5) == 10.5  # a fractional LONG a ZK-mode broker let through
    assert coerce_value("producer_byte_rate", 1235.0000001) == 1235  # KRaft's 1e-6 tolerance
    assert coerce_value("bogus", 1.0) is None


def test_typed_values_order_kind_and_unknown_warning():
    warnings: list[str] = []
    got = typed_values(
        Entity.of(user="u"),
        {"request_percentage": 5.0, "producer_byte_rate": 10.0, "connection_creation_rate": 3.0, "new_key": 1.0},
        warnings,
    )
    assert list(got.items()) == [("producer_byte_rate", 10), ("request_percentage", 5.0)]
    assert warnings == ["user=u: ignoring keys kquotactl does not know: new_key"]


# -- planning and chunking ---------------------------------------------------------------------------


def test_plan_ops_sets_and_removes_in_one_entry():
    e = Entity.of(user="u")
    before = {"producer_byte_rate": 100, "consumer_byte_rate": 200, "request_percentage": 5.0}
    change = EntityChange(e, {"producer_byte_rate": 150, "request_percentage": 5.0}, frozenset({"consumer_byte_rate"}))
    after, ops = plan_ops(before, change)
    assert after == {"producer_byte_rate": 150, "request_percentage": 5.0}
    assert ops == [("producer_byte_rate", 150.0, False), ("consumer_byte_rate", 0.0, True)]  # unchanged key not sent


def test_plan_ops_nothing_to_do_and_missing_delete():
    e = Entity.of(user="u")
    assert plan_ops({"producer_byte_rate": 1}, EntityChange(e, {"producer_byte_rate": 1}))[1] == []
    with pytest.raises(InvalidConfigs):
        plan_ops({}, EntityChange(e, remove=frozenset({"producer_byte_rate"})))
    after, ops = plan_ops({}, EntityChange(e, remove=frozenset({"producer_byte_rate"}), if_exists=True))
    assert after == {} and ops == []


def test_chunks_bound_entries_and_ops_never_split_an_entry():
    entries = [("e", [1] * n) for n in (3, 3, 3, 1, 5)]
    got = list(chunks(entries, lambda e: e[1], max_entries=10, max_ops=6))
    assert [len(c) for c in got] == [2, 2, 1]
    assert [len(c) for c in chunks(list(range(5)), lambda e: [e], max_entries=2, max_ops=100)] == [2, 2, 1]
    assert list(chunks([], lambda e: e)) == []


# -- --command-config --------------------------------------------------------------------------------

SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s3cr=t";'


def test_plaintext_default():
    s = parse_client_properties({})
    assert s.security_protocol == "PLAINTEXT" and s.sasl_mechanism is None and s.client_id == "kquotactl"


def test_scram_settings_and_secret_not_in_repr():
    s = parse_client_properties(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM_JAAS}
    )
    assert (s.sasl_mechanism, s.sasl_username, s.sasl_password) == ("SCRAM-SHA-512", "admin", "s3cr=t")
    assert "s3cr" not in repr(s)


def test_plain_needs_plain_login_module():
    with pytest.raises(UsageError, match="needs PlainLoginModule"):
        parse_client_properties(
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": SCRAM_JAAS}
        )


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": SCRAM_JAAS}, "default is GSSAPI"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}, "not supported"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config is required"),
        ({"security.protocol": "TLS"}, "is not one of"),
        ({"security.protocol": "SSL", "ssl.truststore.location": "/x.jks"}, "JKS is not supported: convert"),
        (
            {"security.protocol": "SSL", "ssl.keystore.location": "/x.p12", "ssl.keystore.type": "PKCS12"},
            "PKCS12 is not supported",
        ),
        (
            {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/nope.pem"},
            "does not exist",
        ),
        ({"security.protocol": "SSL", "ssl.truststore.certificates": "-----BEGIN"}, "inline PEM"),
        ({"request.timeout.ms": "soon"}, "whole number"),
        ({"sasl.kerberos.service.name": "kafka"}, "not supported"),
    ],
)
def test_unsupported_settings_say_what_to_use(props, message):
    with pytest.raises(UsageError, match=message):
        parse_client_properties(props)


def test_ssl_pem_and_hostname_check(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    s = parse_client_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca),
            "ssl.endpoint.identification.algorithm": "",
            "request.timeout.ms": "5000",
            "client.id": "ops",
        }
    )
    assert (s.ssl_cafile, s.ssl_check_hostname, s.request_timeout, s.client_id) == (str(ca), False, 5.0, "ops")


def test_load_file_and_unknown_property_warning(tmp_path):
    p = tmp_path / "c.properties"
    p.write_text("security.protocol=PLAINTEXT\nretries=3\nlinger.ms=5\n")
    settings, warnings = load_client_settings(str(p))
    assert settings.security_protocol == "PLAINTEXT"
    assert warnings == [f"--command-config {p}: ignoring unknown properties: linger.ms"]
    assert unknown_properties({"retries": "1"}) == []
    with pytest.raises(UsageError, match="no such file"):
        load_client_settings(str(tmp_path / "missing"))


def test_bad_bootstrap_address_is_usage_error_without_network():
    from kquotactl.backends.kafka.quotas import AdminBackend

    with pytest.raises(UsageError, match="HOST:PORT"):
        AdminBackend.connect("localhost")


def test_admin_backend_module_does_not_import_kafka_python():
    import subprocess

    code = (
        "import sys, kquotactl.backends.kafka.quotas, kquotactl.connection.clientprops; print('kafka' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- public client APIs only -------------------------------------------------------------------------

CLIENT_LIBRARIES = ("kafka", "confluent_kafka")


def _library_names(tree: ast.Module) -> tuple[bool, set[str]]:
    """Whether a module imports a Kafka client library (anywhere, lazy imports too), and the names bound to it."""
    uses, names = False, set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name.split(".")[0] in CLIENT_LIBRARIES:
                    uses = True
                    names.add(a.asname or a.name.split(".")[0])
        elif isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in CLIENT_LIBRARIES and not n.level:
            uses = True
            names |= {a.asname or a.name for a in n.names}
    return uses, names


def private_reads(source: str) -> list[str]:
    """Private attribute reads (``x._y``) that may reach into a Kafka client library's objects.

    In a module that imports kafka-python or confluent-kafka, only ``self._y`` / ``cls._y`` are the module's own;
    in a class deriving from a library class, ``self._y`` counts as the module's own only when the class assigns it.
    """
    tree = ast.parse(source)
    uses, names = _library_names(tree)
    if not uses:
        return []
    found = []
    for n in ast.walk(tree):
        own = isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")
        if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.endswith("__") and not own:
            found.append(f"{n.lineno}: {ast.unparse(n)}")
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if not any(ast.unparse(b).split(".")[0] in names for b in cls.bases):
            continue
        attrs = [n for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)]
        own = {a.attr for a in attrs if a.value.id == "self" and isinstance(a.ctx, ast.Store)}
        for a in attrs:
            if a.value.id == "self" and a.attr.startswith("_") and not a.attr.endswith("__") and a.attr not in own:
                found.append(f"{a.lineno}: {ast.unparse(a)} (inherited from {cls.name}'s library base)")
    return found


def test_private_read_scan_catches_library_internals():
    assert private_reads("import os\nx = os._exit") == []  # not a Kafka client module
    wire = "import kafka.errors as E\nclass W:\n    def f(self):\n        self._m = 1\n        return self._m._conns\n"
    assert private_reads(wire) == ["5: self._m._conns"]
    sub = "from kafka import KafkaAdminClient as K\nclass A(K):\n    def f(self):\n        return self._manager\n"
    assert private_reads(sub) == ["4: self._manager (inherited from A's library base)"]
    lazy = "def f(c):\n    from confluent_kafka import KafkaException\n    return c._rk\n"
    assert private_reads(lazy) == ["3: c._rk"]


def test_no_module_reads_kafka_client_private_attributes():
    """kquotactl uses kafka-python (and confluent-kafka, if ever imported) through their public APIs only, so the
    kafka-python pin needs no upper bound for internals."""
    src = Path(__file__).resolve().parents[1] / "src" / "kquotactl"
    scanned = {p.relative_to(src).as_posix(): private_reads(p.read_text()) for p in src.rglob("*.py")}
    assert (
        "backends/kafka/client.py" in scanned
        and _library_names(ast.parse((src / "backends/kafka/client.py").read_text()))[0]
    )
    assert {m: r for m, r in scanned.items() if r} == {}


@pytest.mark.parametrize(
    ("value", "exact"),
    [(1, True), (2**53, True), (2**53 + 1, False), (2**63 - 3, False), (LONG_MAX, True), (2**62, True), (10.5, True)],
)
def test_wire_exactness_is_what_reads_back(value, exact):
    """An integer is sendable when the double the admin API carries reads back as the same integer (LONG_MAX
    reads back clamped to itself); doubles are what they are."""
    change = EntityChange(Entity.of(user="u"), {"consumer_byte_rate": value})
    if exact:
        check_wire_exact([change])
    else:
        with pytest.raises(QuotaError, match=rf"^user=u: consumer_byte_rate={value} cannot be sent exactly"):
            check_wire_exact([change])
