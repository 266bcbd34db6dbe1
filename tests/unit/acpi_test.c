/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the ACPI table parser (arch/x86/acpi.c, acpi_parse()).  The
 * tests build firmware tables in a host buffer with correct checksums (RSDP
 * 1.0 and 2.0, RSDT, XSDT, MADT, FADT and a DSDT holding an AML \_S5_
 * package), then corrupt one thing at a time.  They cover the choice of the
 * root table (XSDT first, RSDT when the XSDT or the extended checksum is
 * bad, RSDP 1.0 never looking at the XSDT), the rejection of a bad RSDP and
 * of tables with a bad checksum, the MADT (enabled and disabled CPUs in
 * MADT order, x2APIC entries, a CPU listed twice, the CPU_MAX limit, I/O
 * APICs, interrupt source overrides, the local APIC address override,
 * short, unknown and truncated entries) and the FADT (PM1a control port,
 * SLP_TYPa of \_S5_ with and without a byte prefix, kept when the MADT is
 * missing or unusable).  Every failure must leave the single-CPU default
 * description and never crash or loop.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "arch/x86/acpi.h"
#include "kern/error.h"
#include "kern/macros.h"

/*
 * The "physical memory" holding the tables.  It is visible through two
 * windows: one below 4 GiB, used by the 32-bit RSDT and FADT pointers, and
 * one far above, used by the XSDT, so that a 64-bit entry read as 32 bits
 * would point nowhere (the map refuses it).
 */
#define MEM_SIZE        (256 * 1024)
#define MEM_LOW         0x7f000000ULL
#define MEM_HIGH        0x400000000ULL

#define DEFAULT_LAPIC   0xfee00000ULL

/* Offsets from the ACPI specification, section 5.2. */
#define SDT_HDR_SIZE    36
#define SDT_LENGTH      4
#define SDT_CHECKSUM    9
#define RSDP_SIZE       36
#define RSDP_CHECKSUM   8
#define RSDP_XCHECKSUM  32
#define MADT_HDR_SIZE   44
#define FADT_SIZE       116

static uint8_t mem[MEM_SIZE] __attribute__((aligned(16)));
static size_t mem_top;

/* Table being built by tbl_begin()/tbl_add()/tbl_end(). */
static uint64_t tbl_cur;

/* Ranges the parser asked to map that were not all memory. */
static unsigned int nr_bad_maps;

/*
 * The map given to the parser: a range inside one window, or NULL (as the
 * kernel's does for what it cannot read).
 */
static const void *
test_map(uint64_t pa, size_t size)
{
    if (pa >= MEM_LOW && pa - MEM_LOW < MEM_SIZE
        && size <= MEM_SIZE - (pa - MEM_LOW)) {
        return &mem[pa - MEM_LOW];
    }

    if (pa >= MEM_HIGH && pa - MEM_HIGH < MEM_SIZE
        && size <= MEM_SIZE - (pa - MEM_HIGH)) {
        return &mem[pa - MEM_HIGH];
    }

    nr_bad_maps++;
    return NULL;
}

static uint8_t *
at(uint64_t pa)
{
    assert_true(pa >= MEM_LOW && pa - MEM_LOW < MEM_SIZE);
    return &mem[pa - MEM_LOW];
}

static uint64_t
high(uint64_t pa)
{
    return pa - MEM_LOW + MEM_HIGH;
}

static uint64_t
mem_alloc(size_t size)
{
    uint64_t pa;

    mem_top = P2ROUND(mem_top, 16);
    assert_true(mem_top + size <= MEM_SIZE);
    pa = MEM_LOW + mem_top;
    mem_top += size;
    return pa;
}

static void
put(uint64_t pa, size_t offset, const void *data, size_t size)
{
    memcpy(at(pa) + offset, data, size);
}

static void
put32(uint64_t pa, size_t offset, uint32_t value)
{
    put(pa, offset, &value, sizeof(value));
}

static void
put64(uint64_t pa, size_t offset, uint64_t value)
{
    put(pa, offset, &value, sizeof(value));
}

static uint32_t
get32(uint64_t pa, size_t offset)
{
    uint32_t value;

    memcpy(&value, at(pa) + offset, sizeof(value));
    return value;
}

/* Make size bytes at pa sum to zero by setting the byte at offset. */
static void
checksum_fix(uint64_t pa, size_t size, size_t offset)
{
    uint8_t *p = at(pa), sum = 0;

    p[offset] = 0;

    for (size_t i = 0; i < size; i++) {
        sum += p[i];
    }

    p[offset] = -sum;
}

static void
tbl_checksum_fix(uint64_t pa)
{
    checksum_fix(pa, get32(pa, SDT_LENGTH), SDT_CHECKSUM);
}

/* Break a table's checksum (flip a byte of its OEM table id). */
static void
tbl_corrupt(uint64_t pa)
{
    at(pa)[16] ^= 0x5a;
}

static void
tbl_begin(const char *signature)
{
    tbl_cur = mem_alloc(SDT_HDR_SIZE);
    put(tbl_cur, 0, signature, 4);
    at(tbl_cur)[8] = 1;
    put(tbl_cur, 10, "TALLY ", 6);
    put(tbl_cur, 16, "TESTTBL ", 8);
}

/* Append to the table being built (nothing else is allocated meanwhile). */
static void
tbl_add(const void *data, size_t size)
{
    assert_true(mem_top + size <= MEM_SIZE);
    memcpy(&mem[mem_top], data, size);
    mem_top += size;
}

static uint64_t
tbl_end(void)
{
    put32(tbl_cur, SDT_LENGTH, MEM_LOW + mem_top - tbl_cur);
    tbl_checksum_fix(tbl_cur);
    return tbl_cur;
}

static uint64_t
rsdt_make(const uint64_t *tables, size_t n)
{
    tbl_begin("RSDT");

    for (size_t i = 0; i < n; i++) {
        uint32_t pa = tables[i];

        tbl_add(&pa, sizeof(pa));
    }

    return tbl_end();
}

/* XSDT entries go through the high window. */
static uint64_t
xsdt_make(const uint64_t *tables, size_t n)
{
    tbl_begin("XSDT");

    for (size_t i = 0; i < n; i++) {
        uint64_t pa = high(tables[i]);

        tbl_add(&pa, sizeof(pa));
    }

    return tbl_end();
}

/* Revision 0 (ACPI 1.0) has only the first 20 bytes and no XSDT. */
static uint64_t
rsdp_make(uint8_t revision, uint64_t rsdt, uint64_t xsdt)
{
    uint64_t pa = mem_alloc(RSDP_SIZE);

    put(pa, 0, "RSD PTR ", 8);
    put(pa, 9, "TALLY ", 6);
    at(pa)[15] = revision;
    put32(pa, 16, rsdt);

    if (revision >= 2) {
        put32(pa, 20, RSDP_SIZE);
        put64(pa, 24, xsdt == 0 ? 0 : high(xsdt));
    }

    checksum_fix(pa, 20, RSDP_CHECKSUM);

    if (revision >= 2) {
        checksum_fix(pa, RSDP_SIZE, RSDP_XCHECKSUM);
    }

    return pa;
}

static int
parse(uint64_t rsdp)
{
    return acpi_parse(at(rsdp), RSDP_SIZE, test_map);
}

/* ---- MADT ---------------------------------------------------------------- */

static void
madt_begin(uint32_t lapic_address)
{
    uint32_t fields[2] = { lapic_address, 1 /* PC-AT compatible */ };

    tbl_begin("APIC");
    tbl_add(fields, sizeof(fields));
}

static void
madt_lapic(uint8_t apic_id, uint32_t flags)
{
    uint8_t e[8] = { 0, 8, apic_id, apic_id };

    memcpy(&e[4], &flags, 4);
    tbl_add(e, sizeof(e));
}

static void
madt_x2apic(uint32_t x2apic_id, uint32_t flags)
{
    uint8_t e[16] = { 9, 16 };

    memcpy(&e[4], &x2apic_id, 4);
    memcpy(&e[8], &flags, 4);
    memcpy(&e[12], &x2apic_id, 4);
    tbl_add(e, sizeof(e));
}

static void
madt_ioapic(uint8_t id, uint32_t address, uint32_t gsi_base)
{
    uint8_t e[12] = { 1, 12, id };

    memcpy(&e[4], &address, 4);
    memcpy(&e[8], &gsi_base, 4);
    tbl_add(e, sizeof(e));
}

static void
madt_iso(uint8_t bus, uint8_t source, uint32_t gsi, uint16_t flags)
{
    uint8_t e[10] = { 2, 10, bus, source };

    memcpy(&e[4], &gsi, 4);
    memcpy(&e[8], &flags, 2);
    tbl_add(e, sizeof(e));
}

static void
madt_lapic_addr(uint64_t address)
{
    uint8_t e[12] = { 5, 12 };

    memcpy(&e[4], &address, 8);
    tbl_add(e, sizeof(e));
}

/* ISO flags (MPS INTI): polarity in bits 0-1, trigger mode in bits 2-3. */
#define INTI_HIGH   0x1
#define INTI_LOW    0x3
#define INTI_EDGE   0x4
#define INTI_LEVEL  0xc

/*
 * A small machine: CPUs 0 and 1 enabled, 2 disabled and 3 only online
 * capable, one I/O APIC, the timer on GSI 2 and the SCI level triggered.
 */
static uint64_t
madt_std(void)
{
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(0, 1);
    madt_lapic(1, 1);
    madt_lapic(2, 0);
    madt_lapic(3, 2);
    madt_ioapic(0, 0xfec00000, 0);
    madt_iso(0, 0, 2, 0);
    madt_iso(0, 9, 9, INTI_HIGH | INTI_LEVEL);
    return tbl_end();
}

/* A MADT with just the given enabled local APIC ids. */
static uint64_t
madt_cpus(const uint8_t *ids, size_t n)
{
    madt_begin(DEFAULT_LAPIC);

    for (size_t i = 0; i < n; i++) {
        madt_lapic(ids[i], 1);
    }

    return tbl_end();
}

/* ---- FADT and DSDT ------------------------------------------------------- */

/* Name (_S5, Package (4) { 0x05, 0x05, Zero, Zero }), with byte prefixes. */
static const uint8_t aml_s5_prefixed[] = {
    0x08, '_', 'S', '5', '_', 0x12, 0x0a, 0x04,
    0x0a, 0x05, 0x0a, 0x05, 0x00, 0x00,
};

/* Name (_S5, Package (4) { One, One, Zero, Zero }): no prefix. */
static const uint8_t aml_s5_plain[] = {
    0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x04,
    0x01, 0x01, 0x00, 0x00,
};

/* The same with a two-byte PkgLength and SLP_TYPa 0x03. */
static const uint8_t aml_s5_long_pkglength[] = {
    0x08, '_', 'S', '5', '_', 0x12, 0x48, 0x00, 0x04,
    0x0a, 0x03, 0x0a, 0x03, 0x00, 0x00,
};

/* Filler: Name (_S4, Package...) and a reference to \_S5 not a package. */
static const uint8_t aml_prologue[] = {
    0x08, '_', 'S', '4', '_', 0x12, 0x0a, 0x04,
    0x0a, 0x04, 0x0a, 0x04, 0x00, 0x00,
    0x70, 0x5c, '_', 'S', '5', '_', 0x60,
};

static const uint8_t aml_epilogue[] = {
    0x14, 0x08, '_', 'P', 'T', 'S', 0x01, 0x70, 0x68, 0x60,
};

static uint64_t
dsdt_make(const uint8_t *s5, size_t size)
{
    tbl_begin("DSDT");
    tbl_add(aml_prologue, sizeof(aml_prologue));

    if (s5 != NULL) {
        tbl_add(s5, size);
    }

    tbl_add(aml_epilogue, sizeof(aml_epilogue));
    return tbl_end();
}

#define TEST_PM1A   0x1804

static uint64_t
fadt_make(uint64_t dsdt, uint32_t pm1a_cnt)
{
    uint8_t body[FADT_SIZE - SDT_HDR_SIZE] = { 0 };
    uint32_t dsdt32 = dsdt;

    memcpy(&body[40 - SDT_HDR_SIZE], &dsdt32, 4);
    memcpy(&body[64 - SDT_HDR_SIZE], &pm1a_cnt, 4);
    tbl_begin("FACP");
    tbl_add(body, sizeof(body));
    return tbl_end();
}

static uint64_t
fadt_std(void)
{
    return fadt_make(dsdt_make(aml_s5_prefixed, sizeof(aml_s5_prefixed)),
                     TEST_PM1A);
}

/* RSDP 2.0 whose RSDT and XSDT both list the given tables. */
static uint64_t
rsdp_v2_with(const uint64_t *tables, size_t n)
{
    uint64_t rsdt = rsdt_make(tables, n);
    uint64_t xsdt = xsdt_make(tables, n);

    return rsdp_make(2, rsdt, xsdt);
}

/* ---- checks -------------------------------------------------------------- */

static void
assert_isa_identity_from(unsigned int first)
{
    for (unsigned int i = first; i < ACPI_NR_ISA_IRQS; i++) {
        assert_int_equal(acpi_info.isa_irqs[i].gsi, i);
        assert_false(acpi_info.isa_irqs[i].level);
        assert_false(acpi_info.isa_irqs[i].active_low);
    }
}

/* The single-CPU description a failed parse must leave. */
static void
assert_defaults(uint16_t pm1a_cnt_port, uint16_t slp_typ_s5)
{
    assert_false(acpi_info.valid);
    assert_int_equal(acpi_info.nr_cpus, 0);
    assert_int_equal(acpi_info.nr_cpus_ignored, 0);
    assert_int_equal(acpi_info.nr_ioapics, 0);
    assert_int_equal(acpi_info.lapic_address, DEFAULT_LAPIC);
    assert_isa_identity_from(0);
    assert_int_equal(acpi_info.pm1a_cnt_port, pm1a_cnt_port);
    assert_int_equal(acpi_info.slp_typ_s5, slp_typ_s5);
}

static void
assert_cpus(const uint32_t *ids, unsigned int n)
{
    assert_true(acpi_info.valid);
    assert_int_equal(acpi_info.nr_cpus, n);

    for (unsigned int i = 0; i < n; i++) {
        assert_int_equal(acpi_info.cpu_apic_ids[i], ids[i]);
    }
}

/* The machine of madt_std() and fadt_std(). */
static void
assert_std(void)
{
    static const uint32_t ids[] = { 0, 1 };

    assert_cpus(ids, ARRAY_SIZE(ids));
    assert_int_equal(acpi_info.nr_cpus_ignored, 0);
    assert_int_equal(acpi_info.lapic_address, DEFAULT_LAPIC);
    assert_int_equal(acpi_info.nr_ioapics, 1);
    assert_int_equal(acpi_info.ioapics[0].id, 0);
    assert_int_equal(acpi_info.ioapics[0].address, 0xfec00000);
    assert_int_equal(acpi_info.ioapics[0].gsi_base, 0);
    assert_int_equal(acpi_info.isa_irqs[0].gsi, 2);
    assert_false(acpi_info.isa_irqs[0].level);
    assert_false(acpi_info.isa_irqs[0].active_low);
    assert_int_equal(acpi_info.isa_irqs[9].gsi, 9);
    assert_true(acpi_info.isa_irqs[9].level);
    assert_false(acpi_info.isa_irqs[9].active_low);
    assert_int_equal(acpi_info.pm1a_cnt_port, TEST_PM1A);
    assert_int_equal(acpi_info.slp_typ_s5, 5);
}

/*
 * Fresh memory for each test; the alarm turns an endless walk over a bad
 * table into a failure instead of a hang.
 */
static int
setup(void **state)
{
    (void)state;
    memset(mem, 0, sizeof(mem));
    mem_top = 0;
    nr_bad_maps = 0;
    memset(&acpi_info, 0xa5, sizeof(acpi_info));
    alarm(10);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    alarm(0);
    return 0;
}

/* ---- RSDP and root table ------------------------------------------------- */

static void
test_rsdp_v2_xsdt(void **state)
{
    uint64_t tables[2];

    (void)state;
    tables[0] = fadt_std();
    tables[1] = madt_std();
    assert_int_equal(parse(rsdp_make(2, 0, xsdt_make(tables, 2))), 0);
    assert_std();
}

static void
test_rsdp_v1_rsdt(void **state)
{
    uint64_t tables[2], rsdp;
    static const uint8_t other[] = { 7 };

    (void)state;
    tables[0] = madt_std();
    tables[1] = fadt_std();
    rsdp = rsdp_make(0, rsdt_make(tables, 2), 0);

    /* Bytes past a 1.0 RSDP are not its own: a valid-looking XSDT there. */
    tables[0] = madt_cpus(other, 1);
    at(rsdp)[15] = 0;
    put32(rsdp, 20, RSDP_SIZE);
    put64(rsdp, 24, high(xsdt_make(tables, 1)));
    checksum_fix(rsdp, RSDP_SIZE, RSDP_XCHECKSUM);
    assert_int_equal(parse(rsdp), 0);
    assert_std();
}

/* RSDP 2.0 whose XSDT lists a MADT of CPU 10 and whose RSDT one of CPU 20. */
static uint64_t
rsdp_two_roots(uint64_t *xsdtp)
{
    static const uint8_t x_ids[] = { 10 }, r_ids[] = { 20 };
    uint64_t x_madt = madt_cpus(x_ids, 1), r_madt = madt_cpus(r_ids, 1);
    uint64_t xsdt = xsdt_make(&x_madt, 1);

    *xsdtp = xsdt;
    return rsdp_make(2, rsdt_make(&r_madt, 1), xsdt);
}

static void
test_xsdt_preferred(void **state)
{
    static const uint32_t want[] = { 10 };
    uint64_t xsdt;

    (void)state;
    assert_int_equal(parse(rsdp_two_roots(&xsdt)), 0);
    assert_cpus(want, 1);
}

static void
test_bad_xsdt_falls_back_to_rsdt(void **state)
{
    static const uint32_t want[] = { 20 };
    uint64_t xsdt, rsdp = rsdp_two_roots(&xsdt);

    (void)state;
    tbl_corrupt(xsdt);
    assert_int_equal(parse(rsdp), 0);
    assert_cpus(want, 1);
}

static void
test_xsdt_length_too_short_falls_back_to_rsdt(void **state)
{
    static const uint32_t want[] = { 20 };
    uint64_t xsdt, rsdp = rsdp_two_roots(&xsdt);

    (void)state;
    put32(xsdt, SDT_LENGTH, SDT_HDR_SIZE - 1);
    tbl_checksum_fix(xsdt);
    assert_int_equal(parse(rsdp), 0);
    assert_cpus(want, 1);
}

static void
test_zero_xsdt_address_uses_rsdt(void **state)
{
    static const uint32_t want[] = { 20 };
    uint64_t xsdt, rsdp = rsdp_two_roots(&xsdt);

    (void)state;
    put64(rsdp, 24, 0);
    checksum_fix(rsdp, RSDP_SIZE, RSDP_XCHECKSUM);
    assert_int_equal(parse(rsdp), 0);
    assert_cpus(want, 1);
}

static void
test_bad_extended_checksum_uses_rsdt(void **state)
{
    static const uint32_t want[] = { 20 };
    uint64_t xsdt, rsdp = rsdp_two_roots(&xsdt);

    (void)state;
    at(rsdp)[RSDP_XCHECKSUM]++;
    assert_int_equal(parse(rsdp), 0);
    assert_cpus(want, 1);
}

static void
test_rsdp_bad_signature(void **state)
{
    uint64_t tables[2], rsdp;

    (void)state;
    tables[0] = fadt_std();
    tables[1] = madt_std();
    rsdp = rsdp_v2_with(tables, 2);
    at(rsdp)[3] = 'x';
    checksum_fix(rsdp, 20, RSDP_CHECKSUM);
    checksum_fix(rsdp, RSDP_SIZE, RSDP_XCHECKSUM);
    assert_int_equal(parse(rsdp), -EINVAL);
    assert_defaults(0, 0);
}

static void
test_rsdp_bad_checksum(void **state)
{
    uint64_t tables[2], rsdp;

    (void)state;
    tables[0] = fadt_std();
    tables[1] = madt_std();
    rsdp = rsdp_v2_with(tables, 2);

    /* Only the first 20 bytes are wrong: the extended checksum still holds. */
    at(rsdp)[RSDP_CHECKSUM]++;
    at(rsdp)[RSDP_XCHECKSUM]--;
    assert_int_equal(parse(rsdp), -EINVAL);
    assert_defaults(0, 0);
}

static void
test_rsdp_null(void **state)
{
    (void)state;
    assert_int_equal(acpi_parse(NULL, RSDP_SIZE, test_map), -EINVAL);
    assert_defaults(0, 0);
}

static void
test_both_roots_bad(void **state)
{
    uint64_t tables[2], rsdt, xsdt;

    (void)state;
    tables[0] = fadt_std();
    tables[1] = madt_std();
    rsdt = rsdt_make(tables, 2);
    xsdt = xsdt_make(tables, 2);
    tbl_corrupt(rsdt);
    tbl_corrupt(xsdt);
    assert_int_equal(parse(rsdp_make(2, rsdt, xsdt)), -EINVAL);
    assert_defaults(0, 0);
}

/* A failed parse leaves nothing of an earlier successful one. */
static void
test_failure_after_success_resets(void **state)
{
    uint64_t tables[2], rsdp;

    (void)state;
    tables[0] = fadt_std();
    tables[1] = madt_std();
    rsdp = rsdp_v2_with(tables, 2);
    assert_int_equal(parse(rsdp), 0);
    assert_std();

    at(rsdp)[0] = 'r';
    assert_int_equal(parse(rsdp), -EINVAL);
    assert_defaults(0, 0);
}

/* ---- tables with a bad checksum ------------------------------------------ */

static void
test_bad_madt_skipped(void **state)
{
    uint64_t tables[2];

    (void)state;
    tables[0] = madt_std();
    tables[1] = fadt_std();
    tbl_corrupt(tables[0]);
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), -ENOENT);
    assert_defaults(TEST_PM1A, 5);
}

static void
test_bad_fadt_skipped(void **state)
{
    uint64_t tables[2];

    (void)state;
    tables[0] = fadt_std();
    tables[1] = madt_std();
    tbl_corrupt(tables[0]);
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), 0);
    assert_true(acpi_info.valid);
    assert_int_equal(acpi_info.nr_cpus, 2);
    assert_int_equal(acpi_info.pm1a_cnt_port, 0);
    assert_int_equal(acpi_info.slp_typ_s5, 0);
}

/* A bad copy of the MADT listed first does not hide the good one after it. */
static void
test_bad_table_then_good_one(void **state)
{
    static const uint8_t ids[] = { 4, 6 };
    static const uint32_t want[] = { 4, 6 };
    uint64_t tables[2];

    (void)state;
    tables[0] = madt_std();
    tbl_corrupt(tables[0]);
    tables[1] = madt_cpus(ids, 2);
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), 0);
    assert_cpus(want, 2);
    assert_int_equal(acpi_info.nr_ioapics, 0);
    assert_isa_identity_from(0);
}

/* ---- MADT ---------------------------------------------------------------- */

static int
parse_madt(uint64_t madt)
{
    return parse(rsdp_v2_with(&madt, 1));
}

static void
test_madt_cpu_order_and_flags(void **state)
{
    static const uint32_t want[] = { 5, 3, 9 };

    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(5, 1);
    madt_lapic(7, 0);
    madt_lapic(3, 1 | 2);
    madt_lapic(8, 2);
    madt_lapic(9, 1);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_cpus(want, ARRAY_SIZE(want));
    assert_int_equal(acpi_info.nr_cpus_ignored, 0);
}

static void
test_madt_x2apic(void **state)
{
    static const uint32_t want[] = { 0, 0x100, 0x12345 };

    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(0, 1);
    madt_x2apic(0x100, 1);
    madt_x2apic(0x101, 0);
    madt_x2apic(0x12345, 1);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_cpus(want, ARRAY_SIZE(want));
}

static void
test_madt_cpu_listed_twice_counted_once(void **state)
{
    static const uint32_t want[] = { 0, 1, 2 };

    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(0, 1);
    madt_lapic(1, 1);
    madt_x2apic(1, 1);
    madt_x2apic(0, 1);
    madt_x2apic(2, 1);
    madt_lapic(2, 1);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_cpus(want, ARRAY_SIZE(want));
    assert_int_equal(acpi_info.nr_cpus_ignored, 0);
}

static void
test_madt_only_x2apic(void **state)
{
    static const uint32_t want[] = { 0x200 };

    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_x2apic(0x200, 1);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_cpus(want, 1);
}

static void
test_madt_more_than_cpu_max(void **state)
{
    (void)state;
    madt_begin(DEFAULT_LAPIC);

    for (unsigned int i = 0; i < CPU_MAX + 3; i++) {
        madt_lapic(i, 1);
    }

    madt_x2apic(0x300, 1);
    madt_lapic(CPU_MAX + 4, 0);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_true(acpi_info.valid);
    assert_int_equal(acpi_info.nr_cpus, CPU_MAX);
    assert_int_equal(acpi_info.nr_cpus_ignored, 4);

    for (unsigned int i = 0; i < CPU_MAX; i++) {
        assert_int_equal(acpi_info.cpu_apic_ids[i], i);
    }
}

/*
 * A CPU beyond the limit listed both as local APIC and x2APIC is still one
 * CPU ignored, as it would be one CPU counted below the limit.
 */
static void
test_madt_ignored_cpu_listed_twice_counted_once(void **state)
{
    (void)state;
    madt_begin(DEFAULT_LAPIC);

    for (unsigned int i = 0; i < CPU_MAX + 2; i++) {
        madt_lapic(i, 1);
    }

    madt_x2apic(CPU_MAX, 1);
    madt_x2apic(CPU_MAX + 1, 1);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_int_equal(acpi_info.nr_cpus, CPU_MAX);
    assert_int_equal(acpi_info.nr_cpus_ignored, 2);
}

static void
test_madt_no_enabled_cpu(void **state)
{
    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(0, 0);
    madt_x2apic(1, 2);
    madt_ioapic(0, 0xfec00000, 0);
    madt_iso(0, 0, 2, 0);
    assert_int_equal(parse_madt(tbl_end()), -ENOENT);
    assert_defaults(0, 0);
}

static void
test_madt_ioapics(void **state)
{
    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(0, 1);
    madt_ioapic(2, 0xfec00000, 0);
    madt_ioapic(3, 0xfec01000, 24);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_int_equal(acpi_info.nr_ioapics, 2);
    assert_int_equal(acpi_info.ioapics[0].id, 2);
    assert_int_equal(acpi_info.ioapics[0].address, 0xfec00000);
    assert_int_equal(acpi_info.ioapics[0].gsi_base, 0);
    assert_int_equal(acpi_info.ioapics[1].id, 3);
    assert_int_equal(acpi_info.ioapics[1].address, 0xfec01000);
    assert_int_equal(acpi_info.ioapics[1].gsi_base, 24);
}

static void
test_madt_too_many_ioapics(void **state)
{
    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(0, 1);

    for (unsigned int i = 0; i < ACPI_MAX_IOAPICS + 2; i++) {
        madt_ioapic(i, 0xfec00000 + i * 0x1000, i * 24);
    }

    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_int_equal(acpi_info.nr_ioapics, ACPI_MAX_IOAPICS);

    for (unsigned int i = 0; i < ACPI_MAX_IOAPICS; i++) {
        assert_int_equal(acpi_info.ioapics[i].id, i);
        assert_int_equal(acpi_info.ioapics[i].address, 0xfec00000 + i * 0x1000);
        assert_int_equal(acpi_info.ioapics[i].gsi_base, i * 24);
    }
}

static void
test_madt_interrupt_overrides(void **state)
{
    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(0, 1);
    madt_ioapic(0, 0xfec00000, 0);
    madt_iso(0, 0, 2, 0);
    madt_iso(0, 9, 20, INTI_LOW | INTI_LEVEL);
    madt_iso(0, 10, 10, INTI_LOW | INTI_EDGE);
    madt_iso(0, 11, 11, INTI_HIGH | INTI_LEVEL);
    madt_iso(1, 4, 30, INTI_LOW | INTI_LEVEL);  /* not ISA: ignored */
    madt_iso(0, 16, 40, INTI_LOW | INTI_LEVEL); /* no such ISA IRQ */
    madt_iso(0, 255, 41, INTI_LOW | INTI_LEVEL);
    assert_int_equal(parse_madt(tbl_end()), 0);

    assert_int_equal(acpi_info.isa_irqs[0].gsi, 2);
    assert_false(acpi_info.isa_irqs[0].level);
    assert_false(acpi_info.isa_irqs[0].active_low);
    assert_int_equal(acpi_info.isa_irqs[9].gsi, 20);
    assert_true(acpi_info.isa_irqs[9].level);
    assert_true(acpi_info.isa_irqs[9].active_low);
    assert_false(acpi_info.isa_irqs[10].level);
    assert_true(acpi_info.isa_irqs[10].active_low);
    assert_true(acpi_info.isa_irqs[11].level);
    assert_false(acpi_info.isa_irqs[11].active_low);

    for (unsigned int i = 1; i < 9; i++) {
        assert_int_equal(acpi_info.isa_irqs[i].gsi, i);
        assert_false(acpi_info.isa_irqs[i].level);
        assert_false(acpi_info.isa_irqs[i].active_low);
    }

    assert_isa_identity_from(12);
}

static void
test_madt_lapic_address(void **state)
{
    (void)state;
    madt_begin(0xfee10000);
    madt_lapic(0, 1);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_int_equal(acpi_info.lapic_address, 0xfee10000);
}

static void
test_madt_lapic_address_override(void **state)
{
    (void)state;
    madt_begin(DEFAULT_LAPIC);
    madt_lapic(0, 1);
    madt_lapic_addr(0x123fee00000ULL);
    madt_lapic(1, 1);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_int_equal(acpi_info.lapic_address, 0x123fee00000ULL);
    assert_int_equal(acpi_info.nr_cpus, 2);
}

/* Entries shorter than their type or of an unknown type are passed over. */
static void
test_madt_short_and_unknown_entries_skipped(void **state)
{
    static const uint8_t short_lapic[] = { 0, 4, 7, 7 };
    static const uint8_t short_x2apic[] = { 9, 8, 0, 0, 8, 0, 0, 0 };
    static const uint8_t short_ioapic[] = { 1, 6, 5, 0, 0, 0 };
    static const uint8_t short_iso[] = { 2, 4, 0, 0 };
    static const uint8_t short_addr[] = { 5, 4, 0, 0 };
    static const uint8_t unknown[] = { 0x7f, 6, 1, 1, 1, 1 };
    static const uint8_t gicc[] = { 0x0b, 2 };
    static const uint32_t want[] = { 1 };

    (void)state;
    madt_begin(DEFAULT_LAPIC);
    tbl_add(short_lapic, sizeof(short_lapic));
    tbl_add(short_x2apic, sizeof(short_x2apic));
    tbl_add(short_ioapic, sizeof(short_ioapic));
    tbl_add(short_iso, sizeof(short_iso));
    tbl_add(short_addr, sizeof(short_addr));
    tbl_add(unknown, sizeof(unknown));
    tbl_add(gicc, sizeof(gicc));
    madt_lapic(1, 1);
    assert_int_equal(parse_madt(tbl_end()), 0);
    assert_cpus(want, 1);
    assert_int_equal(acpi_info.nr_ioapics, 0);
    assert_int_equal(acpi_info.lapic_address, DEFAULT_LAPIC);
    assert_isa_identity_from(0);
}

/* A MADT whose entries are cut: CPUs, I/O APIC and ISO before the cut. */
static void
madt_begin_with_content(void)
{
    madt_begin(0xfee20000);
    madt_lapic(0, 1);
    madt_lapic(1, 1);
    madt_ioapic(0, 0xfec00000, 0);
    madt_iso(0, 0, 2, INTI_LOW | INTI_LEVEL);
    madt_lapic_addr(0x100000000ULL);
}

static void
assert_truncated_madt_rejected(uint64_t madt)
{
    uint64_t tables[2];

    tables[0] = fadt_std();
    tables[1] = madt;
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), -EINVAL);
    assert_defaults(TEST_PM1A, 5);
}

static void
test_madt_entry_length_zero(void **state)
{
    static const uint8_t bad[] = { 0, 0, 0, 0, 0, 0, 0, 0 };

    (void)state;
    madt_begin_with_content();
    tbl_add(bad, sizeof(bad));
    madt_lapic(2, 1);
    assert_truncated_madt_rejected(tbl_end());
}

static void
test_madt_entry_length_one(void **state)
{
    static const uint8_t bad[] = { 0x7f, 1, 0, 0 };

    (void)state;
    madt_begin_with_content();
    tbl_add(bad, sizeof(bad));
    assert_truncated_madt_rejected(tbl_end());
}

static void
test_madt_entry_past_end(void **state)
{
    uint64_t madt;

    (void)state;
    madt_begin_with_content();
    madt_lapic(2, 1);
    madt = tbl_end();

    /* Cut the table in the middle of the last entry. */
    put32(madt, SDT_LENGTH, get32(madt, SDT_LENGTH) - 4);
    tbl_checksum_fix(madt);
    assert_truncated_madt_rejected(madt);
}

static void
test_madt_entry_length_past_end(void **state)
{
    static const uint8_t bad[] = { 0x7f, 200, 0, 0 };

    (void)state;
    madt_begin_with_content();
    tbl_add(bad, sizeof(bad));
    assert_truncated_madt_rejected(tbl_end());
}

static void
test_madt_header_too_short(void **state)
{
    uint32_t lapic = DEFAULT_LAPIC;

    (void)state;
    tbl_begin("APIC");
    tbl_add(&lapic, sizeof(lapic));
    assert_truncated_madt_rejected(tbl_end());
}

/* ---- no MADT; FADT and DSDT ---------------------------------------------- */

static void
test_no_madt(void **state)
{
    uint64_t fadt;

    (void)state;
    fadt = fadt_std();
    assert_int_equal(parse(rsdp_v2_with(&fadt, 1)), -ENOENT);
    assert_defaults(TEST_PM1A, 5);
}

static void
test_empty_root(void **state)
{
    (void)state;
    assert_int_equal(parse(rsdp_v2_with(NULL, 0)), -ENOENT);
    assert_defaults(0, 0);
}

/* ---- lengths that lie ----------------------------------------------------- */

/*
 * A table whose length runs past the end of memory is skipped, not read:
 * the parser maps the header, then asks for the length it gives.
 */
static void
test_table_length_past_memory(void **state)
{
    uint64_t tables[2], bad = MEM_LOW + MEM_SIZE - SDT_HDR_SIZE;
    static const uint32_t want[] = { 0, 1 };

    (void)state;
    tables[0] = madt_std();
    tables[1] = bad;
    memcpy(at(bad), "FACP", 4);
    put32(bad, SDT_LENGTH, 4096);
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), 0);
    assert_cpus(want, 2);
    assert_int_equal(acpi_info.pm1a_cnt_port, 0);
    assert_int_equal(nr_bad_maps, 1);
}

/* A table header that does not fit in memory is not read either. */
static void
test_table_header_past_memory(void **state)
{
    uint64_t tables[2];
    static const uint32_t want[] = { 0, 1 };

    (void)state;
    tables[0] = MEM_LOW + MEM_SIZE - 8;
    tables[1] = madt_std();
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), 0);
    assert_cpus(want, 2);
    assert_int_not_equal(nr_bad_maps, 0);
}

/*
 * An RSDP of revision 2 of which only the ACPI 1.0 part could be read (a
 * short multiboot2 tag): its XSDT fields are not looked at.
 */
static void
test_rsdp_v2_truncated_uses_rsdt(void **state)
{
    static const uint32_t want[] = { 20 };
    uint64_t xsdt, rsdp = rsdp_two_roots(&xsdt);

    (void)state;
    assert_int_equal(acpi_parse(at(rsdp), 20, test_map), 0);
    assert_cpus(want, 1);
    assert_int_equal(acpi_parse(at(rsdp), 19, test_map), -EINVAL);
}

static void
check_s5(const uint8_t *aml, size_t size, uint16_t want)
{
    uint64_t tables[2];

    tables[0] = madt_std();
    tables[1] = fadt_make(dsdt_make(aml, size), TEST_PM1A);
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), 0);
    assert_true(acpi_info.valid);
    assert_int_equal(acpi_info.pm1a_cnt_port, TEST_PM1A);
    assert_int_equal(acpi_info.slp_typ_s5, want);
}

static void
test_fadt_s5_byte_prefix(void **state)
{
    (void)state;
    check_s5(aml_s5_prefixed, sizeof(aml_s5_prefixed), 5);
}

static void
test_fadt_s5_no_prefix(void **state)
{
    (void)state;
    check_s5(aml_s5_plain, sizeof(aml_s5_plain), 1);
}

static void
test_fadt_s5_long_pkglength(void **state)
{
    (void)state;
    check_s5(aml_s5_long_pkglength, sizeof(aml_s5_long_pkglength), 3);
}

static void
test_fadt_no_s5(void **state)
{
    (void)state;
    check_s5(NULL, 0, 0);
}

static void
test_fadt_bad_dsdt(void **state)
{
    uint64_t tables[2], dsdt;

    (void)state;
    dsdt = dsdt_make(aml_s5_prefixed, sizeof(aml_s5_prefixed));
    tbl_corrupt(dsdt);
    tables[0] = fadt_make(dsdt, TEST_PM1A);
    tables[1] = madt_std();
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), 0);
    assert_int_equal(acpi_info.pm1a_cnt_port, TEST_PM1A);
    assert_int_equal(acpi_info.slp_typ_s5, 0);
}

static void
test_fadt_too_short(void **state)
{
    uint64_t tables[2], fadt;

    (void)state;
    tables[0] = madt_std();
    fadt = fadt_std();
    put32(fadt, SDT_LENGTH, 66);    /* PM1a_CNT_BLK is bytes 64-67 */
    tbl_checksum_fix(fadt);
    tables[1] = fadt;
    assert_int_equal(parse(rsdp_v2_with(tables, 2)), 0);
    assert_true(acpi_info.valid);
    assert_int_equal(acpi_info.pm1a_cnt_port, 0);
    assert_int_equal(acpi_info.slp_typ_s5, 0);
}

/* Through the RSDT (32-bit entries) the FADT is found the same way. */
static void
test_fadt_through_rsdt(void **state)
{
    uint64_t tables[2];

    (void)state;
    tables[0] = madt_std();
    tables[1] = fadt_std();
    assert_int_equal(parse(rsdp_make(0, rsdt_make(tables, 2), 0)), 0);
    assert_std();
}

#define T(fn)   cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_rsdp_v2_xsdt),
        T(test_rsdp_v1_rsdt),
        T(test_xsdt_preferred),
        T(test_bad_xsdt_falls_back_to_rsdt),
        T(test_xsdt_length_too_short_falls_back_to_rsdt),
        T(test_zero_xsdt_address_uses_rsdt),
        T(test_bad_extended_checksum_uses_rsdt),
        T(test_rsdp_bad_signature),
        T(test_rsdp_bad_checksum),
        T(test_rsdp_null),
        T(test_table_length_past_memory),
        T(test_table_header_past_memory),
        T(test_rsdp_v2_truncated_uses_rsdt),
        T(test_both_roots_bad),
        T(test_failure_after_success_resets),
        T(test_bad_madt_skipped),
        T(test_bad_fadt_skipped),
        T(test_bad_table_then_good_one),
        T(test_madt_cpu_order_and_flags),
        T(test_madt_x2apic),
        T(test_madt_cpu_listed_twice_counted_once),
        T(test_madt_only_x2apic),
        T(test_madt_more_than_cpu_max),
        T(test_madt_ignored_cpu_listed_twice_counted_once),
        T(test_madt_no_enabled_cpu),
        T(test_madt_ioapics),
        T(test_madt_too_many_ioapics),
        T(test_madt_interrupt_overrides),
        T(test_madt_lapic_address),
        T(test_madt_lapic_address_override),
        T(test_madt_short_and_unknown_entries_skipped),
        T(test_madt_entry_length_zero),
        T(test_madt_entry_length_one),
        T(test_madt_entry_past_end),
        T(test_madt_entry_length_past_end),
        T(test_madt_header_too_short),
        T(test_no_madt),
        T(test_empty_root),
        T(test_fadt_s5_byte_prefix),
        T(test_fadt_s5_no_prefix),
        T(test_fadt_s5_long_pkglength),
        T(test_fadt_no_s5),
        T(test_fadt_bad_dsdt),
        T(test_fadt_too_short),
        T(test_fadt_through_rsdt),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
