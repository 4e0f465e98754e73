"""Which Kafka release each part of the harness runs: the one table.

Every suite that runs Kafka (its own classes as an oracle, ConfigCommand, real brokers) takes its versions from
:data:`SUITES`, so moving to a new release is one edit here and one POM in ``maven/``. The newest release is the
default everywhere; older lines are kept where they behave differently (2.8 and 3.9: ZooKeeper mode) and the
releases between are *sampled* (fewer random cases) to keep CI well under its time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    """One Kafka release the harness can run."""

    line: str  # "4.4": what tests and oracles name it by
    version: tuple[int, int, int]  # the exact release in the POM
    jars: str  # ``maven/<jars>.xml``
    zookeeper: bool  # brokers can run in ZooKeeper mode (≤ 3.9)
    kraft: bool  # brokers can run in KRaft mode (≥ 3.x; the harness runs KRaft from 3.9)

    @property
    def config_command(self) -> str:
        """kafka-configs' main class: Scala in the broker jar up to 4.1, Java in kafka-tools from 4.2."""
        return "org.apache.kafka.tools.ConfigCommand" if self.version >= (4, 2) else "kafka.admin.ConfigCommand"

    @property
    def text(self) -> str:
        return ".".join(map(str, self.version))


RELEASES: dict[str, Release] = {
    r.line: r
    for r in (
        Release("2.5", (2, 5, 1), "kafka-2.5", zookeeper=True, kraft=False),
        Release("2.6", (2, 6, 3), "kafka-2.6", zookeeper=True, kraft=False),
        Release("2.7", (2, 7, 2), "kafka-2.7", zookeeper=True, kraft=False),
        Release("2.8", (2, 8, 2), "kafka-2.8", zookeeper=True, kraft=False),
        Release("3.9", (3, 9, 1), "kafka-3.9", zookeeper=True, kraft=True),
        Release("4.2", (4, 2, 2), "kafka-4.2", zookeeper=False, kraft=True),
        Release("4.3", (4, 3, 1), "kafka-4.3", zookeeper=False, kraft=True),
        Release("4.4", (4, 4, 0), "kafka-4.4", zookeeper=False, kraft=True),
    )
}

#: The newest release: KRaft brokers, ConfigCommand over the admin API, every oracle.
NEWEST = "4.4"

#: Suite -> the release lines it runs on. ``oracle`` runs the full number of random cases on each; ``oracle-sample``
#: a tenth of them (the 4.x releases between, whose quota code must agree with the newest).
SUITES: dict[str, tuple[str, ...]] = {
    # Kafka's own classes (Sanitizer, QuotaManagers, Rate, TokenBucket, ConfigCommand's parser...)
    "oracle": ("2.8", "3.9", NEWEST),
    "oracle-sample": ("4.2", "4.3"),
    # ConfigCommand's command lines and output: --zookeeper on 2.8, --bootstrap-server on the newest
    "config-command": ("2.8", NEWEST),
    # real brokers: KRaft (single node, and the 3-node quorum), ZooKeeper mode, and the last broker without KIP-546
    "kraft-broker": (NEWEST,),
    "zk-broker": ("3.9",),
    "pre-kip546-broker": ("2.5",),
    # the admin API before DescribeCluster (2.8): 2.6 without controller_mutation_rate, neither with ip quotas
    "early-kip546-broker": ("2.6", "2.7"),
    # real brokers' request logs replayed by impact (a producer against a quota, consumers, SASL): every line
    # operators run, ZooKeeper mode on 2.8 and 3.9, KRaft on the 4.x releases
    "request-log-broker": ("2.8", "3.9", "4.2", "4.3", NEWEST),
}

#: The oracle release lines, full and sampled: every line in :data:`SUITES`' two oracle suites.
ORACLE_LINES: tuple[str, ...] = SUITES["oracle"] + SUITES["oracle-sample"]


def jars_of(line: str) -> str:
    """The POM name of a release line (``"4.4"`` -> ``"kafka-4.4"``)."""
    return RELEASES[line].jars


def sampled(line: str) -> bool:
    """Whether an oracle suite runs a sample (a tenth of the cases) on this line."""
    return line in SUITES["oracle-sample"]
