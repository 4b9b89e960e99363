#!/usr/bin/env bash
# Builds a Tokio peer, the crate CRATE beside this script (tokio-echo/,
# tokio-fiber/), offline against Debian 12's packaged crates in
# /usr/share/cargo/registry (librust-tokio-dev), into OUTDIR/CRATE, the
# binary named like its crate. It never fails the build: whatever goes
# wrong, it writes "skipped: <reason>" to OUTDIR/CRATE.status and exits 0,
# and the bench shows the peer as skipped. On success the status file says
# "built: tokio X.Y.Z".
#
# Usage: build_tokio.sh OUTDIR [CRATE]   (CRATE: tokio-echo by default)
set -u

out=${1:?usage: build_tokio.sh OUTDIR [CRATE]}
crate=${2:-tokio-echo}
src=$(cd "$(dirname "$0")/$crate" 2>/dev/null && pwd)
registry=${PERCORE_CARGO_REGISTRY:-/usr/share/cargo/registry}
work=$out/$crate.build
status=$out/$crate.status
log=$work/cargo.log

mkdir -p "$out"

skip() {
	rm -f "$out/$crate"
	echo "skipped: $*" >"$status"
	echo "percore: $crate skipped: $*" >&2
	exit 0
}

[ -n "$src" ] || skip "no crate $crate beside $0"

cargo=$(command -v cargo) || skip "cargo not found (apt-get install cargo)"
[ -d "$registry" ] || skip "no crate registry at $registry"
compgen -G "$registry/tokio-1.*" >/dev/null ||
	skip "tokio not in $registry (apt-get install librust-tokio-dev)"

# Cargo writes Cargo.lock next to the manifest, so build a copy of the
# crate: the source tree stays untouched. The lock file is resolved afresh
# each time, since a cargo from rustup and Debian's may both have been here.
mkdir -p "$work/crate" "$work/cargo-home" || skip "cannot create $work"
rm -rf "$work/crate/src" "$work/crate/Cargo.lock"
cp -R "$src/Cargo.toml" "$src/src" "$work/crate/" || skip "cannot copy $src"

cat >"$work/cargo-home/config.toml" <<CONF
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "$registry"

[net]
offline = true
CONF

export CARGO_HOME=$work/cargo-home
export CARGO_TARGET_DIR=$work/target
manifest=$work/crate/Cargo.toml
nice=()
command -v nice >/dev/null && nice=(nice -n 10)

"$cargo" generate-lockfile --offline --manifest-path "$manifest" >"$log" 2>&1 ||
	skip "cargo cannot resolve tokio offline (see $log)"
# The first [[package]] named tokio in the lock file carries its version.
version=$(awk '/^name = "tokio"$/ { t = 1; next }
	t && /^version = / { gsub(/"/, "", $3); print $3; exit }' "$work/crate/Cargo.lock")
[ -n "$version" ] || skip "no tokio in $work/crate/Cargo.lock"

PEER_TOKIO_VERSION=$version "${nice[@]}" "$cargo" build --release --offline \
	--manifest-path "$manifest" >>"$log" 2>&1 ||
	skip "cargo build failed (see $log)"
cp "$CARGO_TARGET_DIR/release/$crate" "$out/$crate.tmp" &&
	mv "$out/$crate.tmp" "$out/$crate" || skip "cannot install $out/$crate"
echo "built: tokio $version" >"$status"
