"""``python -m kquotactl.testing.fetch [NAME...]``: resolve the servers' jars from Maven Central now."""

from __future__ import annotations

import sys
import time

from kquotactl.testing.servers import MAVEN_DIR, fetch_jars


def main(argv: list[str]) -> None:
    names = argv or sorted(p.stem for p in MAVEN_DIR.glob("*.xml"))
    for name in names:
        t = time.monotonic()
        path = fetch_jars(name)
        print(f"fetch: {name}: {len(list(path.glob('*.jar')))} jars in {path} ({time.monotonic() - t:.1f}s)")


if __name__ == "__main__":
    main(sys.argv[1:])
