# SPDX-License-Identifier: GPL-2.0
#
# ecnproxy: thin wrapper over Kbuild, the userspace unit tests and the
# QEMU/virtme-ng testbed.  `make help` lists the targets, grouped, from the
# `## GROUP: text` line right above each target (docs/development.md has
# them in detail, and the variables).

# Guest kernel (scripts/kver.sh): Debian's 6.1 unless KVER says otherwise.
# KVER=6.12 picks the newest installed 6.12 (image and headers),
# KVER=6.12.117+deb12-amd64 that one.  Evaluated again by the sub-make that
# runs after `deps` has installed it.
ifeq ($(KVER),)
KVER := $(shell scripts/kver.sh)
else ifeq ($(word 3,$(subst ., ,$(KVER))),)
override KVER := $(shell scripts/kver.sh $(KVER))
endif
KDIR ?= /lib/modules/$(KVER)/build
VENV ?= $(CURDIR)/.venv
BUILD ?= $(CURDIR)/build
CC ?= cc

# Passed through to the test runner and the guest runner
# (docs/development.md, "Make variables and the environment").
ACCEL ?= auto
VM_TIMEOUT ?= 3600
VM_TIMEOUT_EXTENDED ?= 14400
VM_MEMORY ?= 2G
VM_CPUS ?= 2
TESTS ?=
PROFILE ?= quick
export KVER VENV BUILD ACCEL VM_TIMEOUT VM_MEMORY VM_CPUS TESTS PROFILE
# make install-man: where the pages of docs/man/ go
MANDIR ?= /usr/local/share/man

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

# make deps puts its tools in the checkout's build/tools, whatever BUILD is:
# checkpatch.pl of linux-source-6.1 and of linux-source-6.12
CHECKPATCH := $(CURDIR)/build/tools/checkpatch/scripts/checkpatch.pl
CHECKPATCH_612 := $(CURDIR)/build/tools/checkpatch-6.12/scripts/checkpatch.pl
# make check: sparse against these kernels (default: every supported one
# installed, scripts/kver.sh --supported)
CHECK_KVERS ?=
KSRC := $(shell find $(KMOD) -name '*.[ch]' -not -name '*.mod.c' -not -path '*/tests/*' | sort)

.PHONY: all deps modules unit unit-cross cross check test vmtest vmtest-extended experiments-smoke vmtest-home hosttest slurmtest \
	matrix fairness experiments bench-hook bench-hook-kernel bench-flows bench-lookup dkms-install dkms-remove \
	kernel-patches install-man debugkernel debugtest clean help \
	build-modules build-unit run-check

all: modules

## set-up: install the testbed's packages and tools
deps:
	@VENV=$(VENV) scripts/deps.sh

# The testbed's targets run `deps` first, then re-enter make so that KVER
# and KDIR are read from what deps installed.  `modules` and the router's
# targets do not: a router needs its kernel's headers (and dkms), not the
# testbed's QEMU and Python.
SUBMAKE := $(MAKE) --no-print-directory

## router: build the modules against KDIR's headers (no deps)
modules: build-modules

build-modules:
	@test -f "$(KDIR)/Makefile" || { \
		echo "modules: no kernel headers at KDIR=$(KDIR) (KVER=$(KVER): scripts/kver.sh, the newest 6.1, or of the series KVER names, with both /boot/vmlinuz-V and /lib/modules/V/build)" >&2; \
		echo "modules: install the headers of the kernel to build for, e.g. apt-get install linux-headers-$$(uname -r), or set KVER= or KDIR=" >&2; \
		exit 1; }
	$(MAKE) $(KBUILD_ARGS) modules

$(BUILD)/unit/%: kmod/tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(UNIT_LDLIBS)

-include $(UNIT_BINS:=.d)

## tests: the unit tests (every ABI) and the pytest suite
unit: deps
	@$(SUBMAKE) build-unit
	@VM=0 HOST=0 scripts/run-tests

build-unit: $(UNIT_BINS)

# The unit tests on 32-bit LE, 64-bit BE and 32-bit BE (scripts/unit-cross).
## tests: the unit tests on 32-bit LE, 64-bit BE, 32-bit BE
unit-cross: deps
	@scripts/unit-cross

# The modules cross-compiled for arm64, arm and mips (scripts/cross); the
# log goes to results/cross-DATE/.
## tests: the modules cross-built for arm64, arm and mips
cross: deps
	@scripts/cross

## tests: checkpatch --strict and sparse over the kernel sources
check: deps
	@$(SUBMAKE) run-check

run-check:
	$(CHECKPATCH) --strict --no-tree --quiet --show-types -f $(KSRC)
	$(CHECKPATCH_612) --strict --no-tree --quiet --show-types -f $(KSRC)
	@mkdir -p $(BUILD)
	@kvers="$(or $(CHECK_KVERS),$(shell scripts/kver.sh --supported))"; \
	[ -n "$$kvers" ] || { echo "check: no supported kernel installed (make deps)" >&2; exit 1; }; \
	for k in $$kvers; do \
		echo "check: sparse against $$k"; \
		$(MAKE) -C /lib/modules/$$k/build M=$(KMOD) W=1 C=2 modules \
			>$(BUILD)/sparse-$$k.log 2>&1; rc=$$?; \
		cat $(BUILD)/sparse-$$k.log; \
		[ $$rc -eq 0 ] || exit 1; \
		! grep -E '(warning|error):' $(BUILD)/sparse-$$k.log || exit 1; \
	done; \
	echo "check: checkpatch --strict (6.1's and 6.12's) and sparse ($$kvers) are clean"

## tests: every test (CI's command); ends "N passed, M failed"
test: deps
	@$(SUBMAKE) build-modules build-unit
	@scripts/run-tests

## tests: the VM part of make test only (TESTS=GLOB picks tests)
vmtest: deps
	@$(SUBMAKE) build-modules
	@UNIT=0 HOST=0 CROSS=0 scripts/run-tests

# make experiments' pipeline end to end: the impair-smoke profile in one
# guest and the effects it must show (scripts/matrix-selftest impair); not
# in make test, for its time.  Its TAP goes to $(BUILD)/impair-smoke.tap,
# its log to $(BUILD)/impair-smoke.log.
## tests: make experiments' pipeline (impair-smoke profile)
experiments-smoke: deps
	@$(SUBMAKE) build-modules
	@scripts/matrix-selftest impair | tee $(BUILD)/impair-smoke.tap; \
	p=$$(grep -c '^ok' $(BUILD)/impair-smoke.tap); \
	f=$$(grep -c '^not ok' $(BUILD)/impair-smoke.tap); \
	echo "$$p passed, $$f failed"; [ "$$f" -eq 0 ] && [ "$$p" -gt 0 ]

# The extended VM suite (vm-testbed/run-vm-tests.sh: what does not fit in
# make test's time), alone in one guest; publish its log with
# scripts/publish-vmtest-run.
## tests: the extended VM suite, alone in one guest
vmtest-extended: deps
	@$(SUBMAKE) build-modules
	@TB_SUITE=extended VM_EXTRAS=0 VMOUT=$(BUILD)/vm/extended \
		VM_TIMEOUT=$(VM_TIMEOUT_EXTENDED) UNIT=0 HOST=0 CROSS=0 scripts/run-tests

# The home-router variants (docs/home-router.md): every test's @home
# variant and the home_* tests, core and extended, alone in one guest
# (2773 s in results/vmtest-home-20261128/, which CI's 90 minutes cannot
# hold beside make test); publish its log with scripts/publish-vmtest-run.
## tests: every @home and home_* test, alone in one guest
vmtest-home: deps
	@$(SUBMAKE) build-modules
	@TB_SUITE=all TESTS='@(*@home|home_*)' VM_EXTRAS=0 VMOUT=$(BUILD)/vm/home \
		VM_TIMEOUT=$(VM_TIMEOUT_EXTENDED) UNIT=0 HOST=0 CROSS=0 scripts/run-tests

# The host tests of `make test` alone (scripts/tests-host/*.sh: DKMS, the
# in-tree patch series), no VM.
## tests: the host tests of make test only (DKMS, in-tree)
hosttest: deps
	@UNIT=0 VM=0 HOST=1 scripts/run-tests

# The Slurm path of make matrix (issue 45, docs/testbed.md "Shards, parallel
# guests, Slurm"): a one-node Slurm started from Debian's packages, smoke
# as SUBMIT=slurm SHARDS=2, merged and checked against a single run; the
# stand-in guest runner unless SLURMTEST_GUEST=1 (real guests); root.
## tests: make matrix on a one-node Slurm (2 shards, merged)
slurmtest: deps
	@DEPS_EXTRA=scripts/deps.slurm VENV=$(VENV) scripts/deps.sh
	@$(SUBMAKE) build-modules
	@scripts/slurm-selftest

# Installing on a router (docs/install.md).  No `deps` first: a router
# needs dkms and its kernel's headers, not the testbed's packages.
## router: install the modules through DKMS for KVER
dkms-install:
	@scripts/dkms install $(KVER)

## router: remove every ecnproxy version from DKMS
dkms-remove:
	@scripts/dkms remove

# The man pages (docs/man/) into $(DESTDIR)$(MANDIR)/manN/; no `deps`.
## router: install the man pages under MANDIR
install-man:
	@for p in docs/man/*.[1-9]; do \
		d="$(DESTDIR)$(MANDIR)/man$${p##*.}"; \
		install -d "$$d" && install -m 0644 "$$p" "$$d/" && echo "installed $$d/$${p##*/}"; \
	done

# Regenerate kernel-patches/ from kmod/ (checked by the host test intree).
## router: regenerate the in-tree series kernel-patches/
kernel-patches: deps
	@scripts/gen-kernel-patches

# The throughput matrix (docs/testbed.md): PROFILE=quick (default), paper,
# paper-drop, aa-upload, ackclock, thesis, smoke (scripts/profiles/*.json),
# FEEDBACK=none|drop|dupack|dupack-rwnd|dupack-fast (default: the module's), KEEP_PCAPS=1,
# MATRIX_OUT=DIR; an interrupted matrix resumes.  SHARD=i/N runs one shard,
# JOBS=n n guests side by side, SUBMIT=slurm SHARDS=N a Slurm job array
# (also for fairness and experiments; docs/testbed.md).
## experiments: the throughput matrix (PROFILE=quick: the main job)
matrix: deps
	@$(SUBMAKE) build-modules
	@scripts/matrix

# Fairness and responsiveness of the proxy's feedback (docs/testbed.md):
# two long flows share the bottleneck, one through the proxy; resumable.
# PROFILE=fairness (default here), fairness-upload, fairness-rtt0, fairness-rtt20 or
# fairness-rtt20-pcap or fairness-rtt0-pcap (with KEEP_PCAPS=1: the captures behind
# scripts/ecnproxy sack-rtt-scan and event-cycle).
## experiments: two long flows share the bottleneck, one proxied
fairness: deps
	@$(SUBMAKE) build-modules
	@PROFILE=$(if $(filter fairness%,$(PROFILE)),$(PROFILE),fairness) scripts/matrix

# The impairment experiments (docs/testbed.md): one results directory per
# scripts/profiles/exp-*.json; EXPERIMENTS="ecn seqrand" picks some,
# EXP_SCALE=quick (about 100 minutes of guest time for all nine, summed in
# docs/development.md) or full; resumable.
## experiments: the impairment experiments against the papers
experiments: deps
	@$(SUBMAKE) build-modules
	@scripts/experiments

# Benchmarks of issue 14 (docs/findings.md, "What a hook costs"), one guest session
# each, output under results/: the forwarding rate per configuration, and
# the forwarding cost per packet timed in the kernel
# (kmod/selftest/hookbench.c), the per-packet cost and memory at 10^3-10^6
# flows, and one lookup's cost timed in the kernel (kmod/selftest/flowbench.c)
# at those sizes.
## benchmarks: the forwarding rate under each hook configuration
bench-hook: deps
	@$(SUBMAKE) build-modules
	@scripts/bench-hook

## benchmarks: the forwarding cost per packet, timed in the kernel
bench-hook-kernel: deps
	@$(SUBMAKE) build-modules
	@scripts/bench-hook-kernel

## benchmarks: the per-packet cost and memory at 10^3-10^6 flows
bench-flows: deps
	@$(SUBMAKE) build-modules
	@scripts/bench-flows

## benchmarks: one flow-table lookup's cost, timed in the kernel
bench-lookup: deps
	@$(SUBMAKE) build-modules
	@scripts/bench-lookup

# The debug guest kernel (docs/development.md): KASAN, lockdep, kmemleak,
# UBSAN, built once into $ECNPROXY_CACHE/debugkernel (default
# /var/cache/ecnproxy), keyed by its config; debugtest runs the VM tests on it.
## debug-kernel: build the KASAN/lockdep/kmemleak guest kernel
debugkernel: deps
	@scripts/debugkernel

## debug-kernel: the VM tests and the fuzz/flood/churn campaign on it
debugtest: deps
	@scripts/debugkernel >/dev/null
	@scripts/debugtest

## set-up: remove the build output
clean:
	-test -d "$(KDIR)" && $(MAKE) $(KBUILD_ARGS) clean
	rm -rf $(BUILD)/unit $(BUILD)/vm $(BUILD)/cross $(BUILD)/sparse*.log

# `make help`: each target's `## GROUP: text` line, by group in this order
# (a group without a target, or a target in another group, fails).
HELP_GROUPS := router experiments benchmarks tests debug-kernel set-up

## set-up: this list
help:
	@awk -v order='$(HELP_GROUPS)' ' \
	/^## [a-z-]+: / { g = substr($$2, 1, length($$2) - 1); t = $$0; \
		sub(/^## [a-z-]+: /, "", t); next } \
	g != "" && /^[a-z][a-z-]*:/ { sub(/:.*/, ""); \
		s[g] = s[g] sprintf("  make %-18s %s\n", $$0, t) } \
	{ g = "" } \
	END { print "ecnproxy: make TARGET [VARIABLE=value ...]"; \
		n = split(order, o, " "); \
		for (i = 1; i <= n; i++) { \
			if (!(o[i] in s)) { print "help: no target in group " o[i] >"/dev/stderr"; exit 1 } \
			printf "%s:\n%s", o[i], s[o[i]]; delete s[o[i]] } \
		for (k in s) { print "help: group " k " is not in HELP_GROUPS" >"/dev/stderr"; exit 1 } \
		print "Variables (KVER, KDIR, PROFILE, FEEDBACK, TESTS, TB_*, ...) and every"; \
		print "target in detail: docs/development.md; the testbed: docs/testbed.md" }' \
		$(firstword $(MAKEFILE_LIST))
