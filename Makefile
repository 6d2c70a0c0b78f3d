# SPDX-License-Identifier: GPL-2.0
#
# ecnproxy: thin wrapper over Kbuild, the userspace unit tests and the
# QEMU/virtme-ng testbed.  `make help` lists the targets and variables.

# Guest kernel: the newest installed Debian kernel that has headers.
# Evaluated again by the sub-make that runs after `deps` has installed it.
ifeq ($(KVER),)
KVER := $(shell scripts/kver.sh)
endif
KDIR ?= /lib/modules/$(KVER)/build
VENV ?= $(CURDIR)/.venv
BUILD ?= $(CURDIR)/build
CC ?= cc

# Passed through to the test runner and the guest runner (see README).
ACCEL ?= auto
VM_TIMEOUT ?= 3600
VM_TIMEOUT_EXTENDED ?= 14400
VM_MEMORY ?= 2G
VM_CPUS ?= 2
TESTS ?=
PROFILE ?= quick
export KVER VENV BUILD ACCEL VM_TIMEOUT VM_MEMORY VM_CPUS TESTS PROFILE

KMOD := $(CURDIR)/kmod
KBUILD_ARGS := -C $(KDIR) M=$(KMOD) W=1

UNIT_SRCS := $(wildcard kmod/tests/unit/test_*.c)
UNIT_BINS := $(patsubst kmod/tests/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))
# UNIT_ABI_CFLAGS: the sanitizers (undefined behaviour is fatal), and for
# scripts/unit-cross the cross-built cmocka's headers.
UNIT_ABI_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
UNIT_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Werror -MMD -MP \
	$(UNIT_ABI_CFLAGS) -fno-omit-frame-pointer \
	-I kmod/core -I kmod/tests/unit
UNIT_LDLIBS := -lcmocka

# make deps puts its tools in the checkout's build/tools, whatever BUILD is
CHECKPATCH := $(CURDIR)/build/tools/checkpatch/scripts/checkpatch.pl
KSRC := $(shell find $(KMOD) -name '*.[ch]' -not -name '*.mod.c' -not -path '*/tests/*' | sort)

.PHONY: all deps modules unit unit-cross cross check test vmtest vmtest-extended vmtest-home hosttest \
	matrix fairness experiments bench-hook bench-hook-kernel bench-flows bench-lookup dkms-install dkms-remove \
	kernel-patches debugkernel debugtest clean help \
	build-modules build-unit run-check

all: modules

deps:
	@VENV=$(VENV) scripts/deps.sh

# Every public target runs `deps` first, then re-enters make so that KVER
# and KDIR are read from what deps installed.
SUBMAKE := $(MAKE) --no-print-directory

modules: deps
	@$(SUBMAKE) build-modules

build-modules:
	@test -d "$(KDIR)" || { echo "modules: no kernel headers at KDIR=$(KDIR)" >&2; exit 1; }
	$(MAKE) $(KBUILD_ARGS) modules

$(BUILD)/unit/%: kmod/tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(UNIT_LDLIBS)

-include $(UNIT_BINS:=.d)

unit: deps
	@$(SUBMAKE) build-unit
	@VM=0 HOST=0 scripts/run-tests

build-unit: $(UNIT_BINS)

# The unit tests on 32-bit LE, 64-bit BE and 32-bit BE (scripts/unit-cross).
unit-cross: deps
	@scripts/unit-cross

# The modules cross-compiled for arm64, arm and mips (scripts/cross); the
# log goes to results/cross-DATE/.
cross: deps
	@scripts/cross

check: deps
	@$(SUBMAKE) run-check

run-check:
	$(CHECKPATCH) --strict --no-tree --quiet --show-types -f $(KSRC)
	@mkdir -p $(BUILD)
	$(MAKE) $(KBUILD_ARGS) C=2 modules 2>&1 | tee $(BUILD)/sparse.log
	@! grep -E '(warning|error):' $(BUILD)/sparse.log
	@echo "check: checkpatch --strict and sparse are clean"

test: deps
	@$(SUBMAKE) build-modules build-unit
	@scripts/run-tests

vmtest: deps
	@$(SUBMAKE) build-modules
	@UNIT=0 HOST=0 CROSS=0 scripts/run-tests

# The extended VM suite (vm-testbed/run-vm-tests.sh: what does not fit in
# make test's time), alone in one guest; publish its log with
# scripts/publish-vmtest-run.
vmtest-extended: deps
	@$(SUBMAKE) build-modules
	@TB_SUITE=extended VM_EXTRAS=0 VMOUT=$(BUILD)/vm/extended \
		VM_TIMEOUT=$(VM_TIMEOUT_EXTENDED) UNIT=0 HOST=0 CROSS=0 scripts/run-tests

# The home-router variants (README "On a home router"): every test's
# @home variant and the home_* tests, core and extended, alone in one
# guest (about 50 minutes, which CI's 90 cannot hold beside make test);
# publish its log with scripts/publish-vmtest-run.
vmtest-home: deps
	@$(SUBMAKE) build-modules
	@TB_SUITE=all TESTS='@(*@home|home_*)' VM_EXTRAS=0 VMOUT=$(BUILD)/vm/home \
		VM_TIMEOUT=$(VM_TIMEOUT_EXTENDED) UNIT=0 HOST=0 CROSS=0 scripts/run-tests

# The host tests of `make test` alone (scripts/tests-host/*.sh: DKMS, the
# in-tree patch series), no VM.
hosttest: deps
	@UNIT=0 VM=0 HOST=1 scripts/run-tests

# Installing on a router (README "On a home router").  No `deps` first: a
# router needs dkms and its kernel's headers, not the testbed's packages.
dkms-install:
	@scripts/dkms install $(KVER)

dkms-remove:
	@scripts/dkms remove

# Regenerate kernel-patches/ from kmod/ (checked by the host test intree).
kernel-patches: deps
	@scripts/gen-kernel-patches

# The throughput matrix (README "The throughput matrix"): PROFILE=quick|thesis|smoke
# (scripts/profiles/*.json), FEEDBACK=none|drop|dupack (default: the module's),
# KEEP_PCAPS=1, MATRIX_OUT=DIR; an interrupted matrix resumes.
matrix: deps
	@$(SUBMAKE) build-modules
	@scripts/matrix

# Fairness and responsiveness of the proxy's feedback (README "Fairness"):
# two long flows share the bottleneck, one through the proxy; resumable.
# PROFILE=fairness (default here), fairness-upload, fairness-rtt20 or
# fairness-rtt20-pcap (with KEEP_PCAPS=1: the captures behind scripts/sack_rtt_scan.py).
fairness: deps
	@$(SUBMAKE) build-modules
	@PROFILE=$(if $(filter fairness%,$(PROFILE)),$(PROFILE),fairness) scripts/matrix

# The impairment experiments (README "Impairment experiments"): one results
# directory per scripts/profiles/exp-*.json; EXPERIMENTS="ecn seqrand" picks
# some, EXP_SCALE=quick (about an hour for all) or full; resumable.
experiments: deps
	@$(SUBMAKE) build-modules
	@scripts/experiments

# Benchmarks of issue 14 (README "What a hook costs"), one guest session
# each, output under results/: the forwarding rate per configuration, and
# the forwarding cost per packet timed in the kernel
# (kmod/selftest/hookbench.c), the per-packet cost and memory at 10^3-10^6
# flows, and one lookup's cost timed in the kernel (kmod/selftest/flowbench.c)
# at those sizes.
bench-hook: deps
	@$(SUBMAKE) build-modules
	@scripts/bench-hook

bench-hook-kernel: deps
	@$(SUBMAKE) build-modules
	@scripts/bench-hook-kernel

bench-flows: deps
	@$(SUBMAKE) build-modules
	@scripts/bench-flows

bench-lookup: deps
	@$(SUBMAKE) build-modules
	@scripts/bench-lookup

# The debug guest kernel (README "Debug kernel"): KASAN, lockdep, kmemleak,
# UBSAN, built once into $ECNPROXY_CACHE/debugkernel (default
# /var/cache/ecnproxy), keyed by its config; debugtest runs the VM tests on it.
debugkernel: deps
	@scripts/debugkernel

debugtest: deps
	@scripts/debugkernel >/dev/null
	@scripts/debugtest

clean:
	-test -d "$(KDIR)" && $(MAKE) $(KBUILD_ARGS) clean
	rm -rf $(BUILD)/unit $(BUILD)/vm $(BUILD)/cross $(BUILD)/sparse.log

help:
	@sed -n '/^## Make targets/,/^## Layout/p' README.md | head -n -1
