"""``impact run``: the quota sets to compare, then one replay of recorded traffic (files, broker request logs or the
brokers' own sensors through Prometheus) against them, with the report as data and, when asked, its files."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kquotactl.backends.base import QuotaBackend
from kquotactl.services.quotas import load_quota_set

if TYPE_CHECKING:  # the engines (Spark, pyarrow) load inside run(): the types only here
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.impact.replay import Window
    from kquotactl.impact.topic import TopicConfig


#: what a replay reports as it goes (the engine's steps) and what it noticed (request-log lines skipped)
Say = Callable[[str], None]


def _ignore(_message: str) -> None:
    return None


@dataclass(frozen=True)
class QuotaSets:
    """The proposed quota set and (``base``) the one it is compared with on the same traffic, or None."""

    proposed: QuotaIndex
    base: QuotaIndex | None = None


def quota_sets(
    files: Sequence[str],
    compare_with: Sequence[str],
    backend: Callable[[], QuotaBackend],
    *,
    brokers: int = 1,
    warn: Say = _ignore,
) -> QuotaSets:
    """The quota sets of a replay: ``files`` (manifests; none: the live cluster's, ``backend`` opens it), and
    ``compare_with`` (manifests, or ``["live"]``). The limits count for traffic spread evenly over ``brokers``
    brokers (:func:`kquotactl.services.quotas.load_quota_set`); ``warn``: what the backend noticed reading each."""

    def one(source: Sequence[str]) -> QuotaIndex:
        loaded = load_quota_set(list(source) or backend(), brokers=brokers, spread=brokers)
        for w in loaded.warnings:
            warn(w)
        return loaded.index

    proposed = one(files)
    if not compare_with:
        return QuotaSets(proposed)
    return QuotaSets(proposed, one([] if list(compare_with) == ["live"] else compare_with))


@dataclass(frozen=True)
class Replay:
    """What is replayed, and how: ``traffic`` (files or directories; ``input_format`` ``table`` or
    ``kafka-request-log``, ``per_broker``: each one broker's logs) or the sensors of ``prometheus`` over ``span``
    (start, end, step in epoch seconds); ``engine`` (``spark``, ``local`` or ``auto``), ``master`` (None: left to
    spark-submit) and ``conf`` for Spark; the quota ``window``."""

    window: Window
    traffic: Sequence[str] = ()
    prometheus: str | None = None
    span: tuple[float, float, float] | None = None
    input_format: str = "table"
    per_broker: bool = False
    engine: str = "auto"
    master: str | None = "local[*]"
    conf: Mapping[str, str] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The input in words (the report's ``input``)."""
        return self.prometheus or ", ".join(self.traffic)


def run(
    replay: Replay,
    sets: QuotaSets,
    *,
    top: int = 10,
    topic: TopicConfig | None = None,
    out_dir: str | None = None,
    quotas: str = "",
    say: Say = _ignore,
    warn: Say = _ignore,
) -> dict[str, Any]:
    """Replay the traffic against ``sets``: the report (``summary`` with the engine used, ``quota_ids``, and
    ``compare`` with a base set, ``topic_threshold`` with ``topic``). ``out_dir``: also its files (the ``top``
    quota-ids in the picture; ``quotas``: the quota set in words). ``say``: each step as it starts; ``warn``: what
    the input's reader skipped."""
    from kquotactl.impact.engine import Runner, compare

    table = None
    if replay.prometheus is not None and replay.span is not None:
        from kquotactl.observe.prometheus import traffic_table

        say(f"reading the quota sensors from {replay.prometheus}")
        table = traffic_table(replay.prometheus, *replay.span, replay.window.size_s)
    runner = Runner(
        replay.source,
        replay.engine,
        replay.window,
        replay.master,
        replay.conf,
        say,
        replay.input_format,
        replay.traffic,
        table=table,
        per_broker=replay.per_broker,
    )
    analysis = runner.analyze(sets.proposed, top=top if out_dir else 0, distinct=sets.base is not None)
    if runner.log_stats is not None and (skipped := runner.log_stats.warning()):
        warn(skipped)
    result: dict[str, Any] = dict(analysis.report)
    result["summary"] = {**result["summary"], "engine": runner.engine}
    if topic is not None:
        from kquotactl.impact.engine import topic_threshold

        say("replaying produce traffic against the topic thresholds")
        result["topic_threshold"] = topic_threshold(runner, sets.proposed, topic)
    if sets.base is not None:
        say("replaying the same traffic against the base quota set")
        result["compare"] = compare(analysis, runner.analyze(sets.base), sets.proposed, sets.base)
    if out_dir:
        from kquotactl.impact.output import write_files

        say(f"writing {out_dir}")
        replayed = {"input": replay.source, "quotas": quotas}
        write_files(
            result,
            analysis.timeline,
            out_dir,
            top,
            replay.window.size_s,
            analysis.first_sample,
            rates=analysis.rates,
            replayed=replayed,
        )
    return result


def impact(
    replay: Replay,
    files: Sequence[str],
    compare_with: Sequence[str],
    backend: Callable[[], QuotaBackend],
    *,
    brokers: int = 1,
    top: int = 10,
    topic: TopicConfig | None = None,
    out_dir: str | None = None,
    say: Say = _ignore,
    warn: Say = _ignore,
    note: Say = _ignore,
) -> dict[str, Any]:
    """``impact run``: the quota sets (:func:`quota_sets`; ``warn``: what the backend noticed reading them), then the
    replay (:func:`run`; ``say``: each step as it starts; ``note``: that the traffic counts as ``brokers`` brokers'
    when more than one, and what the input's reader skipped). Returns the report."""
    sets = quota_sets(files, compare_with, backend, brokers=brokers, warn=warn)
    if brokers > 1:
        note(
            f"the traffic is replayed as the whole cluster's, assumed spread evenly over {brokers} brokers "
            f"(each broker's limits x {brokers}); the input does not say which broker served each record"
        )
    quotas = ", ".join(files) if files else "the live cluster's quotas"
    return run(replay, sets, top=top, topic=topic, out_dir=out_dir, quotas=quotas, say=say, warn=note)
