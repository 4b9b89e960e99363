#!/usr/bin/env bash
# Installs the Debian 12 packages percore needs, only those dpkg lacks.
# Idempotent: with everything present it changes nothing and needs no network.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config python3
      libdpdk-dev dpdk dpdk-dev libnuma-dev libhwloc-dev hwloc libcmocka-dev liburing-dev
      iproute2 iputils-ping ethtool clang libclang-rt-14-dev libtbb-dev gnuplot-nox
      memcached libmemcached-tools python3-pymemcache python3-prometheus-client
      nutcracker libmemcached-dev
      librust-tokio-dev cargo golang-go libboost-context-dev nftables)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "percore: missing packages: ${missing[*]} (run as root to install them)" >&2
	exit 1
fi
echo "percore: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
