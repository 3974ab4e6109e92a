//===- ElfCheck.cpp - Checking a kernel object before the loader sees it --===//
//
// See ElfCheck.h. The reader follows the structures the dynamic loader
// (glibc's ld.so) follows, in its order: the ELF header, the program
// headers, the dynamic section, then what the dynamic section points at
// (strings, the symbol hash tables, symbols, relocations, version tables).
// Every read goes through Image::read or Image::range, which check the
// offset and size against the object; virtual addresses are translated to
// file offsets through the loadable segments, so a table the loader would
// read from mapped memory is checked where the loader would find it.
//
//===----------------------------------------------------------------------===//

#include "Plan/ElfCheck.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <map>
#include <tuple>
#include <vector>

namespace of::rt {

namespace {

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
constexpr uint32_t kRelocNone = R_X86_64_NONE,
                   kRelocRelative = R_X86_64_RELATIVE,
                   kRelocGlobDat = R_X86_64_GLOB_DAT,
                   kRelocJumpSlot = R_X86_64_JUMP_SLOT,
                   kRelocAbs64 = R_X86_64_64;
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
constexpr uint32_t kRelocNone = R_AARCH64_NONE,
                   kRelocRelative = R_AARCH64_RELATIVE,
                   kRelocGlobDat = R_AARCH64_GLOB_DAT,
                   kRelocJumpSlot = R_AARCH64_JUMP_SLOT,
                   kRelocAbs64 = R_AARCH64_ABS64;
#else
#error "kernel objects are checked for x86-64 and AArch64 hosts only"
#endif

/// Bounds on what a kernel object may declare, far above what the kernel
/// compiler writes (a few segments, thousands of symbols, megabytes).
constexpr uint64_t kMaxProgramHeaders = 64;
constexpr uint64_t kMaxImageSpan = uint64_t(1) << 32;
constexpr uint64_t kMaxSymbols = uint64_t(1) << 22;

/// Libraries a kernel object may depend on.
constexpr std::string_view kAllowedLibraries[] = {"libc.so.6", "libm.so.6",
                                                  "libmvec.so.1"};

/// What a kernel may import: C99 math in float and double (LLVM lowers math
/// intrinsics it does not expand to these), and the memory intrinsics.
constexpr std::string_view kAllowedImports[] = {
    "memcpy",     "memmove", "memset",  "acos",      "acosf",      "acosh",
    "acoshf",     "asin",    "asinf",   "asinh",     "asinhf",     "atan",
    "atanf",      "atan2",   "atan2f",  "atanh",     "atanhf",     "cbrt",
    "cbrtf",      "ceil",    "ceilf",   "copysign",  "copysignf",  "cos",
    "cosf",       "cosh",    "coshf",   "erf",       "erff",       "erfc",
    "erfcf",      "exp",     "expf",    "exp2",      "exp2f",      "exp10",
    "exp10f",     "expm1",   "expm1f",  "fabs",      "fabsf",      "fdim",
    "fdimf",      "floor",   "floorf",  "fma",       "fmaf",       "fmax",
    "fmaxf",      "fmin",    "fminf",   "fmod",      "fmodf",      "frexp",
    "frexpf",     "hypot",   "hypotf",  "ldexp",     "ldexpf",     "lgamma",
    "lgammaf",    "llrint",  "llrintf", "llround",   "llroundf",   "log",
    "logf",       "log10",   "log10f",  "log1p",     "log1pf",     "log2",
    "log2f",      "logb",    "logbf",   "lrint",     "lrintf",     "lround",
    "lroundf",    "modf",    "modff",   "nearbyint", "nearbyintf", "nextafter",
    "nextafterf", "pow",     "powf",    "remainder", "remainderf", "rint",
    "rintf",      "round",   "roundf",  "roundeven", "roundevenf", "scalbn",
    "scalbnf",    "sin",     "sinf",    "sincos",    "sincosf",    "sinh",
    "sinhf",      "sqrt",    "sqrtf",   "tan",       "tanf",       "tanh",
    "tanhf",      "tgamma",  "tgammaf", "trunc",     "truncf"};

/// The object's bytes, read only through checked offsets.
struct Image {
  const uint8_t *data;
  uint64_t size;

  /// Whether [offset, offset + length) lies inside the object.
  bool contains(uint64_t offset, uint64_t length) const {
    return offset <= size && length <= size - offset;
  }
  template <typename T> bool read(uint64_t offset, T &out) const {
    if (!contains(offset, sizeof(T)))
      return false;
    std::memcpy(&out, data + offset, sizeof(T));
    return true;
  }
};

/// Whether `a * b` overflows; the product in `out` otherwise.
bool mulOverflows(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

std::string hex(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

bool isPowerOfTwo(uint64_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

const char *segmentTypeName(uint32_t type) {
  switch (type) {
  case PT_INTERP:
    return "PT_INTERP (a program interpreter)";
  case PT_TLS:
    return "PT_TLS (thread-local storage)";
  case PT_SHLIB:
    return "PT_SHLIB";
  default:
    return nullptr;
  }
}

/// The dynamic tags that make the loader run code, search for libraries,
/// load other objects or write into code, and why each is refused.
struct ForbiddenTag {
  int64_t tag;
  const char *name;
  const char *reason;
};
constexpr const char *kRunsCode =
    "runs code when it is loaded or unloaded (a constructor or destructor)";
constexpr ForbiddenTag kForbiddenTags[] = {
    {DT_INIT, "DT_INIT", kRunsCode},
    {DT_FINI, "DT_FINI", kRunsCode},
    {DT_INIT_ARRAY, "DT_INIT_ARRAY", kRunsCode},
    {DT_FINI_ARRAY, "DT_FINI_ARRAY", kRunsCode},
    {DT_PREINIT_ARRAY, "DT_PREINIT_ARRAY", kRunsCode},
    {DT_RPATH, "DT_RPATH", "names a library search path"},
    {DT_RUNPATH, "DT_RUNPATH", "names a library search path"},
    {DT_TEXTREL, "DT_TEXTREL", "relocates its code (text relocations)"},
    {DT_AUDIT, "DT_AUDIT", "loads an audit library"},
    {DT_DEPAUDIT, "DT_DEPAUDIT", "loads an audit library"},
    {DT_AUXILIARY, "DT_AUXILIARY", "loads a filter library"},
    {DT_FILTER, "DT_FILTER", "loads a filter library"},
};

const ForbiddenTag *forbiddenTag(int64_t tag) {
  for (const ForbiddenTag &forbidden : kForbiddenTags)
    if (forbidden.tag == tag)
      return &forbidden;
  return nullptr;
}

/// The reader of one object; each method fails with a message that names
/// the executable and the structure at fault.
class Checker {
public:
  Checker(const std::string &name, Image image) : name_(name), image_(image) {}

  Status run(std::set<std::string> &functions);

private:
  template <typename... Parts> Status bad(const Parts &...parts) const {
    return fail("executable '", name_,
                "' is not a kernel object OF loads: ", parts...);
  }

  /// The file offset of virtual addresses [address, address + length), which
  /// must lie in the file-backed part of one loadable segment.
  bool fileOffset(uint64_t address, uint64_t length, uint64_t &offset) const;
  /// The end (file offset) of the file-backed part of the segment holding
  /// `address`.
  bool fileEnd(uint64_t address, uint64_t &end) const;
  /// Whether [address, address + length) lies in one segment's memory, and
  /// that segment's flags.
  bool inMemory(uint64_t address, uint64_t length, uint32_t &flags) const;
  /// The NUL-terminated string at `offset` of the string table.
  bool string(uint64_t offset, std::string_view &out) const;

  Status checkHeader();
  Status checkSegments();
  Status checkNotes(const Elf64_Phdr &note);
  Status readDynamic();
  Status checkStrings();
  Status countSymbols();
  Status checkGnuHash(uint64_t address);
  Status checkSysvHash(uint64_t address, uint64_t &count);
  Status checkSymbols(std::set<std::string> &functions);
  Status checkRelocations(uint64_t address, uint64_t bytes, const char *what);
  Status checkVersions();

  const std::string &name_;
  Image image_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Phdr> loads_;
  Elf64_Phdr dynamicSegment_{};
  /// The dynamic section's entries by tag (the last of each, as the loader
  /// keeps), and the libraries it needs.
  std::map<int64_t, uint64_t> dynamic_;
  std::vector<std::string_view> needed_;
  uint64_t strtab_ = 0, strsz_ = 0; // file offset and size
  uint64_t symbols_ = 0;            // entries of the symbol table
  /// The largest version index the version tables define.
  uint64_t maxVersion_ = 1;
};

bool Checker::fileOffset(uint64_t address, uint64_t length,
                         uint64_t &offset) const {
  for (const Elf64_Phdr &load : loads_) {
    if (address < load.p_vaddr)
      continue;
    uint64_t delta = address - load.p_vaddr;
    if (delta > load.p_filesz || length > load.p_filesz - delta)
      continue;
    offset = load.p_offset + delta;
    return true;
  }
  return false;
}

bool Checker::fileEnd(uint64_t address, uint64_t &end) const {
  for (const Elf64_Phdr &load : loads_)
    if (address >= load.p_vaddr && address - load.p_vaddr < load.p_filesz) {
      end = load.p_offset + load.p_filesz;
      return true;
    }
  return false;
}

bool Checker::inMemory(uint64_t address, uint64_t length,
                       uint32_t &flags) const {
  for (const Elf64_Phdr &load : loads_) {
    if (address < load.p_vaddr)
      continue;
    uint64_t delta = address - load.p_vaddr;
    if (delta > load.p_memsz || length > load.p_memsz - delta)
      continue;
    flags = load.p_flags;
    return true;
  }
  return false;
}

bool Checker::string(uint64_t offset, std::string_view &out) const {
  if (offset >= strsz_)
    return false;
  const char *start =
      reinterpret_cast<const char *>(image_.data + strtab_ + offset);
  const void *end = std::memchr(start, '\0', strsz_ - offset);
  if (!end)
    return false;
  out = std::string_view(start, static_cast<const char *>(end) - start);
  return true;
}

Status Checker::checkHeader() {
  if (!image_.read(0, header_))
    return bad("shorter (", image_.size, " bytes) than an ELF header");
  if (std::memcmp(header_.e_ident, ELFMAG, SELFMAG) != 0)
    return bad("no ELF magic");
  if (header_.e_ident[EI_CLASS] != ELFCLASS64 ||
      header_.e_ident[EI_DATA] != ELFDATA2LSB ||
      header_.e_ident[EI_VERSION] != EV_CURRENT ||
      header_.e_version != EV_CURRENT)
    return bad("not a 64-bit little-endian ELF object of version 1");
  if (header_.e_ident[EI_OSABI] != ELFOSABI_SYSV &&
      header_.e_ident[EI_OSABI] != ELFOSABI_GNU)
    return bad("OS ABI ", int(header_.e_ident[EI_OSABI]),
               " is neither System V nor GNU");
  if (header_.e_type != ET_DYN)
    return bad("ELF type ", header_.e_type, " is not a shared object");
  if (header_.e_machine != kMachine)
    return bad("machine ", header_.e_machine, " is not this machine's (",
               kMachine, ")");
  if (header_.e_ehsize != sizeof(Elf64_Ehdr) ||
      header_.e_phentsize != sizeof(Elf64_Phdr))
    return bad("ELF header or program header size is not the ELF64 one");
  if (header_.e_phnum == 0 || header_.e_phnum > kMaxProgramHeaders)
    return bad(header_.e_phnum, " program headers (1 to ", kMaxProgramHeaders,
               " expected)");
  if (!image_.contains(header_.e_phoff,
                       uint64_t(header_.e_phnum) * sizeof(Elf64_Phdr)))
    return bad("program headers at offset ", header_.e_phoff,
               " lie outside the object");
  return Status::success();
}

Status Checker::checkNotes(const Elf64_Phdr &note) {
  uint64_t offset;
  if (!fileOffset(note.p_vaddr, note.p_filesz, offset) ||
      note.p_offset != offset)
    return bad("a note segment lies outside the loaded file");
  uint64_t align = note.p_align <= 4 ? 4 : note.p_align;
  if (align != 4 && align != 8)
    return bad("a note segment is aligned to ", note.p_align,
               " (4 or 8 expected)");
  uint64_t at = 0;
  while (at < note.p_filesz) {
    Elf64_Nhdr entry;
    if (note.p_filesz - at < sizeof(entry) || !image_.read(offset + at, entry))
      return bad("a note header runs past its segment");
    uint64_t name = (uint64_t(entry.n_namesz) + align - 1) / align * align;
    uint64_t desc = (uint64_t(entry.n_descsz) + align - 1) / align * align;
    uint64_t next = sizeof(entry) + name + desc;
    if (next > note.p_filesz - at)
      return bad("a note runs past its segment");
    at += next;
  }
  return Status::success();
}

Status Checker::checkSegments() {
  bool haveDynamic = false;
  std::vector<Elf64_Phdr> notes, others;
  for (uint64_t i = 0; i < header_.e_phnum; ++i) {
    Elf64_Phdr segment;
    image_.read(header_.e_phoff + i * sizeof(Elf64_Phdr), segment);
    switch (segment.p_type) {
    case PT_NULL:
      continue;
    case PT_LOAD:
      loads_.push_back(segment);
      break;
    case PT_DYNAMIC:
      if (haveDynamic)
        return bad("two PT_DYNAMIC segments");
      haveDynamic = true;
      dynamicSegment_ = segment;
      break;
    case PT_GNU_STACK:
      if (segment.p_flags & PF_X)
        return bad("it asks for an executable stack (PT_GNU_STACK with "
                   "PF_X), which would make every thread's stack executable");
      continue;
    case PT_NOTE:
    case PT_GNU_PROPERTY:
      notes.push_back(segment);
      break;
    case PT_GNU_RELRO:
    case PT_GNU_EH_FRAME:
    case PT_PHDR:
      others.push_back(segment);
      break;
    default:
      if (const char *what = segmentTypeName(segment.p_type))
        return bad("program header ", i, " is ", what,
                   ", which a kernel object may not have");
      return bad("program header ", i, " has the unknown type ",
                 hex(segment.p_type));
    }
    if (!image_.contains(segment.p_offset, segment.p_filesz))
      return bad("program header ", i, " covers bytes outside the object");
  }
  if (loads_.empty())
    return bad("no loadable segment");
  if (!haveDynamic)
    return bad("no PT_DYNAMIC segment (not a shared object)");
  uint64_t end = 0;
  for (size_t i = 0; i < loads_.size(); ++i) {
    const Elf64_Phdr &load = loads_[i];
    if (load.p_filesz > load.p_memsz)
      return bad("loadable segment ", i, " has more file bytes than memory");
    if (load.p_align > 1 &&
        (!isPowerOfTwo(load.p_align) ||
         (load.p_vaddr - load.p_offset) % load.p_align != 0))
      return bad("loadable segment ", i, " is misaligned");
    if (!(load.p_flags & PF_R))
      return bad("loadable segment ", i, " is not readable");
    if ((load.p_flags & PF_W) && (load.p_flags & PF_X))
      return bad("loadable segment ", i, " is both writable and executable");
    if (i > 0 && load.p_vaddr < end)
      return bad("loadable segment ", i,
                 " overlaps or precedes the one before it");
    if (load.p_vaddr > kMaxImageSpan ||
        load.p_memsz > kMaxImageSpan - load.p_vaddr)
      return bad("loadable segment ", i, " spans more than ", kMaxImageSpan,
                 " bytes");
    end = load.p_vaddr + load.p_memsz;
  }
  if (end - loads_.front().p_vaddr > kMaxImageSpan)
    return bad("its segments span more than ", kMaxImageSpan, " bytes");
  uint64_t offset;
  if (!fileOffset(dynamicSegment_.p_vaddr, dynamicSegment_.p_filesz, offset) ||
      offset != dynamicSegment_.p_offset)
    return bad("the dynamic section lies outside the loaded file");
  for (const Elf64_Phdr &other : others) {
    uint32_t flags;
    if (!inMemory(other.p_vaddr, other.p_memsz, flags))
      return bad("a PT_GNU_RELRO, PT_GNU_EH_FRAME or PT_PHDR segment lies "
                 "outside the loaded memory");
    if (other.p_type == PT_PHDR &&
        (!fileOffset(other.p_vaddr, other.p_filesz, offset) ||
         offset != header_.e_phoff ||
         other.p_filesz != uint64_t(header_.e_phnum) * sizeof(Elf64_Phdr)))
      return bad("PT_PHDR does not describe the program headers");
  }
  for (const Elf64_Phdr &note : notes)
    if (Status status = checkNotes(note); status.failed())
      return status;
  return Status::success();
}

Status Checker::readDynamic() {
  bool terminated = false;
  for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dynamicSegment_.p_filesz;
       at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn entry;
    image_.read(dynamicSegment_.p_offset + at, entry);
    if (entry.d_tag == DT_NULL) {
      terminated = true;
      break;
    }
    // Init and fini arrays are checked below with their sizes: the C
    // toolchain may emit empty ones, which run nothing.
    bool array = entry.d_tag == DT_INIT_ARRAY || entry.d_tag == DT_FINI_ARRAY ||
                 entry.d_tag == DT_PREINIT_ARRAY;
    if (const ForbiddenTag *forbidden = forbiddenTag(entry.d_tag);
        forbidden && !array)
      return bad("its dynamic section has ", forbidden->name, ", which ",
                 forbidden->reason);
    switch (entry.d_tag) {
    case DT_NEEDED:
    case DT_PLTRELSZ:
    case DT_PLTGOT:
    case DT_HASH:
    case DT_STRTAB:
    case DT_SYMTAB:
    case DT_RELA:
    case DT_RELASZ:
    case DT_RELAENT:
    case DT_STRSZ:
    case DT_SYMENT:
    case DT_SONAME:
    case DT_PLTREL:
    case DT_JMPREL:
    case DT_BIND_NOW:
    case DT_FLAGS:
    case DT_FLAGS_1:
    case DT_GNU_HASH:
    case DT_VERSYM:
    case DT_VERNEED:
    case DT_VERNEEDNUM:
    case DT_VERDEF:
    case DT_VERDEFNUM:
    case DT_RELACOUNT:
    case DT_INIT_ARRAY:
    case DT_INIT_ARRAYSZ:
    case DT_FINI_ARRAY:
    case DT_FINI_ARRAYSZ:
    case DT_PREINIT_ARRAY:
    case DT_PREINIT_ARRAYSZ:
    case DT_DEBUG:
      break;
    default:
      return bad("its dynamic section has the tag ", hex(entry.d_tag),
                 ", which a kernel object may not have");
    }
    dynamic_[entry.d_tag] = entry.d_un.d_val;
  }
  if (!terminated)
    return bad("its dynamic section has no DT_NULL end");
  for (auto [array, sizeTag] :
       {std::pair{DT_INIT_ARRAY, DT_INIT_ARRAYSZ},
        std::pair{DT_FINI_ARRAY, DT_FINI_ARRAYSZ},
        std::pair{DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ}}) {
    auto size = dynamic_.find(sizeTag);
    if ((dynamic_.count(array) || size != dynamic_.end()) &&
        (size == dynamic_.end() || size->second != 0))
      return bad("its dynamic section has ", forbiddenTag(array)->name,
                 ", which ", kRunsCode);
  }
  if (auto flags = dynamic_.find(DT_FLAGS);
      flags != dynamic_.end() && (flags->second & (DF_TEXTREL | DF_STATIC_TLS)))
    return bad("DT_FLAGS asks for text relocations or static TLS");
  if (auto entsize = dynamic_.find(DT_SYMENT);
      entsize != dynamic_.end() && entsize->second != sizeof(Elf64_Sym))
    return bad("DT_SYMENT is ", entsize->second, ", not ", sizeof(Elf64_Sym));
  if (auto entsize = dynamic_.find(DT_RELAENT);
      entsize != dynamic_.end() && entsize->second != sizeof(Elf64_Rela))
    return bad("DT_RELAENT is ", entsize->second, ", not ", sizeof(Elf64_Rela));
  // The loader reads a table's size (or count) wherever the table is, and
  // the PLT table wherever DT_PLTREL is, without checking they exist.
  for (auto [table, size, name] :
       {std::tuple{DT_RELA, DT_RELASZ, "DT_RELA and DT_RELASZ"},
        std::tuple{DT_JMPREL, DT_PLTRELSZ, "DT_JMPREL and DT_PLTRELSZ"},
        std::tuple{DT_PLTREL, DT_JMPREL, "DT_PLTREL and DT_JMPREL"},
        std::tuple{DT_VERNEED, DT_VERNEEDNUM, "DT_VERNEED and DT_VERNEEDNUM"},
        std::tuple{DT_VERDEF, DT_VERDEFNUM, "DT_VERDEF and DT_VERDEFNUM"}})
    if (dynamic_.count(table) != dynamic_.count(size))
      return bad("its dynamic section has only one of ", name);
  if (auto pltrel = dynamic_.find(DT_PLTREL);
      pltrel != dynamic_.end() && pltrel->second != DT_RELA)
    return bad("DT_PLTREL is not DT_RELA");
  return Status::success();
}

Status Checker::checkStrings() {
  if (!dynamic_.count(DT_STRTAB) || !dynamic_.count(DT_STRSZ) ||
      !dynamic_.count(DT_SYMTAB))
    return bad("its dynamic section lacks DT_STRTAB, DT_STRSZ or DT_SYMTAB");
  strsz_ = dynamic_[DT_STRSZ];
  if (strsz_ == 0 || !fileOffset(dynamic_[DT_STRTAB], strsz_, strtab_))
    return bad("its string table lies outside the loaded file");
  // The DT_NEEDED strings, in order.
  for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dynamicSegment_.p_filesz;
       at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn entry;
    image_.read(dynamicSegment_.p_offset + at, entry);
    if (entry.d_tag == DT_NULL)
      break;
    if (entry.d_tag != DT_NEEDED && entry.d_tag != DT_SONAME)
      continue;
    std::string_view library;
    if (!string(entry.d_un.d_val, library))
      return bad("a DT_NEEDED or DT_SONAME name lies outside the string "
                 "table");
    if (entry.d_tag == DT_SONAME)
      continue;
    if (std::find(std::begin(kAllowedLibraries), std::end(kAllowedLibraries),
                  library) == std::end(kAllowedLibraries))
      return bad("it needs the library '", library,
                 "' (kernel objects may need only the C and math libraries)");
    needed_.push_back(library);
  }
  return Status::success();
}

Status Checker::checkGnuHash(uint64_t address) {
  uint32_t head[4];
  uint64_t offset, end;
  if (!fileOffset(address, sizeof(head), offset) || !fileEnd(address, end))
    return bad("its GNU hash table lies outside the loaded file");
  for (int i = 0; i < 4; ++i)
    image_.read(offset + 4 * i, head[i]);
  uint32_t buckets = head[0], first = head[1], bloom = head[2], shift = head[3];
  if (buckets == 0 || !isPowerOfTwo(bloom) || shift >= 64)
    return bad("its GNU hash table has ", buckets,
               " buckets, a bloom filter "
               "of ",
               bloom, " words and shift ", shift);
  uint64_t bucketsAt = offset + 16 + uint64_t(bloom) * 8;
  uint64_t chainsAt = bucketsAt + uint64_t(buckets) * 4;
  if (chainsAt > end)
    return bad("its GNU hash table runs past its segment");
  // The loader walks a bucket's chain from its first symbol until an entry
  // with the low bit set; each chain must end inside the segment.
  uint64_t count = first;
  for (uint64_t b = 0; b < buckets; ++b) {
    uint32_t start;
    image_.read(bucketsAt + 4 * b, start);
    if (start == 0)
      continue;
    if (start < first)
      return bad("GNU hash bucket ", b, " starts at symbol ", start,
                 ", below the first hashed symbol ", first);
    for (uint64_t symbol = start;; ++symbol) {
      uint64_t at = chainsAt + (symbol - first) * 4;
      uint32_t value;
      if (symbol - first > (end - chainsAt) / 4 || at + 4 > end ||
          !image_.read(at, value))
        return bad("GNU hash chain of bucket ", b, " runs past its segment");
      if (symbol + 1 > count)
        count = symbol + 1;
      if (value & 1)
        break;
    }
  }
  symbols_ = count;
  return Status::success();
}

Status Checker::checkSysvHash(uint64_t address, uint64_t &count) {
  uint32_t head[2];
  uint64_t offset;
  if (!fileOffset(address, sizeof(head), offset))
    return bad("its ELF hash table lies outside the loaded file");
  image_.read(offset, head[0]);
  image_.read(offset + 4, head[1]);
  uint64_t buckets = head[0], chains = head[1];
  if (buckets == 0 || chains > kMaxSymbols ||
      !fileOffset(address, 8 + 4 * (buckets + chains), offset))
    return bad("its ELF hash table (", buckets, " buckets, ", chains,
               " chains) does not fit the loaded file");
  // Every symbol is on one chain at most once: no cycles for dlsym to spin
  // in, and the walk stays linear.
  std::vector<bool> seen(chains, false);
  for (uint64_t b = 0; b < buckets; ++b) {
    uint32_t symbol;
    image_.read(offset + 8 + 4 * b, symbol);
    while (symbol != 0) {
      if (symbol >= chains || seen[symbol])
        return bad("ELF hash chain of bucket ", b,
                   " leaves the table or loops");
      seen[symbol] = true;
      image_.read(offset + 8 + 4 * (buckets + symbol), symbol);
    }
  }
  count = chains;
  return Status::success();
}

Status Checker::countSymbols() {
  uint64_t sysv = 0;
  bool haveGnu = dynamic_.count(DT_GNU_HASH),
       haveSysv = dynamic_.count(DT_HASH);
  if (!haveGnu && !haveSysv)
    return bad("no symbol hash table (DT_GNU_HASH or DT_HASH)");
  if (haveSysv)
    if (Status status = checkSysvHash(dynamic_[DT_HASH], sysv); status.failed())
      return status;
  if (haveGnu) {
    if (Status status = checkGnuHash(dynamic_[DT_GNU_HASH]); status.failed())
      return status;
    if (haveSysv && sysv > symbols_)
      symbols_ = sysv;
  } else {
    symbols_ = sysv;
  }
  uint64_t offset, bytes;
  if (symbols_ > kMaxSymbols ||
      mulOverflows(symbols_, sizeof(Elf64_Sym), bytes) ||
      !fileOffset(dynamic_[DT_SYMTAB], bytes, offset))
    return bad("its symbol table (", symbols_,
               " symbols by its hash tables) lies outside the loaded file");
  return Status::success();
}

Status Checker::checkSymbols(std::set<std::string> &functions) {
  uint64_t table;
  fileOffset(dynamic_[DT_SYMTAB], symbols_ * sizeof(Elf64_Sym), table);
  for (uint64_t i = 1; i < symbols_; ++i) {
    Elf64_Sym symbol;
    image_.read(table + i * sizeof(Elf64_Sym), symbol);
    std::string_view name;
    if (!string(symbol.st_name, name))
      return bad("the name of symbol ", i, " lies outside the string table");
    unsigned type = ELF64_ST_TYPE(symbol.st_info);
    unsigned binding = ELF64_ST_BIND(symbol.st_info);
    if (type == STT_GNU_IFUNC)
      return bad("symbol '", name,
                 "' is an indirect function (IFUNC), "
                 "whose resolver runs when the object is loaded");
    if (type == STT_TLS)
      return bad("symbol '", name, "' is thread-local");
    if (type > STT_FILE)
      return bad("symbol '", name, "' has the unknown type ", type);
    if (binding != STB_LOCAL && binding != STB_GLOBAL && binding != STB_WEAK)
      return bad("symbol '", name, "' has the binding ", binding,
                 " (local, global or weak expected)");
    if (symbol.st_shndx == SHN_UNDEF) {
      if (!isAllowedKernelImport(name))
        return bad("it imports '", name,
                   "', which is not a math function or memcpy/memmove/"
                   "memset; a kernel may call nothing else");
      continue;
    }
    if (symbol.st_shndx == SHN_ABS || type == STT_FILE || type == STT_SECTION)
      continue;
    uint32_t flags = 0;
    if (!inMemory(symbol.st_value, std::max<uint64_t>(symbol.st_size, 1),
                  flags))
      return bad("symbol '", name, "' lies outside the loaded memory");
    if (type == STT_FUNC && binding != STB_LOCAL && (flags & PF_X))
      functions.insert(std::string(name));
  }
  return Status::success();
}

Status Checker::checkRelocations(uint64_t address, uint64_t bytes,
                                 const char *what) {
  uint64_t offset;
  if (bytes % sizeof(Elf64_Rela) != 0 || !fileOffset(address, bytes, offset))
    return bad("its ", what, " relocations lie outside the loaded file");
  for (uint64_t at = 0; at < bytes; at += sizeof(Elf64_Rela)) {
    Elf64_Rela reloc;
    image_.read(offset + at, reloc);
    uint32_t type = ELF64_R_TYPE(reloc.r_info);
    uint64_t symbol = ELF64_R_SYM(reloc.r_info);
    // The loader looks the symbol (and its version) up before it looks at
    // the type, so even an R_*_NONE entry must name a symbol in range.
    if (symbol >= symbols_)
      return bad("a ", what, " relocation names symbol ", symbol, " of ",
                 symbols_);
    if (type == kRelocNone)
      continue;
    if (type != kRelocRelative && type != kRelocGlobDat &&
        type != kRelocJumpSlot && type != kRelocAbs64)
      return bad("a ", what, " relocation has the type ", type,
                 " (only relative, GOT, PLT and 64-bit absolute relocations "
                 "are loaded; IRELATIVE would run a resolver)");
    // A relative relocation names no symbol; the others always name one
    // (a linker never writes a GOT, PLT or absolute entry for symbol 0).
    if ((type == kRelocRelative) != (symbol == 0))
      return bad("a ", what, " relocation of type ", type,
                 symbol == 0 ? " names no symbol" : " names a symbol");
    uint32_t flags = 0;
    if (!inMemory(reloc.r_offset, 8, flags) || !(flags & PF_W))
      return bad("a ", what, " relocation writes at ", hex(reloc.r_offset),
                 ", outside the writable segments");
  }
  return Status::success();
}

Status Checker::checkVersions() {
  // Definitions: a chain of Verdef entries, each with its names.
  if (dynamic_.count(DT_VERDEF)) {
    uint64_t count = dynamic_[DT_VERDEFNUM];
    if (count == 0)
      return bad("DT_VERDEF with a count of 0");
    uint64_t address = dynamic_[DT_VERDEF];
    for (uint64_t i = 0; i < count; ++i) {
      Elf64_Verdef def;
      uint64_t offset;
      if (!fileOffset(address, sizeof(def), offset))
        return bad("version definition ", i, " lies outside the loaded file");
      image_.read(offset, def);
      if (def.vd_version != VER_DEF_CURRENT || def.vd_cnt == 0)
        return bad("version definition ", i, " is malformed");
      maxVersion_ = std::max<uint64_t>(maxVersion_, def.vd_ndx & 0x7fff);
      uint64_t auxAddress = address + def.vd_aux;
      for (uint64_t j = 0; j < def.vd_cnt; ++j) {
        Elf64_Verdaux aux;
        uint64_t auxOffset;
        std::string_view name;
        if (!fileOffset(auxAddress, sizeof(aux), auxOffset) ||
            !image_.read(auxOffset, aux) || !string(aux.vda_name, name))
          return bad("a name of version definition ", i,
                     " lies outside the object");
        if ((aux.vda_next == 0) != (j + 1 == def.vd_cnt))
          return bad("version definition ", i, " has ", def.vd_cnt,
                     " names but a different chain");
        auxAddress += aux.vda_next;
      }
      if ((def.vd_next == 0) != (i + 1 == count))
        return bad("the version definitions are not DT_VERDEFNUM (", count,
                   ") long");
      address += def.vd_next;
    }
  }
  // Requirements: one Verneed per needed library, with its versions.
  if (dynamic_.count(DT_VERNEED)) {
    uint64_t count = dynamic_[DT_VERNEEDNUM];
    if (count == 0)
      return bad("DT_VERNEED with a count of 0");
    uint64_t address = dynamic_[DT_VERNEED];
    for (uint64_t i = 0; i < count; ++i) {
      Elf64_Verneed need;
      uint64_t offset;
      std::string_view file;
      if (!fileOffset(address, sizeof(need), offset) ||
          !image_.read(offset, need) || !string(need.vn_file, file))
        return bad("version requirement ", i, " lies outside the object");
      if (need.vn_version != VER_NEED_CURRENT)
        return bad("version requirement ", i, " is malformed");
      // The loader asserts that each one names a library it loaded.
      if (std::find(needed_.begin(), needed_.end(), file) == needed_.end())
        return bad("version requirement ", i, " names '", file,
                   "', which is not a DT_NEEDED library");
      uint64_t auxAddress = address + need.vn_aux;
      for (uint64_t j = 0; j < need.vn_cnt; ++j) {
        Elf64_Vernaux aux;
        uint64_t auxOffset;
        std::string_view name;
        if (!fileOffset(auxAddress, sizeof(aux), auxOffset) ||
            !image_.read(auxOffset, aux) || !string(aux.vna_name, name))
          return bad("a version of requirement ", i,
                     " lies outside the object");
        maxVersion_ = std::max<uint64_t>(maxVersion_, aux.vna_other & 0x7fff);
        if ((aux.vna_next == 0) != (j + 1 == need.vn_cnt))
          return bad("version requirement ", i, " has ", need.vn_cnt,
                     " versions but a different chain");
        auxAddress += aux.vna_next;
      }
      if ((need.vn_next == 0) != (i + 1 == count))
        return bad("the version requirements are not DT_VERNEEDNUM (", count,
                   ") long");
      address += need.vn_next;
    }
  }
  // Every symbol's version index refers to one of the above.
  if (dynamic_.count(DT_VERSYM)) {
    uint64_t offset;
    if (!fileOffset(dynamic_[DT_VERSYM], symbols_ * 2, offset))
      return bad("its symbol versions lie outside the loaded file");
    for (uint64_t i = 0; i < symbols_; ++i) {
      uint16_t version;
      image_.read(offset + 2 * i, version);
      if ((version & 0x7fff) > maxVersion_)
        return bad("symbol ", i, " has version index ", version & 0x7fff,
                   ", beyond the ", maxVersion_, " the object defines");
    }
  }
  return Status::success();
}

Status Checker::run(std::set<std::string> &functions) {
  if (Status status = checkHeader(); status.failed())
    return status;
  if (Status status = checkSegments(); status.failed())
    return status;
  if (Status status = readDynamic(); status.failed())
    return status;
  if (Status status = checkStrings(); status.failed())
    return status;
  if (Status status = countSymbols(); status.failed())
    return status;
  if (Status status = checkSymbols(functions); status.failed())
    return status;
  if (dynamic_.count(DT_RELA) || dynamic_.count(DT_RELASZ))
    if (Status status =
            checkRelocations(dynamic_[DT_RELA], dynamic_[DT_RELASZ], "dynamic");
        status.failed())
      return status;
  if (dynamic_.count(DT_JMPREL) || dynamic_.count(DT_PLTRELSZ))
    if (Status status =
            checkRelocations(dynamic_[DT_JMPREL], dynamic_[DT_PLTRELSZ], "PLT");
        status.failed())
      return status;
  return checkVersions();
}

} // namespace

bool isAllowedKernelImport(std::string_view symbol) {
  return std::find(std::begin(kAllowedImports), std::end(kAllowedImports),
                   symbol) != std::end(kAllowedImports);
}

Status checkKernelObject(const std::string &name, const uint8_t *data,
                         uint64_t size, std::set<std::string> &functions) {
  functions.clear();
  return Checker(name, Image{data, size}).run(functions);
}

} // namespace of::rt
