"""Render records and results: rich tables for people, JSON/YAML for programs, kafka-configs lines
for scripts that already parse them. No I/O beyond writing to the given stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Any

from kquotactl.core.changes import EntityResult, Outcome, QuotaRecord
from kquotactl.core.entities import DEFAULT, EntityType, display_name
from kquotactl.core.errors import EXIT_INTERRUPTED, PartialFailure, QuotaError
from kquotactl.core.javafmt import (
    client_quota_entity_hash,
    double_to_string,
    hashmap_order,
    java_hashmap_order,
    properties_order,
)
from kquotactl.core.keys import KEYS, human_and_raw, not_applied_reason
from kquotactl.core.wording import counted, escaped, shown_name

FORMATS = ("table", "json", "yaml", "kafka")


def records_json(records: Sequence[QuotaRecord]) -> list[dict[str, Any]]:
    return [r.to_json() for r in records]


def dump_json(data: Any, out: IO[str]) -> None:
    """``json.dump(data, out, indent=2, ensure_ascii=False)`` and a newline: the same text, written at once and
    mostly by the C encoder (:mod:`kquotactl.render.jsontext`)."""
    from kquotactl.render.jsontext import indented_json

    out.write(indented_json(data, ensure_ascii=False) + "\n")


def dump_yaml(data: Any, out: IO[str]) -> None:
    import yaml

    yaml.safe_dump(data, out, sort_keys=False, allow_unicode=True, default_flow_style=False)


def kafka_zk_line(record: QuotaRecord) -> str:
    """ZooKeeper-mode kafka-configs: ``Configs for user-principal 'u' are k=v,k2=v2`` (raw stored strings)."""
    raw = dict(record.raw) if record.raw is not None else {k: _plain(v) for k, v in record.config.items()}
    raw.update(record.unparsed)  # kafka-configs shows what is stored, parsable or not
    entries = ",".join(f"{k}={raw[k]}" for k in properties_order(raw))
    return f"Configs for {record.entity.words()} are {entries}"


def _plain(v: int | float) -> str:
    return str(v) if isinstance(v, int) else double_to_string(v)


def kafka_bootstrap_entity(pairs: Sequence[tuple[str, str | None]]) -> str:
    """kafka-configs' entity words, always in user, client-id, ip order, from (entity type, name or None for the
    default) pairs: the names as the broker sent them, when there is a response (control characters escaped)."""
    names = dict(pairs)
    parts = []
    for t in (EntityType.USER, EntityType.CLIENT_ID, EntityType.IP):
        if t.value in names:
            n = names[t.value]
            parts.append(f"the default {t.principal_word}" if n is None else f"{t.principal_word} '{escaped(n)}'")
    return ", ".join(parts)


def kafka_bootstrap_line(record: QuotaRecord) -> str:
    """Bootstrap-mode kafka-configs: ``Quota configs for user-principal 'u' are k=1024.0, k2=2.0``.

    From a describe response (``record.wire``) it is kafka-configs' line byte for byte: the broker's names and
    doubles, keys in the order of the ``HashMap<String, Double>(n)`` its client fills in response order.
    """
    if record.wire is not None:
        values = dict(record.wire.values)
        keys = hashmap_order(k for k, _ in record.wire.values)
        entries = ", ".join(f"{k}={double_to_string(values[k])}" for k in keys)
        return f"Quota configs for {kafka_bootstrap_entity(record.wire.entity)} are {entries}"
    keys = hashmap_order(record.config.keys())
    entries = ", ".join(f"{k}={double_to_string(float(record.config[k]))}" for k in keys)
    pairs = [(t.value, None if n is DEFAULT else str(n)) for t, n in record.entity.components().items()]
    return f"Quota configs for {kafka_bootstrap_entity(pairs)} are {entries}"


def kafka_bootstrap_order(records: Sequence[QuotaRecord]) -> list[QuotaRecord]:
    """Records in kafka-configs' order: that of the client's ``HashMap<ClientQuotaEntity, _>(entries)`` filled in
    response order (kquotactl's own order when the records did not all come from one describe response)."""
    wired = [(r, r.wire) for r in records if r.wire is not None]
    if not records or len(wired) != len(records):
        return list(records)
    wired.sort(key=lambda rw: rw[1].position)
    entries = wired[0][1].entries
    return java_hashmap_order(((r, client_quota_entity_hash(w.entity)) for r, w in wired), entries)


def records_json_text(records: Sequence[QuotaRecord]) -> str:
    """``describe -o json``: :func:`dump_json` of :func:`records_json`, the same text, written record by record from
    the records themselves (a large describe's rendering was most of its time over the wire's): a record of names
    and finite numbers by a template, any other (not-applied values, an odd value) through :func:`dump_json`."""
    if not records:
        return "[]\n"
    from json.encoder import encode_basestring

    parts = []
    for r in records:
        text = _record_text(r, encode_basestring) if not r.unparsed else None
        if text is None:
            from kquotactl.render.jsontext import indented_json

            text = "  " + indented_json(r.to_json(), ensure_ascii=False).replace("\n", "\n  ")
        parts.append(text)
    return "[\n" + ",\n".join(parts) + "\n]\n"


_NUMBER_TYPES = (int, float)
_INFINITE = (float("inf"), float("-inf"))


def _record_text(r: QuotaRecord, string: Any) -> str | None:
    """One record as ``json.dumps(r.to_json(), indent=2)`` writes it, indented one level; None when it holds
    anything but names and finite numbers."""
    e = r.entity
    names = []
    for field, name in (('"user": ', e.user), ('"client-id": ', e.client_id), ('"ip": ', e.ip)):
        if name is None:
            continue
        if name is DEFAULT:
            names.append(field + "null")
        elif type(name) is str:
            names.append(field + string(name))
        else:
            return None
    values = []
    for k, v in r.config.items():
        if type(k) is not str or type(v) not in _NUMBER_TYPES or v != v or v in _INFINITE:
            return None
        values.append(f"{string(k)}: {v!r}")
    if not names or not values:
        return None
    return (
        '  {\n    "entity": {\n      '
        + ",\n      ".join(names)
        + '\n    },\n    "config": {\n      '
        + ",\n      ".join(values)
        + "\n    }\n  }"
    )


def render_records(
    records: Sequence[QuotaRecord], fmt: str, out: IO[str], dialect: str = "zookeeper", color: bool = False
) -> None:
    if fmt == "json":
        out.write(records_json_text(records))
    elif fmt == "yaml":
        dump_yaml(records_json(records), out)
    elif fmt == "kafka":
        if dialect == "zookeeper":
            for r in records:
                out.write(kafka_zk_line(r) + "\n")
        else:
            for r in kafka_bootstrap_order(records):
                out.write(kafka_bootstrap_line(r) + "\n")
    else:
        records_table(records, out, color)


def _name_cell(value: object) -> str:
    if value is None:
        return ""
    return display_name(value)  # type: ignore[arg-type]


PIPE_WIDTH = 200  # the line width of a table written to a pipe or file (no terminal to measure)
NO_QUOTAS = "No quotas found."


def records_table(records: Sequence[QuotaRecord], out: IO[str], color: bool) -> None:
    """One row per entity, one column per entity type and per quota key present. Without colour, a table of plain
    printable ASCII that fits :data:`PIPE_WIDTH` is written directly (:func:`plain_table`, the layout rich gives
    it, without importing rich's console: 10-15 ms of a one-entity describe); anything else is laid out by rich."""
    if not records and not color:
        out.write(NO_QUOTAS + "\n")
        return
    present_types = [t for t in EntityType if any(t in r.entity.components() for r in records)]
    present_keys = [k for k in KEYS if any(k in r.config or k in r.unparsed for r in records)]
    headers = [t.value.upper() for t in present_types] + present_keys
    right = [False] * len(present_types) + [True] * len(present_keys)
    rows = []
    for r in records:
        comps = r.entity.components()
        row = [_name_cell(comps.get(t)) if t in comps else "-" for t in present_types]
        for k in present_keys:
            v = r.config.get(k)
            if k in r.unparsed:
                row.append(f"{r.unparsed[k]!r} ({not_applied_reason(KEYS[k], r.unparsed[k])})")
            elif v is None:
                row.append("")
            else:
                row.append(human_and_raw(KEYS[k], v))  # as explain and plan show a limit
        rows.append(row)
    terminal = out.isatty()  # a terminal without colour (NO_COLOR) is still as wide as it is, not PIPE_WIDTH
    lines = None if color else plain_table(headers, right, rows, _columns() if terminal else PIPE_WIDTH)
    if lines is not None:
        out.write("".join(line + "\n" for line in lines))
        return
    _rich_table(records, headers, right, rows, out, color)


def _columns() -> int:
    """The terminal's width (``COLUMNS`` first), as rich measures it."""
    import shutil

    return shutil.get_terminal_size().columns


def plain_table(
    headers: Sequence[str], right: Sequence[bool], rows: Sequence[Sequence[str]], width: int
) -> list[str] | None:
    """The lines rich lays out for this table (no box, no outer padding, two spaces between columns, each column as
    wide as its widest cell, right-aligned where ``right``, every line as wide as the table), or None when rich
    must do it: a cell that is not plain printable ASCII (wide or combining characters, tabs, line breaks), or a
    table wider than ``width``."""
    cells = [headers, *rows]
    if not all(c.isascii() and c.isprintable() for row in cells for c in row):
        return None
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    return [
        "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)) for row in cells
    ]


def _rich_table(
    records: Sequence[QuotaRecord],
    headers: Sequence[str],
    right: Sequence[bool],
    rows: list[list[str]],
    out: IO[str],
    color: bool,
) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(
        file=out,
        no_color=not color,
        color_system="auto" if color else None,  # no colour: no escape codes at all (NO_COLOR, pipes)
        highlight=False,
        markup=False,  # names are data: "[/x]" must print as itself, not be parsed as console markup
        emoji=False,  # nor ":smile:" as an emoji
        soft_wrap=False,
        width=None if color or out.isatty() else PIPE_WIDTH,
    )
    if not records:
        console.print(NO_QUOTAS)
        return
    table = Table(show_edge=False, header_style="bold", pad_edge=False, box=None)
    for header, is_key in zip(headers, right, strict=True):
        if is_key:
            table.add_column(header, justify="right")
        else:
            table.add_column(header, overflow="fold")
    if not _fix_widths_if_they_fit(table, rows, console.width):
        _records_blocks(
            records, [h for h, is_key in zip(headers, right, strict=True) if is_key], rows, right.count(False), console
        )
        return
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _records_blocks(
    records: Sequence[QuotaRecord], keys: Sequence[str], rows: list[list[str]], skip: int, console: Any
) -> None:
    """A table too wide for the terminal: per entity its whole path, then one indented line per key it sets."""
    from kquotactl.core.manifest import entity_path_text

    for r, row in zip(records, rows, strict=True):
        console.print(entity_path_text(r.entity), style="bold")
        for k, cell in zip(keys, row[skip:], strict=True):
            if cell:
                console.print(f"    {k}  {cell}")


def _fix_widths_if_they_fit(table: Any, rows: list[list[str]], console_width: int) -> bool:
    """Give each column its widest cell as a fixed width when the table fits the console as it is.

    rich would otherwise measure every cell (about 15% of the time of a 10,000-row table); the widths are the
    ones it would compute, so the output is the same. Too wide a table is left alone and False returned: the
    caller then lays the records out one block per entity, names whole.
    """
    from rich.cells import cell_len

    widths = [cell_len(c.header) for c in table.columns]
    for row in rows:
        for i, cell in enumerate(row):
            n = max(cell_len(line) for line in cell.split("\n")) if "\n" in cell else cell_len(cell)
            if n > widths[i]:
                widths[i] = n
    padding = 2 * (len(widths) - 1)  # one space either side of each inner column edge (pad_edge=False)
    if sum(widths) + padding > console_width:
        return False
    _fix_widths(table, widths)
    return True


def _fix_widths(table: Any, widths: list[int]) -> None:
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width


def change_words(result: EntityResult) -> str:
    """``producer_byte_rate 1 MiB/s (1048576) -> 2 MiB/s (2097152), request_percentage removed (was 50 %)``."""
    parts = []
    for k in sorted(set(result.before) | set(result.after), key=list(KEYS).index):
        b, a = result.before.get(k), result.after.get(k)
        if b == a:
            continue
        if b is None:
            parts.append(f"{k} = {human_and_raw(KEYS[k], a)} (new)")
        elif a is None:
            parts.append(f"{k} removed (was {human_and_raw(KEYS[k], b)})")
        else:
            parts.append(f"{k} {human_and_raw(KEYS[k], b)} -> {human_and_raw(KEYS[k], a)}")
    return ", ".join(parts) or "no change"


def result_line(result: EntityResult) -> str:
    label = result.entity.label()
    if result.outcome is Outcome.APPLIED:
        return f"updated {label}: {change_words(result)}"
    if result.outcome is Outcome.VALIDATED:
        return f"would update {label}: {change_words(result)} (dry run, nothing written)"
    if result.outcome is Outcome.UNCHANGED:
        return f"unchanged {label}: already as requested"
    return f"{result.outcome.value} {label}: {result.message}"


def kafka_alter_line(result: EntityResult, dialect: str, head: tuple[EntityType, str]) -> str:
    """kafka-configs' success line for the flat ``--alter`` form.

    In bootstrap mode Kafka names only the *first* entity type and name of its command line (``--entity-type``
    order, then the flags in its fixed order: client, user, ip, then the ``--*-defaults``); ``head`` is that
    pair as :func:`kquotactl.cli.entityargs.alter_head` gives it ("" = a default).
    """
    if dialect == "zookeeper":
        return f"Completed updating config for entity: {result.entity.words()}."
    t, name = head
    if not name:
        return f"Completed updating default config for {t.plural} in the cluster."
    shown = escaped(name) if name.strip() else shown_name(name)  # kafka-configs' line; a blank name quoted
    return f"Completed updating config for {t.plural[:-1]} {shown}."


#: entities a stopped apply lists on the terminal; every one of them is in the report file
PARTIAL_SHOWN = 20


def partial_lines(failure: PartialFailure) -> list[str]:
    """One line per entity of a stopped apply, the ones to look at first: of unknown outcome, not applied, applied
    (the full report; :func:`partial_report` shows the first :data:`PARTIAL_SHOWN`)."""
    return (
        [f"outcome unknown: {label}" for label in failure.unknown]
        + [f"not applied: {label}" for label in failure.not_applied]
        + [f"applied: {label}" for label in failure.applied]
    )


def partial_report(
    failure: PartialFailure,
    *,
    how: str = "re-run apply to converge",
    notes: Sequence[str] = (),
    report: str | None = None,
    stopped: str | None = None,
    shown: int = PARTIAL_SHOWN,
) -> tuple[list[str], QuotaError]:
    """The one rendering of a :class:`PartialFailure` (an apply that stopped midway), summary first: the lines to
    print (why it stopped, the counts, ``notes``, where the full per-entity report is, then at most ``shown``
    entities, those of unknown outcome first) and the error to exit with (the counts and ``how`` to continue;
    exit 130 after Ctrl-C). ``report``: the file holding every entity's line (:func:`partial_lines`), named
    when not all of them are shown; ``stopped``: the cause in other words (a signal's name)."""
    every = partial_lines(failure)
    verb = "interrupted" if failure.exit_code == EXIT_INTERRUPTED else "partial"
    if stopped and failure.exit_code == EXIT_INTERRUPTED:
        verb = stopped.split()[0]  # "terminated (SIGTERM)": a terminated apply
    counts = f"{counted(len(failure.applied), 'entity')} applied, {len(failure.not_applied)} not applied" + (
        f", {len(failure.unknown)} of unknown outcome" if failure.unknown else ""
    )
    lines = [f"kquotactl: apply stopped: {stopped or failure.cause}", f"  {counts}"]
    lines += [f"  {note}" for note in notes]
    listed = every[:shown]
    if len(every) > len(listed):
        where = f" in {report}" if report else ""
        lines.append(f"  every entity{where}; the first {len(listed)}:")
    lines += listed
    if len(every) > len(listed):
        lines.append(f"... and {len(every) - len(listed)} more" + (f" in {report}" if report else ""))
    final = QuotaError(f"{verb} apply: {counts}; {how}")
    final.exit_code = failure.exit_code
    return lines, final
