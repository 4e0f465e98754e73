"""Differential: kafka-configs' flat command lines, kquotactl against ``kafka.admin.ConfigCommand`` itself.

Random command lines are drawn from kafka-configs' grammar (an action present, absent or doubled; entity types, names
and defaults in random order and counts; users/clients/ips; ``--add-config``/``--delete-config`` forms with brackets
and blanks; ``--opt``, ``-opt``, ``--opt=value`` and ``-opt=value`` spellings; unknown options; missing values; stray
words). Kafka answers with its own parser and checks (``FlatFormOracle``: ``ConfigCommandOptions``, ``checkArgs``,
``parseConfigsToBeAdded``/``parseConfigsToBeDeleted``, all it runs before connecting); kquotactl with
:func:`kquotactl.cli.app.parse_request`, everything ``main`` runs before connecting. The outcome class must agree
(refused, or the same entity/filter, keys and values), and so must the message where kquotactl uses kafka-configs'
words. Every deliberate difference (docs/core.md, "Differences from kafka-configs, on purpose") is encoded in
:func:`_expected`, case by case, and counted so that a difference that no longer occurs is noticed too.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import click
import pytest

from fixtures_oracle import CONFIG_COMMAND_VERSIONS, NEWEST_VERSION
from kquotactl.cli.app import parse_request
from kquotactl.cli.argv import ACTION_COUNT
from kquotactl.core.entities import DEFAULT
from kquotactl.core.errors import QuotaError
from kquotactl.testing.oracle import cases_per_run, mismatches
from kquotactl.testing.versions import RELEASES

#: Kafka version -> the connection option its ConfigCommand takes for quotas.
CONNECT = {v: "--zookeeper" if RELEASES[v].version < (3,) else "--bootstrap-server" for v in CONFIG_COMMAND_VERSIONS}

#: Kafka's refusals whose words kquotactl keeps (the message must match, not only the refusal).
PROMISED = (
    ACTION_COUNT,
    "Duplicate entity type(s) specified: ",
    "--entity-{type,name,default} should not be used in conjunction with specific entity flags",
)

USER_NAMES = ["alice", "app-1", "svc.a_b", "bob smith", "CN=x,O=y", "é中", "--describe", "-x"]
IP_NAMES = ["192.0.2.10", "2001:db8::1", "10.0.0.1"]
KEYS = {"users": ["producer_byte_rate", "consumer_byte_rate"], "ips": ["connection_creation_rate"]}
TYPE_FOR = {"users": "user", "clients": "client-id", "ips": "ip"}


@dataclass
class Line:
    argv: list[str]
    marks: set[str] = field(default_factory=set)  # which documented differences this line exercises

    def __str__(self) -> str:
        return " ".join(repr(a) if (" " in a or not a) else a for a in self.argv)


def _opt(rng: random.Random, name: str, value: str | None = None) -> list[str]:
    """One option as kafka-configs users spell it: ``--name`` or ``-name`` (jopt takes both), ``=value`` or not."""
    dash = "-" if rng.random() < 0.3 else "--"
    if value is None:
        return [dash + name]
    if rng.random() < 0.2:
        return [f"{dash}{name}={value}"]
    return [dash + name, value]


def _name(rng: random.Random, ips: bool, line: Line) -> str:
    r = rng.random()
    if r < 0.05:
        line.marks.add("empty-name")
        return ""
    if r < 0.1:
        line.marks.add("marker-name")
        return "<default>"
    return rng.choice(IP_NAMES if ips else USER_NAMES)


def _add_config(rng: random.Random, types: list[str], line: Line) -> str:
    keys = KEYS["ips"] if "ips" in types else KEYS["users"]
    pieces = []
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(keys + (["request_percentage"] if "ips" not in types else []))
        value = str(rng.choice([1, 1024, 1048576, 50]))
        form = rng.random()
        if form < 0.15:
            value = f"[{value}]"
        elif form < 0.25:
            key, value = f" {key} ", f" {value} "
        elif form < 0.28:
            pieces.append(key)  # no "=": refused by both
            continue
        elif form < 0.31:
            value = f"={value}"  # k==v: refused by both
        pieces.append(f"{key}={value}")
    text = rng.choice([",", ", ", " ,"]).join(pieces)
    r = rng.random()
    if r < 0.08:
        text += ","  # a trailing comma is dropped (String.split)
    elif r < 0.12:
        text = "," + text  # a leading empty piece is refused
    elif r < 0.15:
        text = text.replace(",", ",,", 1)  # an empty piece inside is refused
    return text


def _delete_config(rng: random.Random, types: list[str]) -> str:
    keys = KEYS["ips"] if "ips" in types else KEYS["users"] + ["request_percentage"]
    chosen = rng.sample(keys, rng.randint(1, len(keys)))
    return rng.choice([",", ",,", " , "]).join(chosen) + rng.choice(["", "", ","])


def _line(rng: random.Random, version: str) -> Line:
    line = Line([])
    items: list[list[str]] = []
    # the action: usually one, sometimes none or two
    r = rng.random()
    actions = ["alter"] if r < 0.45 else ["describe"] if r < 0.85 else [] if r < 0.92 else ["alter", "describe"]
    if r > 0.97:
        actions = ["describe", "describe"]
    items += [_opt(rng, a) for a in actions]
    if rng.random() > 0.03:
        items.append(_opt(rng, CONNECT[version][2:], "127.0.0.1:9"))
    else:
        line.marks.add("no-connect")
    # entities: kafka-configs' long form, its entity flags, or both (refused)
    style = rng.random()
    types: list[str] = []
    if style < 0.65 or style > 0.95:
        pool = ["users", "clients", "ips"] if rng.random() < 0.8 else ["users", "clients", "ips", "users", "groupies"]
        types = [rng.choice(pool) for _ in range(rng.choice([0, 1, 1, 2, 2, 3]))]
        items += [_opt(rng, "entity-type", t) for t in types]
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
            if rng.random() < 0.3:
                items.append(_opt(rng, "entity-default"))
            else:
                items.append(_opt(rng, "entity-name", _name(rng, "ips" in types, line)))
    if style >= 0.65:
        for flag, t in (("user", "users"), ("client", "clients"), ("ip", "ips")):
            count = rng.choice([0, 0, 1, 1, 1, 2] if style < 0.9 else [0, 1])
            for _ in range(count):
                items.append(_opt(rng, flag, _name(rng, t == "ips", line)))
            if count:
                types.append(t)
            if count > 1:
                line.marks.add("repeat")
        for flag, t in (("user-defaults", "users"), ("client-defaults", "clients"), ("ip-defaults", "ips")):
            if rng.random() < 0.2:
                items.append(_opt(rng, flag))
                types.append(t)
    if "alter" in actions or rng.random() < 0.05:
        add = rng.random()
        if add < 0.7:
            items.append(_opt(rng, "add-config", _add_config(rng, types, line)))
            if rng.random() < 0.05:
                items.append(_opt(rng, "add-config", _add_config(rng, types, line)))
                line.marks.add("repeat")
        if add > 0.5:
            items.append(_opt(rng, "delete-config", _delete_config(rng, types)))
            if rng.random() < 0.2:
                items.append(_opt(rng, "delete-config", _delete_config(rng, types)))
    if rng.random() < 0.04:
        items.append([rng.choice(["--foo", "-x", "--describ", "--entity-types", "-user-default", "--add"]), "v"])
    if rng.random() < 0.03:
        items.append([rng.choice(["stray", "-"])])
        line.marks.add("stray")
    rng.shuffle(items)  # pairing is positional: the order of names is the point
    line.argv = [tok for item in items for tok in item] or [CONNECT[version], "127.0.0.1:9"]
    if rng.random() < 0.04:
        line.argv.append(rng.choice(["--entity-name", "--entity-type", "--add-config", "-user", "--delete-config"]))
    return line


# -- the two sides ---------------------------------------------------------------------------------------------


def _ours(line: Line) -> tuple[Any, ...]:
    try:
        action, request = parse_request(line.argv)
    except (QuotaError, click.ClickException) as e:
        return ("refused", e.format_message() if isinstance(e, click.ClickException) else str(e))
    if action == "describe":
        comps = tuple((c.entity_type.value, c.match_type.name, c.name) for c in request.components)
        return ("describe", comps)
    entity = request.entity
    names = (("user", entity.user), ("client-id", entity.client_id), ("ip", entity.ip))
    ent = tuple((t, None if n is DEFAULT else n) for t, n in names if n is not None)
    return ("alter", ent, tuple(sorted((k, float(v)) for k, v in request.set.items())), tuple(sorted(request.remove)))


def _pairs(kafka: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Types and names zipped by position (bootstrap mode's ``zipAll``); a missing name is None, "" the default."""
    names = kafka["names"]
    return [(TYPE_FOR[t], names[i] if i < len(names) else None) for i, t in enumerate(kafka["types"])]


def _expected(version: str, line: Line, kafka: dict[str, Any], seen: Counter[str]) -> tuple[Any, ...]:
    """What kquotactl must answer, given Kafka's answer: Kafka's outcome, except the documented differences."""
    if "refused" in kafka:
        message = kafka["message"]
        if "stray" in line.marks:  # kquotactl refuses the stray word first (jopt ignores it)
            return ("refused", None)
        if "repeat" in line.marks:  # kquotactl refuses `--user a --user b` as it parses; jopt when it reads the value
            return ("refused", None)
        dup = "Duplicate entity type(s) specified: "
        if message.startswith(dup) and RELEASES[version].version < (4, 2):
            # Scala's ConfigCommand lists every later repeat; kquotactl words it as the Java one (4.2+): each once
            seen["duplicate types listed once"] += 1
            message = dup + ",".join(dict.fromkeys(message[len(dup) :].split(",")))
        return ("refused", message if any(message.startswith(p) for p in PROMISED) else None)
    pairs = _pairs(kafka)
    # the documented differences: kquotactl refuses what kafka-configs would guess at
    if "stray" in line.marks:
        seen["stray words (jopt ignores them)"] += 1
        return ("refused", None)
    if any(n == "" for _, n in pairs) and "empty-name" in line.marks:
        seen["empty name"] += 1
        return ("refused", None)
    if any(n == "<default>" and t != "ip" for t, n in pairs):
        seen["<default> user/client-id"] += 1
        return ("refused", None)
    if len(kafka["names"]) > len(kafka["types"]):
        seen["more names than types"] += 1
        return ("refused", None)
    if kafka["action"] == "describe":
        comps = tuple(
            (t, "ANY", None) if n is None else (t, "DEFAULT", None) if n in ("", "<default>") else (t, "EXACT", n)
            for t, n in pairs
        )
        return ("describe", comps)
    if any(n is None for _, n in pairs):
        seen["alter: a type without a name"] += 1
        return ("refused", None)
    adds = [(k, v) for k, v in kafka["adds"]]
    if set(kafka["deletes"]) & {k for k, _ in adds}:
        seen["key added and deleted"] += 1
        return ("refused", None)
    if not adds and not [d for d in kafka["deletes"] if d]:
        return ("refused", None)
    if version == "2.8" and [t for t, _ in pairs] == ["client-id", "user"] and len(kafka["names"]) == 1:
        # ZooKeeper-mode kafka-configs would take the one name for the *user*; kquotactl pairs by position
        seen["2.8 clients,users + one name"] += 1
    ent = tuple(sorted(((t, None if n in ("", "<default>") else n) for t, n in pairs), key=_entity_order))
    return ("alter", ent, tuple(sorted((k, float(v)) for k, v in adds)), tuple(sorted(set(kafka["deletes"]))))


def _entity_order(c: tuple[str, Any]) -> int:
    return ["user", "client-id", "ip"].index(c[0])


def _kafka_argv(line: Line, version: str) -> list[str]:
    """The line Kafka gets. Without a connection option kquotactl takes the cluster from KQUOTACTL_ZOOKEEPER or a
    context (kafka-configs has neither and refuses): Kafka is asked as if the option were there."""
    if "no-connect" in line.marks:
        return [CONNECT[version], "127.0.0.1:9", *line.argv]
    return line.argv


IP_MARKER_REFUSED = "The entity name for ips must be a valid IP or resolvable host, but it is: <default>"


def _ip_marker_as_default(argv: list[str]) -> list[str]:
    """The same line with the ip name ``<default>`` spelled as the default (``--entity-default``, ``--ip-defaults``):
    Kafka 4.x refuses ``--ip '<default>'``, 2.8-3.9 and kquotactl take it for the default ip."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        body = tok.lstrip("-")
        if body in ("entity-name", "ip") and i + 1 < len(argv) and argv[i + 1] == "<default>":
            out.append("--entity-default" if body == "entity-name" else "--ip-defaults")
            i += 2
            continue
        if body in ("entity-name=<default>", "ip=<default>"):
            out.append("--entity-default" if body.startswith("entity") else "--ip-defaults")
        else:
            out.append(tok)
        i += 1
    return out


def _dup_add_key(line: Line) -> bool:
    """kquotactl refuses a key given twice in one --add-config (Properties keeps the last silently)."""
    for i, a in enumerate(line.argv):
        body = a.lstrip("-")
        if body.startswith("add-config="):
            text = body[len("add-config=") :]
        elif body == "add-config" and i + 1 < len(line.argv):
            text = line.argv[i + 1]
        else:
            continue
        keys = [p.split("=")[0].strip() for p in text.split(",") if "=" in p]
        if len(keys) != len(set(keys)):
            return True
    return False


@dataclass
class Compared:
    line: Line
    kafka: dict[str, Any]  # Kafka's parse-level answer
    kafka_argv: list[str]  # the line Kafka answered (see _kafka_argv and _ip_marker_as_default)
    ours: tuple[Any, ...]
    want: tuple[Any, ...]


def _compare(oracle: Any, version: str, lines: list[Line], seen: Counter[str]) -> list[Compared]:
    """Ask Kafka and kquotactl about every line; ``want`` is Kafka's outcome with the documented differences applied."""
    asked = [_kafka_argv(ln, version) for ln in lines]
    answers = oracle.ask_many([{"args": a} for a in asked])
    # Kafka 4.x refuses `--ip '<default>'`: what it would do with the default ip spelled its way is what kquotactl
    # must do with `<default>` (as kafka-configs 2.8-3.9 did)
    again = [
        i for i, a in enumerate(answers) if a.get("message") == IP_MARKER_REFUSED and "stray" not in lines[i].marks
    ]
    if again:
        for i in again:
            asked[i] = _ip_marker_as_default(asked[i])
        fixed = oracle.ask_many([{"args": asked[i]} for i in again])
        for i, answer in zip(again, fixed, strict=True):
            answers[i] = answer
        seen[f"{version}: ip <default> refused by Kafka"] += len(again)
    out = []
    for line, kafka, argv in zip(lines, answers, asked, strict=True):
        assert "error" not in kafka, f"the oracle failed on {line}: {kafka}"
        got = _ours(line)
        want = _expected(version, line, kafka, seen)
        if want[0] == "alter" and _dup_add_key(line):
            seen["key given twice in --add-config"] += 1
            want = ("refused", None)
        if want[0] == "refused" and got[0] == "refused" and (want[1] is None or got[1].startswith(want[1])):
            got = want  # kafka-configs' words, where kquotactl keeps them, may be followed by a hint
        out.append(Compared(line, kafka, argv, got, want))
    return out


@pytest.mark.jvm
@pytest.mark.parametrize("version", sorted(CONNECT))
def test_flat_command_lines_match_kafka_configs(kafka_oracle, oracle_seed, version):
    rng = random.Random(oracle_seed)
    lines = [_line(rng, version) for _ in range(cases_per_run(600))]
    seen: Counter[str] = Counter()
    results = _compare(kafka_oracle(version, "FlatFormOracle"), version, lines, seen)
    bad = list(mismatches((str(r.line) for r in results), (r.ours for r in results), (r.want for r in results)))
    assert not bad, f"seed {oracle_seed} (KQUOTACTL_ORACLE_SEED={oracle_seed}), Kafka {version}: " + "\n".join(
        f"\n  {c}\n    kquotactl {o}\n    expected  {k}" for c, o, k in bad
    )
    outcomes = Counter(r.want[0] for r in results)
    assert outcomes["alter"] and outcomes["describe"] and outcomes["refused"], outcomes


# -- against a real cluster: what kafka-configs writes is what kquotactl writes ---------------------------------


def _on(argv: list[str], connect: str) -> list[str]:
    """A line pointed at a real cluster (the generated ones name 127.0.0.1:9)."""
    return [a.replace("127.0.0.1:9", connect) for a in argv]


def _sample(results: list[Compared], rng: random.Random, count: int) -> list[Compared]:
    """Lines Kafka's parser accepts as alters: mostly ones kquotactl accepts, some it refuses on purpose."""
    alters = [r for r in results if r.kafka.get("action") == "alter"]
    accepted = [r for r in alters if r.want[0] == "alter"]
    refused = [r for r in alters if r.want[0] == "refused"]
    return rng.sample(accepted, min(len(accepted), count)) + rng.sample(refused, min(len(refused), count // 4))


def _seed_args(r: Compared) -> list[str] | None:
    """A kquotactl alter that sets the keys the line deletes on its entity (both sides start from it), or None."""
    if r.want[0] != "alter" or not r.want[3]:
        return None
    flags = {"user": "--user", "client-id": "--client-id", "ip": "--ip"}
    defaults = {"user": "--user-defaults", "client-id": "--client-defaults", "ip": "--ip-defaults"}
    args = ["alter"]
    for t, name in r.want[1]:
        args += [defaults[t]] if name is None else [flags[t], name]
    return [*args, "--add-config", ",".join(f"{k}=7" for k in r.want[3])]


def _zk_quotas(chroot: Any) -> dict[str, dict[str, float]]:
    """Every quota entity node under the chroot's /config, its keys as numbers (kquotactl writes doubles as
    Double.toString prints them, ZooKeeper-mode kafka-configs the string as typed: docs/core.md)."""
    import json

    out: dict[str, dict[str, float]] = {}

    def walk(path: str) -> None:
        data = chroot.get(path)
        if data:
            out[path] = {k: float(v) for k, v in json.loads(data)["config"].items()}
        for child in chroot.children(path):
            walk(f"{path}/{child}")

    for kind in ("users", "clients", "ips"):
        if chroot.exists(f"/config/{kind}"):
            walk(f"/config/{kind}")
    return out


def _alter_sample(oracle: Any, version: str, rng: random.Random, n: int) -> list[Any]:
    """Up to ``n`` generated lines to run for real on a cluster, after the parse-level comparison of them all."""
    lines = [_line(rng, version) for _ in range(cases_per_run(600))]
    return _sample(_compare(oracle, version, lines, Counter()), rng, n)


def _both_outcomes(line: str, kafka: dict[str, Any], theirs: Any, ours: Any, mine: Any) -> str:
    return (
        f"\n  {line}\n    kafka-configs exit {kafka['exit']} {theirs} {kafka['stderr'][:200]!r}"
        f"\n    kquotactl     exit {ours.exit_code} {mine} {ours.stderr[:200]!r}"
    )


def _assert_sample_agrees(sample: list[Any], written: int, bad: list[str], seed: int, version: str) -> None:
    assert len(sample) >= 10 and written >= 5, f"seed {seed}: {len(sample)} lines, {written} applied by both"
    assert not bad, f"seed {seed} (KQUOTACTL_ORACLE_SEED={seed}), Kafka {version}:" + "".join(bad[:5])


@pytest.mark.zookeeper
@pytest.mark.jvm
def test_flat_alters_write_what_kafka_configs_writes_in_zookeeper(kafka_oracle, oracle_seed, chroot):
    """Kafka 2.8.2's ConfigCommand.main (--zookeeper) and kquotactl, the same line on the same empty chroot."""
    from conftest import run_cli

    version = "2.8"
    rng = random.Random(oracle_seed)
    oracle = kafka_oracle(version, "FlatFormOracle")
    sample = _alter_sample(oracle, version, rng, 30)
    bad = []
    written = 0
    for r in sample:
        argv = _on(_kafka_argv(r.line, version), chroot.connect)
        seed = _seed_args(r)
        if seed:
            assert run_cli("--zookeeper", chroot.connect, *seed).exit_code == 0
        kafka = oracle.ask({"run": True, "args": _on(r.kafka_argv, chroot.connect)})
        # kafka-configs 2.8 keeps an emptied entity node ({"config":{}}); kquotactl deletes it, as 3.5+ brokers do
        theirs = {path: config for path, config in _zk_quotas(chroot).items() if config}
        chroot.zk.delete(chroot.root + "/config", recursive=True)
        if seed:
            assert run_cli("--zookeeper", chroot.connect, *seed).exit_code == 0
        ours = run_cli(*argv)
        mine = _zk_quotas(chroot)
        if chroot.exists("/config"):
            chroot.zk.delete(chroot.root + "/config", recursive=True)
        written += kafka["exit"] == 0 and ours.exit_code == 0
        if r.want[0] == "refused":  # a documented difference: kquotactl refuses and writes nothing
            ok = ours.exit_code == 1 and not mine
        else:
            ok = (ours.exit_code == 0) == (kafka["exit"] == 0) and mine == theirs
        if not ok:
            bad.append(_both_outcomes(r.line, kafka, theirs, ours, mine))
    _assert_sample_agrees(sample, written, bad, oracle_seed, version)


def _kraft_quotas(backend: Any, before: dict[Any, dict[str, float]] | None = None) -> dict[Any, dict[str, float]]:
    """Every quota entity the cluster describes; with ``before``, wait (a little) until the broker shows a change:
    it applies the controller's metadata asynchronously."""
    import time

    deadline = time.monotonic() + (5 if before is not None else 0)
    while True:
        state = {r.entity: {k: float(v) for k, v in r.config.items()} for r in backend.describe()}
        if state != before or time.monotonic() >= deadline:
            return state
        time.sleep(0.05)


@pytest.mark.kafka
@pytest.mark.jvm
def test_flat_alters_do_what_kafka_configs_does_on_kraft(kafka_oracle, oracle_seed, kraft):
    """The newest Kafka's ConfigCommand.main (--bootstrap-server) and kquotactl, the same line on the same empty
    cluster."""
    from conftest import run_cli
    from fixtures_kafka import _wipe
    from kquotactl.backends.kafka.quotas import AdminBackend

    version = NEWEST_VERSION
    rng = random.Random(oracle_seed)
    oracle = kafka_oracle(version, "FlatFormOracle")
    sample = _alter_sample(oracle, version, rng, 20)
    bad = []
    written = 0
    with AdminBackend.connect(kraft.bootstrap) as backend:
        for r in sample:
            argv = _on(_kafka_argv(r.line, version), kraft.bootstrap)
            seed = _seed_args(r)
            start: dict[Any, dict[str, float]] = {}
            if seed:
                assert run_cli("--bootstrap-server", kraft.bootstrap, *seed).exit_code == 0
                start = _kraft_quotas(backend, {})
            kafka = oracle.ask({"run": True, "args": _on(r.kafka_argv, kraft.bootstrap)})
            theirs = _kraft_quotas(backend, start if kafka["exit"] == 0 else None)
            _wipe(backend)
            if seed:
                assert run_cli("--bootstrap-server", kraft.bootstrap, *seed).exit_code == 0
                _kraft_quotas(backend, {})
            ours = run_cli(*argv)
            mine = _kraft_quotas(backend, start if ours.exit_code == 0 else None)
            _wipe(backend)
            written += kafka["exit"] == 0 and ours.exit_code == 0
            if r.want[0] == "refused":  # a documented difference: kquotactl refuses and writes nothing
                ok = ours.exit_code == 1 and not mine
            elif len(set(r.kafka["deletes"])) < len(r.kafka["deletes"]) and kafka["exit"] == 1:
                # a key deleted twice (`--delete-config k --delete-config k,`): 4.x sends two ops for one key and the
                # broker refuses the request; kquotactl deletes the key once (as ZooKeeper-mode kafka-configs did)
                ok = ours.exit_code == 0 and not any(set(c) & set(r.kafka["deletes"]) for c in mine.values())
            else:
                ok = (ours.exit_code == 0) == (kafka["exit"] == 0) and mine == theirs
            if not ok:
                bad.append(_both_outcomes(r.line, kafka, theirs, ours, mine))
    _assert_sample_agrees(sample, written, bad, oracle_seed, version)
