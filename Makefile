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
# examples/ (crates/lasthop-pgo/profile.sh), taken again when the core, the trainer or an example
# changes. With it the engine takes 15-20 % less time, also on the ns-3 downlink anchor at N = 10,
# which is not among the examples (FIDELITY.md, "Speed"). Without llvm-profdata the profile file is left
# empty and the module is built without it, and the build says so.
PGO_PROFILE := target/pgo/engine.profdata
PGO_INPUTS  := $(shell find crates/lasthop-core/src crates/lasthop-pgo/src -name '*.rs') crates/lasthop-pgo/profile.sh \
               Cargo.toml crates/lasthop-core/Cargo.toml crates/lasthop-pgo/Cargo.toml Cargo.lock $(wildcard examples/*.toml)

# The module builds in a target directory of its own: its RUSTFLAGS differ from those of cargo test and
# clippy, which would otherwise rebuild each other's build scripts and proc macros.
MATURIN = VIRTUAL_ENV=$(abspath $(VENV)) CARGO_TARGET_DIR=$(abspath target/module) \
          RUSTFLAGS="$$(test -s $(PGO_PROFILE) && echo -Cprofile-use=$(abspath $(PGO_PROFILE)))" \
          $(VENV)/bin/maturin develop --release --quiet

$(PGO_PROFILE): $(PGO_INPUTS)
	@echo "build: profiling the engine on examples/ (profile-guided optimization)"
	@mkdir -p $(dir $@)
	@crates/lasthop-pgo/profile.sh $@ || { rm -f $@; touch $@; \
	    echo "build: WARNING: no engine profile (above), so the native module is built without profile-guided" \
	         "optimization and its engine is 15-20 % slower; remove $@ to try again" >&2; }
	@# cargo does not track the profile's content: the engine's crate is rebuilt with the new one.
	@CARGO_TARGET_DIR=$(abspath target/module) $(CARGO) clean --quiet --release -p lasthop-core

# The first build installs the package (editable) with its `lasthop` script; later builds only rebuild
# the native module in place (cargo makes that a no-op when nothing changed). Reinstalls when
# pyproject.toml changes.
$(STAMPS)/installed: $(STAMPS)/deps | $(PGO_PROFILE)
	@echo "build: building the native module (release, profile-guided) and installing lasthop into $(VENV)"
	@$(MATURIN) 2>&1 | $(QUIET_MATURIN)
	@touch $@

build: $(STAMPS)/installed $(PGO_PROFILE)
	@echo "build: native module (release, profile-guided, incremental)"
	@$(MATURIN) --skip-install 2>&1 | $(QUIET_MATURIN)
	@if test -s $(PGO_PROFILE); then crates/lasthop-pgo/profile.sh --check target/module/release/lib_lasthop.so || \
	    echo "build: WARNING: the native module was built without a matching profile (above)" >&2; fi
	@$(PY) -c "import lasthop._lasthop" || { echo "building the native module failed" >&2; exit 1; }
	@# Bytecode for the package's sources, as pip writes it for an installed package: without it, where
	@# PYTHONDONTWRITEBYTECODE is set (this machine, many CI images), every lasthop command compiled
	@# them again (50 ms of a 1-s run). A stale file is ignored by Python, so an edit needs no rebuild.
	@$(PY) -m compileall -q python/lasthop

# cargo test builds with the release-test profile (release without cross-crate LTO, see Cargo.toml):
# half the build time of --release, the same test run time.
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
