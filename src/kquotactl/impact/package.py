"""The kquotactl package as one zip for ``spark-submit --py-files`` (``make impact-zip``).

A wheel is not importable from ``--py-files``; a zip of the package directory is. Byte-code caches are left
out: the driver's Python compiles what it imports.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def write_zip(dest: Path) -> Path:
    """Write the package (``kquotactl/...`` at the zip's root) to ``dest``; returns ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    root = PACKAGE_DIR.parent
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(PACKAGE_DIR.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                z.write(f, f.relative_to(root).as_posix())
    return dest


if __name__ == "__main__":
    print(write_zip(Path(sys.argv[1] if len(sys.argv) > 1 else "dist/kquotactl.zip")))
