# The two commands of the README:
#   make demo  — set up .venv, build the Rust core (release), run the main job and print a summary
#   make test  — same idempotent setup, then cargo test for the workspace and pytest
# Setup needs only python3 (3.10+), cargo and the package registries.

VENV    := .venv
PY      := $(VENV)/bin/python
STAMPS  := $(VENV)/.stamps
CARGO   ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: demo test setup build rust-test py-test bench clean

demo: build
	$(VENV)/bin/lasthop run examples/quickstart.toml --out runs/quickstart

test: build rust-test py-test

setup: $(STAMPS)/deps

$(PY):
	python3 -m venv $(VENV)

$(STAMPS)/deps: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check "maturin>=1.7,<2" \
	    numpy pyarrow pandas click rich matplotlib pytest mypy
	mkdir -p $(STAMPS) && touch $@

# Always run: cargo's incremental build makes this a no-op when nothing changed.
build: setup
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --quiet 2>&1 | grep -v "^📦\|^🔗\|^🐍\|^⚠️  Warning: You're building" || true
	@$(PY) -c "import lasthop._lasthop" || (echo "building the native module failed" >&2; exit 1)

rust-test:
	$(CARGO) test --release --workspace --exclude lasthop-py

py-test:
	$(VENV)/bin/pytest -q

bench: build
	$(CARGO) bench -p lasthop-core --bench engine

clean:
	rm -rf $(VENV) target runs
