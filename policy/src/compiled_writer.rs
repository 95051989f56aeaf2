//! The compiled buffer's writer, for the compiler: it allocates, so it lives here
//! rather than in the no_std core beside the reader ([`envpolicy_core::compiled`]).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use envpolicy_core::compiled::*;
use envpolicy_core::glob::GlobKind;
use std::mem::offset_of;

/// Builds a compiled policy buffer.
#[derive(Default)]
pub struct Writer {
    pub settings: Option<Settings>,
    strings: Vec<u8>,
    sections: [Vec<u8>; SECTIONS],
    source: StrRef,
    log: StrRef,
}

fn put_u32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put_str(v: &mut Vec<u8>, r: StrRef) {
    put_u32(v, r.off);
    put_u32(v, r.len);
}

/// One record being built: its bytes, zeroed, with each field written at the
/// place `layout` gives it (`offset_of!`), then appended to its section.
struct Record(Vec<u8>);

impl Record {
    fn new(section: usize) -> Record {
        Record(vec![0; RECORD_LEN[section]])
    }

    fn put(&mut self, at: usize, bytes: &[u8]) -> &mut Self {
        self.0[at..at + bytes.len()].copy_from_slice(bytes);
        self
    }

    fn str(&mut self, at: usize, r: StrRef) -> &mut Self {
        self.put(at, &r.off.to_le_bytes())
            .put(at + 4, &r.len.to_le_bytes())
    }

    fn append_to(&self, v: &mut Vec<u8>) {
        v.extend_from_slice(&self.0);
    }
}

impl Writer {
    pub fn new(settings: Settings) -> Writer {
        let mut w = Writer {
            settings: Some(settings),
            ..Writer::default()
        };
        // Offset 0 is the empty string.
        w.strings.push(0);
        w
    }

    /// Add a string to the pool (NUL-terminated); identical strings are not shared.
    pub fn string(&mut self, s: &[u8]) -> StrRef {
        if s.is_empty() {
            return StrRef { off: 0, len: 0 };
        }
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(s);
        self.strings.push(0);
        StrRef {
            off,
            len: s.len() as u32,
        }
    }

    pub fn set_source(&mut self, s: &[u8]) {
        self.source = self.string(s);
    }

    pub fn set_log(&mut self, s: &[u8]) {
        self.log = self.string(s);
    }

    /// Number of records written to section `i` so far.
    pub fn count(&self, i: usize) -> u32 {
        let rec = RECORD_LEN[i];
        (self.sections[i].len() / rec) as u32
    }

    pub fn pattern(&mut self, p: PatternRec) -> u32 {
        use layout::Pattern as L;
        let n = self.count(sec::PATTERNS);
        Record::new(sec::PATTERNS)
            .str(offset_of!(L, text), p.text)
            .put(offset_of!(L, class), &[p.class as u8])
            .put(offset_of!(L, kind), &[p.kind as u8])
            .put(offset_of!(L, scope), &p.scope.to_le_bytes())
            .put(offset_of!(L, specificity), &p.specificity.to_le_bytes())
            .put(offset_of!(L, line), &p.line.to_le_bytes())
            .put(offset_of!(L, col), &p.col.to_le_bytes())
            .append_to(&mut self.sections[sec::PATTERNS]);
        n
    }

    pub fn program(&mut self, p: ProgramRec) -> u32 {
        use layout::Program as L;
        let n = self.count(sec::PROGRAMS);
        Record::new(sec::PROGRAMS)
            .str(offset_of!(L, name), p.name)
            .put(offset_of!(L, self_scrub), &[p.self_scrub_byte()])
            .put(offset_of!(L, pairs_base), &[p.pairs_base_byte()])
            .put(offset_of!(L, line), &p.line.to_le_bytes())
            .append_to(&mut self.sections[sec::PROGRAMS]);
        n
    }

    pub fn matcher(&mut self, m: MatcherRec) {
        use layout::Matcher as L;
        Record::new(sec::MATCHERS)
            .str(offset_of!(L, pattern), m.pattern)
            .put(offset_of!(L, kind), &[m.kind as u8])
            .put(offset_of!(L, program), &m.program.to_le_bytes())
            .append_to(&mut self.sections[sec::MATCHERS]);
    }

    pub fn set(&mut self, s: SetRec) {
        use layout::Set as L;
        Record::new(sec::SETS)
            .put(offset_of!(L, scope), &s.scope.to_le_bytes())
            .put(offset_of!(L, expands), &[u8::from(s.expands)])
            .str(offset_of!(L, name), s.name)
            .str(offset_of!(L, value), s.value)
            .str(offset_of!(L, entry), s.entry)
            .put(offset_of!(L, line), &s.line.to_le_bytes())
            .append_to(&mut self.sections[sec::SETS]);
    }

    pub fn grant(&mut self, g: GrantRec) {
        use layout::Grant as L;
        Record::new(sec::GRANTS)
            .str(offset_of!(L, name), g.name)
            .str(offset_of!(L, program), g.program)
            .put(offset_of!(L, kind), &[g.kind as u8])
            .put(offset_of!(L, line), &g.line.to_le_bytes())
            .append_to(&mut self.sections[sec::GRANTS]);
    }

    pub fn secret(&mut self, r: SecretRec) {
        use layout::Secret as L;
        Record::new(sec::SECRETS)
            .str(offset_of!(L, name), r.name)
            .str(offset_of!(L, source), r.source)
            .str(offset_of!(L, program), r.program)
            .str(offset_of!(L, deny), r.deny)
            .put(offset_of!(L, source_kind), &[r.source_kind as u8])
            .put(offset_of!(L, kind), &[r.kind as u8])
            .put(offset_of!(L, line), &r.line.to_le_bytes())
            .append_to(&mut self.sections[sec::SECRETS]);
    }

    pub fn env_file(&mut self, f: EnvFileRec) -> u32 {
        use layout::EnvFile as L;
        let n = self.count(sec::ENV_FILES);
        Record::new(sec::ENV_FILES)
            .str(offset_of!(L, path), f.path)
            .put(offset_of!(L, role), &[f.role as u8])
            .put(offset_of!(L, values), &[u8::from(f.values)])
            .put(offset_of!(L, line), &f.line.to_le_bytes())
            .append_to(&mut self.sections[sec::ENV_FILES]);
        n
    }

    pub fn file_keep(&mut self, k: FileKeepRec) {
        use layout::FileKeep as L;
        Record::new(sec::FILE_KEEPS)
            .str(offset_of!(L, name), k.name)
            .put(offset_of!(L, file), &k.file.to_le_bytes())
            .put(offset_of!(L, pattern), &k.pattern.to_le_bytes())
            .append_to(&mut self.sections[sec::FILE_KEEPS]);
    }

    pub fn dep(&mut self, d: DepRec) {
        use layout::Dep as L;
        Record::new(sec::DEPS)
            .str(offset_of!(L, path), d.path)
            .put(offset_of!(L, dev), &d.dev.to_le_bytes())
            .put(offset_of!(L, ino), &d.ino.to_le_bytes())
            .put(offset_of!(L, size), &d.size.to_le_bytes())
            .put(offset_of!(L, mtime_ns), &d.mtime_ns.to_le_bytes())
            .append_to(&mut self.sections[sec::DEPS]);
    }

    /// Build the exact-name table and glob list from the patterns written so far.
    fn index(&mut self) {
        let n = self.count(sec::PATTERNS);
        let mut exact = Vec::new();
        let mut globs = Vec::new();
        for i in 0..n {
            use layout::Pattern as L;
            let size = RECORD_LEN[sec::PATTERNS];
            let r = &self.sections[sec::PATTERNS][i as usize * size..][..size];
            let at = offset_of!(L, text);
            let off = u32::from_le_bytes(r[at..at + 4].try_into().unwrap()) as usize;
            let len = u32::from_le_bytes(r[at + 4..at + 8].try_into().unwrap()) as usize;
            let text = &self.strings[off..off + len];
            if r[offset_of!(L, kind)] == GlobKind::Exact as u8 {
                exact.push((name_hash(text), i));
            } else {
                globs.push(i);
            }
        }
        let cap = (exact.len() * 2).next_power_of_two().max(8);
        let mut table = vec![u32::MAX; cap];
        for (h, i) in exact {
            let mut slot = h as usize & (cap - 1);
            while table[slot] != u32::MAX {
                slot = (slot + 1) & (cap - 1);
            }
            table[slot] = i;
        }
        let v = &mut self.sections[sec::EXACT];
        for t in table {
            put_u32(v, t);
        }
        let v = &mut self.sections[sec::GLOBS];
        for g in globs {
            put_u32(v, g);
        }
    }

    /// Finish: the compiled bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.index();
        let s = self.settings.expect("settings");
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        put_u32(&mut out, FORMAT);
        put_u32(&mut out, 0); // total length, patched below
        out.push(s.mode as u8);
        out.push(s.base as u8);
        out.push(u8::from(s.strip_unsafe));
        out.push(u8::from(s.sticky));
        out.push(s.argv_secrets as u8);
        out.push(u8::from(s.env_flags));
        out.push(u8::from(s.self_scrub));
        out.push(s.supervise_changes as u8);
        out.extend_from_slice(&s.shapes.to_le_bytes());
        out.push(u8::from(s.quiet));
        out.push(u8::from(s.mask));
        put_u32(&mut out, s.min_value_len);
        put_str(&mut out, self.source);
        put_str(&mut out, self.log);
        out.resize(HEADER_LEN + SECTIONS * 8, 0);
        self.sections[sec::STRINGS] = std::mem::take(&mut self.strings);
        for i in 0..SECTIONS {
            let off = out.len() as u32;
            let len = self.sections[i].len() as u32;
            out[HEADER_LEN + i * 8..][..4].copy_from_slice(&off.to_le_bytes());
            out[HEADER_LEN + i * 8 + 4..][..4].copy_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&self.sections[i]);
        }
        let total = out.len() as u32;
        out[12..16].copy_from_slice(&total.to_le_bytes());
        out
    }
}
