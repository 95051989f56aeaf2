//! What a program file is, read with goblin: an ELF program (class, machine,
//! interpreter, static or dynamic, Go or not), a `#!` script, or something else.
//!
//! Two depths: [`probe`] reads only the ELF header and program headers, for the
//! run path's "is the target dynamically linked?" (a few KiB, whatever the size of
//! the file); [`inspect`] parses the whole file for `envwrap doctor`.

use goblin::container::{Container, Ctx};
use goblin::elf::header::{self, Header};
use goblin::elf::program_header::{ProgramHeader, PT_INTERP};
use goblin::elf::Elf;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a file is, to the kernel's exec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Elf(ElfFacts),
    /// A `#!` script and its interpreter.
    Script {
        interpreter: PathBuf,
    },
    /// Neither.
    Other,
}

/// Facts about an ELF file. `go` and the section-based facts are only filled by
/// [`inspect`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ElfFacts {
    /// 32 or 64.
    pub class: u8,
    pub machine: u16,
    pub e_type: u16,
    /// PT_INTERP: the dynamic loader the kernel starts.
    pub interpreter: Option<String>,
    /// Has a dynamic section (a static-pie has one but no interpreter).
    pub has_dynamic: bool,
    /// Needed shared libraries (inspect only).
    pub libraries: Vec<String>,
    /// A Go binary: a `.go.buildinfo` section, or a Go build id note (inspect only).
    pub go: bool,
}

impl ElfFacts {
    /// The loader runs, so LD_PRELOAD can take effect.
    pub fn is_dynamic(&self) -> bool {
        self.interpreter.is_some()
    }

    /// `dynamic`, `static` or `static-pie` (or `shared library`).
    pub fn linkage(&self) -> &'static str {
        match (&self.interpreter, self.e_type, self.has_dynamic) {
            (Some(_), _, _) => "dynamic",
            (None, header::ET_DYN, true) => "static-pie",
            (None, header::ET_DYN, false) => "shared object without interpreter",
            _ => "static",
        }
    }

    /// `ELF 64-bit x86-64`.
    pub fn describe_class(&self) -> String {
        format!("ELF {}-bit {}", self.class, machine_name(self.machine))
    }
}

/// A readable name for an ELF machine.
pub fn machine_name(m: u16) -> &'static str {
    match m {
        header::EM_X86_64 => "x86-64",
        header::EM_386 => "i386",
        header::EM_AARCH64 => "aarch64",
        header::EM_ARM => "arm",
        header::EM_RISCV => "riscv",
        other => header::machine_to_str(other),
    }
}

/// The class and machine this envwrap (and the libenvshim.so built with it) is for.
pub fn own_class() -> (u8, u16) {
    let class = if cfg!(target_pointer_width = "64") {
        64
    } else {
        32
    };
    let machine = if cfg!(target_arch = "x86_64") {
        header::EM_X86_64
    } else if cfg!(target_arch = "x86") {
        header::EM_386
    } else if cfg!(target_arch = "aarch64") {
        header::EM_AARCH64
    } else if cfg!(target_arch = "arm") {
        header::EM_ARM
    } else {
        header::EM_NONE
    };
    (class, machine)
}

/// Headers only: enough to tell a dynamic ELF from a static one, or a script.
pub fn probe(path: &Path) -> std::io::Result<Kind> {
    // Never a FIFO or a device: they could block, or never end.
    let mut f = envpolicy::read_file::open(path, envpolicy::readable::PROGRAM)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut buf = Vec::new();
    (&mut f).take(64 * 1024).read_to_end(&mut buf)?;
    if let Some(k) = script(&buf) {
        return Ok(k);
    }
    let Some((hdr, ctx)) = elf_header(&buf) else {
        return Ok(Kind::Other);
    };
    let end = hdr.e_phoff as usize + hdr.e_phnum as usize * hdr.e_phentsize as usize;
    if end > buf.len() && end <= 1 << 20 {
        let mut more = Vec::new();
        f.take((end - buf.len()) as u64).read_to_end(&mut more)?;
        buf.extend(more);
    }
    let phdrs = ProgramHeader::parse(&buf, hdr.e_phoff as usize, hdr.e_phnum as usize, ctx)
        .unwrap_or_default();
    let mut facts = base_facts(&hdr, ctx);
    for ph in &phdrs {
        if ph.p_type == PT_INTERP {
            let start = ph.p_offset as usize;
            let end = start.saturating_add(ph.p_filesz as usize);
            let raw = buf.get(start..end).unwrap_or(b"?");
            let raw = raw.split(|&b| b == 0).next().unwrap_or(raw);
            facts.interpreter = Some(String::from_utf8_lossy(raw).into_owned());
        }
        if ph.p_type == goblin::elf::program_header::PT_DYNAMIC {
            facts.has_dynamic = true;
        }
    }
    Ok(Kind::Elf(facts))
}

/// The whole file parsed (for doctor). Errors name what could not be parsed.
pub fn inspect(bytes: &[u8]) -> Result<Kind, String> {
    if let Some(k) = script(bytes) {
        return Ok(k);
    }
    let Some((hdr, ctx)) = elf_header(bytes) else {
        return Ok(Kind::Other);
    };
    let elf = Elf::parse(bytes).map_err(|e| format!("malformed ELF file: {e}"))?;
    let mut facts = base_facts(&hdr, ctx);
    facts.interpreter = elf.interpreter.map(str::to_string);
    facts.has_dynamic = elf.dynamic.is_some();
    facts.libraries = elf.libraries.iter().map(|s| s.to_string()).collect();
    let section_named = |name: &str| {
        elf.section_headers
            .iter()
            .any(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(name))
    };
    let go_note = |it: Option<goblin::elf::note::NoteIterator<'_>>| {
        it.is_some_and(|notes| {
            notes
                .flatten()
                .any(|n| n.name == "Go" && n.n_type == GO_BUILD_ID_NOTE)
        })
    };
    facts.go = section_named(".go.buildinfo")
        || section_named(".note.go.buildid")
        || go_note(elf.iter_note_headers(bytes))
        || go_note(elf.iter_note_sections(bytes, None));
    Ok(Kind::Elf(facts))
}

/// The note type Go's linker gives its build id (`NT_GO_BUILDID`).
const GO_BUILD_ID_NOTE: u32 = 4;

fn script(buf: &[u8]) -> Option<Kind> {
    let rest = buf.strip_prefix(b"#!")?;
    let line = rest.split(|&b| b == b'\n').next().unwrap_or(rest);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let word = line
        .split(|&b| b == b' ' || b == b'\t')
        .find(|w| !w.is_empty())
        .unwrap_or(b"");
    use std::os::unix::ffi::OsStrExt;
    Some(Kind::Script {
        interpreter: PathBuf::from(std::ffi::OsStr::from_bytes(word)),
    })
}

fn elf_header(buf: &[u8]) -> Option<(Header, Ctx)> {
    if !buf.starts_with(b"\x7fELF") {
        return None;
    }
    let hdr = Elf::parse_header(buf).ok()?;
    let container = hdr.container().ok()?;
    let endian = hdr.endianness().ok()?;
    Some((hdr, Ctx::new(container, endian)))
}

fn base_facts(hdr: &Header, ctx: Ctx) -> ElfFacts {
    ElfFacts {
        class: if ctx.container == Container::Big {
            64
        } else {
            32
        },
        machine: hdr.e_machine,
        e_type: hdr.e_type,
        ..ElfFacts::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_binary_is_elf_of_our_class() {
        let exe = std::env::current_exe().unwrap();
        let Kind::Elf(f) = probe(&exe).unwrap() else {
            panic!("not ELF")
        };
        assert_eq!((f.class, f.machine), own_class());
        let bytes = std::fs::read(&exe).unwrap();
        let Kind::Elf(g) = inspect(&bytes).unwrap() else {
            panic!("not ELF")
        };
        assert_eq!(f.interpreter, g.interpreter);
        assert!(!g.go);
    }

    #[test]
    fn scripts_and_others() {
        assert_eq!(
            script(b"#! /bin/sh -e\necho"),
            Some(Kind::Script {
                interpreter: PathBuf::from("/bin/sh")
            })
        );
        assert_eq!(inspect(b"hello").unwrap(), Kind::Other);
    }
}
