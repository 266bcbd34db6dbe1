/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * ACPI table parsing: only what the kernel needs to start the CPUs, route
 * the serial interrupt and power off.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/acpi.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/string.h"

#ifndef TALLY_HOST_TEST
#include "arch/x86/io.h"
#include "arch/x86/multiboot2.h"
#include "arch/x86/pmap.h"
#include "kern/log.h"
#include "kern/pmem.h"
#endif

/* Section 5.2.5.3: the Root System Description Pointer. */
struct acpi_rsdp {
    char signature[8];              /* "RSD PTR " */
    uint8_t checksum;               /* of the first 20 bytes */
    char oem_id[6];
    uint8_t revision;               /* 0: ACPI 1.0, 2: 2.0 and later */
    uint32_t rsdt_address;
    uint32_t length;                /* from revision 2 on */
    uint64_t xsdt_address;
    uint8_t extended_checksum;
    uint8_t reserved[3];
} __packed;

/* The ACPI 1.0 part of the RSDP, which its checksum covers. */
#define ACPI_RSDP_V1_SIZE   20

/* Section 5.2.6: the header of every table. */
struct acpi_sdt {
    char signature[4];
    uint32_t length;
    uint8_t revision;
    uint8_t checksum;
    char oem_id[6];
    char oem_table_id[8];
    uint32_t oem_revision;
    uint32_t creator_id;
    uint32_t creator_revision;
} __packed;

/* Section 5.2.12: the MADT and its entries. */
struct acpi_madt {
    struct acpi_sdt header;
    uint32_t lapic_address;
    uint32_t flags;
} __packed;

#define ACPI_MADT_LAPIC         0
#define ACPI_MADT_IOAPIC        1
#define ACPI_MADT_ISO           2
#define ACPI_MADT_LAPIC_ADDR    5
#define ACPI_MADT_X2APIC        9

#define ACPI_MADT_ENABLED       0x1
#define ACPI_MADT_ONLINE_CAP    0x2

#define ACPI_MPS_POLARITY_MASK  0x3
#define ACPI_MPS_POLARITY_LOW   0x3
#define ACPI_MPS_TRIGGER_MASK   0xc
#define ACPI_MPS_TRIGGER_LEVEL  0xc

struct acpi_madt_entry {
    uint8_t type;
    uint8_t length;
} __packed;

struct acpi_madt_lapic {
    struct acpi_madt_entry header;
    uint8_t processor_id;
    uint8_t apic_id;
    uint32_t flags;
} __packed;

struct acpi_madt_ioapic {
    struct acpi_madt_entry header;
    uint8_t id;
    uint8_t reserved;
    uint32_t address;
    uint32_t gsi_base;
} __packed;

struct acpi_madt_iso {
    struct acpi_madt_entry header;
    uint8_t bus;
    uint8_t source;
    uint32_t gsi;
    uint16_t flags;
} __packed;

struct acpi_madt_lapic_addr {
    struct acpi_madt_entry header;
    uint16_t reserved;
    uint64_t address;
} __packed;

struct acpi_madt_x2apic {
    struct acpi_madt_entry header;
    uint16_t reserved;
    uint32_t x2apic_id;
    uint32_t flags;
    uint32_t processor_uid;
} __packed;

/* Section 5.2.9: the FADT fields used here. */
struct acpi_fadt {
    struct acpi_sdt header;
    uint32_t firmware_ctrl;
    uint32_t dsdt;
    uint8_t reserved0[20];
    uint32_t pm1a_cnt_blk;          /* offset 64 */
} __packed;

#define ACPI_PM1_SLP_EN         (1U << 13)
#define ACPI_PM1_SLP_TYP_SHIFT  10
#define ACPI_AML_NAME_OP        0x08
#define ACPI_AML_PACKAGE_OP     0x12
#define ACPI_AML_BYTE_PREFIX    0x0a

/* QEMU's PM1a control port, for when the FADT cannot be read. */
#define ACPI_QEMU_PM1A_CNT      0x604

struct acpi_info acpi_info;

static acpi_map_fn_t acpi_map;

static bool
acpi_checksum_ok(const void *data, size_t size)
{
    const uint8_t *p = data;
    uint8_t sum = 0;

    for (size_t i = 0; i < size; i++) {
        sum += p[i];
    }

    return sum == 0;
}

static void
acpi_set_defaults(void)
{
    memset(&acpi_info, 0, sizeof(acpi_info));
    acpi_info.lapic_address = 0xfee00000;

    for (unsigned int i = 0; i < ACPI_NR_ISA_IRQS; i++) {
        acpi_info.isa_irqs[i].gsi = i;
    }
}

/*
 * Map a table and check its length and checksum; NULL when unusable.  The
 * header is mapped first: the length it gives says how much to map next.
 */
static const struct acpi_sdt *
acpi_table_get(uint64_t pa)
{
    const struct acpi_sdt *sdt;
    uint32_t length;

    if (pa == 0) {
        return NULL;
    }

    sdt = acpi_map(pa, sizeof(*sdt));

    if (sdt == NULL) {
        return NULL;
    }

    length = sdt->length;

    if (length < sizeof(*sdt) || length > (1U << 20)) {
        return NULL;
    }

    sdt = acpi_map(pa, length);

    if (sdt == NULL || !acpi_checksum_ok(sdt, length)) {
        return NULL;
    }

    return sdt;
}

/* The APIC id of an enabled processor entry, or false for other entries. */
static bool
acpi_madt_entry_cpu(const struct acpi_madt_entry *e, uint32_t *apic_idp)
{
    if (e->type == ACPI_MADT_LAPIC
        && e->length >= sizeof(struct acpi_madt_lapic)) {
        const struct acpi_madt_lapic *l = (const void *)e;

        *apic_idp = l->apic_id;
        return (l->flags & ACPI_MADT_ENABLED) != 0;
    }

    if (e->type == ACPI_MADT_X2APIC
        && e->length >= sizeof(struct acpi_madt_x2apic)) {
        const struct acpi_madt_x2apic *x = (const void *)e;

        *apic_idp = x->x2apic_id;
        return (x->flags & ACPI_MADT_ENABLED) != 0;
    }

    return false;
}

/* True when an entry of the MADT before e already lists apic_id. */
static bool
acpi_madt_listed_before(const char *first, const struct acpi_madt_entry *e,
                        uint32_t apic_id)
{
    for (const char *p = first; p < (const char *)e;) {
        const struct acpi_madt_entry *prev = (const void *)p;
        uint32_t id;

        if (acpi_madt_entry_cpu(prev, &id) && id == apic_id) {
            return true;
        }

        p += prev->length;      /* lengths already checked by the walk */
    }

    return false;
}

/*
 * A processor may be listed both as a local APIC and as an x2APIC: count
 * it once, whether it is kept or beyond CPU_MAX.
 */
static void
acpi_madt_add_cpu(const char *first, const struct acpi_madt_entry *e)
{
    uint32_t apic_id;

    if (!acpi_madt_entry_cpu(e, &apic_id)
        || acpi_madt_listed_before(first, e, apic_id)) {
        return;
    }

    if (acpi_info.nr_cpus == CPU_MAX) {
        acpi_info.nr_cpus_ignored++;
        return;
    }

    acpi_info.cpu_apic_ids[acpi_info.nr_cpus++] = apic_id;
}

static void
acpi_madt_add_iso(const struct acpi_madt_iso *iso)
{
    struct acpi_isa_irq *irq;

    if (iso->bus != 0 || iso->source >= ACPI_NR_ISA_IRQS) {
        return;
    }

    irq = &acpi_info.isa_irqs[iso->source];
    irq->gsi = iso->gsi;
    irq->active_low = (iso->flags & ACPI_MPS_POLARITY_MASK)
                      == ACPI_MPS_POLARITY_LOW;
    irq->level = (iso->flags & ACPI_MPS_TRIGGER_MASK)
                 == ACPI_MPS_TRIGGER_LEVEL;
}

static void
acpi_madt_add_ioapic(const struct acpi_madt_ioapic *e)
{
    struct acpi_ioapic *ioapic;

    if (acpi_info.nr_ioapics == ACPI_MAX_IOAPICS) {
        return;
    }

    ioapic = &acpi_info.ioapics[acpi_info.nr_ioapics++];
    ioapic->id = e->id;
    ioapic->address = e->address;
    ioapic->gsi_base = e->gsi_base;
}

static void
acpi_madt_parse_entry(const char *first, const struct acpi_madt_entry *e)
{
    switch (e->type) {
    case ACPI_MADT_LAPIC:
    case ACPI_MADT_X2APIC:
        acpi_madt_add_cpu(first, e);
        break;
    case ACPI_MADT_IOAPIC:
        if (e->length >= sizeof(struct acpi_madt_ioapic)) {
            acpi_madt_add_ioapic((const void *)e);
        }
        break;
    case ACPI_MADT_ISO:
        if (e->length >= sizeof(struct acpi_madt_iso)) {
            acpi_madt_add_iso((const void *)e);
        }
        break;
    case ACPI_MADT_LAPIC_ADDR:
        if (e->length >= sizeof(struct acpi_madt_lapic_addr)) {
            const struct acpi_madt_lapic_addr *a = (const void *)e;
            acpi_info.lapic_address = a->address;
        }
        break;
    default:
        break;
    }
}

static int
acpi_madt_parse(const struct acpi_madt *madt)
{
    const char *first = (const char *)(madt + 1), *p = first;
    const char *end = (const char *)madt + madt->header.length;
    uint16_t port = acpi_info.pm1a_cnt_port, s5 = acpi_info.slp_typ_s5;

    if (madt->header.length < sizeof(*madt)) {
        return -EINVAL;
    }

    /* Start afresh: nothing of an earlier, broken MADT may remain. */
    acpi_set_defaults();
    acpi_info.pm1a_cnt_port = port;
    acpi_info.slp_typ_s5 = s5;
    acpi_info.lapic_address = madt->lapic_address;

    while (p + sizeof(struct acpi_madt_entry) <= end) {
        const struct acpi_madt_entry *e = (const void *)p;

        if (e->length < sizeof(*e) || p + e->length > end) {
            return -EINVAL;     /* a truncated entry: distrust the table */
        }

        acpi_madt_parse_entry(first, e);
        p += e->length;
    }

    return acpi_info.nr_cpus == 0 ? -ENOENT : 0;
}

/*
 * Find the \_S5 package in the DSDT and take its first value, SLP_TYPa
 * (section 7.4.2).  A byte search for the name is what small kernels do;
 * it is enough for the firmware the kernel runs on (QEMU's).
 */
static void
acpi_dsdt_find_s5(const struct acpi_sdt *dsdt)
{
    const uint8_t *p = (const uint8_t *)(dsdt + 1);
    const uint8_t *end = (const uint8_t *)dsdt + dsdt->length;

    for (; p + 8 < end; p++) {
        if (memcmp(p, "_S5_", 4) != 0 || p[4] != ACPI_AML_PACKAGE_OP) {
            continue;
        }

        p += 5;
        p += ((*p & 0xc0) >> 6) + 2;    /* PkgLength, then NumElements */

        if (p < end && *p == ACPI_AML_BYTE_PREFIX) {
            p++;
        }

        if (p < end) {
            acpi_info.slp_typ_s5 = *p;
        }

        return;
    }
}

static void
acpi_fadt_parse(const struct acpi_fadt *fadt)
{
    const struct acpi_sdt *dsdt;

    if (fadt->header.length < offsetof(struct acpi_fadt, pm1a_cnt_blk) + 4) {
        return;
    }

    acpi_info.pm1a_cnt_port = fadt->pm1a_cnt_blk;
    dsdt = acpi_table_get(fadt->dsdt);

    if (dsdt != NULL) {
        acpi_dsdt_find_s5(dsdt);
    }
}

/* The XSDT when the RSDP has a sound one, else the RSDT. */
static const struct acpi_sdt *
acpi_root_get(const struct acpi_rsdp *rsdp, size_t rsdp_size,
              size_t *entry_sizep)
{
    const struct acpi_sdt *root = NULL;

    if (rsdp->revision >= 2 && rsdp_size >= sizeof(*rsdp)
        && rsdp->length >= sizeof(*rsdp)
        && acpi_checksum_ok(rsdp, sizeof(*rsdp))) {
        root = acpi_table_get(rsdp->xsdt_address);
        *entry_sizep = 8;
    }

    if (root == NULL) {
        root = acpi_table_get(rsdp->rsdt_address);
        *entry_sizep = 4;
    }

    return root;
}

int
acpi_parse(const void *rsdp_ptr, size_t rsdp_size, acpi_map_fn_t map)
{
    const struct acpi_rsdp *rsdp = rsdp_ptr;
    const struct acpi_sdt *root, *sdt;
    size_t entry_size, n;
    int error = -ENOENT;

    acpi_set_defaults();
    acpi_map = map;

    if (rsdp == NULL || rsdp_size < ACPI_RSDP_V1_SIZE
        || memcmp(rsdp->signature, "RSD PTR ", 8) != 0
        || !acpi_checksum_ok(rsdp, ACPI_RSDP_V1_SIZE)) {
        return -EINVAL;
    }

    root = acpi_root_get(rsdp, rsdp_size, &entry_size);

    if (root == NULL) {
        return -EINVAL;
    }

    n = (root->length - sizeof(*root)) / entry_size;

    for (size_t i = 0; i < n; i++) {
        const char *entry = (const char *)(root + 1) + i * entry_size;
        uint64_t pa = 0;

        memcpy(&pa, entry, entry_size);
        sdt = acpi_table_get(pa);

        if (sdt == NULL) {
            continue;
        }

        if (memcmp(sdt->signature, "APIC", 4) == 0) {
            error = acpi_madt_parse((const void *)sdt);
        } else if (memcmp(sdt->signature, "FACP", 4) == 0) {
            acpi_fadt_parse((const void *)sdt);
        }
    }

    if (error) {
        uint16_t port = acpi_info.pm1a_cnt_port, s5 = acpi_info.slp_typ_s5;

        acpi_set_defaults();
        acpi_info.pm1a_cnt_port = port;
        acpi_info.slp_typ_s5 = s5;
        return error;
    }

    acpi_info.valid = true;
    return 0;
}

#ifndef TALLY_HOST_TEST

#define ACPI_BIOS_START     0xe0000
#define ACPI_BIOS_END       0x100000
#define ACPI_EBDA_PTR       0x40e

/*
 * Firmware tables are read before pmap_setup extends the direct map:
 * only what the boot page tables map can be read.
 */
static const void *
acpi_map_boot(uint64_t pa, size_t size)
{
    if (pa >= PMAP_BOOT_MAPPED || size > PMAP_BOOT_MAPPED - pa) {
        return NULL;
    }

    return pmem_va(pa);
}

/* Section 5.2.5.1: the RSDP is in the first KiB of the EBDA or the BIOS ROM. */
static const void *
acpi_rsdp_scan_range(uint64_t start, uint64_t end, size_t *sizep)
{
    for (uint64_t pa = start; pa + ACPI_RSDP_V1_SIZE <= end; pa += 16) {
        const char *p = pmem_va(pa);

        if (memcmp(p, "RSD PTR ", 8) == 0
            && acpi_checksum_ok(p, ACPI_RSDP_V1_SIZE)) {
            *sizep = MIN(end - pa, sizeof(struct acpi_rsdp));
            return p;
        }
    }

    return NULL;
}

static const void *
acpi_rsdp_find(size_t *sizep)
{
    uint64_t ebda = (uint64_t)*(const uint16_t *)pmem_va(ACPI_EBDA_PTR) << 4;
    const void *rsdp = NULL;

    if (multiboot2_info.rsdp != NULL
        && multiboot2_info.rsdp_size >= ACPI_RSDP_V1_SIZE) {
        *sizep = multiboot2_info.rsdp_size;
        return multiboot2_info.rsdp;
    }

    if (ebda >= 0x80000 && ebda < 0xa0000) {
        rsdp = acpi_rsdp_scan_range(ebda, ebda + 1024, sizep);
    }

    if (rsdp == NULL) {
        rsdp = acpi_rsdp_scan_range(ACPI_BIOS_START, ACPI_BIOS_END, sizep);
    }

    return rsdp;
}

static int
acpi_setup(void)
{
    size_t rsdp_size = 0;
    const void *rsdp = acpi_rsdp_find(&rsdp_size);
    int error = acpi_parse(rsdp, rsdp_size, acpi_map_boot);

    if (error) {
        log_warning("acpi: no usable MADT (%s): booting one CPU",
                    error_str(error));
        return 0;
    }

    log_info("acpi: %u CPUs, %u I/O APICs, local APIC at 0x%lx",
             acpi_info.nr_cpus, acpi_info.nr_ioapics,
             acpi_info.lapic_address);

    if (acpi_info.nr_cpus_ignored != 0) {
        log_warning("acpi: %u CPUs beyond the limit of %u ignored",
                    acpi_info.nr_cpus_ignored, CPU_MAX);
    }

    return 0;
}

INIT_OP_DEFINE(acpi_setup);

void
acpi_poweroff(void)
{
    uint16_t port = acpi_info.pm1a_cnt_port;

    if (port == 0) {
        port = ACPI_QEMU_PM1A_CNT;
    }

    io_write16(port, (acpi_info.slp_typ_s5 << ACPI_PM1_SLP_TYP_SHIFT)
                     | ACPI_PM1_SLP_EN);
}

#endif /* TALLY_HOST_TEST */
