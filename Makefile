# softnic — build, stage, test, install.
#
#   make              release build, staged in build/ (include, lib, lib/pkgconfig, bin)
#   make check        everything CI runs: Rust tests, loom models, C tests under snrun
#                     and mpiexec, ABI checks
#   make check-full   check + heavier stress + valgrind runs
#   make run-example  a small job under snrun
#   make install PREFIX=/usr/local
#   make bench        benchmarks (see bench/)

SHELL      := /bin/bash
CARGO      ?= cargo
CC         ?= gcc
PREFIX     ?= /usr/local
SUDO       := $(shell [ $$(id -u) = 0 ] || echo sudo)
SHARED     ?= $(abspath ../shared)
BUILD      := $(abspath build)
TARGET     := $(abspath target)
REL        := $(TARGET)/release
RUST_SYSROOT_LIB := $(shell rustc --print target-libdir)
CFLAGS_TEST := -O2 -g -Wall -Wextra -Wno-unused-parameter -I$(BUILD)/include -I$(abspath c-tests/common)
LDFLAGS_TEST := -L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib

# Vendor libraries we ship: cargo artefact -> staged file name (soname) and dev symlink.
# An API library is listed here once its issue has landed.
STAGED_LIBS := libpmi.so:libpmi.so.0 libugni.so:libugni.so.0 libdmapp.so:libdmapp.so.1 libtofutop.so:libtofutop.so libtofucom.so:libtofucom.so libportals.so:libportals.so libsisci.so:libsisci.so
# Other names programs link by: the guide prints -ltofufocom; Portals reference-implementation
# programs link -lportals3 -lportals3-utcp (one library here, so one instance of its state).
LIB_ALIASES := libtofufocom.so:libtofucom.so libportals3.so:libportals.so libportals3-utcp.so:libportals.so
# sheet:header:library checked by check-abi
ABI_CHECKS  := pmi.md:pmi.h:libpmi.so gni.md:gni_pub.h:libugni.so dmapp.md:dmapp.h:libdmapp.so utofu.md:utofu.h:libtofucom.so jtofu.md:jtofu.h:libtofutop.so portals3.md:portals3.h:libportals.so sisci.md:sisci_api.h:libsisci.so
# Checks a header fails on purpose (abi-check --ignore), by header (dots as underscores):
# sisci_api.h is today's SISCI (size_t sizes and offsets, 64-bit sci_ioaddr_t and
# sci_query_map_t.data) where the sheet's sections A-F record the 1.10 header.
export ABI_IGNORE_sisci_api_h := ^(SCIGetRemoteSegmentSize|SCIMapRemoteSegment|SCIMapLocalSegment|SCICreateSegment|SCIAttachPhysicalMemory|SCIMemCpy|SCIRegisterSegmentMemory|SCIConnectSCISpace|SCIAttachLocalSegment)$$|sci_query_(local_segment|remote_segment|map)_t

# Tests and benchmarks send network-engine traffic over loopback only (make check, make
# bench and everything they start; the engine itself listens on loopback when every rank
# of a job is on this machine).
export FI_TCP_IFACE ?= lo
export FI_UDP_IFACE ?= lo

# Copies a file into build/ by rename: a program running from the old file keeps its
# inode (overwriting a mapped library in place crashes it with SIGBUS).  Unchanged files
# are left alone.
PUT = put() { cmp -s "$$1" "$$2" || { cp -f "$$1" "$$2.tmp.$$$$" && mv -f "$$2.tmp.$$$$" "$$2"; }; }; put

.PHONY: deps all build stage check check-layers check-rust check-loom check-c check-abi check-full \
        run-example deps-example install bench clean c-tests

all: stage

build:
	$(CARGO) build --release --workspace

stage: build
	@mkdir -p $(BUILD)/include $(BUILD)/lib/pkgconfig $(BUILD)/bin $(BUILD)/libexec
	@cp -f include/*.h $(BUILD)/include/ 2>/dev/null || true
	@mkdir -p $(BUILD)/include/dis && cp -f include/dis/*.h $(BUILD)/include/dis/
	@for d in p3rt p3api; do mkdir -p $(BUILD)/include/$$d && cp -f include/$$d/*.h $(BUILD)/include/$$d/; done
	@$(PUT) $(REL)/libsoftnic_fabric.so $(BUILD)/lib/libsoftnic_fabric.so
	@for f in $(RUST_SYSROOT_LIB)/libstd-*.so; do $(PUT) $$f $(BUILD)/lib/$$(basename $$f); done
	@for pair in $(STAGED_LIBS); do \
	    art=$${pair%%:*}; so=$${pair##*:}; \
	    $(PUT) $(REL)/$$art $(BUILD)/lib/$$so; \
	    if [ "$$so" != "$$art" ]; then ln -sfn $$so $(BUILD)/lib/$$art; fi; \
	done
	@for pair in $(LIB_ALIASES); do ln -sfn $${pair##*:} $(BUILD)/lib/$${pair%%:*}; done
	@$(PUT) $(REL)/snrun $(BUILD)/bin/snrun
	@$(PUT) $(REL)/sn-trace-merge $(BUILD)/bin/sn-trace-merge
	@$(PUT) launcher/sn-vhost $(BUILD)/bin/sn-vhost && chmod +x $(BUILD)/bin/sn-vhost
	@$(PUT) $(REL)/fabric-jobtest $(BUILD)/libexec/fabric-jobtest
	@for pc in pkgconfig/*.pc.in; do \
	    [ -e "$$pc" ] || continue; \
	    out=$(BUILD)/lib/pkgconfig/$$(basename $${pc%.in}); \
	    sed -e 's|@PREFIX@|$(BUILD)|g' $$pc > $$out; \
	done
	@echo "staged in $(BUILD)"

# ---- tests -------------------------------------------------------------------

# Test prerequisites from the distribution: MPICH (for the mpiexec runs and the
# MPI program under snrun), libfabric (the network engine loads it at run time), Slurm
# and munge (a one-machine cluster for the srun tests) and valgrind (check-full).
# Installed only when missing.
deps:
	@need=""; \
	command -v mpiexec >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1 || need="$$need mpich libmpich-dev"; \
	ldconfig -p 2>/dev/null | grep -q 'libfabric\.so\.1 ' || need="$$need libfabric1"; \
	command -v fi_pingpong >/dev/null 2>&1 || need="$$need libfabric-bin"; \
	command -v slurmd >/dev/null 2>&1 && command -v srun >/dev/null 2>&1 || need="$$need munge slurmctld slurmd slurm-client"; \
	if [ -n "$$need" ]; then \
	    echo "installing$$need (tests run programs under mpiexec and over libfabric)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$need >/dev/null; \
	fi

# The example job needs only MPICH (the uTofu sample is an MPI program).
deps-example:
	@command -v mpicc >/dev/null 2>&1 && command -v mpiexec >/dev/null 2>&1 || { \
	    echo "installing mpich libmpich-dev (the uTofu seed sample is an MPI program)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq mpich libmpich-dev >/dev/null; }

check: deps stage check-layers check-rust check-loom check-c check-abi
	@echo "make check: all stages passed"

# Each crate's files form a tree: no module imports one that imports it back.
check-layers:
	python3 c-tests/tools/module-tree.py fabric pmi-rs launcher ugni-sys dmapp-rs jtofu-rs utofu-rs sisci-rs portals-rs

check-rust:
	$(CARGO) test --release --workspace

# Loom models live in fabric (cfg(loom)); separate target dir so the normal
# build is not invalidated.
check-loom:
	RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 $(CARGO) test --release -p fabric \
	    --target-dir $(TARGET)/loom --lib loom

c-tests: stage
	@$(MAKE) --no-print-directory -f c-tests/c-tests.mk BUILD=$(BUILD) SHARED=$(SHARED) \
	    CC="$(CC)" CFLAGS_TEST="$(CFLAGS_TEST)" LDFLAGS_TEST="$(LDFLAGS_TEST)"

# The srun tests need a running Slurm cluster: one is started under build/slurm for the
# run (when it cannot start, for want of root, those tests say so and are skipped).
# The network tests run twice: over the engine's own transport (its default) and over
# libfabric (c-tests/tools/gen-libfabric-list.py).
check-c: c-tests
	@python3 c-tests/tools/gen-libfabric-list.py c-tests/net.list > $(BUILD)/tests/net-libfabric.list
	@c-tests/tools/slurm-up down $(BUILD)/slurm; \
	conf=$$(c-tests/tools/slurm-up $(BUILD)/slurm 2>$(BUILD)/slurm-up.log) && eval "$$conf" || echo "no test Slurm cluster: $$(tail -1 $(BUILD)/slurm-up.log)"; \
	BUILD=$(BUILD) SHARED=$(SHARED) c-tests/run.sh c-tests/*.list $(BUILD)/tests/net-libfabric.list; rc=$$?; \
	c-tests/tools/slurm-up down $(BUILD)/slurm; exit $$rc

check-abi: stage
	@set -e; for pair in $(ABI_CHECKS); do \
	    sheet=$${pair%%:*}; rest=$${pair#*:}; hdr=$${rest%%:*}; lib=$${rest#*:}; \
	    v=ABI_IGNORE_$${hdr//./_}; ign=$${!v:-}; \
	    line=$$($(SHARED)/tools/abi-check $(SHARED)/abi/$$sheet $$hdr -I $(BUILD)/include --lib $(BUILD)/lib/$$lib $${ign:+--ignore "$$ign"} | tail -1); \
	    echo "$$line"; \
	    case "$$line" in *" 0 mismatched, 0 missing, 0 symbols not exported"*) ;; \
	        *) echo "abi-check $$hdr FAILED"; exit 1 ;; esac; \
	done

check-full: check
	@command -v valgrind >/dev/null || { export DEBIAN_FRONTEND=noninteractive; $(SUDO) apt-get install -y -qq valgrind >/dev/null; }
	python3 c-tests/tools/gen-vhost-list.py c-tests/ugni-*.list c-tests/dmapp.list > $(BUILD)/tests/vhost-sweep.list
	BUILD=$(BUILD) SHARED=$(SHARED) SOFTNIC_STRESS=1 c-tests/run.sh c-tests/full/*.list $(BUILD)/tests/vhost-sweep.list
	SOFTNIC_STRESS=1 $(CARGO) test --release --workspace -- --include-ignored
	SHARED=$(SHARED) c-tests/tools/check-sweep $(BUILD) c-tests/ugni-core.list c-tests/ugni-data.list c-tests/ugni-more.list \
	    c-tests/dmapp.list c-tests/portals.list c-tests/sisci.list c-tests/utofu.list c-tests/fabric.list c-tests/mpi.list c-tests/launcher.list

# ---- examples, install, bench --------------------------------------------------

# The example job: builds only the programs it runs (quietly), then one job per API.
EXAMPLE_PROGS := $(BUILD)/tests/pmi/pmi_hello $(BUILD)/tests/ugni/data_smsg $(BUILD)/examples/dmapp_put \
                 $(BUILD)/examples/utofu/utofu_armw_game $(BUILD)/tests/portals/ptl_threads $(BUILD)/tests/sisci/sisci_pingpong \
                 $(BUILD)/tests/ugni/check_bugs $(BUILD)/tests/ugni/fault_transfer
run-example: deps-example stage
	@echo "== building the example programs"
	@$(MAKE) -s --no-print-directory -f c-tests/c-tests.mk BUILD=$(BUILD) SHARED=$(SHARED) \
	    CC="$(CC)" CFLAGS_TEST="$(CFLAGS_TEST)" LDFLAGS_TEST="$(LDFLAGS_TEST)" $(EXAMPLE_PROGS)
	@echo "== PMI: 4 ranks say who they are"
	$(BUILD)/bin/snrun -n 4 --label $(BUILD)/tests/pmi/pmi_hello
	@echo "== uGNI: SMSG ping-pong and ring between 4 ranks on 2 virtual nodes"
	$(BUILD)/bin/snrun -n 4 -N 2 $(BUILD)/tests/ugni/data_smsg
	@echo "== DMAPP: the seed sample dmapp_put.c, unchanged, on 4 PEs"
	XT_SYMMETRIC_HEAP_SIZE=64M $(BUILD)/bin/snrun -n 4 $(BUILD)/examples/dmapp_put
	@echo "== uTofu: the seed sample utofu_armw_game.c, unchanged (an MPI program), 4 ranks"
	$(BUILD)/bin/snrun -n 4 -N 1 $(BUILD)/examples/utofu/utofu_armw_game
	@echo "== Portals: 4 threads per rank put to the right neighbour, events read by 4 consumers"
	$(BUILD)/bin/snrun -n 2 $(BUILD)/tests/portals/ptl_threads 4 100
	@echo "== SISCI: PIO ping-pong through mapped remote segments, 2 nodes"
	$(BUILD)/bin/snrun -n 2 -N 1 $(BUILD)/tests/sisci/sisci_pingpong 1000 64
	@echo "== what no hardware gives (1): the checker names a planted bug (a put's source reused before its completion)"
	SOFTNIC_CHECK=1 $(BUILD)/bin/snrun -n 2 $(BUILD)/tests/ugni/check_bugs reuse
	@echo "== (2) injected faults: every 4th uGNI post lost in the network, then retried"
	SOFTNIC_FAULTS='transfer:after=1,every=4,times=3' $(BUILD)/bin/snrun -n 2 $(BUILD)/tests/ugni/fault_transfer 1 4
	@echo "== (3) the timeline: the DMAPP sample again, traced"
	rm -rf $(BUILD)/timeline && SOFTNIC_TRACE=$(BUILD)/timeline XT_SYMMETRIC_HEAP_SIZE=64M $(BUILD)/bin/snrun -n 4 $(BUILD)/examples/dmapp_put >/dev/null
	@echo "   open $(BUILD)/timeline/softnic-trace.json at https://ui.perfetto.dev (README: The timeline)"
	@echo "== every API ran; the libraries and headers are in $(BUILD)/lib and $(BUILD)/include"

install: stage
	install -d $(PREFIX)/include $(PREFIX)/lib/pkgconfig $(PREFIX)/bin
	cp -a $(BUILD)/include/. $(PREFIX)/include/
	cp -a $(BUILD)/lib/. $(PREFIX)/lib/
	for pc in pkgconfig/*.pc.in; do [ -e "$$pc" ] || continue; \
	    sed -e 's|@PREFIX@|$(PREFIX)|g' $$pc > $(PREFIX)/lib/pkgconfig/$$(basename $${pc%.in}); done
	install -m 0755 $(BUILD)/bin/snrun $(PREFIX)/bin/snrun
	install -m 0755 $(BUILD)/bin/sn-trace-merge $(PREFIX)/bin/sn-trace-merge

# Benchmarks (bench/README.md): peers installed when missing (bench/deps.sh), programs
# built into build/bench, then bench/run.py writes bench/results/latest.{json,md,png}.
# BENCH_ARGS passes runner options, e.g. BENCH_ARGS="--only ugni --reps 3".
bench: stage
	@PY=$$(SUDO="$(SUDO)" bench/deps.sh) && \
	$(MAKE) --no-print-directory -C bench BUILD=$(BUILD) CC="$(CC)" && \
	$$PY bench/run.py --build $(BUILD) $(BENCH_ARGS)

clean:
	$(CARGO) clean
	rm -rf $(BUILD)
