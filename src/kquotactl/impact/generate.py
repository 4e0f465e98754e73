"""Synthetic traffic for trying the model and for benchmarks: skewed users and clients, bursts, reconnect storms.

Deterministic for a seed. The arrival rate is fixed (``rate`` rows per second), so a larger sample covers a
longer span rather than denser seconds, and per-quota-id rates stay comparable across sizes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.errors import UsageError
from kquotactl.core.keys import KEYS, Number
from kquotactl.core.layout import wrap

START = 1_767_225_600  # 2026-01-01T00:00:00Z


def generate(
    rows: int,
    *,
    seed: int = 7,
    users: int = 2000,
    clients: int = 10000,
    rate: int = 14000,
    bursts: int | None = None,
    topics: int = 50,
    start: int = START,
) -> Any:
    """A pyarrow Table of ``rows`` traffic samples."""
    import numpy as np
    import pyarrow as pa

    if rows < 1 or users < 1 or clients < 1 or rate < 1:
        raise UsageError("--rows, --users, --clients and --rate must be at least 1")
    rng = np.random.default_rng(seed)
    # Clients belong to users (heavy users own more of them); 2% of client-ids are generic names many users share.
    uw = 1.0 / np.arange(1, users + 1) ** 0.8
    owner = rng.choice(users, size=clients, p=uw / uw.sum())
    generic = rng.random(clients) < 0.02
    client_names = np.array([f"generic-{i % 40}" if generic[i] else f"app-{i}" for i in range(clients)], dtype=object)
    user_names = np.array([f"svc-{i}" for i in range(users)], dtype=object)
    # Pair popularity: Zipf-like weights over a random order of clients.
    weights = 1.0 / np.arange(1, clients + 1) ** 1.05
    weights /= weights.sum()
    order = rng.permutation(clients)
    pick = order[rng.choice(clients, size=rows, p=weights)]
    span = max(1.0, rows / rate)
    ts = start + rng.random(rows) * span
    scale = np.ones(rows)
    n_bursts = bursts if bursts is not None else max(1, rows // 50_000)
    if n_bursts:
        # Bursts: a popular client sends 2% of its rows... squeezed into 5-20 s at 4x the payload.
        in_burst = rng.random(rows) < 0.05
        which = rng.integers(0, n_bursts, rows)
        b_client = order[rng.integers(0, min(clients, 200), n_bursts)]
        b_start = start + rng.random(n_bursts) * max(span - 20, 1)
        b_len = rng.uniform(5, 20, n_bursts)
        idx = np.nonzero(in_burst)[0]
        pick[idx] = b_client[which[idx]]
        ts[idx] = b_start[which[idx]] + rng.random(len(idx)) * b_len[which[idx]]
        scale[idx] = 4.0
    u = owner[pick]
    kind = rng.random(rows)
    produce = np.where(kind < 0.6, np.round(rng.lognormal(np.log(8192), 1.0, rows) * scale), 0).astype(np.int64)
    fetch = np.where((kind >= 0.6) & (kind < 0.95), np.round(rng.lognormal(np.log(20480), 1.0, rows) * scale), 0)
    requests = 1 + rng.poisson(3, rows)
    rtime = np.round(rng.gamma(2.0, 1.5, rows) * requests * scale, 1)
    storm = u < 20
    connections = (rng.random(rows) < np.where(storm, 0.05, 0.002)).astype(np.int64)
    ip = np.array([f"10.{(x >> 8) & 255}.{x & 255}.{k}" for x, k in zip(u, rng.integers(1, 4, rows), strict=True)])
    topic = np.minimum(rng.zipf(1.3, rows), topics)
    sort = np.argsort(ts, kind="stable")
    return pa.table(
        {
            "ts": pa.array(np.round(ts[sort], 3)),
            "user": pa.array(user_names[u[sort]].tolist(), pa.string()),
            "client_id": pa.array(client_names[pick[sort]].tolist(), pa.string()),
            "ip": pa.array(ip[sort].tolist(), pa.string()),
            "topic": pa.array([f"topic-{t}" for t in topic[sort]], pa.string()),
            "produce_bytes": pa.array(produce[sort]),
            "fetch_bytes": pa.array(fetch[sort].astype(np.int64)),
            "requests": pa.array(requests[sort].astype(np.int64)),
            "request_time_ms": pa.array(rtime[sort]),
            "connections": pa.array(connections[sort]),
        }
    )


def write(table: Any, path: str | Path, files: int = 1) -> list[Path]:
    """Write as Parquet, CSV or JSON lines by the path's suffix; ``files > 1`` writes a directory of parts."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    p = Path(path)
    suffix = p.suffix.lower() if files == 1 else ".parquet"
    if files > 1:
        p.mkdir(exist_ok=True)  # its parent must exist (checked by the command)
        step = -(-table.num_rows // files)
        targets = [(p / f"part-{i:04d}.parquet", table.slice(i * step, step)) for i in range(files)]
    else:
        targets = [(p, table)]
    for target, t in targets:
        if suffix in (".parquet", ".pq"):
            pq.write_table(t, target, row_group_size=1_000_000)
        elif suffix == ".csv":
            pcsv.write_csv(t, target)
        elif suffix in (".jsonl", ".json", ".ndjson"):
            import json

            with open(target, "w") as f:
                for row in t.to_pylist():
                    f.write(json.dumps(row) + "\n")
        else:
            raise UsageError(f"cannot tell the format of {str(p)!r}: end it in .parquet, .csv or .jsonl")
    return [t for t, _ in targets]


def quotas(users: int = 2000, clients: int = 10000) -> dict[Entity, dict[str, Number]]:
    """A quota set for generated traffic where every precedence level wins somewhere."""
    mib = 1024 * 1024
    q: dict[Entity, dict[str, Number]] = {
        Entity(user=DEFAULT): {"producer_byte_rate": 8 * mib, "request_rate": 2000},
        Entity(user=DEFAULT, client_id=DEFAULT): {"consumer_byte_rate": 16 * mib},
        Entity(client_id=DEFAULT): {"request_percentage": 400.0},
        Entity(ip=DEFAULT): {"connection_creation_rate": 5},
    }
    for i in range(0, min(users, 200), 4):
        q[Entity(user=f"svc-{i}")] = {"producer_byte_rate": 2 * mib, "request_percentage": 100.0}
    for i in range(1, min(users, 100), 10):
        q[Entity(user=f"svc-{i}", client_id=DEFAULT)] = {"consumer_byte_rate": 8 * mib}
    for i in range(0, min(clients, 3000), 30):
        q[Entity(client_id=f"app-{i}")] = {"request_percentage": 100.0}
    for i in range(0, 40, 4):
        q[Entity(client_id=f"generic-{i}")] = {"request_percentage": 50.0}  # shared by every user of the name
    for i in range(0, min(clients, 500), 50):
        q[Entity(user=DEFAULT, client_id=f"app-{i}")] = {"producer_byte_rate": 3 * mib}
    for i in range(0, min(users, 50), 5):
        q[Entity(user=f"svc-{i}", client_id=f"app-{i}")] = {"producer_byte_rate": 512 * 1024}
    for i in range(0, min(users, 20), 2):
        q[Entity(ip=f"10.0.{i}.1")] = {"connection_creation_rate": 10}
    return q


def offline_only_note(quota_set: dict[Entity, dict[str, Number]]) -> str | None:
    """What keeps the manifest off a live cluster: the keys in it no Apache Kafka broker knows (``request_rate``,
    the KIP-124 draft), which impact simulates but plan and apply refuse; None when there are none."""
    keys = sorted({k for cfg in quota_set.values() for k in cfg if not KEYS[k].enforced}, key=list(KEYS).index)
    if not keys:
        return None
    n = sum(1 for cfg in quota_set.values() if any(k in cfg for k in keys))
    shipped = sorted({KEYS[k].shipped_instead for k in keys if KEYS[k].shipped_instead})
    return (
        f"for offline use (impact run, explain -f): {', '.join(keys)} ({n} "
        f"{'entity' if n == 1 else 'entities'}) is a key no Apache Kafka broker knows, so plan and apply refuse "
        f"it on a live cluster; remove it (or use {', '.join(shipped)}) before applying this manifest"
    )


def write_manifest(quota_set: dict[Entity, dict[str, Number]], path: str | Path) -> None:
    """The quota set as a manifest (``quotas: [{entity: ..., config: ...}]``) for ``impact run -f``; a first
    comment says when it is for offline use only (:func:`offline_only_note`)."""
    import yaml

    def name(n: object) -> str:
        return "<default>" if n is DEFAULT else str(n)

    entries = []
    for e, cfg in sorted(quota_set.items(), key=lambda kv: kv[0].sort_key()):
        ent = {}
        if e.user is not None:
            ent["user"] = name(e.user)
        if e.client_id is not None:
            ent["client-id"] = name(e.client_id)
        if e.ip is not None:
            ent["ip"] = name(e.ip)
        entries.append({"entity": ent, "config": dict(cfg)})
    with open(path, "w") as f:
        f.write("# generated by kquotactl impact generate\n")
        if (note := offline_only_note(quota_set)) is not None:
            f.write("".join(line + "\n" for line in wrap(note[0].upper() + note[1:], 110, "# ", "# ")))
        yaml.safe_dump({"quotas": entries}, f, sort_keys=False, default_flow_style=None, width=120)


# -- broker request logs (kquotactl.impact.requestlog) ---------------------------------------------

KAFKA_VERSIONS = ("2.8", "3.9", "4.1", "4.4")


def _stamp(ts: float) -> str:
    """The log4j ``%d`` of an epoch (UTC): ``2026-01-01 00:00:00,123``."""
    import datetime as dt

    ms = round(ts * 1000)
    t = dt.datetime.fromtimestamp(ms // 1000, dt.UTC)
    return f"{t:%Y-%m-%d %H:%M:%S},{ms % 1000:03d}"


def request_log_line(
    ts: float,
    api: int,
    user: str,
    client_id: str,
    ip: str,
    sizes: tuple[int, ...] = (),
    local_ms: float = 0.5,
    version: str = "4.1",
    replica_id: int = -1,
    correlation: int = 0,
    acks: int = -1,
) -> str:
    """One ``kafka.request.logger`` line as a Kafka ``version`` broker writes it (``RequestConvertToJson``'s field
    order; connection ids gained the processor id after 2.8; Fetch moved replicaId into replicaState in v15); an
    ``acks=0`` Produce is logged without a response, as brokers do."""
    import json

    fetch_v = {"2.8": 12, "3.9": 16, "4.1": 17, "4.4": 18}[version]
    names = {0: "PRODUCE", 1: "FETCH", 3: "METADATA", 18: "API_VERSIONS"}
    api_version = {0: {"2.8": 8, "3.9": 11, "4.1": 12, "4.4": 13}[version], 1: fetch_v, 3: 12, 18: 3}[api]
    header = {
        "requestApiKey": api,
        "requestApiVersion": api_version,
        "correlationId": correlation,
        "clientId": client_id,
        "requestApiKeyName": names[api],
    }
    parts = [{"partitionIndex": i, "recordsSizeInBytes": s} for i, s in enumerate(sizes)]
    if api == 0:
        topic = [{"name": "topic-1", "partitionData": [{"index": p["partitionIndex"], **p} for p in parts]}]
        request: dict[str, Any] = {"transactionalId": None, "acks": acks, "timeoutMs": 30000, "topicData": topic}
        response: Any = {"responses": [{"name": "topic-1", "partitionResponses": []}], "throttleTimeMs": 0}
        response = None if acks == 0 else response
    elif api == 1:
        replica: dict[str, Any] = (
            {"replicaState": {"replicaId": replica_id}} if fetch_v >= 15 and replica_id >= 0 else {}
        )
        if fetch_v < 15:
            replica = {"replicaId": replica_id}
        request = {**replica, "maxWaitMs": 500, "minBytes": 1, "topics": [{"topic": "topic-1", "partitions": []}]}
        fetched: list[dict[str, Any]] = [{**p, "errorCode": 0, "highWatermark": 100} for p in parts]
        topic_response: dict[str, Any] = {"topic": "topic-1", "partitions": fetched}
        if version == "2.8":  # as a 2.8.2 broker logs a Fetch response (tests/data/request-log)
            fetched = [
                {"partition": p["partitionIndex"], "errorCode": 0, "highWatermark": 100, "recordSetSizeInBytes": s}
                for p, s in zip(parts, sizes, strict=True)
            ]
            topic_response = {"topic": "topic-1", "partitionResponses": fetched}
        response = {"throttleTimeMs": 0, "errorCode": 0, "responses": [topic_response]}
    else:
        request, response = {}, {}
    remote = f"{ip}:{40000 + correlation % 20000}"
    conn = f"127.0.0.1:9092-{remote}-{correlation % 7}" if version == "2.8" else f"127.0.0.1:9092-{remote}-1-7"
    doc = {
        "isForwarded": False,
        "requestHeader": header,
        "request": request,
        "response": response,
        "connection": conn,
        "totalTimeMs": local_ms + 0.25,
        "requestQueueTimeMs": 0.125,
        "localTimeMs": local_ms,
        "remoteTimeMs": 0.0,
        "throttleTimeMs": 0,
        "responseQueueTimeMs": 0.0625,
        "sendTimeMs": 0.0625,
        "securityProtocol": "SASL_PLAINTEXT",
        "principal": f"User:{user}",
        "listener": "SASL_PLAINTEXT",
        "clientInformation": {"softwareName": "librdkafka", "softwareVersion": "2.6.1"},
    }
    body = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return f"[{_stamp(ts)}] DEBUG Completed request:{body} (kafka.request.logger)"


def request_log(table: Any, version: str = "4.1", malformed_every: int = 0) -> Iterator[str]:
    """Request-log lines for a generated traffic table (:func:`generate`): a row with produce bytes is a Produce
    request, with fetch bytes a Fetch, with a connection an ApiVersions, else a Metadata; ``localTimeMs`` is the
    row's request time. Every ``malformed_every``-th line (when > 0) is cut short, as a crash leaves one."""
    cols = {c: table.column(c).to_pylist() for c in ("ts", "user", "client_id", "ip")}
    prod = table.column("produce_bytes").to_pylist()
    fetch = table.column("fetch_bytes").to_pylist()
    conns = table.column("connections").to_pylist()
    rtime = table.column("request_time_ms").to_pylist()
    for i in range(table.num_rows):
        sizes: tuple[int, ...]
        if prod[i]:
            api, sizes = 0, (prod[i] // 2, prod[i] - prod[i] // 2)
        elif fetch[i]:
            api, sizes = 1, (fetch[i],)
        elif conns[i]:
            api, sizes = 18, ()
        else:
            api, sizes = 3, ()
        line = request_log_line(
            cols["ts"][i], api, cols["user"][i], cols["client_id"][i], cols["ip"][i], sizes, rtime[i], version, -1, i
        )
        if malformed_every and i % malformed_every == malformed_every - 1:
            line = line[: len(line) // 2]
        yield line


def write_lines(lines: Iterable[str], path: str | Path) -> Path:
    """Write lines (``\\n``-terminated), gzipped when the name ends in ``.gz``."""
    import gzip

    p = Path(path)
    with gzip.open(p, "wt", encoding="utf-8") if p.name.endswith(".gz") else open(p, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    return p
