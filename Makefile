# dlscope — build, test and demo. Layout follows libbpf-bootstrap: BPF objects are compiled with
# clang against a generated vmlinux.h, turned into skeleton headers by bpftool and embedded in the
# one ./dlscope binary. Every product goes under $(OUTPUT), never beside the sources.

OUTPUT ?= build
CC ?= cc
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool || echo /usr/sbin/bpftool)
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

CFLAGS ?= -O2 -g
# The layers of user/, lowest first (scripts/check-layers.py takes LAYERS from here): the core
# (up to out/; pkg/ knows package managers, python/ CPython's memory) needs neither libbpf nor
# ncurses; collect/ adds the eBPF collector, ui/ the TUI, cli/ the commands.
CORE_LAYERS := base arch elf proc pkg python model analysis detect out
USER_LAYERS := $(CORE_LAYERS) collect cli
LAYERS := $(addprefix user/,$(CORE_LAYERS) collect) ui user/cli
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE \
	  -I$(OUTPUT) $(addprefix -Iuser/,$(USER_LAYERS)) -Iui -Ibpf $(EXTRA_CFLAGS)
CORE_LDLIBS := -ldw -lelf -lz -ljansson -lpthread
# ./dlscope links its libraries' archives where the system has every one (Debian's -dev packages
# ship them; pkg-config --static names what each needs, zstd where elfutils uses it) and only
# the C library dynamically: ten shared objects fewer to map and relocate at each start (some
# 100 page faults of the loader's, 2 of the 7 ms a `dlscope --version` took on a nested VM), for
# commands run in loops and by scripts. Where an archive is missing (Fedora ships them apart)
# it links the shared libraries.
ARCHIVE_LIBS := $(filter-out -lpthread -ldl -lm -lrt -lc,$(filter -l%,\
	$(shell pkg-config --static --libs libbpf libdw ncursesw jansson 2>/dev/null)))
ARCHIVES_MISSING := $(strip $(foreach l,$(ARCHIVE_LIBS),\
	$(if $(filter /%,$(shell $(CC) -print-file-name=lib$(l:-l%=%).a)),,$(l))))
ifneq ($(and $(ARCHIVE_LIBS),$(if $(ARCHIVES_MISSING),,yes)),)
LDLIBS += -Wl,-Bstatic $(ARCHIVE_LIBS) -Wl,-Bdynamic -lpthread -ldl
else
LDLIBS += -lbpf -lncursesw $(CORE_LDLIBS)
endif

# libFuzzer builds (clang): the project's objects instrumented, each tests/fuzz/*.c a fuzzer.
ifeq ($(FUZZ),1)
OUTPUT := build-fuzz
CC := clang
CFLAGS += -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -O1
endif

ifeq ($(SAN),1)
OUTPUT := build-san
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -O1
LDFLAGS += -fsanitize=address,undefined
endif

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
CORE_SRCS := $(wildcard $(addsuffix /*.c,$(addprefix user/,$(CORE_LAYERS))))
CORE_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(CORE_SRCS))
UI_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(wildcard ui/*.c))
USER_SRCS := $(CORE_SRCS) $(wildcard user/collect/*.c user/cli/*.c ui/*.c)
USER_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(USER_SRCS))
CORE_LIB := $(OUTPUT)/libdlscope-core.a
UI_LIB := $(OUTPUT)/libdlscope-ui.a
COLLECT_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(wildcard user/collect/*.c))
COLLECT_LIB := $(OUTPUT)/libdlscope-collect.a
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))

# liblzma-dev, libbz2-dev: the static archives of libdw's compressors (make static).
DEB_BUILD := make clang clang-format llvm gcc bpftool libbpf-dev libelf-dev libdw-dev zlib1g-dev \
	     liblzma-dev libbz2-dev libjansson-dev libncurses-dev pkg-config
DEB_TEST := python3 python3-numpy libgomp1 libomp-dev libomp5 libopenblas0-pthread \
	    libopenblas64-0-pthread patchelf gdb elfutils binutils tmux g++ libc6-dbg bpftrace \
	    graphviz libclang-rt-14-dev strace python3-dev python3.11-dbg python3-jsonschema \
	    cmark-gfm libcap2-bin
# The second corpus (tests/realworld/test_second_corpus.py): programs dlscope was not written
# against, from numba and an OpenCL JIT to a JVM, Octave, R and AMD's HIP runtime.
DEB_CORPUS2 := python3-numba python3-pyopencl pocl-opencl-icd openjdk-17-jdk-headless nodejs \
	    python3-matplotlib octave r-base-core r-cran-data.table libamdhip64-5 libze1 \
	    libgcc-12-dev gnuradio python3-vtk9
# The real software of tests/realworld: Debian's ML stack, Qt5, ICU, Boost, TBB, oneDNN and
# the BLAS alternatives (reference BLAS/LAPACK beside OpenBLAS and its fronts) and GSL's own
# CBLAS; numba (LLVM 14), pyopencl, matplotlib, a JVM, Node.js and GCC's runtimes, on which
# dup-library stays silent.
DEB_REALWORLD := python3-torch python3-scipy python3-sklearn python3-threadpoolctl \
	    qtbase5-dev libqt5opengl5 libicu-dev libboost-filesystem-dev libboost-thread-dev \
	    libtbb-dev libdnnl-dev libblas3 liblapack3 libgsl27 libprotobuf-dev protobuf-compiler \
	    $(DEB_CORPUS2)
# Other distributions' roots, made by debootstrap, for the tests of what production runs
# (tests/e2e/distro_roots.py: Debian 11's glibc 2.31 and Python 3.9), and programs not built
# on glibc: musl's (tests/e2e/test_musl.py) and Go's (tests/e2e/test_go.py).
DEB_ROOTS := debootstrap musl-tools golang-go
# Real consumers of what dlscope writes: Chrome DevTools' trace engine, installed from the npm
# registry by tests/e2e/test_export.py, reads export --perfetto's output.
DEB_CONSUMERS := npm
# The fleet agent's consumers (tests/e2e/test_agent.py): node_exporter's textfile collector
# reads dlscope agent's metrics, Prometheus scrapes it; the test runs both binaries itself, and
# checks deploy/'s unit (systemd-analyze) and DaemonSet (read with PyYAML).
DEB_AGENT := prometheus prometheus-node-exporter systemd python3-yaml
# A real Slurm for stacks --job slurm:JOBID (tests/e2e/test_slurm.py starts munged, slurmctld and
# a slurmd per node, nodes being network namespaces made with iproute2), OpenMPI's mpi4py and
# the PMIx library Slurm's mpi/pmix plugin loads.
DEB_SLURM := slurm-wlm munge python3-mpi4py libpmix-dev iproute2
# The man page is made from docs/dlscope.1.md by pandoc (`make install`).
DEB_DOC := pandoc man-db
DEB_ALL := $(DEB_BUILD) $(DEB_TEST) $(DEB_REALWORLD) $(DEB_ROOTS) $(DEB_CONSUMERS) $(DEB_AGENT) \
	   $(DEB_SLURM) $(DEB_DOC)

.PHONY: all deps test test-needs test-san unit e2e demo bench clean format format-check fixtures fuzz fuzz-build \
	fuzz-smoke stress check-layers static install demo-fixtures docs
# The sanitizer build stays in its own folder; only the plain build is copied to ./dlscope.
ifeq ($(SAN),1)
all: $(OUTPUT)/dlscope
else
all: dlscope
endif

# Installs what the build and the tests need; idempotent, and says what is missing when not root.
deps:
	@scripts/install-deps.sh $(DEB_ALL)

dlscope: $(OUTPUT)/dlscope
	@cp $< $@.tmp && mv -f $@.tmp $@

$(OUTPUT)/dlscope: $(USER_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# One file to copy onto a bare host: libbpf, libelf, libdw and its compressors, jansson, ncurses,
# libstdc++ and glibc linked in statically, the BPF skeletons embedded as in ./dlscope. It reuses
# the build's objects; main.c and account.c are compiled again with DLSCOPE_STATIC (no NSS
# module, no dlopen: a shared object loaded into a static process brings the host's glibc). Its
# own debug information is stripped; the symbol table stays (dlscope stacks on dlscope).
STATIC_LDLIBS := -lbpf -lncursesw -ltinfo -ldw -lelf -lz -llzma -lbz2 -ljansson -lpthread -lstdc++
STATIC_SRCS := user/cli/main.c user/base/account.c
STATIC_OBJS := $(filter-out $(patsubst %.c,$(OUTPUT)/%.o,$(STATIC_SRCS)),$(USER_OBJS)) \
	       $(patsubst %.c,$(OUTPUT)/static/%.o,$(STATIC_SRCS))

static: dlscope-static

dlscope-static: $(OUTPUT)/dlscope-static
	@cp $< $@.tmp && mv -f $@.tmp $@

$(OUTPUT)/static/%.o: %.c $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DDLSCOPE_STATIC -MMD -MP -c $< -o $@

$(OUTPUT)/dlscope-static: $(STATIC_OBJS)
	$(CC) $(LDFLAGS) -static -Wl,--wrap=dlopen -Wl,-u,__cxa_demangle -o $@.tmp $^ $(STATIC_LDLIBS)
	strip --strip-debug $@.tmp && mv -f $@.tmp $@

# `make install PREFIX=/usr/local DESTDIR=...`: the dynamic ./dlscope and its man page.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
INSTALL ?= install

# The page's "# dlscope(1)" is its title, its "##" headings the man sections. --columns: no
# table gets fixed widths, which tbl cannot fit in an 80-column terminal.
DLSCOPE_VERSION := $(shell sed -n 's/.*DLSCOPE_VERSION "\(.*\)"/\1/p' user/base/version.h)
$(OUTPUT)/dlscope.1: docs/dlscope.1.md user/base/version.h
	@scripts/install-deps.sh $(DEB_DOC)
	@mkdir -p $(dir $@)
	pandoc --standalone --from markdown-smart --to man --shift-heading-level-by=-1 --columns=1000 \
		-M title=dlscope -M section=1 -M header="User Commands" \
		-M footer="dlscope $(DLSCOPE_VERSION)" $< -o $@.tmp && mv -f $@.tmp $@

install: dlscope $(OUTPUT)/dlscope.1
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 0755 dlscope $(DESTDIR)$(BINDIR)/dlscope
	$(INSTALL) -m 0644 $(OUTPUT)/dlscope.1 $(DESTDIR)$(MANDIR)/man1/dlscope.1
	$(INSTALL) -d $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 0644 scripts/dlscope-completion.bash $(DESTDIR)$(BASHCOMPDIR)/dlscope

$(OUTPUT)/vmlinux.h:
	@mkdir -p $(OUTPUT)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

# -mcpu=v3: atomic exchange (the scratch slots of dlwatch), kernels 5.12 and later.
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h bpf/*/*.h) $(OUTPUT)/vmlinux.h
	$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -I$(OUTPUT) -Ibpf -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# The BPF object and skeleton are kept: as make's intermediates they were deleted after the
# first build, so the next make rebuilt every object that includes a skeleton.
.SECONDARY: $(BPF_SKELS) $(patsubst %.skel.h,%.bpf.o,$(BPF_SKELS))

# Objects depend on their headers through -MMD; the skeletons must exist before any user code.
$(OUTPUT)/%.o: %.c $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(UI_LIB): $(UI_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(COLLECT_LIB): $(COLLECT_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# Unit tests link the core alone, without libbpf or ncurses: a core file that reaches for either
# fails to link here. The TUI model's test adds the TUI's objects; the collector's offline test
# (raw records fed without BPF) the collector and libbpf; the horizon's, its pure part of the
# collector. --as-needed: each test records only
# the libraries it uses.
$(OUTPUT)/tests/test_ui_model: UNIT_LIBS := $(UI_LIB)
$(OUTPUT)/tests/test_watch_offline: UNIT_LIBS := $(COLLECT_LIB)
$(OUTPUT)/tests/test_watch_offline: UNIT_LDLIBS := -lbpf
$(OUTPUT)/tests/test_horizon: UNIT_LIBS := $(COLLECT_LIB)
$(OUTPUT)/tests/%: tests/unit/%.c $(UI_LIB) $(COLLECT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(UNIT_LIBS) $(CORE_LIB) -Wl,--as-needed $(UNIT_LDLIBS) \
		$(CORE_LDLIBS)

# The whole core linked without libbpf and ncurses; no call or include reaching up a layer, and
# no modules calling each other round a cycle, as nm of the objects shows (check-layers.py).
check-layers: $(CORE_LIB) $(USER_OBJS)
	@printf 'int main(void) { return 0; }\n' > $(OUTPUT)/core_link.c
	@$(CC) $(LDFLAGS) -o $(OUTPUT)/core_link $(OUTPUT)/core_link.c \
		-Wl,--whole-archive $(CORE_LIB) -Wl,--no-whole-archive $(CORE_LDLIBS) \
		|| { echo "check-layers: the core needs more than $(CORE_LDLIBS)" >&2; exit 1; }
	@python3 scripts/check-layers.py --build $(OUTPUT) --layers "$(LAYERS)"

FUZZERS := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
$(OUTPUT)/fuzz/%: tests/fuzz/%.c $(UI_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $^ -Wl,--as-needed $(CORE_LDLIBS)

# The fuzzers, built with clang's libFuzzer; `make fuzz-smoke` runs each for FUZZ_SECONDS over
# its seed corpus (tests/fuzz/make_seeds.py), as CI does. A crash leaves crash-* files in
# build-fuzz/findings and fails the run.
fuzz:
	@$(MAKE) -s -j$(NPROC) FUZZ=1 fuzz-build

fuzz-build: $(FUZZERS)

FUZZ_SECONDS ?= 30
fuzz-smoke: fixtures fuzz
	@scripts/fuzz-smoke.sh build-fuzz $(OUTPUT) $(FUZZ_SECONDS)

# The fixtures do not depend on the build's flags: one set, in build/fixtures, that the
# sanitizer build's folder links to.
fixtures:
	@$(MAKE) -s -C tests/fixtures OUTPUT=$(abspath build)/fixtures
ifneq ($(OUTPUT),build)
	@[ -L $(OUTPUT)/fixtures ] || rm -rf $(OUTPUT)/fixtures
	@mkdir -p $(OUTPUT) && ln -sfn ../build/fixtures $(OUTPUT)/fixtures
endif

unit: $(UNIT_BINS)

# The suite runs in parallel (tests/run_tests.py -j, TEST_JOBS, default 2 per CPU); what it
# needs is built first, in parallel too. TEST_ARGS goes to tests/run_tests.py (names to run,
# --plain-after build-san: what CI runs again plain after the sanitizer run, see .ci/run).
NPROC := $(shell nproc 2>/dev/null || echo 2)
TEST_ARGS ?=
TEST_NEEDS := all unit fixtures check-layers build/bench/libs/list.txt

# The 500 generated objects of the cache tests (and the benches): built once, in parallel, for
# every build (build/bench/libs).
build/bench/libs/list.txt: bench/gen_libs.sh
	@bench/gen_libs.sh $(dir $@) 500

# What the plain suite needs, before it runs: the packages, the builds and the fixtures, and the
# other distributions' roots (debootstrap). Its own target, to be made ahead of a run of the suite.
# The roots are made while the packages install and the build runs: much of debootstrap's time
# is the network's and the disk's, not the CPU's, and it needs only itself and python3 (each root
# has a dpkg of its own, so the system's apt lock is not shared). On a fresh Debian 12 root, alone:
# packages 389 s, then the build 132 s beside the roots' 365 s (754 s), before they overlapped.
test-needs:
	@scripts/install-deps.sh debootstrap python3
	@(cd tests/e2e && python3 distro_roots.py --prepare) & roots=$$!; \
		$(MAKE) -s deps && $(MAKE) -s -j$(NPROC) $(TEST_NEEDS) static; built=$$?; \
		wait $$roots; exit $$built

test: test-needs
	@python3 tests/run_tests.py --build $(OUTPUT) $(TEST_ARGS)

# The whole suite against an ASan+UBSan build (build-san/).
test-san: deps
	@$(MAKE) -s -j$(NPROC) SAN=1 $(TEST_NEEDS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:fast_unwind_on_malloc=0 \
		LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		python3 tests/run_tests.py --build build-san $(TEST_ARGS)

# The kill-and-race campaign (tests/stress): STRESS_TRIALS trials, figures on stdout.
STRESS_TRIALS ?= 800
stress: all fixtures
	@python3 tests/stress/stress.py --build $(OUTPUT) --trials $(STRESS_TRIALS)

# The demo needs no real-world stack: it installs only what the build and its fixtures need.
demo:
	@scripts/install-deps.sh $(DEB_BUILD) $(DEB_TEST)
	@$(MAKE) -s -j$(NPROC) all demo-fixtures
	@scripts/demo.sh $(OUTPUT)

# The demo's fixtures alone: none needs a package beyond DEB_BUILD and DEB_TEST.
demo-fixtures:
	@$(MAKE) -s -C tests/fixtures OUTPUT=$(abspath build)/fixtures demo

bench: all fixtures
	@bench/run_all.sh $(OUTPUT)

# One style for the C tree (.clang-format: the kernel's, tabs, 100 columns); CI fails on any
# difference. The BPF programs keep libbpf-bootstrap's hand layout of SEC()/BPF_KPROBE().
FORMAT_SRCS = $(wildcard user/*/*.c user/*/*.h ui/*.c ui/*.h tests/unit/*.c tests/unit/*.h \
	tests/fuzz/*.c tests/fixtures/*.c tests/fixtures/*.h)

# The man page's OPTIONS entries are made from each command's option table (cliopt.h), as its
# --help and completion are; test_cli fails while the committed page differs from them.
docs: dlscope
	@scripts/man-options.sh ./dlscope docs/dlscope.1.md

format:
	@clang-format -i $(FORMAT_SRCS)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRCS) && echo "format-check: $(words $(FORMAT_SRCS)) files as .clang-format says"

clean:
	rm -rf build build-san build-fuzz dlscope dlscope-static

-include $(USER_OBJS:.o=.d) $(patsubst %.c,$(OUTPUT)/static/%.d,$(STATIC_SRCS))
