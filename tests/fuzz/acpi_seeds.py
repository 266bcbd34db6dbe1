#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Makes the seed corpora of the acpi and multiboot2 fuzz targets from the
# ACPI tables of QEMU's own firmware (SeaBIOS):
#
#   tests/fuzz/acpi_seeds.py            # writes tests/fuzz/corpus/{acpi,multiboot2}/
#
# For each machine below it starts QEMU with no disk, lets the firmware
# build its tables, saves the guest's RAM through the monitor (pmemsave),
# and walks RSDP -> RSDT -> tables (the FADT's DSDT and FACS included).
# The tables are laid out again, unchanged but for their addresses and
# checksums, in the image the targets take: the RSDP at offset 0 and a
# table at physical address N sitting at offset N.  SeaBIOS writes an ACPI
# 1.0 RSDP; each machine also gets a 2.0 variant with an XSDT listing the
# same tables.  The multiboot2 seeds are an information structure as GRUB
# writes it (command line, memory map, ACPI tag holding the RSDP) followed
# by the same tables.
#

import os
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MEM_MB = 128

# (seed name, QEMU machine arguments)
MACHINES = [
    ('pc-smp1', ['-machine', 'pc', '-smp', '1']),
    ('pc-smp4', ['-machine', 'pc', '-smp', '4']),
    ('q35-smp8', ['-machine', 'q35', '-smp', '8']),
]


def dump_ram(machine_args, path):
    """Boot QEMU's firmware with no disk and save its RAM to path."""
    p = subprocess.Popen(['qemu-system-x86_64'] + machine_args +
                         ['-m', '%dM' % MEM_MB, '-display', 'none',
                          '-monitor', 'stdio', '-serial', 'none',
                          '-nodefaults', '-no-reboot'],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(3)       # the firmware writes its tables at once
    p.stdin.write(('pmemsave 0 %#x "%s"\n' % (MEM_MB << 20, path)).encode())
    p.stdin.flush()
    time.sleep(2)
    p.stdin.write(b'quit\n')
    p.stdin.close()
    p.wait(timeout=30)


def checksum_fix(buf, start, length, offset):
    buf[start + offset] = 0
    buf[start + offset] = (-sum(buf[start:start + length])) & 0xff


def read_tables(ram):
    """The RSDP's OEM id and the tables: [(signature, bytes)], DSDT last."""
    at = ram.find(b'RSD PTR ', 0xe0000, 0x100000)
    if at < 0:
        sys.exit('acpi_seeds: no RSDP in the firmware area')
    oem = ram[at + 9:at + 15]
    rsdt = struct.unpack_from('<I', ram, at + 16)[0]
    length = struct.unpack_from('<I', ram, rsdt + 4)[0]
    tables = []
    for i in range((length - 36) // 4):
        pa = struct.unpack_from('<I', ram, rsdt + 36 + 4 * i)[0]
        tables.append(ram[pa:pa + struct.unpack_from('<I', ram, pa + 4)[0]])
    fadt = next(t for t in tables if t[:4] == b'FACP')
    dsdt = struct.unpack_from('<I', fadt, 40)[0]
    facs = struct.unpack_from('<I', fadt, 36)[0]
    extra = [ram[dsdt:dsdt + struct.unpack_from('<I', ram, dsdt + 4)[0]]]
    if facs:
        extra.append(ram[facs:facs + struct.unpack_from('<I', ram, facs + 4)[0]])
    return oem, tables, extra


def layout(oem, tables, extra, revision, base):
    """The image: RSDP, root table(s), tables; pa = base + offset."""
    img = bytearray(64)
    places = {}

    def put(blob):
        while len(img) % 16:
            img.append(0)
        pa = base + len(img)
        img.extend(blob)
        return pa

    for blob in extra:
        places[blob[:4]] = put(blob)
    pas = []
    for blob in tables:
        b = bytearray(blob)
        if b[:4] == b'FACP':
            struct.pack_into('<I', b, 40, places[b'DSDT'])
            struct.pack_into('<I', b, 36, places.get(b'FACS', 0))
            if len(b) >= 148:       # X_DSDT, ACPI 2.0 and later
                struct.pack_into('<Q', b, 140, places[b'DSDT'])
            checksum_fix(b, 0, len(b), 9)
        pas.append(put(b))
    rsdt = sdt(b'RSDT', oem, b''.join(struct.pack('<I', p) for p in pas))
    rsdt_pa = put(rsdt)
    xsdt_pa = 0
    if revision >= 2:
        xsdt = sdt(b'XSDT', oem, b''.join(struct.pack('<Q', p) for p in pas))
        xsdt_pa = put(xsdt)
    rsdp = bytearray(36)
    rsdp[0:8] = b'RSD PTR '
    rsdp[9:15] = oem
    rsdp[15] = revision
    struct.pack_into('<I', rsdp, 16, rsdt_pa)
    struct.pack_into('<I', rsdp, 20, 36)
    struct.pack_into('<Q', rsdp, 24, xsdt_pa)
    checksum_fix(rsdp, 0, 20, 8)
    checksum_fix(rsdp, 0, 36, 32)
    size = 36 if revision >= 2 else 20
    img[0:size] = rsdp[:size]
    return img, bytes(rsdp[:size])


def sdt(sig, oem, payload):
    b = bytearray(36) + payload
    b[0:4] = sig
    struct.pack_into('<I', b, 4, len(b))
    b[8] = 1
    b[10:16] = oem
    b[16:24] = b'TALLYFUZ'
    checksum_fix(b, 0, len(b), 9)
    return b


def tag(kind, payload):
    t = struct.pack('<II', kind, 8 + len(payload)) + payload
    return t + b'\0' * (-len(t) % 8)


def multiboot2_info(oem, tables, extra, revision):
    """GRUB-like information, then the tables it points at."""
    cmdline = tag(1, b'smp=4 softpmu.width=32 panic=exit\0')
    regions = [(0, 0x9fc00, 1), (0x9fc00, 0x400, 2), (0xf0000, 0x10000, 2),
               (0x100000, (MEM_MB << 20) - 0x120000, 1),
               ((MEM_MB << 20) - 0x20000, 0x20000, 2),
               (0xfffc0000, 0x40000, 2)]
    mmap = tag(6, struct.pack('<II', 24, 0) + b''.join(
        struct.pack('<QQII', s, n, t, 0) for s, n, t in regions))
    meminfo = tag(4, struct.pack('<II', 639, (MEM_MB << 10) - 1024))
    # The RSDP's size is known only once the tables are placed after it.
    acpi_kind = 15 if revision >= 2 else 14
    rsdp_len = 36 if revision >= 2 else 20
    head = 8 + len(cmdline) + len(meminfo) + len(mmap)
    total = head + len(tag(acpi_kind, b'\0' * rsdp_len)) + 8
    base = (total + 15) & ~15
    img, rsdp = layout(oem, tables, extra, revision, base)
    info = cmdline + meminfo + mmap + tag(acpi_kind, rsdp) + tag(0, b'')
    out = bytearray(struct.pack('<II', 8 + len(info), 0) + info)
    out += b'\0' * (base - len(out))
    return bytes(out + img)


def main():
    acpi_dir = os.path.join(HERE, 'corpus', 'acpi')
    mb_dir = os.path.join(HERE, 'corpus', 'multiboot2')
    os.makedirs(acpi_dir, exist_ok=True)
    os.makedirs(mb_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in MACHINES:
            path = os.path.join(tmp, name + '.ram')
            dump_ram(args, path)
            with open(path, 'rb') as f:
                oem, tables, extra = read_tables(f.read())
            for revision in (0, 2):
                suffix = '-rsdp%d' % revision
                img, _ = layout(oem, tables, extra, revision, 0)
                with open(os.path.join(acpi_dir, name + suffix), 'wb') as f:
                    f.write(img)
                with open(os.path.join(mb_dir, name + suffix), 'wb') as f:
                    f.write(multiboot2_info(oem, tables, extra, revision))
            print('acpi_seeds: %s: %s' % (name, ' '.join(
                t[:4].decode() for t in tables + extra)))


if __name__ == '__main__':
    main()
