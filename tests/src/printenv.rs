//! A tiny C program that reports what it received: its argv, its /proc/self/environ
//! (what the kernel's execve gave it) and its libc `environ` (what it sees after any
//! preloaded library ran), in a length-prefixed form that survives any byte, plus the
//! Rust parser for that form.
//!
//! Usage: `printenv [--report=PATH] [ARGS...]`. With `--report=PATH` the report is
//! written to PATH atomically (temporary file, then rename: poll for the file to exist,
//! e.g. from a tmux pane); otherwise to stdout. The `--report=` argument itself is
//! recorded in argv like any other.
//!
//! Format: `ENVSHIM-PRINTENV/1\n`, then records `<TAG> <LEN>\n<LEN bytes>\n` with TAG
//! `A` (one argv element), `P` (one /proc/self/environ entry), `E` (one `environ`
//! entry), then `END\n`.

use std::path::{Path, PathBuf};

use crate::compile::compile_c;

/// The C source of the helper.
pub const PRINTENV_C: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static char *buf;
static size_t len, cap;

static void put(const void *p, size_t n) {
    if (len + n > cap) {
        size_t ncap = cap ? cap : 4096;
        while (ncap < len + n) ncap *= 2;
        char *nb = realloc(buf, ncap);
        if (!nb) { perror("printenv: realloc"); _exit(2); }
        buf = nb;
        cap = ncap;
    }
    memcpy(buf + len, p, n);
    len += n;
}

static void record(char tag, const char *p, size_t n) {
    char head[48];
    int k = snprintf(head, sizeof head, "%c %zu\n", tag, n);
    put(head, (size_t)k);
    put(p, n);
    put("\n", 1);
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *report = NULL;
    if (argc > 1 && argv[1] && strncmp(argv[1], "--report=", 9) == 0) report = argv[1] + 9;

    put("ENVSHIM-PRINTENV/1\n", 19);
    for (int i = 0; i < argc && argv[i]; i++) record('A', argv[i], strlen(argv[i]));

    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror("printenv: /proc/self/environ"); return 2; }
    size_t pcap = 65536, plen = 0;
    char *pe = malloc(pcap);
    if (!pe) return 2;
    for (;;) {
        if (plen == pcap) {
            pcap *= 2;
            pe = realloc(pe, pcap);
            if (!pe) return 2;
        }
        ssize_t r = read(fd, pe + plen, pcap - plen);
        if (r < 0) { perror("printenv: read"); return 2; }
        if (r == 0) break;
        plen += (size_t)r;
    }
    close(fd);
    size_t start = 0;
    for (size_t i = 0; i < plen; i++) {
        if (pe[i] == '\0') {
            record('P', pe + start, i - start);
            start = i + 1;
        }
    }
    if (start < plen) record('P', pe + start, plen - start);

    for (char **e = environ; e && *e; e++) record('E', *e, strlen(*e));
    put("END\n", 4);

    if (!report) {
        if (write_all(1, buf, len) != 0) { perror("printenv: write"); return 2; }
        return 0;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", report, (long)getpid());
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) { perror("printenv: open report"); return 2; }
    if (write_all(out, buf, len) != 0 || close(out) != 0) { perror("printenv: write report"); return 2; }
    if (rename(tmp, report) != 0) { perror("printenv: rename report"); return 2; }
    return 0;
}
"#;

/// Compile (or reuse) the printenv helper; returns the binary's path.
pub fn printenv_bin() -> PathBuf {
    compile_c("printenv", PRINTENV_C)
}

/// A parsed printenv report. Holds whatever the child received, values included:
/// check it with `Secrets::assert_absent`, never print it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PrintenvReport {
    /// argv as received (`argv[0]` first).
    pub argv: Vec<Vec<u8>>,
    /// /proc/self/environ entries: what execve delivered.
    pub proc_environ: Vec<Vec<u8>>,
    /// libc `environ` entries at main(): after preloaded constructors ran.
    pub environ: Vec<Vec<u8>>,
}

impl std::fmt::Debug for PrintenvReport {
    /// Names only: a report can hold values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrintenvReport")
            .field("argc", &self.argv.len())
            .field("proc_environ_names", &names_of(&self.proc_environ))
            .field("environ_names", &names_of(&self.environ))
            .finish()
    }
}

fn names_of(entries: &[Vec<u8>]) -> Vec<String> {
    entries
        .iter()
        .map(|e| String::from_utf8_lossy(split_entry(e).0).into_owned())
        .collect()
}

/// `NAME=VALUE` → (NAME, Some(VALUE)); an entry without `=` → (entry, None).
pub fn split_entry(entry: &[u8]) -> (&[u8], Option<&[u8]>) {
    match entry.iter().position(|&b| b == b'=') {
        Some(i) => (&entry[..i], Some(&entry[i + 1..])),
        None => (entry, None),
    }
}

fn lookup<'a>(entries: &'a [Vec<u8>], name: &str) -> Option<&'a [u8]> {
    entries.iter().find_map(|e| match split_entry(e) {
        (n, Some(v)) if n == name.as_bytes() => Some(v),
        _ => None,
    })
}

impl PrintenvReport {
    pub fn parse(bytes: &[u8]) -> Result<PrintenvReport, String> {
        let mut rest = bytes
            .strip_prefix(b"ENVSHIM-PRINTENV/1\n".as_slice())
            .ok_or("missing ENVSHIM-PRINTENV/1 header")?;
        let mut report = PrintenvReport::default();
        loop {
            if rest == b"END\n" {
                return Ok(report);
            }
            let nl = rest
                .iter()
                .position(|&b| b == b'\n')
                .ok_or("truncated record header")?;
            let head = std::str::from_utf8(&rest[..nl]).map_err(|_| "non-UTF-8 record header")?;
            let (tag, n) = head
                .split_once(' ')
                .ok_or_else(|| format!("bad record header {head:?}"))?;
            let n: usize = n.parse().map_err(|_| format!("bad length in {head:?}"))?;
            let body = rest
                .get(nl + 1..nl + 1 + n)
                .ok_or("truncated record body")?;
            if rest.get(nl + 1 + n) != Some(&b'\n') {
                return Err("record not newline-terminated".into());
            }
            let value = body.to_vec();
            match tag {
                "A" => report.argv.push(value),
                "P" => report.proc_environ.push(value),
                "E" => report.environ.push(value),
                _ => return Err(format!("unknown record tag {tag:?}")),
            }
            rest = &rest[nl + 2 + n..];
        }
    }

    /// Read and parse a report file; panics with the reason if it is malformed.
    #[track_caller]
    pub fn read(path: &Path) -> PrintenvReport {
        let bytes =
            std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        PrintenvReport::parse(&bytes)
            .unwrap_or_else(|e| panic!("malformed printenv report {}: {e}", path.display()))
    }

    /// The value of `name` in what execve delivered (first copy, as getenv reads).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        lookup(&self.proc_environ, name)
    }

    /// The value of `name` in the libc `environ` at main().
    pub fn get_libc(&self, name: &str) -> Option<&[u8]> {
        lookup(&self.environ, name)
    }

    /// True when execve delivered `name` (with a value).
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Names delivered by execve, in order (duplicates kept).
    pub fn names(&self) -> Vec<String> {
        names_of(&self.proc_environ)
    }

    /// argv as lossy strings.
    pub fn args(&self) -> Vec<String> {
        self.argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    /// Everything the child received, concatenated (NUL-separated), for leak checks.
    pub fn all_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for e in self
            .argv
            .iter()
            .chain(&self.proc_environ)
            .chain(&self.environ)
        {
            out.extend_from_slice(e);
            out.push(0);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trip() {
        let raw = b"ENVSHIM-PRINTENV/1\nA 1\nx\nA 3\na\nb\nP 5\nK=v=w\nP 3\nodd\nE 3\nK=v\nEND\n";
        let r = PrintenvReport::parse(raw).unwrap();
        assert_eq!(r.argv, vec![b"x".to_vec(), b"a\nb".to_vec()]);
        assert_eq!(r.get("K"), Some(&b"v=w"[..]));
        assert_eq!(r.get("odd"), None);
        assert_eq!(r.get_libc("K"), Some(&b"v"[..]));
        assert_eq!(r.names(), ["K", "odd"]);
        assert!(PrintenvReport::parse(b"ENVSHIM-PRINTENV/1\nA 5\nx\n").is_err());
        assert!(PrintenvReport::parse(b"ENVSHIM-PRINTENV/1\n").is_err());
    }
}
