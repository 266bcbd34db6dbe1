# Tally: top-level build.
#
# Kernel objects go to build/kernel/, host unit tests to build/unit/ (or
# build/cov/ with COV=1).  Every target is safe under make -j.
#
#   make            build build/tally.iso
#   make run        boot it in QEMU (KVM when usable), serial on the terminal
#   make check      unit tests + QEMU boot tests, one "N passed, N failed" line
#   make debug      boot stopped, waiting for gdb on :1234
#   make coverage   line coverage of the host-tested modules
#   make bench      perfmon microbenchmarks in QEMU
#   make help       this list

SMP ?= 4
MEM ?= 256M
KVM ?= auto
V ?= 0

BUILD := build
KBUILD := $(BUILD)/kernel
ifeq ($(COV),1)
UBUILD := $(BUILD)/cov
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
KCFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -g -ffreestanding \
	-fno-pic -fno-pie -mcmodel=kernel -mno-red-zone -mgeneral-regs-only \
	-mno-mmx -mno-sse -mno-sse2 -fno-stack-protector -fno-omit-frame-pointer \
	-fno-asynchronous-unwind-tables -fno-strict-aliasing -I. -MMD -MP
KLDFLAGS := -nostdlib -static -no-pie -z max-page-size=0x1000 -z noexecstack \
	-Wl,--build-id=none -T linker.ld
NASMFLAGS := -f elf64 -g -F dwarf

KSRCS := $(sort $(wildcard arch/x86/*.c kern/*.c drivers/*/*.c tests/kernel/*.c))
KASMS := $(sort $(wildcard arch/x86/*.asm arch/x86/boot/*.asm))
KOBJS := $(patsubst %.c,$(KBUILD)/%.o,$(KSRCS)) \
	$(patsubst %.asm,$(KBUILD)/%.o,$(KASMS))

KERNEL := $(BUILD)/tally.elf
ISO := $(BUILD)/tally.iso

.PHONY: all run debug check unit-tests boot-tests coverage bench deps clean help \
	list-unit-tests
all: $(ISO)

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

# The kernel embeds its own symbol table for panic backtraces.  It is linked
# twice: first with an empty table, then with the table generated from the
# first link.  The table lives in the last loaded section, so adding it moves
# no other symbol; tools/gensyms checks that.
$(BUILD)/symtab0.o: tools/gensyms
	@mkdir -p $(dir $@)
	$(Q)tools/gensyms --empty > $(BUILD)/symtab0.c
	$(Q)$(CC) $(KCFLAGS) -c $(BUILD)/symtab0.c -o $@

$(BUILD)/tally.pass1.elf: $(KOBJS) $(BUILD)/symtab0.o linker.ld
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(KLDFLAGS) -o $@ $(KOBJS) $(BUILD)/symtab0.o

$(BUILD)/symtab.o: $(BUILD)/tally.pass1.elf tools/gensyms
	$(Q)tools/gensyms $< > $(BUILD)/symtab.c
	$(Q)$(CC) $(KCFLAGS) -c $(BUILD)/symtab.c -o $@

$(KERNEL): $(KOBJS) $(BUILD)/symtab.o linker.ld
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(KLDFLAGS) -o $@ $(KOBJS) $(BUILD)/symtab.o
	$(Q)tools/gensyms --verify $(BUILD)/tally.pass1.elf $@

$(ISO): $(KERNEL) tools/mkiso
	@[ "$(V)" = 1 ] || echo "  ISO     $@"
	$(Q)tools/mkiso $(KERNEL) $@

# ---- host unit tests (cmocka) ----------------------------------------------
# Each tests/unit/NAME.mk adds NAME to UNIT_TESTS and sets NAME_SRCS: the test,
# the unit under test and the fakes it links against.  Nothing else to edit.
UCFLAGS := -std=gnu11 -Wall -Wextra -Werror -O0 -g -I. -Itests/unit \
	-DTALLY_HOST_TEST -MMD -MP
ULDLIBS := -lcmocka
ifeq ($(COV),1)
UCFLAGS += --coverage
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

unit-tests: $(UNIT_BINS)
	$(Q)tools/check --unit-only $(UNIT_BINS)

list-unit-tests:
	@echo $(UNIT_TESTS)

# ---- whole suite -----------------------------------------------------------
check: deps
	$(Q)$(MAKE) --no-print-directory $(ISO) $(UNIT_BINS)
	$(Q)tools/check $(if $(filter 1,$(KVM)),--kvm) $(UNIT_BINS)

boot-tests: $(ISO)
	$(Q)tools/check --boot-only $(if $(filter 1,$(KVM)),--kvm)

coverage: deps
	$(Q)$(MAKE) --no-print-directory COV=1 $(addprefix $(BUILD)/cov/,$(UNIT_TESTS))
	$(Q)tools/coverage $(BUILD)/cov $(addprefix $(BUILD)/cov/,$(UNIT_TESTS))

run: deps
	$(Q)$(MAKE) --no-print-directory $(ISO)
	$(Q)tools/qemu run --iso $(ISO) --smp $(SMP) --mem $(MEM) --kvm $(KVM)

debug: deps
	$(Q)$(MAKE) --no-print-directory $(ISO)
	@echo "gdb $(KERNEL) -ex 'target remote :1234'"
	$(Q)tools/qemu run --iso $(ISO) --smp $(SMP) --mem $(MEM) --kvm $(KVM) --gdb

bench: deps
	$(Q)$(MAKE) --no-print-directory $(ISO)
	$(Q)tools/bench --iso $(ISO)

clean:
	rm -rf $(BUILD)

help:
	@sed -n '3,14p' Makefile | sed 's/^# \{0,1\}//'

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
