"""Kafka's own classes as the oracle of differential tests.

Small Java drivers (``common/*.java``, or ``v<version>/*.java`` where a version's API differs, with support files
shared by several versions: see :data:`SOURCE_DIRS`) are compiled with
``javac`` against one Kafka version's jars from Maven Central (see :mod:`kquotactl.testing.servers`) and run as one
JVM per suite. The protocol is one JSON request per line on stdin and one JSON answer per line on stdout, in order;
an exception thrown by Kafka's code comes back as ``{"error": "<class>", "message": "..."}``, which is an answer
like any other (``Sanitizer.desanitize("100%")`` throws, and kquotactl must refuse the same input).

Used only by tests and benchmarks; nothing here is imported by the command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kquotactl.testing.servers import cache_dir, classpath, fetch_jars
from kquotactl.testing.versions import ORACLE_LINES, jars_of

SOURCES = Path(__file__).parent

#: Kafka version -> the Maven POM (``testing/maven/<name>.xml``) that brings its jars: the oracle lines of
#: :data:`kquotactl.testing.versions.SUITES`.
VERSIONS: dict[str, str] = {line: jars_of(line) for line in ORACLE_LINES}


#: Where a version's driver sources are looked up, in order: its own directory, then the directories of the APIs it
#: shares with some other versions (``zk``: the ZooKeeper config handlers, up to 3.9; ``kraft``: the KRaft metadata
#: image, from 3.x), then ``common`` (code that compiles against every version).
SOURCE_DIRS: dict[str, tuple[str, ...]] = {
    "2.8": ("v2_8", "zk", "common"),
    "3.9": ("v3_9", "zk", "kraft", "common"),
    **{line: ("v4", "kraft", "common") for line in ORACLE_LINES if line >= "4"},
}


#: Kafka's classes that moved between releases, as ``(first release, old import, new import)``: a driver is written
#: against the oldest names and its imports are rewritten for the release it is compiled for (the classes kept their
#: methods; where they did not, the driver has a version directory of its own).
MOVED: tuple[tuple[tuple[int, int], str, str], ...] = (
    # the client quota managers became Java in kafka-server (4.2)
    ((4, 2), "kafka.server.ClientQuotaManager", "org.apache.kafka.server.quota.ClientQuotaManager"),
    *(
        ((4, 2), f"kafka.server.{name}", f"org.apache.kafka.server.quota.{name}")
        for name in (
            "AbstractControllerMutationQuota",
            "PermissiveControllerMutationQuota",
            "StrictControllerMutationQuota",
        )
    ),
    # QuotaFactory became Java too (4.4), and the clients' utilities that are not public API moved to internals
    ((4, 4), "kafka.server.QuotaFactory", "org.apache.kafka.server.quota.QuotaFactory"),
    *(
        ((4, 4), f"org.apache.kafka.common.utils.{name}", f"org.apache.kafka.common.utils.internals.{name}")
        for name in ("Exit", "Sanitizer", "LogContext")
    ),
)


def _rewritten(version: str, source: Path) -> bytes:
    """``source`` with the imports of :data:`MOVED` that apply to ``version`` rewritten."""
    text = source.read_text(encoding="utf-8")
    release = tuple(int(p) for p in version.split("."))
    for since, old, new in MOVED:
        if release >= since:
            text = text.replace(f"import {old};", f"import {new};")
    return text.encode("utf-8")


def _sources(version: str, driver: str) -> list[Path]:
    """The shared loop, then ``<driver>.java`` and its support files ``<driver><Part>.java`` along the version's
    :data:`SOURCE_DIRS` (for each file name, the first directory that has it wins)."""
    found: dict[str, Path] = {}
    for d in SOURCE_DIRS[version]:
        for path in sorted((SOURCES / d).glob(f"{driver}*.java")):
            found.setdefault(path.name, path)
    if f"{driver}.java" not in found:
        raise FileNotFoundError(f"no oracle driver {driver} for Kafka {version} (in {', '.join(SOURCE_DIRS[version])})")
    return [SOURCES / "common" / "OracleLoop.java", *(found[name] for name in sorted(found))]


def compile_driver(version: str, driver: str) -> tuple[Path, str]:
    """Compile ``driver`` against Kafka ``version``'s jars (cached by source hash); return (classes, classpath)."""
    jars = fetch_jars(VERSIONS[version])
    cp = classpath(jars)
    sources = {s: _rewritten(version, s) for s in _sources(version, driver)}
    digest = hashlib.sha256()
    for s, text in sources.items():
        digest.update(s.relative_to(SOURCES).as_posix().encode() + b"\0" + text + b"\0")
    digest.update((jars / ".complete").read_bytes())
    out = cache_dir() / "oracle" / version / f"{driver}-{digest.hexdigest()[:16]}"
    if not (out / ".complete").exists():
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        src = out / "src"
        src.mkdir()
        for s, text in sources.items():
            (src / s.name).write_bytes(text)
        javac = shutil.which("javac")
        if javac is None:
            raise RuntimeError("javac not found on PATH: the oracle drivers need a JDK")
        proc = subprocess.run(
            [javac, "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(out), *(str(src / s.name) for s in sources)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            shutil.rmtree(out, ignore_errors=True)
            raise RuntimeError(f"javac failed for oracle {driver} on Kafka {version}:\n{proc.stderr[-4000:]}")
        (out / ".complete").write_text("ok")
    return out, cp


class JavaOracle:
    """One JVM running one driver against one Kafka version; ask it one case or a batch at a time."""

    def __init__(self, version: str, driver: str) -> None:
        self.version = version
        self.driver = driver
        classes, cp = compile_driver(version, driver)
        java = shutil.which("java") or "java"
        self._proc = subprocess.Popen(
            [java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx512m", "-cp", f"{classes}{os.pathsep}{cp}", driver],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1 << 16,
        )
        self._lock = threading.Lock()

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        return self.ask_many([request])[0]

    def ask_many(self, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Answers in the order of ``requests``; written from a thread so a large batch cannot dead-lock the pipes."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        with self._lock:
            lines = [json.dumps(r, ensure_ascii=True) + "\n" for r in requests]

            def write() -> None:
                assert proc.stdin is not None
                proc.stdin.writelines(lines)
                proc.stdin.write("\n")
                proc.stdin.flush()

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            answers = []
            for _ in requests:
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(
                        f"oracle {self.driver} on Kafka {self.version} exited (code {proc.poll()}) mid-batch"
                    )
                answers.append(json.loads(line))
            writer.join()
            return answers

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> JavaOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The Kafka line of the differential test running now, when it is a sampled one (set by the test fixtures).
_sampled_line: str | None = None


def set_sampled_line(line: str | None) -> None:
    """Mark the running test as one on a sampled line (:func:`kquotactl.testing.versions.sampled`), or none."""
    global _sampled_line
    _sampled_line = line


def cases_per_run(default: int = 2000) -> int:
    """How many random cases a differential test draws (``KQUOTACTL_ORACLE_CASES`` raises it on demand); a tenth,
    at least 20, on a sampled Kafka line."""
    n = int(os.environ.get("KQUOTACTL_ORACLE_CASES", default))
    return max(20, n // 10) if _sampled_line is not None else n


def fresh_seed() -> int:
    """A new seed each run (``KQUOTACTL_ORACLE_SEED`` replays one); tests print it in every failure message."""
    env = os.environ.get("KQUOTACTL_ORACLE_SEED")
    return int(env) if env else random.SystemRandom().randrange(2**32)


def mismatches(
    cases: Iterable[Any], ours: Iterable[Any], kafka: Iterable[Any], limit: int = 5
) -> Iterator[tuple[Any, Any, Any]]:
    """The first ``limit`` cases where kquotactl and Kafka disagree."""
    found = 0
    for case, a, b in zip(cases, ours, kafka, strict=True):
        if a != b:
            yield case, a, b
            found += 1
            if found >= limit:
                return
