"""Issue 26 §4: readable at 80 columns, units on every value, one unit system per screen, and impact generate's
manifest honest about where it can be applied.

The CLI runs in real tmux terminals (80 and 160 columns) and in pipes: top against a real HTTP server that
answers as the JMX exporter does, impact run on generated traffic, explain and config get-contexts offline; the
generated manifest is planned against a real KRaft 4.4 broker. One pure test per formatter."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from fixtures_exposition import served_exposition
from kquotactl.core import layout
from kquotactl.core.explain import compact, limit_words
from kquotactl.core.keys import KEYS, human, human_and_raw, limit_text
from kquotactl.impact.output import limit_cell, rate_text, usage_text
from test_terminal_width import SRC, Terminal

LONG_USER = "svc-payments-eu-west-1"  # users/LONG_USER/clients/LONG_CLIENT: 72 columns
LONG_CLIENT = "ingest-pipeline-eu-west-1-orders-v2"
IDENTIFYING = re.compile(r"\w…|=…")  # a name cut with an ellipsis: "produ…", "user=…"


# -- the formatters (pure) ------------------------------------------------------------------------------------


def test_human_reads_measurements_in_iec_units_with_three_significant_digits() -> None:
    b, pct, req = KEYS["producer_byte_rate"], KEYS["request_percentage"], KEYS["request_rate"]
    conn = KEYS["connection_creation_rate"]
    assert [human(b, v) for v in (0, 500, 1023, 1024, 4000, 1536, 12.8 * 2**20, 3 * 2**40)] == [
        "0 B/s",
        "500 B/s",
        "1,023 B/s",
        "1 KiB/s",
        "3.91 KiB/s",
        "1.5 KiB/s",
        "12.8 MiB/s",
        "3 TiB/s",
    ]
    assert [human(pct, 47.91), human(pct, 1993.8), human(req, 2000), human(conn, 1), human(conn, 2)] == [
        "47.9 %",
        "1,994 %",
        "2,000 requests/s",
        "1 connection/s",
        "2 connections/s",
    ]
    assert human(b, None) == "unlimited"


def test_a_limit_is_never_rounded_and_never_mixes_si_with_iec() -> None:
    b = KEYS["consumer_byte_rate"]
    assert human_and_raw(b, 4000) == "3.91 KiB/s (4000)"  # was "4 kB/s (4000)" beside a measured "3.91 KiB/s"
    assert human_and_raw(b, 10**6) == "977 KiB/s (1000000)"  # was "1 MB/s (1000000)"
    assert human_and_raw(b, 6 * 2**20) == "6 MiB/s (6291456)"
    assert human_and_raw(b, 1000) == "1000 B/s" and human_and_raw(b, 1) == "1 B/s"
    pct = KEYS["request_percentage"]
    assert [human_and_raw(pct, v) for v in (50.0, 12.5, 12.3456789, 1e-05)] == [
        "50 %",
        "12.5 %",
        "12.3456789 %",  # exact: not "12.3457 %"
        "1e-05 %",
    ]
    assert human_and_raw(KEYS["connection_creation_rate"], 20) == "20 connections/s"
    assert human_and_raw(KEYS["controller_mutation_rate"], 0.5) == "0.5 mutations/s"
    assert human_and_raw(KEYS["request_rate"], 2000) == "2000 requests/s"
    assert human_and_raw(b, None) == "-"
    for v in (1024, 4000, 7000, 2**20, 10**9, 2**63 - 1):
        assert human_and_raw(b, v).endswith(f"({v})")
        assert re.match(r"^[\d.,]+ (KiB|MiB|GiB|TiB)/s", human_and_raw(b, v))


def test_the_short_form_drops_only_a_redundant_exact_number() -> None:
    b = KEYS["producer_byte_rate"]
    assert limit_text(b, 2 * 2**20) == "2 MiB/s"
    assert limit_text(b, 7000) == "6.84 KiB/s (7000)"
    assert limit_text(b, 1536) == "1.5 KiB/s"
    assert limit_text(b, 500) == "500 B/s"
    assert limit_text(b, None) == "unlimited"
    assert limit_text(KEYS["request_percentage"], 50.0) == "50 %"
    assert compact("producer_byte_rate", 7000) == limit_text(b, 7000)  # explain's chain cells


def test_explain_and_describe_format_one_limit_the_same_way() -> None:
    from kquotactl.core.changes import QuotaRecord
    from kquotactl.core.entities import Entity
    from kquotactl.render.records import records_table

    config = {"producer_byte_rate": 4000, "request_percentage": 12.5, "consumer_byte_rate": 2**20}
    out = __import__("io").StringIO()
    records_table([QuotaRecord(Entity(user="u"), config)], out, color=False)
    for key, value in config.items():
        assert limit_words(key, value) in out.getvalue(), (key, out.getvalue())
    assert "3.91 KiB/s (4000)" in out.getvalue() and "12.5 %" in out.getvalue()


def test_impact_cells_carry_units_and_limits_are_exact() -> None:
    assert rate_text("producer_byte_rate", 4000) == "3.91 KiB/s"  # a measured rate, rounded
    assert limit_cell("producer_byte_rate", 4000.0) == "3.91 KiB/s (4000)"  # a limit, exact
    assert limit_cell("request_percentage", 400.0) == "400 %"
    assert limit_cell("producer_byte_rate", None) == "unlimited"
    assert usage_text("producer_byte_rate", 1.73 * 2**30) == "1.73 GiB"
    assert usage_text("request_percentage", 2_757_000) == "2,757 s of thread time"
    assert usage_text("connection_creation_rate", 2193) == "2,193 connections"


def test_layout_tables_are_never_padded_and_blocks_never_cut_a_name() -> None:
    header = ["KEY", "QUOTA-ID", "LIMIT"]
    rows = [["producer_byte_rate", f"user={LONG_USER}", "8 MiB/s"], ["request_percentage", "user=a", "50 %"]]
    lines = layout.table_lines(header, rows, right=(2,))
    assert all(line == line.rstrip() for line in lines)
    assert lines[1].endswith("8 MiB/s") and lines[2].endswith("   50 %")  # right-aligned
    assert layout.fits(header, rows, None) and not layout.fits(header, rows, 40)
    assert layout.table_or_blocks(header, rows, None, right=(2,)) == lines  # off a terminal: the table, any width
    narrow = layout.table_or_blocks(header, rows, 40, ident=2)
    assert narrow == [
        "producer_byte_rate",
        f"user={LONG_USER}",  # longer than 40: on a line of its own, whole
        "    LIMIT: 8 MiB/s",
        "request_percentage  user=a",
        "    LIMIT: 50 %",
    ]
    grouped = [["q1", "k1", "1"], ["q1", "k2", "2"], ["q2", "k1", "3"]]
    assert layout.blocks(["Q", "K", "V"], grouped, 2, 80, group=True) == [
        "q1",
        "  k1",
        "    V: 1",
        "  k2",
        "    V: 2",
        "q2",
        "  k1",
        "    V: 3",
    ]
    assert layout.pack(["a: 1", "b: 2", "c: 3"], 14) == ["    a: 1; b: 2", "    c: 3"]
    assert layout.wrap(f"shadowed by users/{LONG_USER}/clients/x (2 MiB/s)", 30, "  ") == [
        "shadowed by",
        f"  users/{LONG_USER}/clients/x",
        "  (2 MiB/s)",
    ]
    assert layout.wrap("one line off a terminal", None) == ["one line off a terminal"]
    assert layout.cell_width("日本") == 4 and layout.cell_width("e\u0301") == 1


# -- the commands in real terminals and pipes --------------------------------------------------------------


@pytest.fixture(params=[80, 160], ids=lambda w: f"{w}cols")
def terminal(request, tmp_path):
    if shutil.which("tmux") is None or shutil.which("bash") is None:
        pytest.fail("tmux and bash are needed: run scripts/bootstrap.sh (make setup)")
    term = Terminal(request.param, tmp_path)
    yield term
    term.close()


def _readable(term: Terminal, rows: str, joined: str, names: list[str]) -> None:
    """Every line fits, no name is cut or squeezed out, every name is whole on one screen row."""
    too_long = [line for line in joined.splitlines() if len(line) > term.width]
    assert not too_long, f"lines wider than {term.width} columns:\n" + "\n".join(too_long)
    assert not IDENTIFYING.search(rows), rows
    screen = rows.splitlines()
    for name in names:
        assert any(name in row for row in screen), f"{name} is not whole on any row:\n{rows}"


def _piped(*args: str, cwd: Path) -> str:
    """The CLI in a pipe (a real subprocess: stdout is not a terminal): its stdout, checked for padding."""
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    r = subprocess.run(
        [sys.executable, "-m", "kquotactl", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    padded = [line for line in r.stdout.splitlines() if line != line.rstrip()]
    assert not padded, f"{len(padded)} lines end in spaces, e.g. {padded[0]!r}"
    assert "…" not in r.stdout
    return r.stdout


@pytest.fixture(scope="module")
def traffic(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("traffic")
    r = run_cli("impact", "generate", str(d / "t.parquet"), "--rows", "60000", "--quotas-out", str(d / "q.yaml"))
    assert r.exit_code == 0, r.stderr
    return d


def test_impact_run_fits_80_columns_and_a_pipe_is_one_unpadded_table(terminal, traffic) -> None:
    cmd = f"kquotactl impact run {traffic}/t.parquet -f {traffic}/q.yaml --engine local --top 6"
    rows, joined = terminal.run(cmd)
    _readable(terminal, rows, joined, ["request_percentage", "connection_creation_rate", "users/<default>"])
    assert "Top 6 quota-ids by total throttle" in rows and "Traffic per quota type" in rows
    assert "━" not in rows and "│" not in rows
    ids = re.findall(r"user=[\w-]*,client-id=[\w-]*", rows)
    assert ids, rows
    if terminal.width == 80:  # a block per quota-id: the key and quota-id whole, then header: value
        assert re.search(r"^(producer_byte_rate|request_percentage)  user=", rows, re.M), rows
        assert re.search(r"^    level: \d; entity: ", rows, re.M)
    else:  # the whole table
        assert re.search(r"^key +quota-id +level +entity +limit +throttled s +max rate", rows, re.M), rows
    piped = _piped("-o", "table", "impact", "run", "t.parquet", "-f", "q.yaml", "--engine", "local", cwd=traffic)
    assert re.search(r"^key +quota-id +level", piped, re.M)  # off a terminal: the table, whatever its width
    assert max(len(line) for line in piped.splitlines()) < 200


def test_explain_connections_fit_80_columns_and_pipes_are_not_padded(terminal, tmp_path) -> None:
    m = tmp_path / "q.yaml"
    m.write_text(
        "quotas:\n"
        f"  - entity: {{user: {LONG_USER}, client-id: {LONG_CLIENT}}}\n"
        "    config: {producer_byte_rate: 4000, request_percentage: 12.5}\n"
        f"  - entity: {{client-id: {LONG_CLIENT}}}\n"
        "    config: {producer_byte_rate: 8000, consumer_byte_rate: 1MiB}\n"
    )
    conns = tmp_path / "conns.csv"
    conns.write_text(f"user,client-id,ip\n{LONG_USER},{LONG_CLIENT},\nalice,{LONG_CLIENT},\n")
    rows, joined = terminal.run("kquotactl explain -f q.yaml --connections conns.csv -o table")
    _readable(terminal, rows, joined, [LONG_USER, LONG_CLIENT, f"users/{LONG_USER}/clients/{LONG_CLIENT}"])
    flat = " ".join(joined.split())
    assert "3.91 KiB/s (4000)" in flat and "12.5 %" in flat and "7.81 KiB/s (8000)" in flat
    assert " kB/s" not in flat  # one unit system
    for env in ("", "NO_COLOR=1 "):  # without colour on a terminal: still the terminal's width (it was 200)
        rows, joined = terminal.run(f"{env}kquotactl explain -f q.yaml --user {LONG_USER} --client-id {LONG_CLIENT}")
        _readable(terminal, rows, joined, [f"users/{LONG_USER}/clients/{LONG_CLIENT}", "request_percentage"])
        assert "12.5 %" in joined
    piped = _piped(
        "explain", "-f", "q.yaml", "--user", LONG_USER, "--client-id", LONG_CLIENT, "-o", "table", cwd=tmp_path
    )
    assert f"is shadowed by users/{LONG_USER}/clients/{LONG_CLIENT} (3.91 KiB/s, 4000 B/s)" in piped


def test_get_contexts_fits_80_columns(terminal, tmp_path) -> None:
    cfg = tmp_path / "config.yaml"
    long_cluster = ",".join(f"broker-{i}.payments.example.com:9093" for i in range(1, 3))
    cfg.write_text(
        "current-context: prod-payments-eu-west-1\n"
        "contexts:\n"
        f"  prod-payments-eu-west-1: {{bootstrap-server: '{long_cluster}'}}\n"
        "  dev: {zookeeper: 'zk:2181/kafka'}\n"
    )
    rows, joined = terminal.run(f"kquotactl --config {cfg} config get-contexts -o table")
    _readable(terminal, rows, joined, ["prod-payments-eu-west-1", "dev"])
    assert "broker-2.payments.example.com:9093" in rows
    if terminal.width == 80:
        assert re.search(r"^\*  prod-payments-eu-west-1$", rows, re.M), rows
        assert re.search(r"^    CLUSTER: bootstrap-server broker-1.payments.example.com:9093,$", rows, re.M), rows
    else:
        assert re.search(r"^CURRENT +NAME +CLUSTER +AUTH$", rows, re.M), rows
    piped = _piped("--config", str(cfg), "config", "get-contexts", "-o", "table", cwd=tmp_path)
    assert piped.splitlines()[0].split() == ["CURRENT", "NAME", "CLUSTER", "AUTH"]


EXPOSITION = "".join(
    f'kafka_quota_byte_rate{{user="{LONG_USER}",client_id="{LONG_CLIENT}-{i}",quota_type="Produce",}} 5000.0\n'
    f'kafka_quota_throttle_time{{user="{LONG_USER}",client_id="{LONG_CLIENT}-{i}",quota_type="Produce",}} 1200.0\n'
    f'kafka_quota_request_time{{user="{LONG_USER}",client_id="{LONG_CLIENT}-{i}",quota_type="Request",}} 80.0\n'
    f'kafka_quota_throttle_time{{user="{LONG_USER}",client_id="{LONG_CLIENT}-{i}",quota_type="Request",}} 40.0\n'
    for i in range(3)
)


@pytest.fixture
def exporter() -> Iterator[str]:
    """A real HTTP server answering /metrics as the JMX exporter agent does (throttled quota-ids with long names)."""
    with served_exposition(EXPOSITION) as address:
        yield address


def test_top_fits_80_columns_with_units_on_every_value(terminal, exporter, tmp_path) -> None:
    m = tmp_path / "q.yaml"
    m.write_text(
        "quotas:\n"
        f"  - entity: {{user: {LONG_USER}}}\n"
        "    config: {producer_byte_rate: 4000, request_percentage: 50}\n"
    )
    rows, joined = terminal.run(f"kquotactl top --scrape {exporter} -f q.yaml -o table")
    who = [f"user {LONG_USER}, client-id {LONG_CLIENT}-{i}" for i in range(3)]
    _readable(terminal, rows, joined, ["producer_byte_rate", "request_percentage", f"users/{LONG_USER}"])
    flat = " ".join(joined.split())
    for w in who:
        assert w in flat
    assert "4.88 KiB/s" in flat and "3.91 KiB/s (4000)" in flat  # usage and limit, both in KiB/s
    assert "50 %" in flat and "1200 ms" in flat
    if terminal.width == 80:
        head = f"user {LONG_USER}, client-id {LONG_CLIENT}-0"  # once, then a block per key
        assert rows.count(head + "\n") == 1
        assert f"{head}\n  producer_byte_rate\n    USAGE: 4.88 KiB/s; LIMIT/BROKER: 3.91 KiB/s (4000)" in rows, rows
        assert "\n  request_percentage\n    USAGE: 80 %; LIMIT/BROKER: 50 %; THROTTLE: 40 ms" in rows
    piped = _piped("top", "--scrape", exporter, "-f", str(m), "-o", "table", cwd=tmp_path)
    assert re.search(r"^QUOTA-ID +KEY +USAGE +LIMIT/BROKER", piped, re.M)
    note = "throttle-time" + piped.split("throttle-time", 1)[1]
    assert all(len(line) <= 100 for line in note.splitlines())  # prose wraps in a pipe too


# -- impact generate's manifest on a live cluster ------------------------------------------------------------


@pytest.mark.kafka
def test_generated_manifest_says_it_is_offline_and_plans_on_kraft_without_the_draft_key(kraft, tmp_path) -> None:
    q = tmp_path / "q.yaml"
    r = run_cli("impact", "generate", str(tmp_path / "t.csv"), "--rows", "100", "--quotas-out", str(q))
    assert r.exit_code == 0
    assert "q.yaml is for offline use" in r.stderr and "request_rate" in r.stderr
    text = q.read_text()
    assert text.splitlines()[1].startswith("# For offline use (impact run, explain -f): request_rate")
    cluster = ("--bootstrap-server", kraft.bootstrap)
    r = run_cli(*cluster, "plan", "-f", str(q))
    assert r.exit_code == 1 and "request_rate" in r.stderr  # what the file and the note said
    assert r.stderr.count("\n") == 1
    doc = yaml.safe_load(text)
    for entry in doc["quotas"]:
        entry["config"].pop("request_rate", None)
    live = tmp_path / "live.yaml"
    live.write_text(yaml.safe_dump(doc))
    r = run_cli(*cluster, "plan", "-f", str(live))
    assert r.exit_code == 2, r.stderr  # changes pending: every other key and entity is one a broker accepts
    assert "204 entities to change: 204 to create" in r.stdout
    r = run_cli(*cluster, "apply", "-f", str(live), "--yes")
    assert r.exit_code == 0, r.stderr
    assert run_cli(*cluster, "plan", "-f", str(live)).exit_code == 0  # and it applied as written


@pytest.mark.kafka
def test_verify_shows_limits_as_describe_does(kraft) -> None:
    cluster = ("--bootstrap-server", kraft.bootstrap)
    config = "producer_byte_rate=20000,request_percentage=12.5"
    assert run_cli(*cluster, "alter", "--client-id", "lay-v", "--add-config", config).exit_code == 0
    r = run_cli(*cluster, "verify", "--client-id", "lay-v", "-o", "table")
    assert r.exit_code == 0, r.stderr
    shown = "producer_byte_rate 19.5 KiB/s (20000), request_percentage 12.5 %"
    assert f"expected {shown}" in " ".join(r.stdout.split())
    described = run_cli(*cluster, "describe", "--client-id", "lay-v", "-o", "table").stdout
    assert "19.5 KiB/s (20000)" in described and "12.5 %" in described
    r = run_cli(*cluster, "verify", "--client-id", "lay-v", "--drive", "100000", "--seconds", "4", "-o", "table")
    assert r.exit_code in (0, 2), r.stderr  # agrees, or not: both are shown
    flat = " ".join(r.stdout.split())
    assert "under a limit of 19.5 KiB/s (20000)" in flat and re.search(r"driven at [\d.]+ KiB/s", flat), flat
    assert re.search(r"broker +[\d.]+ s +\d+ ms +\d+ ms +\d+ ms", r.stdout), r.stdout
    assert not [line for line in r.stdout.splitlines() if line != line.rstrip()]


@pytest.mark.zookeeper
def test_describe_without_colour_fits_the_terminal_it_is_on(terminal, chroot, tmp_path) -> None:
    """NO_COLOR on a terminal: the terminal's width, not the 200 columns of a pipe."""
    pair = ("--user", LONG_USER, "--client-id", LONG_CLIENT)
    config = "producer_byte_rate=4000,consumer_byte_rate=1048576,request_percentage=12.5,controller_mutation_rate=2"
    assert run_cli("--zookeeper", chroot.connect, "alter", *pair, "--add-config", config).exit_code == 0
    assert (
        run_cli(
            "--zookeeper", chroot.connect, "alter", "--ip", "192.0.2.7", "--add-config", "connection_creation_rate=20"
        ).exit_code
        == 0
    )
    for env in ("", "NO_COLOR=1 "):
        rows, joined = terminal.run(f"{env}kquotactl --zookeeper {chroot.connect} describe")
        _readable(terminal, rows, joined, [LONG_USER, LONG_CLIENT, "192.0.2.7"])
        flat = " ".join(joined.split())
        assert "3.91 KiB/s (4000)" in flat and "12.5 %" in flat and "20 connections/s" in flat, flat


_cells = st.text(alphabet=st.sampled_from("ab-=/<>_ 日é"), min_size=0, max_size=30)


@settings(max_examples=500, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.lists(st.text(alphabet="ABCK ", min_size=1, max_size=12), min_size=n, max_size=n),
            st.lists(st.lists(_cells, min_size=n, max_size=n), max_size=6),
        )
    ),
    st.integers(20, 120) | st.none(),
    st.integers(1, 3),
)
def test_any_table_fits_or_becomes_blocks_with_every_cell_whole(table, width, ident) -> None:
    header, rows = table
    ident = min(ident, len(header))
    lines = layout.table_or_blocks(header, rows, width, ident=ident)
    assert all(line == line.rstrip() for line in lines)  # never padded
    text = "\n".join(lines)
    words = {w for row in rows for c in row for w in c.split(" ") if w}
    assert all(w in text for w in words)  # every word of every cell is there, whole (never cut, never "…")
    if width is not None:
        names = {c for row in rows for c in row[:ident]}  # identifying cells: kept whole on their own line
        for line in lines:  # a line is too wide only when it is a name alone, or holds a word alone too wide
            if layout.cell_width(line) > width and line not in names:
                assert any(layout.cell_width(w) + 8 > width for w in line.split(" ") if w), (line, width)
