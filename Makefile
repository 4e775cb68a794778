# Thin wrapper over CMake presets: the two commands of the README.
#   make demo    install missing packages, build (release), run a 2-process
#                latency and bandwidth demo over the default transports
#   make check   install missing packages, build and run the whole test suite
#                twice: normal (dev) build, then ASan+UBSan build
#   make install PREFIX=/opt/bitmover
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
# ctest's -j is the total number of tests at once: BM_TEST_CPUS (the cores)
# tests that compute, plus tests labelled "waits" beside them (see
# cmake/BmHelpers.cmake: the build's resource spec gives ctest the cores).
CTEST_JOBS ?= $(shell echo $$(($(JOBS) + 2)))
# No test is retried: a test that fails under load is a bug to make robust
# (bounded by work, not by luck), and a retry would hide races from the
# sanitizer run. The one exception is a test labelled "retry" (none today):
# it must measure wall-clock time against a bound that load can break, say so
# next to its label, and is then run once more on failure, alone.
CTEST_FLAGS ?=
CTEST_RETRY = --repeat until-pass:2 --no-tests=ignore -L retry

.PHONY: all deps build demo check check-dev check-asan check-O3 tsan install clean

all: build

deps:
	@tools/install-deps.sh

build: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

demo: build
	tools/demo.sh build/release

check: deps check-dev check-asan check-O3

check-dev:
	cmake --preset dev >/dev/null
	cmake --build --preset dev -j $(JOBS)
	ctest --preset dev -j $(CTEST_JOBS) $(CTEST_FLAGS) -LE retry
	ctest --preset dev -j $(CTEST_JOBS) $(CTEST_FLAGS) $(CTEST_RETRY)

check-asan:
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(CTEST_JOBS) $(CTEST_FLAGS) -LE retry
	ctest --preset asan -j $(CTEST_JOBS) $(CTEST_FLAGS) $(CTEST_RETRY)

# -O3 with warnings as errors, compile only: the optimizer's flow analysis
# (use-after-free, maybe-uninitialized) sees bugs the debug build does not.
# The tests are built too (BUILD_TESTING=OFF would save their ~125 objects
# and links, about 40% of this step): a test that reads an uninitialized
# value can pass without testing anything, and this is the only build that
# would say so.
check-O3:
	cmake --preset release -B build/release-werror -DBM_WERROR=ON >/dev/null
	cmake --build build/release-werror -j $(JOBS)

tsan: deps
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(CTEST_JOBS) -L tsan

install: deps
	cmake -S . -B build/install -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DBUILD_TESTING=OFF >/dev/null
	cmake --build build/install -j $(JOBS)
	cmake --install build/install

clean:
	rm -rf build
