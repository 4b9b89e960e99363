#!/usr/bin/env bash
# pc-kv's bounds on the kernel backend: memcached's -o options (the ones
# pc-kv honours start it, any other exits 2 naming the option);
# -o idle_timeout closing idle connections and counting them while an
# active one stays (kv_idle.py); and the reply amplification probe
# (kv_bound.py): a value of 1,000,000 bytes named 4,000 times in one get
# line, and hundreds of times in pipelined ASCII, meta and binary quiet
# gets, by clients that read nothing, keep the server's RSS within 48 MB
# of its start while another client is served, and the replies, read
# afterwards, are exact; so does one UDP datagram naming it 300 times. The bound: the backend's output cap (4 x (1 MiB +
# 64 KiB) as pc-kv sets it) and pc-kv's own per connection (kv_pvt.h,
# KV_OUT_HIGH + 17 largest replies: 17.25 MiB), about 21.5 MiB, with room
# for the allocator's slack.
set -euo pipefail
bin=$1
here=$(dirname "$0")
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=../lib.sh
. "$here/../lib.sh"

for bad in "foo" "idle_timeout" "idle_timeout=" "idle_timeout=x" "idle_timeout=-1" \
        "idle_timeout=4294967296" "idle_timeout=5,,modern" ",modern" "modern," "" \
        "maxconns_fast=1" "no_maxconns_fast" "hashpower=20" "ext_path=/tmp/x:64m" \
        "idle_timeout=5,lru_crawler"; do
        rc=0
        msg=$(timeout 10 "$bin" -o "$bad" 2>&1 >/dev/null) || rc=$?
        [ "$rc" = 2 ] || fail "-o '$bad' exited $rc, expected 2"
        name=${bad##*,}
        name=${name%%=*}
        case "$msg" in
        *"-o"*"$name"*) ;;
        *) fail "-o '$bad': the error does not name the option: $msg" ;;
        esac
done
"$bin" --help | grep -q "idle_timeout=N" || fail "--help does not tell -o idle_timeout"
echo "ok: bad -o options exit 2, naming the option"

out=$(mktemp)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$out"; }
trap cleanup EXIT

# -o idle_timeout, with every option pc-kv takes as is beside it.
PERCORE_PIN=0 start_on_free_port "$out" listening "$bin" -p @PORT@ -t 2 -m 16 \
        -o idle_timeout=2,maxconns_fast --extended=no_lru_crawler,modern ||
        { cat "$out"; fail "pc-kv -o did not start"; }
python3 "$here/kv_idle.py" 127.0.0.1 "$port" 2 || fail "idle_timeout"
stop_pc_kv "$pid" "$out" || fail "pc-kv exit status"
pid=

# The amplification probe, two workers: each client meets its own shard's
# key and another worker's. Under ASan freed memory waits in its quarantine
# (256 MB by default): the bound measured is pc-kv's, so keep that small.
# ThreadSanitizer's shadow memory grows with every byte touched: there the
# probe checks all but the RSS.
asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
bound=48
case "$(ldd "$bin" 2>/dev/null)" in *libtsan*) bound=-1 ;; esac
PERCORE_PIN=0 ASAN_OPTIONS=$asan start_on_free_port "$out" listening "$bin" -p @PORT@ -U @PORT@ -t 2 -m 64 ||
        { cat "$out"; fail "pc-kv did not start"; }
python3 "$here/kv_bound.py" 127.0.0.1 "$port" "$pid" 2 1000000 "$bound" \
        get:4000,pipe:600,meta:600,binq:600,udp:300 || fail "reply memory bound"
stop_pc_kv "$pid" "$out" || fail "pc-kv exit status"
pid=
echo "ok: pc-kv's bounds"
