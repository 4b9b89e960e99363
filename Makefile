# Thin wrapper over meson: the build lives in meson.build. Each target first
# installs what Debian 12 lacks (idempotent), then configures, builds and runs.
BUILD ?= build
MESON_FLAGS ?= --buildtype=release

.PHONY: all deps setup build test bench install clean

all: build

deps:
	@bash .ci/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_FLAGS)

setup: deps $(BUILD)/build.ninja

build: setup
	meson compile -C $(BUILD)

test: build
	@bash .ci/test.sh $(BUILD)

bench: build
	$(BUILD)/perf/percore-bench $(BENCH_ARGS)

install: build
	meson install -C $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-tsan
