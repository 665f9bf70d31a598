# Builds every C test program: c-tests/<api>/<name>.c -> $(BUILD)/tests/<api>/<name>.
# Each API directory links the libraries a user of that API would link.

LIBS_pmi    := -lpmi
LIBS_fabric := -lpmi
LIBS_ugni   := -lugni -lpmi
LIBS_dmapp  := -ldmapp -lugni -lpmi
LIBS_utofu  := -ltofucom -lpmi
LIBS_sisci  := -lsisci -lpmi
LIBS_portals:= -lportals -lpmi

SRCS := $(wildcard c-tests/*/*.c)
SRCS := $(filter-out c-tests/common/%,$(SRCS))
BINS := $(patsubst c-tests/%.c,$(BUILD)/tests/%,$(SRCS))

all: $(BINS)

$(BUILD)/tests/%: c-tests/%.c $(wildcard c-tests/common/*.h) $(wildcard $(BUILD)/include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -o $@ $< $(LDFLAGS_TEST) $(LIBS_$(firstword $(subst /, ,$*))) -lpthread
