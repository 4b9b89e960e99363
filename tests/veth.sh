# Shared by the netns tests (sourced, not run).

# veth_far_end NS V1 ADDR/LEN: the kernel's end V1, already in NS: its
# address, up (with NS's loopback), and finishing its own checksums (see
# veth_up). Returns non-zero, saying which step failed, on error.
veth_far_end() {
	local ns=$1 v1=$2 addr=$3
	ip -n "$ns" addr add "$addr" dev "$v1" || { echo "address failed"; return 1; }
	ip -n "$ns" link set "$v1" up || { echo "$v1 up failed"; return 1; }
	ip -n "$ns" link set lo up
	ip netns exec "$ns" ethtool -K "$v1" tx off >/dev/null ||
		{ echo "ethtool -K $v1 tx off failed"; return 1; }
}

# veth_up NS V0 V1 ADDR/LEN: a veth pair, V0 left in this namespace up and
# without an address (for DPDK's af_packet), V1 moved into a new namespace
# NS, up, with ADDR/LEN. Stale ones of the same names are removed first.
# veth leaves the UDP checksum to "hardware" (CHECKSUM_PARTIAL): a packet
# socket, and so af_packet, sees it unfinished, and our stack (which
# verifies every non-zero UDP checksum) would drop it; the kernel side is
# told to finish its checksums, as it does for a real NIC without offloads.
# Returns non-zero, saying which step failed, on error.
veth_up() {
	local ns=$1 v0=$2 v1=$3 addr=$4
	veth_down "$ns" "$v0"
	ip netns add "$ns" || { echo "ip netns add $ns failed"; return 1; }
	ip link add "$v0" type veth peer name "$v1" || { echo "veth failed"; return 1; }
	ip link set "$v1" netns "$ns" || { echo "moving $v1 failed"; return 1; }
	sysctl -qw "net.ipv6.conf.$v0.disable_ipv6=1" 2>/dev/null
	ip link set "$v0" up || { echo "$v0 up failed"; return 1; }
	veth_far_end "$ns" "$v1" "$addr"
}

# veth_bridged_up NS BR V0 V1 ADDR/LEN: as veth_up, but V0 and V1 are not
# one pair: each pairs with an end in a third namespace BR (V0b, V1b),
# joined there by a bridge, a switch between the two. Frames that
# nftables drops in BR's bridge family are lost on the wire, as a lossy
# link loses them: a drop in NS's own output hook would instead be a
# local send error to NS's kernel, which gives up a half-open connection
# whose SYN-ACK it could not resend (reqsk_timer_handler drops the request
# when the retransmission fails), and the peer's next segment then meets a
# reset that no network would cause. Returns non-zero, saying which step
# failed, on error.
veth_bridged_up() {
	local ns=$1 br=$2 v0=$3 v1=$4 addr=$5
	veth_bridged_down "$ns" "$br" "$v0"
	ip netns add "$ns" && ip netns add "$br" || { echo "ip netns add failed"; return 1; }
	ip link add "$v0" type veth peer name "${v0}b" &&
		ip link add "$v1" type veth peer name "${v1}b" || { echo "veth failed"; return 1; }
	ip link set "$v1" netns "$ns" && ip link set "${v0}b" netns "$br" &&
		ip link set "${v1}b" netns "$br" || { echo "moving the veth ends failed"; return 1; }
	ip -n "$br" link add pc_br type bridge &&
		ip -n "$br" link set "${v0}b" master pc_br &&
		ip -n "$br" link set "${v1}b" master pc_br || { echo "bridge in $br failed"; return 1; }
	sysctl -qw "net.ipv6.conf.$v0.disable_ipv6=1" 2>/dev/null
	ip netns exec "$br" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
	ip link set "$v0" up && ip -n "$br" link set "${v0}b" up &&
		ip -n "$br" link set "${v1}b" up && ip -n "$br" link set pc_br up ||
		{ echo "links up failed"; return 1; }
	veth_far_end "$ns" "$v1" "$addr"
}

# veth_bridged_down NS BR V0: remove both namespaces and V0 (quietly).
veth_bridged_down() {
	ip netns del "$2" 2>/dev/null
	veth_down "$1" "$3"
}

# veth_down NS V0: remove the namespace and the pair (quietly if absent).
veth_down() {
	ip netns del "$1" 2>/dev/null
	ip link del "$2" 2>/dev/null
	true
}

# veth_cleanup NS V0 [NS2...]: a netns test's exit trap. Stops the test's
# server (its stop_server, when it defines one), removes the namespaces
# NS2... and then NS with the pair V0, and the server's output file $out.
veth_cleanup() {
	local ns=$1 v0=$2 n
	shift 2
	if declare -F stop_server >/dev/null; then stop_server; fi
	for n in "$@"; do ip netns del "$n" 2>/dev/null; done
	veth_down "$ns" "$v0"
	if [ -n "${out:-}" ]; then rm -f "$out"; fi
	true
}

# veth_need_root: exit 77 (meson's skip), saying why, unless we are root
# and have ethtool, which every netns test needs.
veth_need_root() {
	if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (netns, veth, af_packet)"; exit 77; fi
	command -v ethtool >/dev/null || { echo "SKIP: ethtool not installed"; exit 77; }
}

# fail MSG: print it and the server's output (the file $out, if the test
# set one), then exit 1.
fail() {
	echo "FAIL: $*"
	if [ -n "${out:-}" ] && [ -f "$out" ]; then echo "--- server output:"; cat "$out"; fi
	exit 1
}
