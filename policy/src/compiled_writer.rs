//! The compiled buffer's writer, for the compiler: it allocates, so it lives here
//! rather than in the no_std core beside the reader (`envpolicy_core::compiled`).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use envpolicy_core::compiled::*;
use envpolicy_core::glob::GlobKind;

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
        let n = self.count(sec::PATTERNS);
        let v = &mut self.sections[sec::PATTERNS];
        put_str(v, p.text);
        v.push(p.class as u8);
        v.push(p.kind as u8);
        v.extend_from_slice(&p.scope.to_le_bytes());
        put_u32(v, p.specificity);
        put_u32(v, p.line);
        put_u32(v, p.col);
        n
    }

    pub fn program(&mut self, p: ProgramRec) -> u32 {
        let n = self.count(sec::PROGRAMS);
        let v = &mut self.sections[sec::PROGRAMS];
        put_str(v, p.name);
        v.push(p.self_scrub_byte());
        v.push(p.pairs_base_byte());
        v.extend_from_slice(&[0, 0]);
        put_u32(v, p.line);
        n
    }

    pub fn matcher(&mut self, m: MatcherRec) {
        let v = &mut self.sections[sec::MATCHERS];
        put_str(v, m.pattern);
        v.push(m.kind as u8);
        v.extend_from_slice(&[0, 0, 0]);
        put_u32(v, m.program);
    }

    pub fn set(&mut self, s: SetRec) {
        let v = &mut self.sections[sec::SETS];
        v.extend_from_slice(&s.scope.to_le_bytes());
        v.push(u8::from(s.expands));
        v.push(0);
        put_str(v, s.name);
        put_str(v, s.value);
        put_str(v, s.entry);
        put_u32(v, s.line);
    }

    pub fn grant(&mut self, g: GrantRec) {
        let v = &mut self.sections[sec::GRANTS];
        put_str(v, g.name);
        put_str(v, g.program);
        v.push(g.kind as u8);
        v.extend_from_slice(&[0, 0, 0]);
        put_u32(v, g.line);
    }

    pub fn env_file(&mut self, f: EnvFileRec) -> u32 {
        let n = self.count(sec::ENV_FILES);
        let v = &mut self.sections[sec::ENV_FILES];
        put_str(v, f.path);
        v.push(f.role as u8);
        v.push(u8::from(f.values));
        v.extend_from_slice(&[0, 0]);
        put_u32(v, f.line);
        n
    }

    pub fn file_keep(&mut self, k: FileKeepRec) {
        let v = &mut self.sections[sec::FILE_KEEPS];
        put_str(v, k.name);
        put_u32(v, k.file);
        put_u32(v, k.pattern);
    }

    pub fn dep(&mut self, d: DepRec) {
        let v = &mut self.sections[sec::DEPS];
        put_str(v, d.path);
        v.extend_from_slice(&d.dev.to_le_bytes());
        v.extend_from_slice(&d.ino.to_le_bytes());
        v.extend_from_slice(&d.size.to_le_bytes());
        v.extend_from_slice(&d.mtime_ns.to_le_bytes());
    }

    /// Build the exact-name table and glob list from the patterns written so far.
    fn index(&mut self) {
        let n = self.count(sec::PATTERNS);
        let mut exact = Vec::new();
        let mut globs = Vec::new();
        for i in 0..n {
            let r = &self.sections[sec::PATTERNS][i as usize * 24..][..24];
            let off = u32::from_le_bytes(r[0..4].try_into().unwrap()) as usize;
            let len = u32::from_le_bytes(r[4..8].try_into().unwrap()) as usize;
            let text = &self.strings[off..off + len];
            if r[9] == GlobKind::Exact as u8 {
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
        out.push(0);
        out.extend_from_slice(&s.shapes.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
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
