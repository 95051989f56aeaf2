//! One output stream through a [`Masker`]: bytes in, masked bytes out, with
//! only a possible start of a value held back.

use super::Masker;
use std::time::Duration;

/// The state of one stream (a terminal's output, or a pipe's): the bytes held
/// back, and the last bytes passed on, which a value split across two writes
/// may have started in (a value let go by [`Stream::flush`] when the output
/// paused is still masked from where it was let go).
pub struct Stream<'m> {
    masker: &'m Masker,
    /// Bytes seen: passed-on context, then the held-back bytes from `done`.
    window: Vec<u8>,
    /// Bytes of `window` already passed on (or replaced by a marker).
    done: usize,
}

impl<'m> Stream<'m> {
    pub fn new(masker: &'m Masker) -> Stream<'m> {
        Stream {
            masker,
            window: Vec::new(),
            done: 0,
        }
    }

    /// Bytes held back: a possible start of a value.
    pub fn held(&self) -> usize {
        self.window.len() - self.done
    }

    /// How long the held-back bytes may wait for the rest of a value before
    /// [`Stream::flush`] lets them go: 10 ms per byte held, at most one second.
    /// A key echoed by a terminal that happens to start a value waits 10 ms; a
    /// value a program prints slowly is held longer the more of it has come.
    pub fn hold_time(&self) -> Duration {
        let held = u64::try_from(self.held()).unwrap_or(u64::MAX);
        Duration::from_millis(held.saturating_mul(10).min(1000))
    }

    /// Take `data`; append to `out` what may be passed on now.
    pub fn push(&mut self, data: &[u8], out: &mut Vec<u8>) {
        if self.masker.is_empty() {
            out.extend_from_slice(data);
            return;
        }
        self.window.extend_from_slice(data);
        self.mask_found(out);
        let hold = self.hold_start();
        out.extend_from_slice(self.window.get(self.done..hold).unwrap_or(&[]));
        self.done = hold;
        self.trim();
    }

    /// Let the held-back bytes go (the output paused, or ended): a value that
    /// was whole has already been masked.
    pub fn flush(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.window.get(self.done..).unwrap_or(&[]));
        self.done = self.window.len();
        self.trim();
    }

    /// Replace every whole form in the window that ends past `done` by its
    /// marker (forms that overlap are one masked run, named by the first).
    fn mask_found(&mut self, out: &mut Vec<u8>) {
        let Some(automaton) = &self.masker.automaton else {
            return;
        };
        let window = self.window.as_slice();
        let whole = [(0, window.len())];
        let stretches = match &self.masker.sieve {
            Some(sieve) => sieve.stretches(window),
            None => whole.to_vec(),
        };
        let mut found: Vec<(usize, usize, usize)> = Vec::new();
        for (from, to) in stretches {
            let input = aho_corasick::Input::new(window).span(from..to);
            found.extend(
                automaton
                    .find_overlapping_iter(input)
                    .filter(|m| m.end() > self.done)
                    .map(|m| {
                        (
                            m.start(),
                            m.end(),
                            self.masker.marker_of[m.pattern().as_usize()],
                        )
                    }),
            );
        }
        if found.is_empty() {
            return;
        }
        // Overlapping matches come in the order they end: by start, longest
        // first, then merged into runs.
        found.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for (start, end, marker) in found {
            match runs.last_mut() {
                Some(last) if start < last.1 => last.1 = last.1.max(end),
                _ => runs.push((start, end, marker)),
            }
        }
        for (start, end, marker) in runs {
            if end <= self.done {
                continue;
            }
            if start > self.done {
                out.extend_from_slice(self.window.get(self.done..start).unwrap_or(&[]));
            }
            out.extend_from_slice(&self.masker.markers[marker]);
            self.done = end;
        }
    }

    /// Where the held-back tail starts: the longest tail of the window, from
    /// `done` on, that a form starts with.
    fn hold_start(&self) -> usize {
        let len = self.window.len();
        let from = self
            .done
            .max(len.saturating_sub(self.masker.longest.saturating_sub(1)));
        (from..len)
            .find(|&at| {
                self.masker.starts[usize::from(self.window[at])]
                    && self.masker.starts_some(&self.window[at..])
            })
            .unwrap_or(len)
    }

    /// Keep at most the longest form's length of passed-on context.
    fn trim(&mut self) {
        let keep = self.masker.longest.saturating_sub(1);
        let drop = self.done.saturating_sub(keep);
        if drop > 0 {
            self.window.drain(..drop);
            self.done -= drop;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Masker;
    use super::Stream;

    const TOKEN: &[u8] = b"ghp_0123456789abcdefghijABCDEFGHIJ012345";

    fn masker() -> Masker {
        Masker::new([
            (&b"GH_TOKEN"[..], TOKEN),
            (&b"DB_PASSWORD"[..], &b"p@ss w0rd!"[..]),
        ])
    }

    /// `pieces` through a stream, then flushed.
    fn through(m: &Masker, pieces: &[&[u8]]) -> Vec<u8> {
        let mut s = Stream::new(m);
        let mut out = Vec::new();
        for p in pieces {
            s.push(p, &mut out);
        }
        s.flush(&mut out);
        out
    }

    #[test]
    fn a_value_is_replaced_by_its_marker() {
        let m = masker();
        let text = [b"token: ", TOKEN, b"\n"].concat();
        assert_eq!(through(&m, &[&text]), b"token: <GH_TOKEN>\n");
    }

    #[test]
    fn a_value_written_one_byte_at_a_time_is_masked() {
        let m = masker();
        let text = [b"a ", TOKEN, b" b ", TOKEN].concat();
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(through(&m, &bytes), b"a <GH_TOKEN> b <GH_TOKEN>");
    }

    #[test]
    fn encoded_copies_are_masked() {
        let m = masker();
        // base64 of "x-access-token:" + TOKEN, as git's extraheader holds it.
        let b64 = b"eC1hY2Nlc3MtdG9rZW46Z2hwXzAxMjM0NTY3ODlhYmNkZWZnaGlqQUJDREVGR0hJSjAxMjM0NQ==";
        let out = through(&m, &[b"Authorization: Basic ", b64]);
        assert!(
            out.windows(10).any(|w| w == b"<GH_TOKEN>"),
            "{}",
            String::from_utf8_lossy(&out)
        );
        assert!(!out.windows(20).any(|w| w == &b64[24..44]));
        let out = through(&m, &[b"postgres://u:p%40ss%20w0rd%21@h/db"]);
        assert_eq!(out, b"postgres://u:<DB_PASSWORD>@h/db");
    }

    #[test]
    fn only_a_possible_start_is_held_back() {
        let m = masker();
        let mut s = Stream::new(&m);
        let mut out = Vec::new();
        s.push(b"ls -l\nghp_0123", &mut out);
        assert_eq!(out, b"ls -l\n");
        assert_eq!(s.held(), 8);
        s.push(b"x", &mut out);
        assert_eq!(out, b"ls -l\nghp_0123x");
        assert_eq!(s.held(), 0);
        assert!(s.hold_time().is_zero());
    }

    #[test]
    fn a_value_let_go_at_a_pause_is_masked_from_there() {
        let m = masker();
        let mut s = Stream::new(&m);
        let mut out = Vec::new();
        s.push(&TOKEN[..6], &mut out);
        assert!(out.is_empty());
        s.flush(&mut out);
        s.push(&TOKEN[6..], &mut out);
        assert_eq!(out, b"ghp_01<GH_TOKEN>");
    }

    #[test]
    fn nothing_is_lost_or_reordered() {
        let m = masker();
        let text: Vec<u8> = (0..5_000u32)
            .flat_map(|i| format!("line {i} g gh ghp_\n").into_bytes())
            .collect();
        for size in [1, 7, 4096] {
            let pieces: Vec<&[u8]> = text.chunks(size).collect();
            assert_eq!(through(&m, &pieces), text, "pieces of {size}");
        }
    }

    #[test]
    fn values_planted_in_random_text_are_all_masked_in_any_pieces() {
        let m = masker();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-";
        let mut text = Vec::new();
        let mut planted = 0usize;
        for _ in 0..300 {
            for _ in 0..(next() % 3000) {
                text.push(alphabet[(next() % alphabet.len() as u64) as usize]);
            }
            text.extend_from_slice(TOKEN);
            planted += 1;
        }
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let n = (1 + next() % 70_000) as usize;
            pieces.push(&text[at..(at + n).min(text.len())]);
            at += n;
        }
        let out = through(&m, &pieces);
        assert!(!out.windows(TOKEN.len()).any(|w| w == TOKEN));
        let markers = out.windows(10).filter(|w| *w == b"<GH_TOKEN>").count();
        assert_eq!(markers, planted);
        assert_eq!(out.len(), text.len() - planted * (TOKEN.len() - 10));
    }

    #[test]
    fn no_value_passes_everything_at_once() {
        let m = Masker::new([]);
        let mut s = Stream::new(&m);
        let mut out = Vec::new();
        s.push(b"ghp_", &mut out);
        assert_eq!(out, b"ghp_");
    }
}
