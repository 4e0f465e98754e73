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
    assert f"pipx runpip kquotactl install 'kquotactl[{extra}]'" in r.stderr  # never a PyPI-only line


def test_every_optional_module_maps_to_the_extra_that_installs_it() -> None:
    import tomllib

    from kquotactl.connection.extras import EXTRAS

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


# -- the README's install lines, end to end on a fresh machine ----------------------------------------------


def _readme_install_lines() -> list[str]:
    """The commands of the README's first code block under "## Install" (comments dropped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("\n## Install\n", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines() if line.strip()]


def test_the_readme_installs_from_a_checkout_and_from_the_wheel_with_pipx(tmp_path: Path) -> None:
    """Each line of the README's install block, run as written with the real pipx on a fresh HOME, in a copy of
    the checkout: `kquotactl` lands on PATH and runs, `man kquotactl` finds its page, and each extra named on
    the line brings its packages (impact: the pinned PySpark and a real `impact generate`). A command that
    needs a missing extra names the pipx line that adds it, and that line works."""
    pipx = shutil.which("pipx", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    if pipx is None or shutil.which("man") is None:
        pytest.fail("pipx and man are needed (make setup installs them)")
    lines = _readme_install_lines()
    assert "pipx install ." in lines and "make wheel" in lines and "pipx install dist/kquotactl-*.whl" in lines

    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "Makefile", "requirements-dev.txt"):
        shutil.copy(ROOT / name, checkout / name)
    for name in ("src", "man", "scripts"):
        shutil.copytree(ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    home = tmp_path / "home"
    tools = tmp_path / "tools"  # pipx alone: never the development venv's own kquotactl
    for d in (home, tools):
        d.mkdir()
    (tools / "pipx").symlink_to(pipx)
    cache = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True).stdout
    env = {
        "HOME": str(home),
        "PATH": f"{home}/.local/bin:{tools}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PIP_CACHE_DIR": cache.strip(),  # what make setup downloaded: no second download of PySpark
        # pipx picks uv when it finds one (the dev venv has it); uv neither reads that cache nor, by default, the
        # system's certificate store that pip uses here: pip is the backend every pipx has
        "PIPX_DEFAULT_BACKEND": "pip",
    }
    venv_python = home / ".local/share/pipx/venvs/kquotactl/bin/python"
    by_extra: dict[str, set[str]] = {}
    from kquotactl.connection.extras import EXTRAS

    for module, extra in EXTRAS.items():
        by_extra.setdefault(extra, set()).add(module)

    def sh(line: str) -> subprocess.CompletedProcess[str]:
        return _run("bash", "-c", f"cd {checkout} && {line}", env=env)

    for line in lines:
        if line.startswith("pipx install") and "--force" not in line:
            subprocess.run(["pipx", "uninstall-all"], env=env, capture_output=True, timeout=120)
        sh(line)
        if line == "make wheel":
            assert len(list((checkout / "dist").glob("kquotactl-*.whl"))) == 1
            continue
        assert shutil.which("kquotactl", path=env["PATH"]) == str(home / ".local/bin/kquotactl"), line
        version = _run("kquotactl", "--version", env=env).stdout
        assert re.fullmatch(r"kquotactl, version \S+\n", version), (line, version)
        assert "Usage: kquotactl" in _run("kquotactl", "--help", env=env).stdout
        where = _run("man", "-w", "kquotactl", env=env).stdout.strip()
        linked = home / ".local/share/man/man1/kquotactl.1"  # pipx links each page there
        assert linked.is_file() and Path(where).resolve() == linked.resolve(), (line, where)
        extras = {e for group in re.findall(r"\[([a-z,]+)\]", line) for e in group.split(",")}
        wanted = sorted(m for e in extras for m in by_extra[e])
        if wanted:
            _run(venv_python, "-c", f"import {', '.join(wanted)}", env=env)
        if "impact" in extras:
            pins = _run(venv_python, "-c", "import importlib.metadata as m; print(m.version('pyspark'))", env=env)
            assert pins.stdout.strip() == "4.3.0"
            _run("kquotactl", "impact", "generate", tmp_path / "t.parquet", "--rows", "10", env=env)
            assert (tmp_path / "t.parquet").stat().st_size > 0
        if line == "pipx install dist/kquotactl-*.whl":  # no extras: the hint for one, and the hint works
            args = ["kquotactl", "--bootstrap-server", "127.0.0.1:9", "--connect-timeout", "1", "describe"]
            r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
            hint = re.search(r"\(pipx: (pipx runpip kquotactl install '[^']+')\)$", r.stderr.strip())
            assert r.returncode == 1 and hint, r.stderr
            sh(hint.group(1))
            r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
            assert r.returncode == 1 and "cannot connect to Kafka broker 127.0.0.1:9" in r.stderr, r.stderr
