//! The constructor's lookup of the real functions, without `dlsym`.
//!
//! `dlsym(RTLD_NEXT, name)` returns the first definition of `name` in the objects
//! loaded after the caller's, in load order. Each call takes the loader's lock, sets
//! up an error catcher and finds the calling object again, in every process start
//! (docs/adr/0007-process-start.md has the measurements). This module
//! walks the loaded objects once with `dl_iterate_phdr` (in load order, the order
//! `RTLD_NEXT` follows), finds this library among them (its name is the own path
//! the sticky `LD_PRELOAD` needs), and then looks every name up in each later
//! object's GNU hash table, as the loader itself does.
//!
//! It accepts a definition only where `dlsym` would return the same one: a defined
//! function (`STT_FUNC`) or variable (`STT_OBJECT`: glibc's `__libc_single_threaded`),
//! global or weak, whose version is not hidden (a hidden
//! version is a compatibility symbol; `dlsym` returns the default one). Anything it
//! cannot settle that way (an object without a GNU hash table, an indirect
//! function, whose address only its resolver knows) leaves the name unresolved, and
//! [`crate::platform::real`] asks `dlsym` for it instead. A name that no object
//! after this library defines, in a walk that searched every one of them, is
//! absent: `dlsym` would return NULL too (glibc before 2.39 has no
//! `pidfd_spawn`), so it is not asked. Nothing here runs after the constructor,
//! but the lookup of `dlsym` itself ([`crate::platform::real`]), on the rare
//! paths that need it.

use core::ffi::{c_char, c_int, c_void};

use libc::{dl_iterate_phdr, dl_phdr_info, Elf64_Sym, PT_DYNAMIC};

/// `Elf64_Dyn` (not in the libc crate).
#[repr(C)]
struct Dyn {
    tag: i64,
    val: u64,
}

const DT_NULL: i64 = 0;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_GNU_HASH: i64 = 0x6fff_fef5;
const DT_VERSYM: i64 = 0x6fff_fff0;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;
const STB_LOCAL: u8 = 0;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const VERSYM_HIDDEN: u16 = 0x8000;
/// Bounds on walks over loader data, so that a malformed table cannot loop forever.
const MAX_DYN: usize = 1024;
const MAX_CHAIN: usize = 1 << 20;

extern "C" {
    /// Linker-defined: this object's ELF header, which is where it is loaded.
    static __ehdr_start: u8;
}

/// A NUL-terminated name to look up, with its GNU hash, worked out when the
/// library is built (a process start would otherwise hash every name again in
/// every object it searches).
pub struct Name {
    pub bytes: &'static [u8],
    pub hash: u32,
}

impl Name {
    /// `bytes` must end in its one NUL.
    pub const fn new(bytes: &'static [u8]) -> Name {
        // The GNU hash (DJB's h * 33 + c) of the name without its NUL.
        let mut h = 5381u32;
        let mut rest = bytes;
        while let [c, tail @ ..] = rest {
            if tail.is_empty() {
                break;
            }
            h = h.wrapping_mul(33).wrapping_add(*c as u32);
            rest = tail;
        }
        Name { bytes, hash: h }
    }
}

/// What the walk found.
pub struct Found<const N: usize> {
    /// This library's name as the loader recorded it (what `dladdr` reports), or
    /// NULL if the walk did not meet it.
    pub own_name: *const c_char,
    /// The next definition of each name, or NULL: not found, or not settled here
    /// (then only `dlsym` can say).
    pub addrs: [*mut c_void; N],
    /// The names that no object after this library defines: every one of them
    /// was searched, and none holds a definition `dlsym` would return.
    pub absent: [bool; N],
}

struct Walk<'n, const N: usize> {
    names: &'n [Name; N],
    me: usize,
    after_me: bool,
    /// Names that need no more looking: found, or not settled here.
    done: [bool; N],
    /// An object could not be searched: what is not done is unsettled, not absent.
    gave_up: bool,
    found: Found<N>,
}

/// One symbol table's answer for a name.
enum Answer {
    /// The definition `dlsym` would return.
    Found(*mut c_void),
    /// No definition here: `dlsym` would look on in the next object.
    NotHere,
    /// A definition this module does not settle (see the module docs).
    Unsettled,
}

/// Finds, for each NUL-terminated name, its first definition in an object loaded
/// after this library. Constructor only.
pub fn find<const N: usize>(names: &[Name; N]) -> Found<N> {
    let mut walk = Walk {
        names,
        me: &raw const __ehdr_start as usize,
        after_me: false,
        done: [false; N],
        gave_up: false,
        found: Found {
            own_name: core::ptr::null(),
            addrs: [core::ptr::null_mut(); N],
            absent: [false; N],
        },
    };
    // SAFETY: `visit::<N>` matches the callback type dl_iterate_phdr expects, and
    // `walk` outlives the call, which runs the callback synchronously.
    unsafe { dl_iterate_phdr(Some(visit::<N>), (&raw mut walk).cast()) };
    // A name still not done was looked for in every object after this one (the
    // walk stops early only when every name is done, or when it gave up).
    if walk.after_me && !walk.gave_up {
        for (absent, done) in walk.found.absent.iter_mut().zip(walk.done.iter()) {
            *absent = !*done;
        }
    }
    walk.found
}

/// # Safety
/// Called by `dl_iterate_phdr` with a valid `info` of `size` bytes and the `Walk`
/// that `find` passed as `data`.
unsafe extern "C" fn visit<const N: usize>(
    info: *mut dl_phdr_info,
    size: usize,
    data: *mut c_void,
) -> c_int {
    if info.is_null() || data.is_null() || size < core::mem::size_of::<dl_phdr_info>() {
        return 1;
    }
    // SAFETY: the caller's contract: `data` is the `Walk` and `info` is valid.
    let (walk, info) = unsafe { (&mut *data.cast::<Walk<'_, N>>(), &*info) };
    if !walk.after_me {
        if info.dlpi_addr as usize == walk.me {
            walk.after_me = true;
            walk.found.own_name = info.dlpi_name;
        }
        return 0;
    }
    // SAFETY: the loader's program headers of a loaded object.
    let Some(tables) = (unsafe { Tables::of(info) }) else {
        // An object we cannot search (no GNU hash table) could hold any pending
        // name, ahead of the objects after it: those names are left to `dlsym`.
        walk.done = [true; N];
        walk.gave_up = true;
        return 1;
    };
    let mut pending = 0;
    let slots = walk.found.addrs.iter_mut().zip(walk.done.iter_mut());
    for (name, (addr, done)) in walk.names.iter().zip(slots) {
        if *done {
            continue;
        }
        // SAFETY: `tables` describes this loaded object's dynamic symbols.
        match unsafe { tables.lookup(name) } {
            Answer::Found(a) => (*addr, *done) = (a, true),
            Answer::Unsettled => *done = true,
            Answer::NotHere => pending += 1,
        }
    }
    // Stop once every name is settled.
    c_int::from(pending == 0)
}

/// The dynamic symbol tables of one loaded object.
struct Tables {
    base: usize,
    gnu_hash: *const u32,
    symtab: *const Elf64_Sym,
    strtab: *const u8,
    versym: *const u16,
}

impl Tables {
    /// # Safety
    /// `info` must describe an object the loader has loaded (not being unloaded).
    unsafe fn of(info: &dl_phdr_info) -> Option<Tables> {
        if info.dlpi_phdr.is_null() {
            return None;
        }
        let addr = info.dlpi_addr as usize;
        // SAFETY: the loader's program header array of `dlpi_phnum` entries.
        let phdrs =
            unsafe { core::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let dynamic = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC)?;
        let mut d = addr.wrapping_add(dynamic.p_vaddr as usize) as *const Dyn;
        // The loader relocates these addresses in place, except in objects whose
        // dynamic section is read-only (the vDSO): there they are still offsets,
        // which lie below the load address.
        let fix = |v: u64| -> usize {
            let v = v as usize;
            if v < addr {
                v.wrapping_add(addr)
            } else {
                v
            }
        };
        let mut t = Tables {
            base: addr,
            gnu_hash: core::ptr::null(),
            symtab: core::ptr::null(),
            strtab: core::ptr::null(),
            versym: core::ptr::null(),
        };
        for _ in 0..MAX_DYN {
            // SAFETY: `d` walks the object's dynamic section, which ends at DT_NULL.
            let e = unsafe { &*d };
            match e.tag {
                DT_NULL => break,
                DT_GNU_HASH => t.gnu_hash = fix(e.val) as *const u32,
                DT_SYMTAB => t.symtab = fix(e.val) as *const Elf64_Sym,
                DT_STRTAB => t.strtab = fix(e.val) as *const u8,
                DT_VERSYM => t.versym = fix(e.val) as *const u16,
                _ => {}
            }
            d = d.wrapping_add(1);
        }
        let complete = !t.gnu_hash.is_null() && !t.symtab.is_null() && !t.strtab.is_null();
        complete.then_some(t)
    }

    /// What `dlsym` would find for `name` in this object.
    ///
    /// # Safety
    /// The tables must be a loaded object's (see [`Tables::of`]).
    // Inlined into `visit`, whose place in the text shim/hot_text.ld names.
    #[inline(always)]
    unsafe fn lookup(&self, name: &Name) -> Answer {
        let h = name.hash;
        let t = self.gnu_hash;
        // SAFETY: the header of the object's GNU hash table: nbuckets, symoffset,
        // bloom_size, bloom_shift, then the Bloom words, buckets and chains.
        let (nbuckets, symoffset, bloom_size, bloom_shift) =
            unsafe { (*t, *t.add(1), *t.add(2), *t.add(3)) };
        if nbuckets == 0 || bloom_size == 0 {
            return Answer::NotHere;
        }
        let bloom = t.wrapping_add(4).cast::<u64>();
        let word = (h / 64) % bloom_size;
        let mask = (1u64 << (h % 64)) | (1u64 << ((h >> (bloom_shift % 32)) % 64));
        // SAFETY: `word < bloom_size`, inside the Bloom filter.
        if unsafe { *bloom.add(word as usize) } & mask != mask {
            return Answer::NotHere;
        }
        let buckets = bloom.wrapping_add(bloom_size as usize).cast::<u32>();
        let chains = buckets.wrapping_add(nbuckets as usize);
        // SAFETY: `h % nbuckets` is a bucket index.
        let first = unsafe { *buckets.add((h % nbuckets) as usize) };
        if first < symoffset {
            return Answer::NotHere;
        }
        for i in (first..).take(MAX_CHAIN) {
            // SAFETY: symbol `i` is in a chain, at or after `symoffset`.
            let h2 = unsafe { *chains.add((i - symoffset) as usize) };
            if h | 1 == h2 | 1 {
                // SAFETY: symbol `i` exists (it has a chain entry), and its name is
                // a NUL-terminated string in the string table.
                match unsafe { self.judge(i, name.bytes) } {
                    Answer::NotHere => {}
                    settled => return settled,
                }
            }
            if h2 & 1 == 1 {
                return Answer::NotHere;
            }
        }
        Answer::Unsettled
    }

    /// Symbol `i`, if it is `name`, as `dlsym` would see it: an undefined, local or
    /// hidden-version symbol is passed over (the loader looks on), a global or weak
    /// function or variable is the answer, anything else (an indirect function, a
    /// thread-local variable) is left to `dlsym`.
    ///
    /// # Safety
    /// Symbol `i` must exist in the tables.
    unsafe fn judge(&self, i: u32, name: &[u8]) -> Answer {
        // SAFETY: the caller's contract.
        let sym = unsafe { &*self.symtab.add(i as usize) };
        let s = self.strtab.wrapping_add(sym.st_name as usize);
        // Compare with the NUL: equal strings end at the same place.
        for (k, &c) in name.iter().enumerate() {
            // SAFETY: the symbol's name is NUL-terminated and the loop stops at the
            // first byte that differs, the NUL of `name` at the latest.
            if unsafe { *s.add(k) } != c {
                return Answer::NotHere;
            }
        }
        let (kind, bind) = (sym.st_info & 0xf, sym.st_info >> 4);
        if sym.st_shndx == 0 || sym.st_value == 0 || bind == STB_LOCAL {
            return Answer::NotHere;
        }
        if !self.versym.is_null() {
            // SAFETY: the version table has one entry per dynamic symbol.
            if unsafe { *self.versym.add(i as usize) } & VERSYM_HIDDEN != 0 {
                return Answer::NotHere;
            }
        }
        if !(kind == STT_FUNC || kind == STT_OBJECT) || !(bind == STB_GLOBAL || bind == STB_WEAK) {
            return Answer::Unsettled;
        }
        Answer::Found(self.base.wrapping_add(sym.st_value as usize) as *mut c_void)
    }
}
