# kquotactl — the two commands a fresh machine needs:
#   make demo   run the main job: a throw-away local ZooKeeper, a few alter/describe calls, then stop it
#   make test   run the whole test suite (what CI's .ci/run runs, after make lint: ruff and mypy)
# Everything they need (Python packages, Java artifacts from Maven Central) is installed by `make setup`.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml requirements-dev.txt scripts/bootstrap.sh scripts/dev-man.sh | cksum | cut -d' ' -f1)
PYTEST_ARGS ?=

.PHONY: setup demo test test-fast lint lock bench clean docs docs-check impact-zip wheel

setup: $(STAMP)

$(STAMP): pyproject.toml requirements-dev.txt scripts/bootstrap.sh scripts/dev-man.sh
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/bootstrap.sh
	touch $@

demo: setup
	$(BIN)/python -m kquotactl.testing.demo

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The pure tests: no server of any kind (tests/fixtures_markers.py fails a test that starts one unmarked).
test-fast: setup
	$(BIN)/python -m pytest -m "not server and not slow" $(PYTEST_ARGS)

# ruff, then mypy ([tool.mypy] in pyproject.toml: the package checked, kquotactl.core strictly)
lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

# The development/CI environment, pinned with hashes: re-resolve pyproject's ranges to the newest versions, then
# run `make test` before committing the new requirements-dev.txt.
lock: setup
	$(BIN)/uv pip compile pyproject.toml --extra dev --extra sasl --extra admin --extra impact --extra observe \
		--python-version 3.11 --generate-hashes --upgrade -o requirements-dev.txt

bench: setup
	$(BIN)/python -m bench

# Generated from the click definitions: man/*.1, docs/cli.md, completions/kquotactl.{bash,zsh,fish}.
docs: setup
	$(BIN)/python -m kquotactl.cli.docsgen

docs-check: setup
	$(BIN)/python -m kquotactl.cli.docsgen --check

# The wheel to install until a release is on PyPI (README "Install"): needs only a Python with pip, not `make setup`.
wheel:
	rm -f dist/kquotactl-*.whl
	$(PYTHON) -m pip wheel -q --no-deps -w dist .
	@w=$$(ls dist/kquotactl-*.whl); echo "built $$w: pipx install $$w   (with extras: pipx install '$$w[admin,sasl]')"

impact-zip: setup  # the package as a zip for spark-submit --py-files (see docs/impact.md)
	$(BIN)/python -m kquotactl.impact.package dist/kquotactl.zip

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build dist src/*.egg-info
