# Shared by the netns tests (sourced, not run).
#
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
	ip -n "$ns" addr add "$addr" dev "$v1" || { echo "address failed"; return 1; }
	ip -n "$ns" link set "$v1" up || { echo "$v1 up failed"; return 1; }
	ip -n "$ns" link set lo up
	ip netns exec "$ns" ethtool -K "$v1" tx off >/dev/null ||
		{ echo "ethtool -K $v1 tx off failed"; return 1; }
}

# veth_down NS V0: remove the namespace and the pair (quietly if absent).
veth_down() {
	ip netns del "$1" 2>/dev/null
	ip link del "$2" 2>/dev/null
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
