"""Peak RSS of the manifest commands at 10,000 and 100,000 entities (each command in a fresh process).

For each size: ``validate``, ``plan`` against an empty chroot, ``apply`` into it, ``plan`` once in sync (a full
describe), and ``export``; plus ``kquotactl --help`` as the floor. ``BENCH_MEMORY_SIZES`` overrides the sizes
(comma-separated). Figures are printed, never asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.manifest_apply import desired, write_manifest
from kquotactl.testing.servers import ZooKeeperServer

SIZES = [int(x) for x in os.environ.get("BENCH_MEMORY_SIZES", "10000,100000").split(",")]

# Run the real entry point in this process and report its peak RSS (KiB) on stderr's last line. VmHWM, not
# ru_maxrss: on Linux ru_maxrss survives exec, so it would include this (forking) benchmark process.
_PROBE = """
import sys
from kquotactl.cli.app import main
code = 0
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code or 0
hwm = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(f"maxrss={hwm} exit={code}", file=sys.stderr)
"""


def peak(args: list[str], expect: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of one kquotactl invocation."""
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    took = time.perf_counter() - t
    last = p.stderr.strip().splitlines()[-1]
    fields = dict(x.split("=") for x in last.split())
    if int(fields["exit"]) not in expect:
        raise RuntimeError(f"kquotactl {' '.join(args[:4])} exited {fields['exit']}: {p.stderr[-1500:]}")
    return int(fields["maxrss"]) / 1024, took


def main() -> None:
    from kazoo.client import KazooClient

    help_rss, _ = peak(["--help"])
    print(f"  kquotactl --help (floor)                        {help_rss:7.1f} MiB")
    with tempfile.TemporaryDirectory() as tmp, ZooKeeperServer(heap="1g") as zk:
        admin = KazooClient(zk.connect)
        admin.start()
        for n in SIZES:
            manifest = Path(tmp) / f"m{n}.yaml"
            write_manifest(desired(n), manifest)
            root = f"/mem{n}"
            admin.ensure_path(root + "/brokers/ids")  # a chroot brokers use
            conn = ["--zookeeper", zk.connect + root, "--timeout", "120"]
            print(f"{n} entities (manifest {manifest.stat().st_size / 1048576:.1f} MiB):")
            for label, args, expect in (
                ("validate", ["validate", "-f", str(manifest)], (0,)),
                ("plan (empty cluster, all pending)", [*conn, "plan", "-f", str(manifest)], (2,)),
                ("apply --yes (empty chroot)", [*conn, "apply", "-f", str(manifest), "--yes"], (0,)),
                ("plan (in sync)", [*conn, "plan", "-f", str(manifest)], (0,)),
                ("export", [*conn, "export"], (0,)),
            ):
                rss, took = peak(args, expect)
                print(f"  {label:<44} {rss:7.1f} MiB  {took:7.1f} s")
        admin.stop()
        admin.close()


if __name__ == "__main__":
    main()
