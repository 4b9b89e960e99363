#!/usr/bin/env bash
# pc-http's command line on the kernel backend: bad flags are refused with
# exit 2 and a message naming them, a --root that is not a directory with
# exit 1; then --root serves a file beside the fixed routes (which win for
# "/" and "/json"), and SIGTERM drains to exit 0. Needs curl (skips
# without it). net/http's own behaviour is tests/net/http's.
set -uo pipefail
bin=$1
out=$(mktemp) root=$(mktemp -d)
pid=

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$out" "$root"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	[ -f "$out" ] && cat "$out"
	exit 1
}
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
export PERCORE_PIN=0 PERCORE_LOG=warn

refused() { # WANT_STATUS WORDS_IN_MESSAGE ARGS...
	local want=$1 words=$2 rc=0
	shift 2
	"$bin" "$@" >"$out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || fail "pc-http $*: exit $rc, want $want"
	grep -q -- "$words" "$out" || fail "pc-http $*: message does not say '$words'"
	echo "ok: pc-http $* refused ($rc)"
}
refused 2 "-p 'x'" -p x
refused 2 "-p '70000'" -p 70000
refused 2 "--backend 'tcp'" --backend tcp
refused 2 "unexpected argument 'extra'" extra
refused 2 "for --backend dpdk" -l 127.0.0.1/24
refused 1 "--root $root/none" -p 0 --root "$root/none"
"$bin" --help | grep -q -- "--access-log" || fail "--help"

printf 'plain file\n' >"$root/note.txt"
printf 'not the hello\n' >"$root/index.html"
start_on_free_port "$out" "listening" "$bin" -l 127.0.0.1 -p @PORT@ -t 2 --root "$root" ||
	fail "pc-http did not start"
url=http://127.0.0.1:$port
[ "$(curl -s --http1.1 "$url/")" = "Hello, World!" ] || fail "GET / with --root"
[ "$(curl -s --http1.1 "$url/json")" = '{"message":"Hello, World!"}' ] || fail "GET /json"
[ "$(curl -s --http1.1 "$url/note.txt")" = "plain file" ] || fail "GET /note.txt from --root"
ctype=$(curl -s --http1.1 -o /dev/null -w '%{content_type}' "$url/note.txt")
case "$ctype" in text/plain*) ;; *) fail "note.txt Content-Type: $ctype" ;; esac
[ "$(curl -s --http1.1 -o /dev/null -w '%{http_code}' "$url/missing")" = 404 ] ||
	fail "a missing file is 404"
echo "ok: --root serves files, / and /json stay fixed"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "pc-http exited $rc on SIGTERM"
grep -q "2xx=4 3xx=0 4xx=1 5xx=0" "$out" || fail "pc-http's totals"
echo "ok: pc-http drained on SIGTERM"
