"""What a ``pip install`` user gets: the wheel carries the man pages to ``<prefix>/share/man/man1``, so
``man kquotactl`` works in a venv (man-db finds ``<prefix>/share/man`` from the PATH entry ``<prefix>/bin``),
and the console script runs.

Builds the wheel from a copy of the sources, installs it into a throw-away venv (``--no-deps`` plus the runtime
dependencies at the versions of the development venv, so they come from the local pip cache), then looks.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kquotactl.cli import docsgen

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _runtime_closure() -> list[str]:
    """``name==version`` of kquotactl's runtime dependencies (no extras), recursively, as installed here."""
    seen = _closure(importlib.metadata.requires("kquotactl") or [])
    return [f"{name}=={version}" for name, version in sorted(seen.items())]


def _closure(requirements: list[str]) -> dict[str, str]:
    """Distribution name -> installed version for these requirements and theirs (markers for no extra)."""
    from packaging.requirements import Requirement

    seen: dict[str, str] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = req.name.lower().replace("_", "-")
        if key in seen:
            continue
        seen[key] = importlib.metadata.version(req.name)
        todo += [Requirement(r) for r in importlib.metadata.requires(req.name) or []]
    return seen


def _run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # never the test run's PYTHONPATH: pip would take the checkout's kquotactl for an installed one and skip it
    env = env if env is not None else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, f"{args}: {p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("man") is None or shutil.which("groff") is None:
        pytest.fail("man and groff are needed (scripts/bootstrap.sh installs them)")
    tmp = tmp_path_factory.mktemp("pkg")
    src = tmp / "src-copy"  # build from a copy: no build/ or egg-info in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for name in ("src", "man"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp / "dist", src)
    (wheel,) = (tmp / "dist").glob("kquotactl-*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    pip = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", "--no-deps"]
    _run(*pip, wheel, *_runtime_closure())
    return venv


def test_the_wheel_carries_every_man_page(installed: Path) -> None:
    pages = {f"{p.man_name}.1" for p in docsgen.pages()}
    installed_pages = {p.name for p in (installed / "share" / "man" / "man1").glob("*.1")}
    assert installed_pages == pages
    assert pages == {p.name for p in (ROOT / "man").glob("*.1")}
    for name in pages:
        assert (installed / "share/man/man1" / name).read_text() == (ROOT / "man" / name).read_text()


def test_man_finds_and_renders_the_pages_of_a_venv(installed: Path) -> None:
    bin_ = installed / "bin"
    base = {"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(installed), "MANWIDTH": "100", "LANG": "C.UTF-8"}
    # man -M <venv>/share/man renders it
    out = _run("man", "-M", installed / "share" / "man", "kquotactl-config-set-context", env=base).stdout
    assert "NAME" in out and "kquotactl config set-context" in out and "cannot keep comments" in " ".join(out.split())
    # with the venv's bin on PATH and MANPATH unset, plain `man kquotactl` finds it (man-db maps bin -> share/man)
    where = _run("man", "-w", "kquotactl", env=base).stdout.strip()
    assert where == str(installed / "share" / "man" / "man1" / "kquotactl.1")
    # a MANPATH set without a trailing ':' hides it; with the ':' (= "and the default path") it is found again
    hidden = subprocess.run(["man", "-w", "kquotactl"], capture_output=True, text=True, env={**base, "MANPATH": "/x"})
    assert hidden.returncode != 0
    assert _run("man", "-w", "kquotactl", env={**base, "MANPATH": "/x:"}).stdout.strip() == where


def test_the_console_script_runs_from_the_venv(installed: Path, tmp_path: Path) -> None:
    env = {"PATH": f"{installed / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    out = _run(installed / "bin" / "kquotactl", "--version", env=env).stdout
    assert re.fullmatch(r"kquotactl, version \S+\n", out)
    r = subprocess.run(
        [installed / "bin" / "kquotactl", "describe"], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode == 1 and r.stderr.startswith("kquotactl: error: no cluster given")
    assert "docs/" not in r.stderr


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("impact", "generate", "traffic.parquet", "--rows", "10"), "impact"),
        (("--bootstrap-server", "127.0.0.1:9", "describe"), "admin"),
        (("--bootstrap-server", "127.0.0.1:9", "top", "--scrape", "127.0.0.1:9", "-o", "json"), "observe"),
        (("--zookeeper", "127.0.0.1:9", "--zk-auth", "sasl:u:p", "--connect-timeout", "1", "describe"), "sasl"),
    ],
)
def test_a_missing_extra_says_which_to_install(
    installed: Path, tmp_path: Path, args: tuple[str, ...], extra: str
) -> None:
    """The venv has no extras: a command that needs one says which, in one line (no internal error)."""
    env = {"PATH": f"{installed / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run(
        [installed / "bin" / "kquotactl", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert f"pip install 'kquotactl[{extra}]'" in r.stderr and "internal error" not in r.stderr


def test_every_optional_module_maps_to_the_extra_that_installs_it() -> None:
    import tomllib

    from kquotactl.config.extras import EXTRAS

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    dists = importlib.metadata.packages_distributions()
    for module, extra in EXTRAS.items():
        names = set(_closure(extras[extra]))  # what `pip install 'kquotactl[extra]'` brings, transitively
        provided_by = {d.lower().replace("_", "-") for d in dists.get(module, [])}
        assert provided_by & names, f"{module} is not installed by kquotactl[{extra}] ({provided_by} vs {names})"


# -- the development venv that `make setup` builds ----------------------------------------------------------


def _fake_checkout(tmp_path: Path) -> Path:
    """The files bootstrap.sh reads, copied: pages can be added to its man/ and the real one stays untouched."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "man", checkout / "man")
    shutil.copytree(ROOT / "scripts", checkout / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    return checkout


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_make_setup_gives_man_kquotactl_in_the_dev_venv(tmp_path: Path) -> None:
    """``make setup`` installs the package editable, which leaves out the wheel's man pages; bootstrap.sh links
    the checkout's pages into the venv, so ``man kquotactl`` works there as after a wheel install, and says
    how. Runs the real bootstrap.sh with a stand-in for the venv's python (and for apt-get, should anything be
    missing), then asks the real man-db."""
    if shutil.which("man") is None or shutil.which("groff") is None:
        pytest.fail("man and groff are needed (scripts/bootstrap.sh installs them)")
    checkout = _fake_checkout(tmp_path)
    venv = checkout / ".venv"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls"
    _stub(venv / "bin" / "python", f'echo "python $*" >> {calls}; [ "$*" = "-m kquotactl --version" ] && echo v0 || :')
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    _stub(stubs / "apt-get", f'echo "apt-get $*" >> {calls}')
    _stub(stubs / "sudo", '"$@"')
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    out = subprocess.run(
        ["bash", "scripts/bootstrap.sh"], cwd=checkout, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "python -m pip install -q --no-deps -e ." in calls.read_text()  # the editable install it makes up for
    assert "'man kquotactl' once .venv/bin is on PATH" in out.stdout and "man -M .venv/man kquotactl" in out.stdout

    with_venv = {**env, "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "MANWIDTH": "100"}
    where = _run("man", "-w", "kquotactl", env=with_venv).stdout.strip()
    assert Path(where).resolve() == (checkout / "man" / "kquotactl.1").resolve()
    page = _run("man", "kquotactl-config-set-context", env=with_venv).stdout
    assert "NAME" in page and "kquotactl config set-context" in page
    assert _run("man", "-M", venv / "man", "-w", "kquotactl-alter", env=env).returncode == 0
    # without the venv on PATH man does not look there: the PATH entry is what finds the pages, as for a wheel
    assert subprocess.run(["man", "-w", "kquotactl"], env=env, capture_output=True).returncode != 0
    # a page `make docs` adds later is found with no new setup, a page it removes is gone
    shutil.copy(checkout / "man" / "kquotactl-alter.1", checkout / "man" / "kquotactl-later.1")
    assert _run("man", "-w", "kquotactl-later", env=with_venv).stdout.strip().endswith("kquotactl-later.1")
    (checkout / "man" / "kquotactl-later.1").unlink()
    assert subprocess.run(["man", "-w", "kquotactl-later"], env=with_venv, capture_output=True).returncode != 0
    # setup again (a new stamp): the link is replaced, nothing is written into the checkout's man/
    before = sorted(p.name for p in (checkout / "man").iterdir())
    subprocess.run(["bash", "scripts/bootstrap.sh"], cwd=checkout, env=env, capture_output=True, check=True)
    assert sorted(p.name for p in (checkout / "man").iterdir()) == before
    assert _run("man", "-w", "kquotactl", env=with_venv).stdout.strip() == where


def test_the_setup_stamp_covers_the_man_link_script() -> None:
    """A change to scripts/dev-man.sh re-runs setup (the stamp's checksum and prerequisites name it)."""
    makefile = (ROOT / "Makefile").read_text()
    stamp = next(line for line in makefile.splitlines() if line.startswith("STAMP"))
    assert "scripts/dev-man.sh" in stamp
    assert re.search(r"^\$\(STAMP\):.*scripts/dev-man\.sh", makefile, re.M)
