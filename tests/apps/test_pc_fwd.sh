#!/usr/bin/env bash
# pc-fwd end to end: io/mac/macswap over two net_null ports and one
# net_ring port looping to itself, with 2 workers; counters add up; bad
# flags exit 2.
set -uo pipefail
fwd=$1
fail=0
eal_base="--no-huge --no-pci -m 256 --log-level=lib.eal:error"
export PERCORE_WORKERS=2 PERCORE_PIN=0 PERCORE_LOG=warn

check() { # name, output
	local name=$1 out=$2 rx tx
	rx=$(sed -n 's/^pc-fwd: total rx=\([0-9]*\) .*/\1/p' <<<"$out")
	tx=$(sed -n 's/^pc-fwd: total rx=[0-9]* tx=\([0-9]*\) .*/\1/p' <<<"$out")
	if [ -z "$rx" ] || [ "$rx" -le 0 ] || [ "$tx" -le 0 ]; then
		echo "FAIL $name: no traffic counted"; echo "$out"; fail=1; return
	fi
	# Both queues of every port were polled.
	if ! grep -qE '^[0-9]+ +net_null0 +1 +[1-9]' <<<"$out" && [[ $name != ring* ]]; then
		echo "FAIL $name: queue 1 of net_null0 saw nothing"; echo "$out"; fail=1; return
	fi
	echo "ok $name: rx=$rx tx=$tx"
}

for mode in io mac macswap; do
	out=$("$fwd" --eal "$eal_base --file-prefix pc_fwd_t_$mode --vdev net_null0 --vdev net_null1" \
		--mode "$mode" --duration 0.5 2>&1) || { echo "FAIL $mode: exit $?"; echo "$out"; fail=1; continue; }
	check "$mode" "$out"
done
out=$("$fwd" --eal "$eal_base --file-prefix pc_fwd_t_ring --vdev net_ring0" --ports net_ring0 \
	--duration 0.3 2>&1)
# A ring with nothing injected forwards nothing; it must still start and stop cleanly.
grep -q '^pc-fwd: total rx=0 ' <<<"$out" && echo "ok ring: starts, stops" ||
	{ echo "FAIL ring"; echo "$out"; fail=1; }

for bad in "--mode nope" "--duration -1" "--burst 0" "--ports ,1" "--frobnicate" "extra"; do
	# shellcheck disable=SC2086
	"$fwd" --eal "$eal_base" $bad >/dev/null 2>&1
	rc=$?
	[ $rc -eq 2 ] && echo "ok bad flag '$bad' -> 2" || { echo "FAIL '$bad' -> $rc"; fail=1; }
done
env -u PERCORE_EAL_ARGS "$fwd" >/dev/null 2>&1
[ $? -eq 2 ] && echo "ok no EAL args -> 2" || { echo "FAIL no EAL args"; fail=1; }
exit $fail
