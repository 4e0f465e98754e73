"""The pure verdicts of ``kquotactl verify`` (kquotactl.core.verify): step 1's comparison and step 2's first-throttle
comparison, on recordings built here (the same replay the broker's Rate is checked against in test_oracle_rate)."""

from __future__ import annotations

from kquotactl.core.rate import replay
from kquotactl.core.verify import BrokerView, Drive, compare_drive, lag_message, lagging


def test_lagging_compares_the_expected_keys_or_the_whole_config() -> None:
    views = [
        BrokerView("broker 1", {"producer_byte_rate": 20000, "consumer_byte_rate": 5}),
        BrokerView("broker 2", {"producer_byte_rate": 10000}),
        BrokerView("broker 3", {}),
    ]
    assert [v.broker for v in lagging({"producer_byte_rate": 20000}, views)] == ["broker 2", "broker 3"]
    assert [v.broker for v in lagging({"producer_byte_rate": 20000}, views, exact=True)] == [
        "broker 1",
        "broker 2",
        "broker 3",
    ]
    assert lagging({}, views[2:], exact=True) == []  # a removal: no quotas is what is expected
    assert lag_message("client-id=app", {"producer_byte_rate": 20000}, views[1:], 30.04) == (
        "client-id=app: not applied everywhere after 30.0s (expected producer_byte_rate=20000): "
        "broker 2 reports producer_byte_rate=10000; broker 3 reports no quotas"
    )


def _steady(rate: float, seconds: float, per_second: int = 50) -> list[tuple[int, float]]:
    return [(i * 1000 // per_second, rate / per_second) for i in range(int(seconds * per_second))]


def _first_throttle(sent: list[tuple[int, float]], limit: float) -> tuple[int, int]:
    step = next(s for s in replay(sent, limit) if s.throttle_ms > 0)
    return step.time_ms, step.throttle_ms


def test_the_broker_agreeing_with_the_replay_agrees() -> None:
    sent = _steady(100_000, 5)
    at, ms = _first_throttle(sent, 20_000)
    assert at == 2000  # 200 kB in the padded 10 s window
    v = compare_drive(Drive("producer_byte_rate", 100_000, 5, sent, [(at + 8, ms - 20)]), 20_000)
    assert v.agrees and (v.simulated_at_ms, v.simulated_ms) == (at, ms)
    assert v.steady_state_ms == 44_000  # explain --observed: (100000 − 20000) / 20000 × 11 s
    assert v.to_json()["broker"]["first_throttle_at_ms"] == at + 8


def test_a_broker_applying_another_limit_disagrees() -> None:
    sent = _steady(100_000, 5)
    at, ms = _first_throttle(sent, 20_000)  # what a broker at 20 kB/s gives
    v = compare_drive(Drive("producer_byte_rate", 100_000, 5, sent, [(at, ms)]), 40_000)
    assert not v.agrees and v.simulated_at_ms == 4000
    # however early within the band the broker may have recorded the first request
    banded = Drive("producer_byte_rate", 100_000, 5, sent, [(at, ms)], origin_band_ms=500)
    assert not compare_drive(banded, 40_000).agrees and compare_drive(banded, 20_000).agrees
    late = compare_drive(Drive("producer_byte_rate", 100_000, 5, sent, []), 20_000)
    assert not late.agrees and late.notes == ["the simulation throttles the drive, the broker did not"]
    early = compare_drive(Drive("producer_byte_rate", 10_000, 3, _steady(10_000, 3), [(500, 40)]), 20_000)
    assert not early.agrees and early.notes == ["the broker throttled the drive, the simulation does not"]


def test_no_throttle_on_either_side_agrees_and_says_so() -> None:
    v = compare_drive(Drive("producer_byte_rate", 10_000, 3, _steady(10_000, 3), []), 20_000)
    assert (
        v.agrees and v.steady_state_ms == 0 and v.notes == ["neither the simulation nor the broker throttled the drive"]
    )
    short = compare_drive(Drive("producer_byte_rate", 30_000, 2, _steady(30_000, 2), []), 20_000)
    assert short.agrees and short.notes[1] == (
        "the drive ended before the limit could throttle it (after about 6.7s): drive for at least 8s to test the limit"
    )
    unlimited = compare_drive(Drive("producer_byte_rate", 10_000, 3, _steady(10_000, 3), []), None)
    assert unlimited.agrees and unlimited.limit is None


def test_the_band_of_first_recording_times_finds_the_broker_alignment() -> None:
    """The broker recorded the first request 120 ms before the client's time 0: its samples start then."""
    sent = _steady(100_000, 5)
    broker_clock = [sent[0], *((t + 120, b) for t, b in sent[1:])]  # from the broker's first recording
    at, ms = _first_throttle(broker_clock, 20_000)
    broker = [(at - 120, ms)]  # as the client sees it
    v = compare_drive(Drive("producer_byte_rate", 100_000, 5, sent, broker, origin_band_ms=300), 20_000)
    assert v.agrees and v.offset_ms == 120 and (v.simulated_at_ms, v.simulated_ms) == (at - 120, ms)


def test_drive_refusals_are_one_line_before_connecting(tmp_path) -> None:
    from conftest import run_cli

    nowhere = ["--bootstrap-server", "127.0.0.1:1"]  # nothing listens: every case is refused before connecting
    sasl = tmp_path / "bob.properties"
    sasl.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config="
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="x";\n'
    )
    cases = [
        (["--zookeeper", "127.0.0.1:1", "verify", "--client-id", "a", "--drive", "1000"], "--drive runs a producer"),
        ([*nowhere, "verify", "--ip", "10.0.0.1", "--drive", "1000"], "not an ip"),
        ([*nowhere, "verify", "--user", "alice", "--drive", "1000"], "authenticates as 'ANONYMOUS'"),
        ([*nowhere, "--command-config", str(sasl), "verify", "--user", "alice", "--drive", "1KiB"], "as 'bob'"),
        ([*nowhere, "verify", "--client-id", "a", "--drive", "0"], "must be above 0"),
        ([*nowhere, "verify", "--client-id", "a", "--drive", "fast"], "is not a rate"),
        ([*nowhere, "verify", "--client-id", "a", "--drive-client-id", "b"], "go with --drive RATE"),
        ([*nowhere, "verify", "--client-id", "a", "--drive", "1000", "--drive-client-id", "b"], "the entity is"),
        ([*nowhere, "verify", "--client-id", "a", "--expect", "nonsense_key=1"], "nonsense_key"),
        ([*nowhere, "apply", "-f", "x.yaml", "--verify-sample", "2"], "--verify-sample goes with --verify"),
    ]
    for args, words in cases:
        r = run_cli(*args)
        assert r.exit_code == 1, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, (args, r.stderr)


def test_an_idle_sensor_read_by_an_exporter_starts_its_window_earlier() -> None:
    """A sensor that existed before the drive, idle, and was measured meanwhile (a scrape resets its empty samples
    to that time): its window began before the drive, so the broker throttles later and shorter than a fresh
    sensor. Within the band of such starts the right limit agrees; a limit far off still does not."""
    sent = _steady(100_000, 5)
    idle = replay([(-900, 0.0), *sent], 20_000)  # the broker: empty samples reset 0.9 s before the drive
    first = next(s for s in idle if s.throttle_ms > 0)
    assert (first.time_ms, first.throttle_ms) == (2100, 600)  # a fresh sensor: (2000, 100)
    drive = Drive("producer_byte_rate", 100_000, 5, sent, [(first.time_ms, first.throttle_ms)])
    assert not compare_drive(drive, 20_000).agrees  # read as a fresh sensor, a correct limit would disagree
    v = compare_drive(drive, 20_000, idle_origin_ms=12_000)
    assert v.agrees and v.to_json()["simulated"]["idle_window_start_band_ms"] == 12_000
    assert not compare_drive(drive, 30_000, idle_origin_ms=12_000).agrees
    assert not compare_drive(drive, 14_000, idle_origin_ms=12_000).agrees


def test_the_drive_waits_until_the_quota_ids_window_is_clean() -> None:
    """``wait_quiet`` reads the quota-id's produce sensors until no broker holds its bytes; traffic that goes on
    is reported, not waited for forever; without sensors, one quota window is waited."""
    from kquotactl.connection.clientprops import ClientSettings
    from kquotactl.core.entities import Entity
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.observe.throttled import Sample
    from kquotactl.services.verify import DriveTarget, wait_quiet

    index = QuotaIndex({Entity(client_id="app"): {"producer_byte_rate": 20_000}})
    target = DriveTarget("b:9092", ClientSettings(), "ANONYMOUS", "app")
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    readings = iter([5000.0, 1200.0, 0.0])

    def sensors() -> list[Sample]:
        other = Sample("byte_rate", "b1", 9e9, "Produce", client_id="other")  # another quota-id: not waited for
        return [Sample("byte_rate", "b1", next(readings), "Produce", client_id="app"), other]

    q = wait_quiet(target, index, sensors, 11, 30, clock=lambda: now[0], sleep=sleep)
    assert (q.waited_s, q.busy, q.existed) == (2.0, {}, True)
    readings = iter([800.0] * 100)
    stuck = wait_quiet(target, index, sensors, 11, 3, clock=lambda: now[0], sleep=sleep)
    assert stuck.busy == {"b1": 800.0} and stuck.waited_s >= 3
    blind = wait_quiet(target, index, None, 11, 30, clock=lambda: now[0], sleep=sleep)
    assert (blind.waited_s, blind.existed) == (11, False) and blind.how.startswith("no sensors")
