"""``kquotactl verify``: did a quota change take effect. Step 1 waits (bounded) until every broker reports the
values; step 2 (``--drive``) runs a real producer as the entity's connection and compares the broker's throttle with
the simulation (:func:`kquotactl.services.verify.wait_applied`, :func:`kquotactl.services.verify.drive_verdict`).

Only click is imported at module level; the services, confluent-kafka and rich load inside the command.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.options import entity_options
from kquotactl.cli.state import pass_state

if TYPE_CHECKING:
    from kquotactl.cli.state import AppState
    from kquotactl.core.entities import Entity
    from kquotactl.core.keys import Number
    from kquotactl.core.verify import DriveVerdict
    from kquotactl.services.verify import Converged, Drive

DEFAULT_SECONDS = 6.0
DEFAULT_TOPIC = "kquotactl-verify"
#: the note on a drive whose throttle agrees only if the quota-id's sensor was idle (unknown without the sensors)
INCONCLUSIVE_NOTE = (
    "the throttle agrees with the simulation only if the quota-id's sensor existed and was read while "
    "idle (by an exporter), which cannot be told without its sensors: give --scrape or --prometheus"
)


@click.command(cls=OnceCommand)
@entity_options
@click.option("--expect", metavar="K=V,...", help="The values every broker must report (default: what is set now).")
@click.option(
    "--drive",
    metavar="RATE",
    help="Then produce at RATE bytes/s (units: 100KiB) as the entity's connection and compare the broker's "
    "throttle with the simulation.",
)
@click.option(
    "--seconds",
    type=click.FloatRange(min=1, max=600),
    default=DEFAULT_SECONDS,
    show_default=True,
    help="--drive: for this long.",
)
@click.option("--topic", default=DEFAULT_TOPIC, show_default=True, help="--drive: the topic produced to.")
@click.option("--drive-client-id", metavar="NAME", help="--drive: the producer's client-id (default: the entity's).")
@click.option(
    "--drive-bootstrap", metavar="HOST:PORT", help="--drive: the brokers to produce to (default: --bootstrap-server)."
)
@click.option(
    "--prometheus",
    metavar="URL",
    help="--drive: read the quota-id's sensors (as top) first, and wait until its window holds no other traffic.",
)
@click.option("--scrape", "scrape_urls", metavar="URL", multiple=True, help="--drive: as --prometheus, per broker.")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json"]), help="Output format.")
@pass_state
@click.pass_context
def verify(
    ctx: click.Context,
    state: AppState,
    expect: str | None,
    drive: str | None,
    seconds: float,
    topic: str,
    drive_client_id: str | None,
    drive_bootstrap: str | None,
    prometheus: str | None,
    scrape_urls: tuple[str, ...],
    fmt: str | None,
    **kw: Any,
) -> None:
    """Check that a quota change took effect: wait until every broker reports the entity's values, then
    optionally drive a real producer at a rate and compare the throttle the broker returns with explain's
    simulation. Exit 0 when it did, 2 when a broker lags or its throttle disagrees, 1 on error. The wait is
    bounded by --timeout (default 30 s), the option that bounds every request.

    Each broker is asked with DescribeClientQuotas sent to it (KRaft brokers apply metadata asynchronously and
    answer from what they applied); with --zookeeper, the znode brokers read. --drive produces to partition 0 of
    --topic with the cluster's client properties (--command-config: SASL credentials make the user) and the
    entity's client-id, and compares the first throttle the broker returns (when, how long) with the replay of the
    same requests under the limit the quotas give that connection. Bytes already in the quota-id's window bring
    the first throttle forward: with --prometheus/--scrape the drive waits (up to --timeout) until the quota-id's
    sensors show no traffic, and refuses to judge (exit 2) a quota-id that keeps carrying some; without them it
    waits one quota window (a previous drive is then out of it). Drive a quota-id no one else uses at the time.

    \b
    Examples:
      kquotactl --bootstrap-server b:9092 verify --client-id app1
      kquotactl --bootstrap-server b:9092 verify --user alice --expect producer_byte_rate=1MiB --timeout 60
      kquotactl --bootstrap-server b:9092 verify --client-id app1 --drive 5MiB --seconds 8
    """
    from kquotactl.cli.entityargs import EntityArgs, entity_for_alter
    from kquotactl.services.verify import verify as verify_service

    entity = entity_for_alter(EntityArgs.pop_from(kw))
    expected = _expected(entity, expect)
    the_drive = _drive(drive, seconds, topic, drive_client_id, drive_bootstrap, prometheus, scrape_urls)
    fmt = _format(fmt or state.output)
    found = verify_service(
        lambda: state.backend(ctx), state.connection(), entity, expected, drive=the_drive, warn=state.warn
    )
    verdict = found.verdict
    if verdict is not None and verdict.inconclusive:
        verdict = dataclasses.replace(verdict, notes=[*verdict.notes, INCONCLUSIVE_NOTE])
    if fmt == "json":
        click.echo(json.dumps(verify_json(found.converged, verdict), indent=2))
    else:
        _print_table(found.converged, verdict)
    found.check()  # exit 2 when a broker lags, or the drive's throttle disagrees or cannot be judged


def _expected(entity: Entity, expect: str | None) -> dict[str, Number] | None:
    """``--expect K=V,...`` as typed values for the entity's kind (None: what is set now)."""
    if expect is None:
        return None
    from kquotactl.core.changes import build_change
    from kquotactl.core.errors import UsageError
    from kquotactl.core.grammar import parse_add_config

    expected = dict(build_change(entity, parse_add_config(expect)).set)
    if not expected:
        raise UsageError("--expect is empty: give K=V,... (or leave it out to wait for what is set now)")
    return expected


def _drive(
    drive: str | None,
    seconds: float,
    topic: str,
    client_id: str | None,
    bootstrap: str | None,
    prometheus: str | None,
    scrape_urls: tuple[str, ...],
) -> Drive | None:
    """``--drive RATE`` and the options that go with it (refused without it), or None."""
    from kquotactl.core.errors import UsageError
    from kquotactl.services.verify import Drive

    rate = _rate(drive) if drive is not None else None
    if drive is None and (client_id or bootstrap or prometheus or scrape_urls):
        raise UsageError("--drive-client-id, --drive-bootstrap, --prometheus and --scrape go with --drive RATE")
    if prometheus and scrape_urls:
        raise UsageError("give either --prometheus URL or --scrape URL (one per broker), not both")
    return None if rate is None else Drive(rate, seconds, topic, client_id, bootstrap, prometheus, scrape_urls)


def _format(fmt: str | None) -> str:
    """``-o``: a table or JSON (default: a table on a terminal, JSON in a pipe)."""
    from kquotactl.core.errors import UsageError

    if fmt not in (None, "table", "json"):
        raise UsageError(f"-o {fmt}: verify shows a table or json")
    return fmt or ("table" if sys.stdout.isatty() else "json")


def _rate(text: str) -> float:
    """``--drive RATE``: a byte rate as ``explain --observed`` takes it (units such as 100KiB), above 0."""
    from kquotactl.core.errors import InputValueError, MalformedInput, UsageError
    from kquotactl.core.explain import parse_observed
    from kquotactl.core.keys import PRODUCE_KEY

    try:
        rate = parse_observed([f"{PRODUCE_KEY}={text}"])[PRODUCE_KEY]
    except (MalformedInput, InputValueError) as e:  # said as --drive, the option the rate came from
        raise UsageError(f"--drive {text!r}: {e.detail}") from None
    if rate <= 0:
        raise UsageError(f"--drive {text}: the rate must be above 0 bytes/s")
    return rate


def verify_json(conv: Converged, verdict: DriveVerdict | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "entity": conv.entity.to_json(),
        "path": conv.entity.path,
        "expected": conv.expected,
        "converged": conv.converged,
        "waited_s": round(conv.waited, 3),
        "source": conv.source,
        "brokers": [{"broker": v.broker, "config": dict(v.config)} for v in conv.views],
        "lagging": [v.broker for v in conv.lagging],
    }
    if verdict is not None:
        out["drive"] = verdict.to_json()
    return out


def _print_table(conv: Converged, verdict: DriveVerdict | None) -> None:
    """What each broker reports, then the drive against the simulation: plain tables that fit the terminal (else a
    block per row, :mod:`kquotactl.core.layout`), never padded in a pipe."""
    from kquotactl.cli.manifestargs import terminal_width
    from kquotactl.core.keys import KEYS, PRODUCE_KEY, human, human_and_raw, limit_text
    from kquotactl.core.layout import table_or_blocks, wrap

    def words(config: Any) -> str:  # each limit as every command shows one
        return ", ".join(f"{k} {human_and_raw(KEYS[k], v)}" for k, v in sorted(config.items())) or "no quotas"

    width = terminal_width()
    lines = wrap(f"{conv.entity.label()}: expected {words(conv.expected)}", width)
    late = {v.broker for v in conv.lagging}
    rows = [[v.broker, words(v.config), "lags" if v.broker in late else "applied"] for v in conv.views]
    lines += table_or_blocks(["BROKER", "REPORTS", "STATE"], rows, width)
    if verdict is not None:
        key = KEYS[PRODUCE_KEY]
        limit = "no limit" if verdict.limit is None else f"a limit of {limit_text(key, verdict.limit)}"
        lines += wrap(f"driven at {human(key, verdict.rate)} under {limit}", width)
        header = ["", "FIRST THROTTLE AT", "FIRST THROTTLE", "AVG", "MAX"]
        drive = [
            [
                "broker",
                _at(verdict.broker_at_ms),
                f"{verdict.broker_ms} ms",
                f"{verdict.broker_avg_ms:.0f} ms",
                f"{verdict.broker_max_ms:.0f} ms",
            ],
            [
                f"simulated (first recording {verdict.offset_ms} ms before time 0, of {verdict.origin_band_ms} ms)",
                _at(verdict.simulated_at_ms),
                f"{verdict.simulated_ms} ms",
                "",
                "",
            ],
            ["tolerance", f"±{verdict.tolerance_at_ms / 1000:.2f} s", f"±{verdict.tolerance_ms} ms", "", ""],
        ]
        lines += table_or_blocks(header, drive, width)
        if verdict.quiet is not None:
            lines += wrap(f"before the drive: {verdict.quiet.how} ({verdict.quiet.waited_s:.1f} s)", width)
        lines += wrap(
            f"steady state (explain --observed producer_byte_rate={verdict.rate:.0f}): {verdict.steady_state_ms} ms; "
            f"{'agrees' if verdict.agrees else 'DISAGREES'}" + "".join(f"; {n}" for n in verdict.notes),
            width,
        )
    click.echo("\n".join(lines))


def _at(ms: int | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f} s"
