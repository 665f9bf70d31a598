# Builds every C test program: c-tests/<api>/<name>.c -> $(BUILD)/tests/<api>/<name>.
# Each API directory links the libraries a user of that API would link.

LIBS_pmi    := -lpmi
LIBS_fabric := -lpmi
LIBS_ugni   := -lugni -lpmi
LIBS_dmapp  := -ldmapp -lugni -lpmi
LIBS_utofu  := -ltofutop -ltofucom
LIBS_sisci  := -lsisci -lpmi
LIBS_portals:= -lportals -lpmi
# MPI programs that also use our libraries (the PMI relay); built with mpicc.
LIBS_mpi    := -ldmapp -lugni -lpmi

SRCS := $(wildcard c-tests/*/*.c)
SRCS := $(filter-out c-tests/common/%,$(SRCS))
BINS := $(patsubst c-tests/%.c,$(BUILD)/tests/%,$(SRCS))

all: $(BINS)

$(BUILD)/tests/%: c-tests/%.c $(wildcard c-tests/common/*.h) $(wildcard $(BUILD)/include/*.h)
	@mkdir -p $(dir $@)
	$(or $(CC_$(firstword $(subst /, ,$*))),$(CC)) $(CFLAGS_TEST) -o $@ $< $(LDFLAGS_TEST) $(LIBS_$(firstword $(subst /, ,$*))) -lpthread

# Some Portals tests are built the way reference-implementation programs are: the NAL
# header through P3_NAL, linked with the reference library names, without libpmi.
PTL_REF_STYLE := ptl_ref ptl_rt ptl_fork
$(addprefix $(BUILD)/tests/portals/,$(PTL_REF_STYLE)): $(BUILD)/tests/portals/%: c-tests/portals/%.c $(wildcard $(BUILD)/include/*.h $(BUILD)/include/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -DP3_NAL='<p3nal_utcp.h>' -o $@ $< $(LDFLAGS_TEST) -lportals3 -lportals3-utcp

# A DMAPP program whose data segment straddles an aligned GiB: loaded at a fixed address
# just below 1 GiB, so its 8 MiB array crosses 0x40000000.
$(BUILD)/tests/dmapp/dmapp_straddle: c-tests/dmapp/dmapp_straddle.c $(wildcard c-tests/common/*.h c-tests/dmapp/*.h) $(wildcard $(BUILD)/include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -no-pie -o $@ $< $(LDFLAGS_TEST) -Wl,-Ttext-segment=0x3fc00000 $(LIBS_dmapp) -lpthread

# A Portals program that is also an MPI program.
$(BUILD)/tests/portals/ptl_with_mpi: c-tests/portals/ptl_with_mpi.c $(wildcard c-tests/portals/*.h) $(wildcard $(BUILD)/include/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS_TEST) -o $@ $< $(LDFLAGS_TEST) -lportals

# uTofu programs are MPI programs, as the guide's are (ids are exchanged through MPI).
MPICC ?= mpicc
CC_utofu := $(MPICC)
CC_mpi := $(MPICC)

# The uTofu seed samples, compiled unchanged with mpicc.
UTOFU_SAMPLES := $(patsubst $(SHARED)/samples/utofu/%.c,$(BUILD)/examples/utofu/%,$(wildcard $(SHARED)/samples/utofu/*.c))
all: $(UTOFU_SAMPLES)
$(BUILD)/examples/utofu/%: $(SHARED)/samples/utofu/%.c $(wildcard $(BUILD)/include/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) -I$(BUILD)/include $< -L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -ltofucom -o $@

# The DMAPP seed sample, compiled unchanged (run-example and c-tests/net.list run it).
all: $(BUILD)/examples/dmapp_put
$(BUILD)/examples/dmapp_put: $(SHARED)/samples/dmapp/dmapp_put.c $(wildcard $(BUILD)/include/*.h)
	@mkdir -p $(dir $@)
	$(CC) -I$(BUILD)/include $< -L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -ldmapp -lugni -lpmi -o $@

# Null sweeps: every function of a fact sheet called with all-zero arguments
# (c-tests/tools/gen-null-sweep.py); generated from ../shared/abi at build time.
SWEEP_GEN := c-tests/tools/gen-null-sweep.py
SWEEPS := $(BUILD)/tests/sweep/gni_null_sweep $(BUILD)/tests/sweep/dmapp_null_sweep $(BUILD)/tests/sweep/pmi_null_sweep $(BUILD)/tests/sweep/utofu_null_sweep \
          $(BUILD)/tests/sweep/portals_null_sweep $(BUILD)/tests/sweep/portals_null_sweep_init \
          $(BUILD)/tests/sweep/sisci_null_sweep
all: $(SWEEPS)

$(BUILD)/tests/sweep/gni_null_sweep: $(SWEEP_GEN) $(SHARED)/abi/gni.md $(BUILD)/include/gni_pub.h
	@mkdir -p $(dir $@)
	python3 $(SWEEP_GEN) $(SHARED)/abi/gni.md gni_pub.h GNI_ gni_return_t GNI_RC_SUCCESS > $@.c
	$(CC) $(CFLAGS_TEST) -Wno-unused-value -o $@ $@.c $(LDFLAGS_TEST) -lugni -lpmi

$(BUILD)/tests/sweep/dmapp_null_sweep: $(SWEEP_GEN) $(SHARED)/abi/dmapp.md $(BUILD)/include/dmapp.h
	@mkdir -p $(dir $@)
	python3 $(SWEEP_GEN) $(SHARED)/abi/dmapp.md dmapp.h dmapp_ dmapp_return_t DMAPP_RC_SUCCESS > $@.c
	$(CC) $(CFLAGS_TEST) -Wno-unused-value -o $@ $@.c $(LDFLAGS_TEST) -ldmapp -lugni -lpmi

# PMI_Abort is left out: ending the job is its documented effect.
$(BUILD)/tests/sweep/pmi_null_sweep: $(SWEEP_GEN) $(SHARED)/abi/pmi.md $(BUILD)/include/pmi.h
	@mkdir -p $(dir $@)
	python3 $(SWEEP_GEN) $(SHARED)/abi/pmi.md pmi.h PMI_ int PMI_SUCCESS PMI_Abort > $@.c
	$(CC) $(CFLAGS_TEST) -Wno-unused-value -o $@ $@.c $(LDFLAGS_TEST) -lpmi

$(BUILD)/tests/sweep/utofu_null_sweep: $(SWEEP_GEN) $(SHARED)/abi/utofu.md $(BUILD)/include/utofu.h
	@mkdir -p $(dir $@)
	python3 $(SWEEP_GEN) $(SHARED)/abi/utofu.md utofu.h utofu_ int UTOFU_SUCCESS > $@.c
	$(CC) $(CFLAGS_TEST) -Wno-unused-value -o $@ $@.c $(LDFLAGS_TEST) -ltofucom

# SISCI reports through a trailing sci_error_t *error (out:sci_error_t); its handles are
# sci_*_t pointer typedefs.  The sheet's 1.10 prototypes and today's (section G) are both
# swept.
$(BUILD)/tests/sweep/sisci_null_sweep: $(SWEEP_GEN) $(SHARED)/abi/sisci.md $(BUILD)/include/sisci_api.h
	@mkdir -p $(dir $@)
	python3 $(SWEEP_GEN) $(SHARED)/abi/sisci.md sisci_api.h SCI out:sci_error_t SCI_ERR_OK '' '^sci_(desc|local_segment|remote_segment|map|sequence|dma_queue|dma_channel|local_interrupt|remote_interrupt|local_data_interrupt|remote_data_interrupt|smartio_device|block_transfer)_t$$' > $@.c
	$(CC) $(CFLAGS_TEST) -Wno-unused-value -o $@ $@.c $(LDFLAGS_TEST) -lsisci

# One SISCI test built as a threaded program (-pthread defines _REENTRANT): it calls the
# multithreaded symbol names (_SISCI_PUBLIC_FUNC_MT_*).
all: $(BUILD)/tests/sisci/sisci_threads_mt
$(BUILD)/tests/sisci/sisci_threads_mt: c-tests/sisci/sisci_threads.c $(wildcard c-tests/sisci/*.h) $(wildcard $(BUILD)/include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -pthread -D_REENTRANT -o $@ $< $(LDFLAGS_TEST) -lsisci -lpmi

# Every flag and query constant of sisci_api.h against the data objects of libsisci.so.
all: $(BUILD)/tests/sisci/sisci_consts
$(BUILD)/tests/sisci/sisci_consts: c-tests/sisci/gen-consts.py $(BUILD)/include/sisci_api.h
	@mkdir -p $(dir $@)
	python3 c-tests/sisci/gen-consts.py $(BUILD)/include/sisci_api.h > $@.c
	$(CC) $(CFLAGS_TEST) -o $@ $@.c $(LDFLAGS_TEST) -lsisci -ldl

# An MPI program that uses SISCI (c-tests/mpi.list).
$(BUILD)/tests/mpi/mpi_sisci: c-tests/mpi/mpi_sisci.c $(wildcard c-tests/common/*.h) $(wildcard $(BUILD)/include/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS_TEST) -o $@ $< $(LDFLAGS_TEST) -lsisci -lpthread

# Portals: the sweep as generated (every call before PtlInit), and the same calls with the
# library and an NI initialised first (sweep_init.inc), where they meet the argument checks.
$(BUILD)/tests/sweep/portals_null_sweep: $(SWEEP_GEN) $(SHARED)/abi/portals3.md $(BUILD)/include/portals3.h
	@mkdir -p $(dir $@)
	python3 $(SWEEP_GEN) $(SHARED)/abi/portals3.md portals3.h Ptl int PTL_OK > $@.c
	$(CC) $(CFLAGS_TEST) -Wno-unused-value -o $@ $@.c $(LDFLAGS_TEST) -lportals

$(BUILD)/tests/sweep/portals_null_sweep_init: $(BUILD)/tests/sweep/portals_null_sweep c-tests/portals/sweep_init.inc
	{ echo '#include "$(abspath c-tests/portals/sweep_init.inc)"'; cat $<.c; } > $@.c
	$(CC) $(CFLAGS_TEST) -Wno-unused-value -o $@ $@.c $(LDFLAGS_TEST) -lportals
