#!/usr/bin/env bash
# Installs the build into a scratch DESTDIR, then builds against it the way a
# program outside the tree does, through pkg-config alone:
#   - hello.c, and echo.c when the kernel backend's header is installed,
#     built and run;
#   - a kernel-only program with its own -march=x86-64: percore.pc gives no
#     DPDK flag (no rte_config.h, no -march, no DPDK include path), and no
#     installed header but pc_dpdk.h includes a DPDK one;
#   - with DPDK built, dpdk.c through percore-dpdk.pc;
#   - pc_config.h's values, read with the compiler, against what the library
#     links and which headers were installed;
#   - every examples/*.c (and its NAME.sh, when there is one).
# Usage: test_install.sh BUILD_DIR HELLO.C ECHO.C DPDK.C EXAMPLES_DIR
set -euo pipefail
build=$1 hello_c=$2 echo_c=$3 dpdk_c=$4 examples=$5
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >/dev/null
pc=$(find "$tmp/root" -name percore.pc -print -quit)
[ -n "$pc" ] || fail "percore.pc was not installed"
hdr=$(find "$tmp/root" -path '*/percore/percore.h' -print -quit)
[ -n "$hdr" ] || fail "percore.h was not installed"
pcdir=$(dirname "$pc")
incdir=$(dirname "$hdr")
libdir=$(dirname "$pcdir")

# The .pc files locate the tree from where they lie: pointing
# PKG_CONFIG_PATH at the installed copy is the whole recipe.
export PKG_CONFIG_PATH=$pcdir LD_LIBRARY_PATH=$libdir
export PERCORE_PIN=0 PERCORE_LOG=warn
unset PERCORE_EAL_ARGS PERCORE_WORKERS
# Flags as a program's build splits them: into words.
read -ra cflags <<<"$(pkg-config --cflags percore)"
read -ra flags <<<"$(pkg-config --cflags --libs percore)"
echo "pkg-config --cflags --libs percore: ${flags[*]}"
case "${cflags[*]}" in
*"$tmp/root"*) ;;
*) fail "percore.pc does not point into the tree it was installed with: ${cflags[*]}" ;;
esac

# ---- a kernel-only program: percore's flags and nothing of DPDK's
for bad in rte_ -march dpdk libnl dbus; do
	case " ${flags[*]} " in
	*"$bad"*) fail "pkg-config percore hands out '$bad': ${flags[*]}" ;;
	esac
done
public=()
for h in "$incdir"/*.h; do
	[ "$(basename "$h")" = pc_dpdk.h ] || public+=("$h")
done
if grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]rte_' "${public[@]}"; then
	fail "a header a kernel-only program includes pulls in DPDK's"
fi
# The program's own -march must win: percore adds none after it. x86-64's
# baseline has no SSE4.2; DPDK's -march=corei7 would turn it on.
march=()
case "$($cc -dumpmachine)" in
x86_64-*) march=(-march=x86-64) ;;
esac
{
	for h in "${public[@]}"; do
		echo "#include <$(basename "$h")>"
	done
	echo '#if defined(__x86_64__) && defined(__SSE4_2__)'
	echo '#error "the program asked for -march=x86-64 and got more"'
	echo '#endif'
	echo 'int pc_install_headers_build;'
} >"$tmp/headers.c"
$cc -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE "${march[@]}" -c -o "$tmp/headers.o" \
	"$tmp/headers.c" "${cflags[@]}"
echo "every public header but pc_dpdk.h builds with percore's flags${march:+ and ${march[*]}}"

$cc -std=c11 -Wall -Wextra -Werror "${march[@]}" -o "$tmp/hello" "$hello_c" "${flags[@]}"
out=$(PERCORE_WORKERS=3 "$tmp/hello")
echo "$out"
[ "$out" = "hello from 3 workers" ] || fail "hello printed '$out'"

# The network example, when the library has the kernel backend.
if [ -f "$incdir/pc_knet.h" ]; then
	$cc -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE "${march[@]}" -o "$tmp/echo" "$echo_c" \
		"${flags[@]}" -lpthread
	out=$(PERCORE_WORKERS=2 "$tmp/echo")
	echo "$out"
	[ "$out" = "echoed: ping" ] || fail "echo printed '$out'"
fi

# ---- pc_config.h says what the library was built with
defs=$(echo '#include <percore.h>' | $cc -std=c11 -dM -E "${cflags[@]}" -)
config() {
	local v
	v=$(printf '%s\n' "$defs" | sed -n "s/^#define $1 \(.*\)$/\1/p")
	[ -n "$v" ] || fail "pc_config.h does not define $1"
	echo "$v"
}
version=$(pkg-config --modversion percore)
[ "$(config PC_CONFIG_VERSION)" = "\"$version\"" ] ||
	fail "PC_CONFIG_VERSION is $(config PC_CONFIG_VERSION), percore.pc says $version"
[ "$(config PC_CONFIG_VERSION_MAJOR).$(config PC_CONFIG_VERSION_MINOR).$(config PC_CONFIG_VERSION_PATCH)" = "$version" ] ||
	fail "PC_CONFIG_VERSION_MAJOR/MINOR/PATCH do not spell $version"
# What the shared library links is the build's own account of its parts.
needed=
if [ -f "$libdir/libpercore.so" ]; then
	needed=$(readelf -d "$libdir/libpercore.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
fi
check_part() { # MACRO LIBRARY-PREFIX [HEADER]
	local want has
	if [ -n "$needed" ]; then
		want=0
		grep -q "^$2" <<<"$needed" && want=1
	elif [ -n "${3:-}" ]; then
		want=0 # a static library: the installed headers tell
		[ -f "$incdir/$3" ] && want=1
	else
		echo "$1 $(config "$1") (no shared library to check it against)"
		return
	fi
	[ "$(config "$1")" = "$want" ] || fail "$1 is $(config "$1"), the library says $want"
	if [ -n "${3:-}" ]; then
		has=0
		[ -f "$incdir/$3" ] && has=1
		[ "$has" = "$want" ] || fail "$1 is $want, yet $3 installed: $has"
	fi
	echo "$1 $want"
}
check_part PC_CONFIG_DPDK librte_eal pc_dpdk.h
check_part PC_CONFIG_URING liburing pc_knet.h
check_part PC_CONFIG_NUMA libnuma
check_part PC_CONFIG_HWLOC libhwloc
check_part PC_CONFIG_HTTP libhttp_parser pc_http.h

# ---- a DPDK program through percore-dpdk.pc
if [ "$(config PC_CONFIG_DPDK)" = 1 ]; then
	[ -f "$pcdir/percore-dpdk.pc" ] || fail "DPDK was built but percore-dpdk.pc was not installed"
	read -ra dflags <<<"$(pkg-config --cflags --libs percore-dpdk)"
	echo "pkg-config --cflags --libs percore-dpdk: ${dflags[*]}"
	$cc -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$tmp/dpdk" "$dpdk_c" "${dflags[@]}"
	out=$(PERCORE_WORKERS=1 "$tmp/dpdk")
	echo "$out"
	case "$out" in
	"dpdk: 0 ports, "*) ;;
	*) fail "dpdk printed '$out'" ;;
	esac
elif [ -f "$pcdir/percore-dpdk.pc" ]; then
	fail "percore-dpdk.pc was installed by a build without DPDK"
fi

# ---- the examples, each as its own program outside the tree
built=0
for ex in "$examples"/*.c; do
	[ -e "$ex" ] || continue
	name=$(basename "$ex" .c)
	missing=
	while read -r h; do
		case "$h" in
		pc_*.h | percore.h) [ -f "$incdir/$h" ] || missing+=" $h" ;;
		esac
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\(p[a-z_]*\.h\)>.*/\1/p' "$ex")
	if [ -n "$missing" ]; then
		echo "example $name: skipped, this build has no$missing"
		continue
	fi
	pkgs=percore
	if grep -q '^[[:space:]]*#[[:space:]]*include[[:space:]]*<pc_dpdk\.h>' "$ex"; then
		pkgs=percore-dpdk
	fi
	read -ra exflags <<<"$(pkg-config --cflags --libs "$pkgs")"
	$cc -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$tmp/example-$name" "$ex" \
		"${exflags[@]}" -lpthread ||
		fail "example $name does not build against the installed library"
	if [ -f "$examples/$name.sh" ]; then
		bash "$examples/$name.sh" "$tmp/example-$name" || fail "example $name: $name.sh failed"
		echo "example $name: built and run"
	else
		echo "example $name: built"
	fi
	built=$((built + 1))
done
echo "examples built: $built"
