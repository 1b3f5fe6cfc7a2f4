#!/usr/bin/env bash
# profile.sh OUT — writes OUT, the engine's profile for profile-guided optimization (PGO) of the native
# module (`make build` passes it to rustc as -Cprofile-use):
#   1. builds lasthop-pgo-train instrumented (-Cprofile-generate) with the release profile the module is
#      built with (a profile taken from another profile's build matches too little of it to help), in
#      target/pgo-gen;
#   2. runs every scenario of examples/ and each of its variants for at most 20 simulated seconds;
#   3. merges the counts with llvm-profdata, from rustup's llvm-tools component (added when missing).
# Exits 3 when llvm-profdata cannot be had, 1 when a step fails; `make build` then builds without PGO
# and says so.
#
# profile.sh --check MODULE — whether the profile's functions are MODULE's: rustc names each function
# with a hash of its crate's metadata, which depends on the features cargo unifies across the build, so
# lasthop-core's symbols in the instrumented trainer and in MODULE (a build of lasthop-py) must have the
# same hash, or the profile matches nothing (lasthop-pgo's Cargo.toml enables the features the module's
# build adds). Exits 1, saying how many of their shared functions differ, when none has the same hash.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = --check ]; then
    export LC_ALL=C  # join and sort must agree on the order of the symbols
    trainer="$root/target/pgo-gen/release/lasthop-pgo-train"
    [ -f "$trainer" ] || { echo "no profiled trainer at $trainer: the profile was not taken here" >&2; exit 1; }
    [ -f "$2" ] || { echo "no module at $2" >&2; exit 1; }
    # lasthop-core's functions as "path hash" (generic ones can differ by the crate instantiating them;
    # when the metadata differs, every one does).
    symbols() { nm "$1" | sed -n 's/.* _ZN12lasthop_core\(.*\)17\(h[0-9a-f]\{16\}\)E$/\1 \2/p' | sort -u; }
    read -r same differ < <(join <(symbols "$trainer") <(symbols "$2") |
                            awk '{ if ($2 == $3) s++; else d++ } END { print s + 0, d + 0 }')
    if [ "$same" = 0 ]; then
        echo "the engine profile does not match $2: of the lasthop-core functions it shares with the profiled" \
             "trainer, none has the same symbol hash ($differ differ; their dependencies' features differ, see" \
             "crates/lasthop-pgo/Cargo.toml)" >&2
        exit 1
    fi
    exit 0
fi
out=$1
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ] && command -v rustup >/dev/null; then
    rustup component add llvm-tools >/dev/null 2>&1 || true
fi
if [ ! -x "$profdata" ]; then
    echo "llvm-profdata is not in $(dirname "$profdata") and \`rustup component add llvm-tools\` did not add it" >&2
    exit 3
fi
raw="$root/target/pgo/raw"
rm -rf "$raw"
# The user's RUSTFLAGS are kept, as the module's build keeps them: rustc names symbols alike only when
# both builds have the same flags (but the profile's own) and the same release profile (thin LTO off).
CARGO_TARGET_DIR="$root/target/pgo-gen" RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$raw" CARGO_PROFILE_RELEASE_LTO=false \
    "${CARGO:-cargo}" build --quiet --release -p lasthop-pgo
"$root/target/pgo-gen/release/lasthop-pgo-train" 20 "$root"/examples/*.toml
"$profdata" merge -o "$out.partial" "$raw"
mv "$out.partial" "$out"
