"""``python -m bench [NAME...]``: run the named benchmarks (default: all), one after another."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main(argv: list[str]) -> None:
    names = argv or sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))
    for name in names:
        print(f"\n=== bench/{name}.py ===", flush=True)
        runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
