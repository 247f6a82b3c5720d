"""Function ranges from a module's .eh_frame, read from its .eh_frame_hdr search table.

The accuracy harness keys every sampled address by the call frame description (FDE) that covers
it: perf and inprof name functions differently (ELF aliases, DWARF names, `[unknown]`), but both
sample the same machine code, and each function the compiler emitted has exactly one FDE (a
`.cold` part has its own). An address no FDE covers (PLT stubs, hand-written code without CFI)
keys by the module alone.
"""
import bisect
import struct


class ElfRanges:
    def __init__(self, path):
        self.path = path
        self.loads = []  # (p_offset, p_vaddr, p_filesz)
        self.starts = []
        self.ends = []
        self.entry = None
        try:
            with open(path, "rb") as f:
                self.data = f.read()
        except OSError:
            self.data = b""
            return
        d = self.data
        if d[:4] != b"\x7fELF" or d[4] != 2 or d[5] != 1:  # 64-bit little-endian only
            return
        (self.entry,) = struct.unpack_from("<Q", d, 0x18)
        e_phoff, e_shoff = struct.unpack_from("<QQ", d, 0x20)
        e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHHHH", d, 0x36)
        for i in range(e_phnum):
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
                "<IIQQQQ", d, e_phoff + i * e_phentsize)
            if p_type == 1:  # PT_LOAD
                self.loads.append((p_offset, p_vaddr, p_filesz))
        sections = {}
        if e_shoff and e_shnum:
            headers = [struct.unpack_from("<IIQQQQIIQQ", d, e_shoff + i * e_shentsize)
                       for i in range(e_shnum)]
            names_off = headers[e_shstrndx][4]
            for h in headers:
                end = d.index(b"\0", names_off + h[0])
                sections[d[names_off + h[0]:end].decode("latin-1")] = h
        hdr = sections.get(".eh_frame_hdr")
        if hdr:
            self._read_hdr(hdr[3], hdr[4])

    def first_load_page(self):
        """The module's lowest mapped address, as an ELF virtual address (page-aligned)."""
        return min((v for _, v, _ in self.loads), default=0) & ~0xFFF

    def offset_to_vaddr(self, offset):
        for off, vaddr, size in self.loads:
            if off <= offset < off + size:
                return offset - off + vaddr
        return offset

    def vaddr_to_offset(self, vaddr):
        for off, va, size in self.loads:
            if va <= vaddr < va + size:
                return vaddr - va + off
        return None

    def _read_hdr(self, hdr_vaddr, hdr_off):
        d = self.data
        version, _ptr_enc, count_enc, table_enc = d[hdr_off:hdr_off + 4]
        # The usual encodings (GNU ld, lld): eh_frame_ptr pcrel|sdata4, fde_count udata4, table
        # datarel|sdata4 (relative to the header). Anything else: no ranges, keyed by module.
        if version != 1 or count_enc != 0x03 or table_enc != 0x3B:
            return
        (count,) = struct.unpack_from("<I", d, hdr_off + 8)
        table = hdr_off + 12
        for i in range(count):
            loc, fde = struct.unpack_from("<ii", d, table + 8 * i)
            start = hdr_vaddr + loc
            fde_vaddr = hdr_vaddr + fde
            length = None
            fde_off = self.vaddr_to_offset(fde_vaddr)
            if fde_off is not None and fde_off + 16 <= len(d):
                # length, CIE pointer, pc_begin (pcrel sdata4), pc_range (sdata4): the layout of
                # every FDE these toolchains write; checked by pc_begin matching the table.
                (pc_begin,) = struct.unpack_from("<i", d, fde_off + 8)
                if fde_vaddr + 8 + pc_begin == start:
                    (length,) = struct.unpack_from("<I", d, fde_off + 12)
            self.starts.append(start)
            self.ends.append(start + length if length is not None else None)
        order = sorted(range(len(self.starts)), key=lambda k: self.starts[k])
        self.starts = [self.starts[k] for k in order]
        self.ends = [self.ends[k] for k in order]

    def function_start(self, vaddr):
        """The start of the FDE range holding `vaddr`, or None."""
        i = bisect.bisect_right(self.starts, vaddr) - 1
        if i < 0:
            return None
        end = self.ends[i]
        if end is None:
            end = self.starts[i + 1] if i + 1 < len(self.starts) else self.starts[i] + 1
        return self.starts[i] if vaddr < end else None


_cache = {}


def ranges_for(path):
    if path not in _cache:
        _cache[path] = ElfRanges(path)
    return _cache[path]
