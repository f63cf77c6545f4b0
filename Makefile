# labrun: the two commands a newcomer needs are `make bench` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
AGENT_TARGET := x86_64-unknown-linux-gnu
# Cargo's output folder: CARGO_TARGET_DIR when it is set, as cargo itself
# does (otherwise the targets below would run stale binaries from target/).
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
AGENT := $(TARGET_DIR)/$(AGENT_TARGET)/release/labrun-agent
# Paths are data and may hold spaces or quotes: every path a recipe hands the
# shell goes through `q`, which single-quotes it ('it'\''s'). Make's own
# functions split on spaces, so none of them (abspath, dir, ...) is used on a
# path; recipes resolve paths in the shell instead.
q = '$(subst ','\'',$(1))'

.PHONY: test test-fast setup lint agent build install install-files bench bench-agent bench-agent-files bench-agent-tree bench-unpack bench-vm bench-overhead bench-scale bench-pool bench-report bench-push bench-store bench-site site

# Two tiers. A test that needs a VM, libvirt or QEMU, a network namespace,
# root (a mount, a cgroup) or a toolchain build (Go/cargo builds), or that
# runs real backup tools end to end over SSH for minutes, is
# #[ignore = "needs ...: `make test` runs it"]: a plain `cargo test` reports
# it as ignored, never as passed, and `make test` runs it; it fails, saying
# what is missing, when the host lacks it. Measurements are ignored too but
# are not tests: `make test` skips them by name, their bench-* target runs
# them (and they refuse to run without its variable).
MEASUREMENTS := pool_timing_one_host_against_two report_time_per_record_at_two_sizes push_against_tar_over_ssh

## test: install what is missing, build, lint, run every test (CI runs this).
## The tests' `labrun` pushes the agent `make agent` built (the one `make
## bench` ships) rather than the debug one beside it. --no-fail-fast: one failing
## test binary does not hide what the others (the VM tests last) would say.
test: setup lint agent
	LABRUN_AGENT="$$(realpath -m -- $(call q,$(AGENT)))" $(CARGO) test --workspace --all-targets --no-fail-fast -- \
	  --include-ignored $(addprefix --skip ,$(MEASUREMENTS))

## test-fast: the inner loop (a few minutes on a warm build): every test but
## the ignored ones above, which it reports as ignored; no setup, lint or
## release build. Needs the packages scripts/host-setup.sh installs.
test-fast:
	$(CARGO) test --workspace --all-targets

setup:
	bash scripts/host-setup.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## agent: the guest agent, fully static, for the baseline x86-64 CPU (the TCG
## guest CPU lacks some host instructions, so never target-cpu=native)
agent:
	RUSTFLAGS='-C target-feature=+crt-static -C relocation-model=static' $(CARGO) build --release \
	  --target $(AGENT_TARGET) -p labrun-agent
	@file $(call q,$(AGENT)) | grep -q 'statically linked' || { echo "agent is not static"; exit 1; }

## build: labrun (release) with the static agent beside it, where it looks first
build: agent
	$(CARGO) build --release -p labrun
	cp $(call q,$(AGENT)) $(call q,$(TARGET_DIR)/release/labrun-agent)

LABRUN ?= $(TARGET_DIR)/release/labrun

## install: labrun, its static agent, man pages and bash/zsh/fish completions
## under PREFIX (DESTDIR for a packager's staging folder). labrun looks for
## the agent in $(PREFIX)/lib/labrun/, beside its own bin/ (LIBDIR is
## relative to that, so it is not a free setting).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR = $(BINDIR)/../lib/labrun
MANDIR ?= $(PREFIX)/share/man/man1
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
GENERATED := $(TARGET_DIR)/release/generated
install: build install-files

## install-files: the copying part of install, of whatever LABRUN and AGENT
## name (tests install the debug labrun: the same files, no second build)
install-files:
	rm -rf -- $(call q,$(GENERATED))
	$(call q,$(LABRUN)) generate man $(call q,$(GENERATED)/man)
	for sh in bash zsh fish; do $(call q,$(LABRUN)) generate completions "$$sh" $(call q,$(GENERATED)/completions) || exit 1; done
	install -D -m 755 $(call q,$(LABRUN)) $(call q,$(DESTDIR)$(BINDIR)/labrun)
	libdir="$$(realpath -m -- $(call q,$(DESTDIR)$(LIBDIR)))" && \
	  install -D -m 755 $(call q,$(AGENT)) "$$libdir/labrun-agent"
	install -d $(call q,$(DESTDIR)$(MANDIR))
	install -m 644 $(call q,$(GENERATED)/man)/*.1 $(call q,$(DESTDIR)$(MANDIR))/
	install -D -m 644 $(call q,$(GENERATED)/completions/labrun.bash) $(call q,$(DESTDIR)$(BASHCOMPDIR)/labrun)
	install -D -m 644 $(call q,$(GENERATED)/completions/_labrun) $(call q,$(DESTDIR)$(ZSHCOMPDIR)/_labrun)
	install -D -m 644 $(call q,$(GENERATED)/completions/labrun.fish) $(call q,$(DESTDIR)$(FISHCOMPDIR)/labrun.fish)

# Under software emulation (no usable KVM) the full 6.10 GB protocol takes
# hours: the default is a quick look. SCALE=1 is the published experiment.
SCALE ?= 0.01
# Cycles per tool; empty: the lab's own (3 in the default lab).
CYCLES ?=
# Some of the lab's tools only, comma-separated (e.g. TOOLS=borg,kopia); empty: all.
TOOLS ?=
LAB ?= lab.yaml

## bench: the main job: bring the VM up, run the cycles, always take it down
## (SCALE=1 CYCLES=1 TOOLS=borg,kopia: the published scale, one cycle, some tools)
bench: setup build
	$(call q,$(LABRUN)) -f $(call q,$(LAB)) up $(if $(TOOLS),--tools $(call q,$(TOOLS))) && \
	  $(call q,$(LABRUN)) -f $(call q,$(LAB)) bench --scale $(call q,$(SCALE)) $(if $(CYCLES),--cycles $(call q,$(CYCLES))) $(if $(TOOLS),--tools $(call q,$(TOOLS))); \
	  rc=$$?; $(call q,$(LABRUN)) -f $(call q,$(LAB)) down; exit $$rc

## bench-agent: the agent's throughput and accuracy, as ratios against
## references measured side by side (dataset: gen vs dd, verify vs sha256sum;
## memory: the agent's peak RSS vs /usr/bin/time -v)
bench-agent: setup agent
	AGENT=$(call q,$(AGENT)) bash benches/agent-dataset.sh
	AGENT=$(call q,$(AGENT)) bash benches/agent-memory.sh

## bench-agent-files: the agent's peak RSS (gen, change, verify, scan) on
## the tiny-files profile at 100,000 and 1,000,000 files side by side
## (target: each < 64 MiB), and verify vs find|xargs sha256sum, cold cache
## (target: 1.0x). SCALES="0.1 1 4" adds 4 million files (about 16 GB of disk).
bench-agent-files: setup agent
	AGENT=$(call q,$(AGENT)) bash benches/agent-memory-files.sh $(SCALES)

## bench-agent-tree: the agent's peak RSS over a whole run of the published
## cycle on a private folder of tiny files (a user's tree: scanned, changed,
## backed up, restored, verified) at 100,000 and 1,000,000 files side by
## side, and the bytes per file between them (target: each < 64 MiB).
## SCALES="1 4" SCRATCH_FS=xfs (root, xfsprogs) runs on a loop-mounted XFS
## whose reflinked copies fit 4 million files in about 27 GB of disk.
bench-agent-tree: setup agent
	AGENT=$(call q,$(AGENT)) bash benches/agent-memory-tree.sh $(SCALES)

## bench-unpack: `labrun-agent unpack` vs GNU `tar -x` of the same ~200 MB
## archive (tar.gz, tar.xz, tar.zst), cold cache, side by side (target: 0.8x)
bench-unpack: setup agent
	AGENT=$(call q,$(AGENT)) bash benches/agent-unpack.sh

## bench-vm: `labrun up` (image cached) to SSH ready and `down`, vs virsh by hand
bench-vm: setup build
	LABRUN=$(call q,$(LABRUN)) bash benches/vm.sh

## bench-overhead: the harness's share of `labrun bench`'s wall time at scale 0.01 (target: 5% at most)
bench-overhead: setup build
	LABRUN=$(call q,$(LABRUN)) AGENT=$(call q,$(AGENT)) bash benches/overhead.sh

## bench-pool: the same two-variant lab on one host and on a pool of two (this
## host's libvirt and a second one in a network namespace, reached only
## through libvirt's remote protocol): both wall times and their ratio
bench-pool: setup agent
	LABRUN_BENCH_POOL=1 $(CARGO) test --test vm pool_timing_one_host_against_two -- --ignored --nocapture

## bench-push: labrun's push of a folder (a release build) vs `tar | ssh tar`
## of the same tree to a loopback sshd, 3 rounds, and their ratio
## (LABRUN_BENCH_PUSH_MB sizes the tree; 256 by default)
bench-push: setup
	LABRUN_BENCH_PUSH=1 $(CARGO) test --release --test push_timing -- --ignored --nocapture

## bench-scale: the default lab, 1 cycle, at four scales (0.002-0.02) in one VM
## boot: per phase a fitted line (fixed + per GB), the full-scale time it
## projects and bench's estimate for the same (SCALES="..." to change them)
bench-scale: setup build
	LABRUN=$(call q,$(LABRUN)) LAB=$(call q,$(LAB)) TOOLS=$(call q,$(TOOLS)) bash benches/scale.sh

## bench-report: `report` time per record at two sizes of records.jsonl (20, 60 MB,
## or LABRUN_BENCH_REPORT_MB=a,b) and their ratio (1 is linear)
LABRUN_BENCH_REPORT_MB ?= 20,60
# The results store: import 250, 500 and 1,000 synthetic runs of the default
# lab's shape (a committed pack, its identity varied), then list them; prints
# per-run import time and its ratio between sizes (linear is 1.0).
BENCH_STORE_PACK ?= docs/fidelity/default-20261201T144749Z-2ab023.tar.gz
bench-store:
	$(CARGO) run --release -p labrun-store --example bench_store -- "$(BENCH_STORE_PACK)" 250 500 1000

# The site: build it from 250, 500 and 1,000 synthetic runs (a committed
# run of the default lab, one tool kept, its version and speed varied) in
# one process, side by side; prints the time per run and its ratio between
# sizes (linear is 1.0). Target: 1,000 runs under a minute.
bench-site:
	$(CARGO) run --release -p labrun-site --example bench_site -- 250 500 1000

## site: the project's own site (SITE=site/ by default, git-ignored) from the
## runs committed under docs/, through a throwaway store; open SITE/index.html
SITE ?= site
site:
	$(CARGO) build --release -p labrun --bin labrun
	bash scripts/site.sh $(call q,$(LABRUN)) $(call q,$(SITE))

bench-report:
	LABRUN_BENCH_REPORT_MB=$(LABRUN_BENCH_REPORT_MB) $(CARGO) test --release -p labrun-report --test report_scale -- --ignored --nocapture
