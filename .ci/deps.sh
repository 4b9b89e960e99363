#!/usr/bin/env bash
# Installs the Debian 12 packages percore needs, only those dpkg lacks.
# Idempotent: with everything present it changes nothing and needs no network.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config python3
      libdpdk-dev dpdk dpdk-dev libnuma-dev libhwloc-dev hwloc libcmocka-dev liburing-dev
      iproute2 iputils-ping ethtool clang libclang-rt-14-dev libtbb-dev gnuplot-nox
      memcached libmemcached-tools python3-pymemcache python3-prometheus-client
      nutcracker libmemcached-dev libhttp-parser-dev
      librust-tokio-dev cargo golang-go libboost-context-dev nftables
      wrk nghttp2-client nginx-light h2o)
# Servers the bench starts itself, from configurations of its own: their
# packages' system services must not run (nor hold ports 80 and 8080).
services=(nginx h2o)
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
# A policy-rc.d that refuses every start keeps the postinst scripts of
# nginx and h2o from starting their services (a container image may have
# one already: it is left as it is).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Where a service was enabled at install (systemd records the link even
# when it could not start it), disable it, and stop any that runs.
for s in "${services[@]}"; do
	[[ " ${missing[*]} " == *" $s"* ]] || continue
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		systemctl disable --now "$s" >/dev/null 2>&1 || true
	elif [ -x "/etc/init.d/$s" ]; then
		"/etc/init.d/$s" stop >/dev/null 2>&1 || true
		update-rc.d "$s" disable >/dev/null 2>&1 || true
	fi
done
