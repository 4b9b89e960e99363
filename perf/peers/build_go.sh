#!/usr/bin/env bash
# Builds the fiber suite's Go peer (go-fiber/, standard library only) with
# Debian 12's golang-go into OUTDIR/go-fiber, offline: no module, no
# proxy, the build cache inside OUTDIR. Like build_tokio.sh it never fails
# the build: OUTDIR/go-fiber.status ends up "built: goX.Y.Z" or
# "skipped: <reason>", and the bench shows a skipped peer for the latter.
#
# Usage: build_go.sh OUTDIR
set -u

out=${1:?usage: build_go.sh OUTDIR}
src=$(cd "$(dirname "$0")/go-fiber" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 0 # go wants absolute paths
status=$out/go-fiber.status
work=$out/go-fiber.build
rm -f "$out/go-fiber"

why=
if ! go=$(command -v go); then
	why="go not found (apt-get install golang-go)"
elif ! mkdir -p "$work/cache" "$work/path"; then
	why="cannot create $work"
else
	# A go.mod or GOFLAGS of the user's would not apply to this one file.
	nice=()
	command -v nice >/dev/null && nice=(nice -n 10)
	if GOCACHE=$work/cache GOPATH=$work/path GOPROXY=off GOFLAGS= GO111MODULE=off \
		GOTOOLCHAIN=local "${nice[@]}" "$go" build -o "$out/go-fiber.tmp" \
		"$src/main.go" >"$work/go.log" 2>&1 &&
		mv "$out/go-fiber.tmp" "$out/go-fiber"; then
		echo "built: $("$go" env GOVERSION 2>/dev/null || echo go)" >"$status"
		exit 0
	fi
	why="go build failed (see $work/go.log)"
fi
echo "skipped: $why" >"$status"
echo "percore: go-fiber skipped: $why" >&2
exit 0
