# Tally: top-level build.
#
# Kernel objects go to build/kernel/, host unit tests to build/unit/ (or
# build/cov/ with COV=1).  Every target is safe under make -j.
#
# `make help` lists the targets and variables from the "## text" lines just
# above each (tools/makehelp); every .PHONY target needs one
# (tests/tools/test_makehelp.py checks).

## CPUs of the guest (run, debug; default 4, under KVM no more than the host has)
SMP ?=
## memory of the guest (run, debug)
MEM ?= 256M
## auto: KVM when /dev/kvm works, else TCG; 0: TCG; 1: KVM
## (run, debug; check and boot-tests: 1 boots the tests under KVM)
KVM ?= auto
## 1: print the build commands in full
V ?= 0
## 1: run and debug boot build/tally-test.iso, which runs the
## in-kernel tests, instead of build/tally.iso
TEST ?= 0
## kernel options for run and debug (e.g. "softpmu.width=16
## perfmon.hook=off"); panic=exit is always added: a panic ends QEMU
CMDLINE ?=
## 1: build the unit tests with coverage, into build/cov/ (what
## make coverage does)
COV ?= 0
## 1: build the unit tests with AddressSanitizer and UndefinedBehavior-
## Sanitizer, into build/san/ (what make check runs too)
SAN ?= 0
## the file the guest's COM2 writes to: `perfmon record` streams its
## recordings there in perf's format (run, debug, perf-report)
PERFSTREAM ?= build/perf.stream

BUILD := build
KBUILD := $(BUILD)/kernel
ifeq ($(COV),1)
UBUILD := $(BUILD)/cov
else ifeq ($(SAN),1)
UBUILD := $(BUILD)/san
else
UBUILD := $(BUILD)/unit
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

CC := gcc
NASM := nasm
HOSTCC := gcc

# Kernel code: freestanding, no red zone (interrupts push onto the current
# stack), kernel code model for the higher half, no SSE/x87 state to save.
# Frame pointers and no sibling calls: sampled call chains are walked by
# frame pointers, and a tail call would drop its caller's frame.
KCFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -g -ffreestanding \
	-fno-pic -fno-pie -mcmodel=kernel -mno-red-zone -mgeneral-regs-only \
	-mno-mmx -mno-sse -mno-sse2 -fno-stack-protector -fno-omit-frame-pointer \
	-fno-optimize-sibling-calls -fno-asynchronous-unwind-tables \
	-fno-strict-aliasing -I. -MMD -MP
KLDFLAGS := -nostdlib -static -no-pie -z max-page-size=0x1000 -z noexecstack \
	-Wl,--build-id=none -T linker.ld
NASMFLAGS := -f elf64 -g -F dwarf

# The in-kernel tests (tests/kernel/, KTEST_DEFINE) go only into the test
# image: a kernel someone boots carries no test code.  Both images link the
# same objects in the same order, tests last, so the kernel's own code sits
# at the same addresses in both (placement moves TCG timings; see
# kern/perfmon/cmd/BENCH.md).
KSRCS := $(sort $(wildcard arch/x86/*.c kern/*.c kern/perfmon/*.c \
	kern/perfmon/cmd/*.c drivers/*/*.c))
KASMS := $(sort $(wildcard arch/x86/*.asm arch/x86/boot/*.asm))
KOBJS := $(patsubst %.c,$(KBUILD)/%.o,$(KSRCS)) \
	$(patsubst %.asm,$(KBUILD)/%.o,$(KASMS))
KTEST_SRCS := $(sort $(wildcard tests/kernel/*.c))
KTEST_OBJS := $(patsubst %.c,$(KBUILD)/%.o,$(KTEST_SRCS))

KERNEL := $(BUILD)/tally.elf
ISO := $(BUILD)/tally.iso
TEST_KERNEL := $(BUILD)/tally-test.elf
TEST_ISO := $(BUILD)/tally-test.iso

.PHONY: all run debug check unit-tests boot-tests coverage bench deps clean help \
	list-unit-tests perf-report flamegraph fuzz
## build build/tally.iso, and build/tally-test.iso with the in-kernel tests
all: $(ISO) $(TEST_ISO)

## check for the Debian packages the build and tests need (installs them
## as root)
deps:
	$(Q)tools/deps

$(KBUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@[ "$(V)" = 1 ] || echo "  CC      $<"
	$(Q)$(CC) $(KCFLAGS) -c $< -o $@

$(KBUILD)/%.o: %.asm
	@mkdir -p $(dir $@)
	@[ "$(V)" = 1 ] || echo "  NASM    $<"
	$(Q)$(NASM) $(NASMFLAGS) -MD $(@:.o=.d) -MP $< -o $@

# Each kernel image embeds its own symbol table for panic backtraces.  It is
# linked twice: first with an empty table, then with the table generated
# from the first link.  The table lives in the last loaded section, so
# adding it moves no other symbol; tools/gensyms checks that.
$(BUILD)/symtab0.o: tools/gensyms
	@mkdir -p $(dir $@)
	$(Q)tools/gensyms --empty > $(BUILD)/symtab0.c
	$(Q)$(CC) $(KCFLAGS) -c $(BUILD)/symtab0.c -o $@

# $(call kernel_image,NAME,OBJECTS): build/NAME.elf, by way of
# build/NAME.pass1.elf and build/NAME.symtab.o.  The link depends on this
# Makefile too, which says which objects go into which image.
define kernel_image
$(BUILD)/$(1).pass1.elf: $(2) $(BUILD)/symtab0.o linker.ld Makefile
	@[ "$(V)" = 1 ] || echo "  LD      $$@"
	$(Q)$(CC) $(KLDFLAGS) -o $$@ $(2) $(BUILD)/symtab0.o

$(BUILD)/$(1).symtab.o: $(BUILD)/$(1).pass1.elf tools/gensyms
	$(Q)tools/gensyms $$< > $(BUILD)/$(1).symtab.c
	$(Q)$(CC) $(KCFLAGS) -c $(BUILD)/$(1).symtab.c -o $$@

$(BUILD)/$(1).elf: $(2) $(BUILD)/$(1).symtab.o linker.ld
	@[ "$(V)" = 1 ] || echo "  LD      $$@"
	$(Q)$(CC) $(KLDFLAGS) -o $$@ $(2) $(BUILD)/$(1).symtab.o
	$(Q)tools/gensyms --verify $(BUILD)/$(1).pass1.elf $$@
endef
$(eval $(call kernel_image,tally,$(KOBJS)))
$(eval $(call kernel_image,tally-test,$(KOBJS) $(KTEST_OBJS)))

$(ISO): $(KERNEL) tools/mkiso
	@[ "$(V)" = 1 ] || echo "  ISO     $@"
	$(Q)tools/mkiso $(KERNEL) $@

$(TEST_ISO): $(TEST_KERNEL) tools/mkiso
	@[ "$(V)" = 1 ] || echo "  ISO     $@"
	$(Q)tools/mkiso --test $(TEST_KERNEL) $@

# ---- host unit tests (cmocka) ----------------------------------------------
# Each tests/unit/NAME.mk adds NAME to UNIT_TESTS and sets NAME_SRCS: the test,
# the unit under test and the fakes it links against.  Nothing else to edit.
UCFLAGS := -std=gnu11 -Wall -Wextra -Werror -O0 -g -I. -Itests/unit \
	-DTALLY_HOST_TEST -MMD -MP
ULDLIBS := -lcmocka
ifeq ($(COV),1)
UCFLAGS += --coverage
endif
# Any report aborts the program, which tools/check counts as a failure.
ifeq ($(SAN),1)
UCFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
endif

UNIT_TESTS :=
include $(sort $(wildcard tests/unit/*.mk))

define unit_test_rule
$(UBUILD)/$(1): $$(patsubst %.c,$(UBUILD)/obj/%.o,$$($(1)_SRCS))
	@[ "$(V)" = 1 ] || echo "  HOSTLD  $$@"
	$(Q)$(HOSTCC) $(UCFLAGS) -o $$@ $$^ $(ULDLIBS)
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call unit_test_rule,$(t))))

$(UBUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@[ "$(V)" = 1 ] || echo "  HOSTCC  $<"
	$(Q)$(HOSTCC) $(UCFLAGS) -c $< -o $@

UNIT_BINS := $(addprefix $(UBUILD)/,$(UNIT_TESTS))

## host unit tests (cmocka) and the tools' own tests
unit-tests: $(UNIT_BINS)
	$(Q)tools/check --unit-only $(UNIT_BINS)

## print the names of the host unit tests
list-unit-tests:
	@echo $(UNIT_TESTS)

# ---- fuzzing (libFuzzer, clang) -------------------------------------------
# Each tests/fuzz/NAME.mk adds NAME to FUZZ_TARGETS and sets NAME_SRCS: the
# target, the kernel modules it feeds and the host fakes they call, as the
# unit tests do.  Every target also links tests/fuzz/fuzz_support.c.  All
# of it is built with AddressSanitizer and UndefinedBehaviorSanitizer, any
# report aborting, into build/fuzz/NAME.
## seconds each fuzz target runs in `make fuzz`
FUZZ_SECONDS ?= 180
## seconds the guest API fuzzer runs in `make fuzz`
GUEST_FUZZ_SECONDS ?= 120

FBUILD := $(BUILD)/fuzz
FUZZCC := clang
FCFLAGS := -std=gnu11 -Wall -Wextra -Werror -O1 -g -I. -Itests/unit \
	-Itests/fuzz -DTALLY_HOST_TEST -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -MMD -MP

FUZZ_TARGETS :=
include $(sort $(wildcard tests/fuzz/*.mk))

define fuzz_target_rule
$(FBUILD)/$(1): $$(patsubst %.c,$(FBUILD)/obj/%.o,$$($(1)_SRCS) \
		tests/fuzz/fuzz_support.c)
	@[ "$(V)" = 1 ] || echo "  FUZZLD  $$@"
	$(Q)$(FUZZCC) $(FCFLAGS) -o $$@ $$^
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_target_rule,$(t))))

$(FBUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@[ "$(V)" = 1 ] || echo "  FUZZCC  $<"
	$(Q)$(FUZZCC) $(FCFLAGS) -c $< -o $@

FUZZ_BINS := $(addprefix $(FBUILD)/,$(FUZZ_TARGETS))

## run every fuzz target FUZZ_SECONDS, then the guest API fuzzer
## GUEST_FUZZ_SECONDS (crashes: build/fuzz/crashes/; tests/README.md)
fuzz: deps
	$(Q)$(MAKE) --no-print-directory $(FUZZ_BINS) $(TEST_ISO)
	$(Q)tools/fuzz --seconds $(FUZZ_SECONDS) $(FUZZ_BINS)
	$(Q)tools/guestfuzz.py --iso $(TEST_ISO) --seconds $(GUEST_FUZZ_SECONDS)

# ---- whole suite -----------------------------------------------------------
# The unit tests built with the sanitizers, which make check runs too.
SAN_BINS := $(addprefix $(BUILD)/san/,$(UNIT_TESTS))

## unit tests (plain, then under ASan and UBSan), fuzz smoke run and QEMU
## boot tests, then one "N passed, N failed" line
check: deps
	$(Q)$(MAKE) --no-print-directory $(ISO) $(TEST_ISO) $(UNIT_BINS) \
		$(FUZZ_BINS)
	$(Q)$(MAKE) --no-print-directory SAN=1 $(SAN_BINS)
	$(Q)tools/check $(if $(filter 1,$(KVM)),--kvm) \
		$(addprefix --fuzz ,$(FUZZ_BINS)) \
		$(addprefix --sanitized ,$(SAN_BINS)) $(UNIT_BINS)

## QEMU boot tests only
boot-tests: $(ISO) $(TEST_ISO)
	$(Q)tools/check --boot-only $(if $(filter 1,$(KVM)),--kvm)

## line coverage of the host-tested modules
coverage: deps
	$(Q)$(MAKE) --no-print-directory COV=1 $(addprefix $(BUILD)/cov/,$(UNIT_TESTS))
	$(Q)tools/coverage $(BUILD)/cov $(addprefix $(BUILD)/cov/,$(UNIT_TESTS))

# TEST=1: boot the test image instead, which runs the in-kernel tests.
RUN_ISO = $(if $(filter 1,$(TEST)),$(TEST_ISO),$(ISO))

## build, then boot in QEMU with the serial console on this terminal
## (the kernel gets panic=exit: a panic ends QEMU with status 1; Ctrl-A x quits)
run: deps
	$(Q)$(MAKE) --no-print-directory $(RUN_ISO)
	$(Q)tools/qemu run --iso $(RUN_ISO) $(if $(SMP),--smp $(SMP)) --mem $(MEM) --kvm $(KVM) \
		--cmdline '$(CMDLINE)' --com2 $(PERFSTREAM)

## the same, stopped at the first instruction, gdb stub on :1234
debug: deps
	$(Q)$(MAKE) --no-print-directory $(RUN_ISO)
	$(Q)tools/qemu run --iso $(RUN_ISO) $(if $(SMP),--smp $(SMP)) --mem $(MEM) --kvm $(KVM) \
		--cmdline '$(CMDLINE)' --com2 $(PERFSTREAM) --gdb

## the last recording of a `make run` (PERFSTREAM) as build/perf.data,
## shown by perf report with build/tally.elf's symbols (tools/perfdata)
perf-report:
	$(Q)tools/perfdata report --capture $(PERFSTREAM) --elf $(KERNEL)

## build/flamegraph.svg: a flame graph of the last recording in
## $(PERFSTREAM), to open in a browser (click a box to zoom, Search)
flamegraph:
	$(Q)tools/perfdata flamegraph --capture $(PERFSTREAM) --elf $(KERNEL)

## perfmon microbenchmarks in QEMU, with a verdict per target
bench: deps
	$(Q)$(MAKE) --no-print-directory $(ISO) $(UBUILD)/pmu_msr_count_test
	$(Q)tools/bench --iso $(ISO) --msr-counts $(UBUILD)/pmu_msr_count_test

## remove build/
clean:
	rm -rf $(BUILD)

## this list
help:
	@tools/makehelp Makefile

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
