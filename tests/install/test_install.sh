#!/usr/bin/env bash
# Installs the build into a scratch DESTDIR, then compiles tests/install/hello.c
# (and echo.c, when the kernel backend's header is installed) as an outside
# program would (pkg-config --cflags --libs percore) and runs them.
set -euo pipefail
build=$1
src=$2
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >/dev/null
pc=$(find "$tmp/root" -name percore.pc -print -quit)
[ -n "$pc" ] || { echo "percore.pc was not installed"; exit 1; }
hdr=$(find "$tmp/root" -path '*/percore/percore.h' -print -quit)
[ -n "$hdr" ] || { echo "percore.h was not installed"; exit 1; }

# Relocate percore's own prefix into the scratch root, in a copy of its .pc.
# (PKG_CONFIG_SYSROOT_DIR or --define-variable would also move the paths of
# the system packages percore requires, such as libdpdk's.)
mkdir "$tmp/pc"
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed "s|^prefix=.*|prefix=$tmp/root$prefix|" "$pc" >"$tmp/pc/percore.pc"
export PKG_CONFIG_PATH="$tmp/pc"
flags=$(pkg-config --cflags --libs percore)
echo "pkg-config --cflags --libs percore: $flags"
$cc -std=c11 -Wall -Wextra -Werror -o "$tmp/hello" "$src" $flags
libdir=$(dirname "$(dirname "$pc")")
out=$(PERCORE_PIN=0 PERCORE_WORKERS=3 PERCORE_LOG=warn \
	LD_LIBRARY_PATH="$libdir" "$tmp/hello")
echo "$out"
[ "$out" = "hello from 3 workers" ]

# The network example, when the library has the kernel backend.
if [ -n "${3:-}" ] && [ -f "$(dirname "$hdr")/pc_knet.h" ]; then
	$cc -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$tmp/echo" "$3" $flags -lpthread
	out=$(PERCORE_PIN=0 PERCORE_WORKERS=2 PERCORE_LOG=warn LD_LIBRARY_PATH="$libdir" "$tmp/echo")
	echo "$out"
	[ "$out" = "echoed: ping" ]
fi
