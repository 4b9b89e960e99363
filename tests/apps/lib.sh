# Shared by the apps' test scripts (sourced, not run).
#
# wait_banner OUT BANNER PID TRIES DELAY: until OUT shows BANNER, looking
# TRIES times DELAY seconds apart while process PID lives; returns 0 once
# it does, 1 otherwise.
wait_banner() {
	local out=$1 banner=$2 p=$3 tries=$4 delay=$5
	for _ in $(seq "$tries"); do
		grep -q "$banner" "$out" && return 0
		kill -0 "$p" 2>/dev/null || break
		sleep "$delay"
	done
	grep -q "$banner" "$out"
}

# start_on_free_port OUT BANNER CMD...: run CMD in the background with its
# output in OUT, every "@PORT@" in its arguments replaced by a random port
# in 20000-39999, until OUT shows BANNER; a server that exits (the port was
# taken) is retried on another port, five times at most. Sets $pid and
# $port; returns 1 if it never started.
start_on_free_port() {
	local out=$1 banner=$2 try arg
	shift 2
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 20000))
		local argv=()
		for arg in "$@"; do
			argv+=("${arg//@PORT@/$port}")
		done
		"${argv[@]}" >"$out" 2>&1 &
		pid=$!
		wait_banner "$out" "$banner" "$pid" 100 0.05 && return 0
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		pid=
	done
	return 1
}

# stop_pc_kv PID OUT: SIGTERM pc-kv, then check that it exited 0 and that
# its totals in OUT say no send failed. On failure prints OUT and why, and
# returns 1.
stop_pc_kv() {
	local spid=$1 sout=$2 src=0
	kill -TERM "$spid"
	wait "$spid" || src=$?
	if [ "$src" != 0 ]; then
		cat "$sout"; echo "pc-kv exited $src"; return 1
	fi
	if ! grep -q "send_failed=0" "$sout"; then
		cat "$sout"; echo "pc-kv: sends failed"; return 1
	fi
}

# The DPDK tests' server: dpdk_start OUT BANNER CMD... runs CMD in the
# background (its output in OUT) until OUT shows BANNER, setting $spid;
# returns 1 if it exited or did not show it in 15 s. dpdk_stop SIGTERMs
# it and returns its exit status (0 when none runs).
dpdk_start() {
	local out=$1 banner=$2
	shift 2
	"$@" >"$out" 2>&1 &
	spid=$!
	wait_banner "$out" "$banner" "$spid" 150 0.1
}

dpdk_stop() {
	[ -n "${spid:-}" ] || return 0
	kill -TERM "$spid" 2>/dev/null
	wait "$spid"
	local rc=$?
	spid=
	return $rc
}
