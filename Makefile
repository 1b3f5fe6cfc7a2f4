# The two commands of the README:
#   make demo  — set up .venv, build the Rust core (release), run the default comparison (every variant of
#                examples/home_rtc.toml over 5 seeds), print mean ± 95 % CI and a verdict per metric,
#                write its HTML report
#   make test  — same idempotent setup, then cargo test for the workspace and pytest
# Setup needs only python3 (3.10+), cargo and the package registries.
#
# Every recipe runs in bash with -e and pipefail, so a failing step fails make even when its output is
# piped through a filter.

SHELL       := /bin/bash
.SHELLFLAGS := -eo pipefail -c

VENV    := .venv
PY      := $(VENV)/bin/python
STAMPS  := $(VENV)/.stamps
CARGO   ?= cargo
PIP     := $(PY) -m pip --quiet --disable-pip-version-check
export PATH := $(HOME)/.cargo/bin:$(PATH)

# Drops maturin's progress chatter; everything else (compiler errors, warnings) stays visible.
# grep exits 1 when it filtered every line: that is not a failure.
QUIET_MATURIN := { grep -v -e "^🍹" -e "^📦" -e "^🔗" -e "^🐍" -e "^📖" -e "^🛠" -e "^✏️" -e "^📡" -e "^⚠️  Warning: You're building" \
                   -e "^ *Finished" -e "^ *Compiling" -e "Installed lasthop" \
                   -e "^Requirement already satisfied" -e "^Looking in links" -e "^Ignoring .*: markers" || test $$? = 1; }

# pip --quiet still reports dependency-resolver notices; keep its warnings and errors only.
QUIET_PIP := { grep -v -e "^Requirement already satisfied" -e "^\[notice\]" -e "^Looking in links" || test $$? = 1; }

.PHONY: demo test setup build rust-test py-test bench clean

demo: build
	@$(VENV)/bin/lasthop compare examples/home_rtc.toml --out runs/demo --seeds 5 --jobs 2

test: build rust-test py-test

setup: $(STAMPS)/deps

$(PY):
	@echo "setup: creating $(VENV)"
	@python3 -m venv $(VENV)

$(STAMPS)/deps: pyproject.toml | $(PY)
	@# Real applications for the emulation tests and examples (ping, iperf3) and a pcap reader for the
	@# capture tests (tcpdump), from Debian, when missing and this is root on a Debian-like machine;
	@# without them those tests skip and say why.
	@if ! command -v ping >/dev/null || ! command -v iperf3 >/dev/null || ! command -v tcpdump >/dev/null; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	        echo "setup: installing ping, iperf3 and tcpdump (Debian packages) for the emulation and capture tests"; \
	        (apt-get install -y -q iputils-ping iperf3 tcpdump >/dev/null 2>&1 || \
	         { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q iputils-ping iperf3 tcpdump >/dev/null 2>&1; }) || \
	        echo "setup: could not install ping/iperf3/tcpdump; the tests that use them will skip"; \
	    fi; \
	fi
	@echo "setup: installing Python dependencies into $(VENV)"
	@$(PIP) install --upgrade pip 2>&1 | $(QUIET_PIP)
	@$(PIP) install "maturin>=1.7,<2" numpy pyarrow pandas click rich matplotlib scipy pytest pytest-xdist mypy "ray>=2.9" \
	    "tomli>=2; python_version < '3.11'" 2>&1 | $(QUIET_PIP)
	@mkdir -p $(STAMPS) && touch $@

# Profile-guided optimization (PGO) of the native module: the engine's profile on the scenarios of
# examples/ (crates/lasthop-pgo/profile.sh), taken again when the core, the trainer, an example or a
# Cargo file changes (rustc records the profile in its dep-info, so cargo rebuilds the workspace's crates
# with a new one). With it the engine takes 10-17 % less time, ≈ 11 % on the ns-3 downlink anchor at
# N = 10, which is not among the examples (FIDELITY.md, "Speed"). When the profile cannot be taken (no
# llvm-profdata, or a step failed) its file is left empty, the module is built without it (with thin
# LTO, as before PGO), and the build says so. `make build PGO=0` skips profiling (a quicker edit-build
# loop; the module is then built without the profile).
PGO         ?= 1
PGO_PROFILE := target/pgo/engine.profdata
PGO_INPUTS  := $(shell find crates/lasthop-core/src crates/lasthop-pgo/src -name '*.rs') crates/lasthop-pgo/profile.sh \
               Cargo.toml crates/lasthop-core/Cargo.toml crates/lasthop-pgo/Cargo.toml Cargo.lock examples
ifeq ($(PGO),1)
PGO_DEP := $(PGO_PROFILE)
endif

# The module builds in a target directory of its own: its RUSTFLAGS differ from those of cargo test and
# clippy, which would otherwise rebuild each other's build scripts and proc macros. The user's RUSTFLAGS
# are kept (the trainer gets them too, so that both builds name their symbols alike).
MATURIN = VIRTUAL_ENV=$(abspath $(VENV)) CARGO_TARGET_DIR=$(abspath target/module) \
          RUSTFLAGS="$${RUSTFLAGS:-} $$(test $(PGO) = 1 && test -s $(PGO_PROFILE) && echo -Cprofile-use=$(abspath $(PGO_PROFILE)))" \
          CARGO_PROFILE_RELEASE_LTO=$$(test $(PGO) = 1 && test -s $(PGO_PROFILE) && echo false || echo thin) \
          $(VENV)/bin/maturin develop --release --quiet

# `examples` (the directory) is an input so that a removed example also takes the profile again.
$(PGO_PROFILE): $(PGO_INPUTS)
	@echo "build: profiling the engine on examples/ (profile-guided optimization)"
	@mkdir -p $(dir $@)
	@CARGO=$(CARGO) crates/lasthop-pgo/profile.sh $@ || { rm -f $@; touch $@; \
	    echo "build: WARNING: no engine profile (above), so the native module is built without profile-guided" \
	         "optimization and its engine is 10-17 % slower; remove $@ to try again" >&2; }

# The first build installs the package (editable) with its `lasthop` script; later builds only rebuild
# the native module in place (cargo makes that a no-op when nothing changed). Reinstalls when
# pyproject.toml changes.
$(STAMPS)/installed: $(STAMPS)/deps | $(PGO_DEP)
	@echo "build: building the native module (release, profile-guided) and installing lasthop into $(VENV)"
	@$(MATURIN) 2>&1 | $(QUIET_MATURIN)
	@touch $@

build: $(STAMPS)/installed $(PGO_DEP)
	@echo "build: native module (release, profile-guided, incremental)"
	@$(MATURIN) --skip-install 2>&1 | $(QUIET_MATURIN)
	@$(PY) -c "import lasthop._lasthop" || { echo "building the native module failed" >&2; exit 1; }
	@if test $(PGO) = 1 && test -s $(PGO_PROFILE); then crates/lasthop-pgo/profile.sh --check python/lasthop/_lasthop.abi3.so || \
	    echo "build: WARNING: the native module was built without a matching profile (above)" >&2; fi
	@# Bytecode for the package's sources, as pip writes it for an installed package: without it, where
	@# PYTHONDONTWRITEBYTECODE is set (this machine, many CI images), every lasthop command compiled
	@# them again (50 ms of a 1-s run). A stale file is ignored by Python, so an edit needs no rebuild.
	@$(PY) -m compileall -q python/lasthop

# cargo test builds with the release-test profile (release without line tables, see Cargo.toml).
rust-test:
	@echo "rust-test: cargo clippy -D warnings, then cargo test (release-test profile)"
	@$(CARGO) clippy --quiet --release --workspace --all-targets -- -D warnings
	@$(CARGO) test --quiet --profile release-test --workspace --exclude lasthop-py

# Two workers (pytest-xdist) for the bulk, then the tests that measure real time alone.
py-test:
	@echo "py-test: pytest (2 workers), then the real-time tests alone"
	@$(VENV)/bin/pytest -q -n 2 -m "not serial"
	@$(VENV)/bin/pytest -q -m serial

bench: build
	$(CARGO) bench -p lasthop-core --bench engine

clean:
	rm -rf $(VENV) target runs
