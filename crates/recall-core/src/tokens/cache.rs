//! A per-thread memo of byte-pair counts of short pre-tokenised pieces.
//!
//! Text is mostly the same few thousand pieces (` the`, `.\n`, `    `, ` function`), and the
//! byte-pair encoder costs far more than a table probe (a few µs for a rare piece, whose
//! lookups miss the processor caches), so each thread keeps tables from piece bytes to token
//! count. They are a pure memo: an entry holds the complete piece (compared byte for byte,
//! never by hash alone) and the count the encoder returned for exactly those bytes, so a
//! count never depends on what the tables hold. They are bounded and allocated on first use,
//! per vocabulary and thread: 65,536 entries for pieces of up to 14 bytes (1 MiB: 16-byte
//! entries, four to a cache line) and 8,192 for pieces of 15 to 30 bytes (256 KiB); a full
//! cache line drops its least recently used entry. Longer pieces (rare: long runs of one
//! character, long identifiers) go to the encoder each time. Thread-local tables need no
//! lock, so threads never contend. Nothing here reads the clock, the environment or a file.

use std::cell::RefCell;

use bpe_openai::byte_pair_encoding::BytePairEncoding;

use super::pretok::Vocab;

/// Longest piece kept in the short table (its entries have two words).
const SHORT_MAX: usize = 14;
/// Longest piece kept at all (in the long table, entries of four words).
const KEY_MAX: usize = 30;
const SHORT_BUCKET_BITS: u32 = 14;
const LONG_BUCKET_BITS: u32 = 12;
/// Short pieces looked up together, so that their (independent) table loads overlap.
const BATCH: usize = 32;
/// In the last word of an entry: the bytes other than the count (the top byte).
const NOT_COUNT: u64 = 0x00ff_ffff_ffff_ffff;

/// `N` words: the piece, zero-padded to `8 * N - 2` bytes, then its length (never 0 in a
/// used entry), then (in a stored entry) its count.
#[derive(Clone, Copy)]
struct Entry<const N: usize>([u64; N]);

/// `W` entries of `N` words in one cache line, the most recently used first.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket<const N: usize, const W: usize>([Entry<N>; W]);

/// One table: `1 << bits` buckets.
struct Table<const N: usize, const W: usize> {
    buckets: Box<[Bucket<N, W>]>,
    bits: u32,
}

impl<const N: usize, const W: usize> Table<N, W> {
    fn new(bits: u32) -> Self {
        assert!((1..64).contains(&bits));
        Table {
            buckets: vec![Bucket([Entry([0; N]); W]); 1 << bits].into_boxed_slice(),
            bits,
        }
    }

    #[inline(always)]
    fn bucket_of(&self, key: &[u64; N]) -> usize {
        (hash(key) >> (64 - self.bits)) as usize
    }

    /// The count stored for `key` in bucket `b` (made the most recently used), or 0.
    #[inline(always)]
    fn get(&mut self, b: usize, key: &[u64; N]) -> u8 {
        let bucket = &mut self.buckets[b].0;
        for way in 0..W {
            let e = &bucket[way].0;
            if e[..N - 1] == key[..N - 1] && e[N - 1] & NOT_COUNT == key[N - 1] {
                let count = (e[N - 1] >> 56) as u8;
                if way > 0 {
                    bucket[..=way].rotate_right(1);
                }
                return count;
            }
        }
        0
    }

    /// Stores `count` for `key` in bucket `b`, dropping its least recently used entry.
    #[inline(always)]
    fn put(&mut self, b: usize, key: &[u64; N], count: usize) {
        let bucket = &mut self.buckets[b].0;
        bucket.rotate_right(1);
        let mut e = *key;
        e[N - 1] |= (count as u64) << 56;
        bucket[0] = Entry(e);
    }
}

/// One vocabulary's tables.
struct Tables {
    short: Table<2, 4>,
    long: Table<4, 2>,
}

pub(crate) struct PieceCache {
    o200k: Option<Tables>,
    cl100k: Option<Tables>,
}

/// A short piece waiting for its lookup.
#[derive(Clone, Copy)]
struct Pending {
    start: usize,
    len: usize,
    key: [u64; 2],
    bucket: usize,
}

const NO_PIECE: Pending = Pending {
    start: 0,
    len: 0,
    key: [0; 2],
    bucket: 0,
};

impl PieceCache {
    pub(crate) const fn new() -> Self {
        PieceCache {
            o200k: None,
            cl100k: None,
        }
    }

    /// The total token count of the pieces of `text` that end at `ends` (in order, the
    /// last at the end of the text), under `bpe`, the encoder of `vocab`.
    pub(crate) fn count(
        &mut self,
        vocab: Vocab,
        bpe: &BytePairEncoding,
        text: &str,
        ends: impl Iterator<Item = usize>,
    ) -> usize {
        let tables = match vocab {
            Vocab::O200k => &mut self.o200k,
            Vocab::Cl100k => &mut self.cl100k,
        };
        let tables = tables.get_or_insert_with(|| Tables {
            short: Table::new(SHORT_BUCKET_BITS),
            long: Table::new(LONG_BUCKET_BITS),
        });
        let bytes = text.as_bytes();
        let mut total = 0;
        let mut batch = [NO_PIECE; BATCH];
        let mut n = 0;
        let mut start = 0;
        for end in ends {
            let len = end - start;
            if len == 1 {
                // Every byte is a token of both vocabularies.
                total += 1;
            } else if len <= SHORT_MAX {
                let key = key::<2>(bytes, start, len);
                batch[n] = Pending {
                    start,
                    len,
                    key,
                    bucket: tables.short.bucket_of(&key),
                };
                n += 1;
                if n == BATCH {
                    total += tables.resolve(bpe, bytes, &batch);
                    n = 0;
                }
            } else if len <= KEY_MAX {
                let key = key::<4>(bytes, start, len);
                let b = tables.long.bucket_of(&key);
                let mut count = tables.long.get(b, &key) as usize;
                if count == 0 {
                    count = Tables::miss(bpe, &bytes[start..end]);
                    tables.long.put(b, &key, count);
                } else {
                    #[cfg(test)]
                    check_hit(bpe, &bytes[start..end], count);
                }
                total += count;
            } else {
                total += bpe.count(&bytes[start..end]);
            }
            start = end;
        }
        total + tables.resolve(bpe, bytes, &batch[..n])
    }
}

impl Tables {
    /// Looks the pending short pieces up, counting and storing the ones not found. The
    /// pieces were gathered first so that the loads of their (independent) buckets overlap.
    #[inline(always)]
    fn resolve(&mut self, bpe: &BytePairEncoding, text: &[u8], batch: &[Pending]) -> usize {
        let mut total = 0;
        for p in batch {
            let found = self.short.get(p.bucket, &p.key);
            let piece = &text[p.start..p.start + p.len];
            if found != 0 {
                #[cfg(test)]
                check_hit(bpe, piece, found as usize);
                total += found as usize;
            } else {
                let count = Tables::miss(bpe, piece);
                self.short.put(p.bucket, &p.key, count);
                total += count;
            }
        }
        total
    }

    /// Counts a piece that is in no table.
    #[inline(never)]
    fn miss(bpe: &BytePairEncoding, piece: &[u8]) -> usize {
        let count = bpe.count(piece);
        // A piece of n bytes has at most n tokens, so the count fits in the top byte.
        debug_assert!((1..=piece.len()).contains(&count));
        count
    }
}

/// Unit tests check every hit against the encoder.
#[cfg(test)]
fn check_hit(bpe: &BytePairEncoding, piece: &[u8], count: usize) {
    assert_eq!(count, bpe.count(piece), "table hit for {piece:?}");
}

/// `text[start..start + len]` (`2 <= len <= 8 * N - 2`) zero-padded to `8 * N - 2` bytes,
/// then `len`, as `N` little-endian words.
#[inline(always)]
fn key<const N: usize>(text: &[u8], start: usize, len: usize) -> [u64; N] {
    let mut words = [0u64; N];
    match text.get(start..start + 8 * N) {
        Some(window) => {
            for (w, chunk) in words.iter_mut().zip(window.chunks_exact(8)) {
                *w = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
            }
        }
        None => words = padded_words(&text[start..start + len]),
    }
    let mask = &KEY_MASKS[len];
    for (w, m) in words.iter_mut().zip(mask) {
        *w &= m;
    }
    words[N - 1] |= (len as u64) << 48;
    words
}

/// The words of a piece near the end of the text, zero-padded.
#[cold]
#[inline(never)]
fn padded_words<const N: usize>(piece: &[u8]) -> [u64; N] {
    let mut buf = [0u8; 32];
    buf[..piece.len()].copy_from_slice(piece);
    let mut words = [0u64; N];
    for (w, chunk) in words.iter_mut().zip(buf.chunks_exact(8)) {
        *w = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
    }
    words
}

/// For each key length, the masks that keep the piece's bytes of each key word.
static KEY_MASKS: [[u64; 4]; KEY_MAX + 1] = key_masks();

const fn key_masks() -> [[u64; 4]; KEY_MAX + 1] {
    let mut t = [[0u64; 4]; KEY_MAX + 1];
    let mut len = 0;
    while len <= KEY_MAX {
        let mut byte = 0;
        while byte < len {
            t[len][byte / 8] |= 0xff << (8 * (byte % 8));
            byte += 1;
        }
        len += 1;
    }
    t
}

/// A multiplicative hash of the key words (use the top bits). Independent multiplications
/// keep the dependency chain short.
#[inline(always)]
fn hash<const N: usize>(key: &[u64; N]) -> u64 {
    const K: [u64; 4] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
        0x27d4_eb2f_1656_67c5,
    ];
    let mut h = 0;
    for (w, k) in key.iter().zip(K) {
        h ^= w.wrapping_mul(k);
    }
    h
}

thread_local! {
    static CACHE: RefCell<PieceCache> = const { RefCell::new(PieceCache::new()) };
}

/// Runs `f` with this thread's table, or with `None` when there is none to be had (the
/// thread is being torn down, or the table is already in use further up the stack).
pub(crate) fn with<R>(f: impl FnOnce(Option<&mut PieceCache>) -> R) -> R {
    let mut f = Some(f);
    let r = CACHE.try_with(|cell| {
        let mut guard = cell.try_borrow_mut().ok();
        f.take().map(|f| f(guard.as_deref_mut()))
    });
    match (r, f) {
        (Ok(Some(r)), _) => r,
        // The thread is being torn down: `try_with` did not run the closure.
        (_, Some(f)) => f(None),
        (_, None) => unreachable!("the closure took `f` and returned its result"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64.
    fn rng(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn words(n: usize, seed: u64) -> String {
        let mut state = seed;
        let mut s = String::new();
        for _ in 0..n {
            s.push(' ');
            for _ in 0..2 + rng(&mut state) % 12 {
                s.push((b'a' + (rng(&mut state) % 26) as u8) as char);
            }
        }
        s
    }

    #[test]
    fn keys_are_the_padded_piece_and_its_length() {
        fn expected(piece: &[u8], words: usize) -> Vec<u64> {
            let mut buf = vec![0u8; 8 * words];
            buf[..piece.len()].copy_from_slice(piece);
            buf[8 * words - 2] = piece.len() as u8;
            buf.chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8")))
                .collect()
        }
        let text = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ";
        for start in 0..text.len() {
            for len in 2..=KEY_MAX.min(text.len() - start) {
                let piece = &text[start..start + len];
                assert_eq!(key::<4>(text, start, len).to_vec(), expected(piece, 4));
                if len <= SHORT_MAX {
                    assert_eq!(key::<2>(text, start, len).to_vec(), expected(piece, 2));
                }
            }
        }
    }

    #[test]
    fn a_lookup_compares_the_whole_piece() {
        // Pieces in one bucket that differ only in their last key word (bytes 8.. or 24..,
        // or the length) must not be taken for one another.
        let text = b"abcdefghijklmnopqrstuvwxyz0123";
        let mut short: Table<2, 4> = Table::new(1);
        short.put(0, &key::<2>(text, 0, 10), 3);
        assert_eq!(short.get(0, &key::<2>(text, 0, 10)), 3);
        assert_eq!(short.get(0, &key::<2>(b"abcdefghiX", 0, 10)), 0);
        assert_eq!(short.get(0, &key::<2>(text, 0, 9)), 0);
        assert_eq!(short.get(0, &key::<2>(text, 0, 11)), 0);
        let mut long: Table<4, 2> = Table::new(1);
        long.put(0, &key::<4>(text, 0, 28), 7);
        assert_eq!(long.get(0, &key::<4>(text, 0, 28)), 7);
        assert_eq!(
            long.get(0, &key::<4>(b"abcdefghijklmnopqrstuvwxyzX123", 0, 28)),
            0
        );
        assert_eq!(long.get(0, &key::<4>(text, 0, 27)), 0);
    }

    #[test]
    fn buckets_keep_the_most_recently_used() {
        let mut t: Table<2, 4> = Table::new(4);
        let keys: Vec<[u64; 2]> = (2..8u64).map(|i| [i, 5 << 48]).collect();
        for (i, k) in keys[..4].iter().enumerate() {
            t.put(0, k, i + 1);
        }
        // Touch the oldest, then add two: the two least recently used go.
        assert_eq!(t.get(0, &keys[0]), 1);
        t.put(0, &keys[4], 5);
        t.put(0, &keys[5], 6);
        let found: Vec<u8> = keys.iter().map(|k| t.get(0, k)).collect();
        assert_eq!(found, [1, 0, 0, 4, 5, 6]);
        // Another bucket is untouched.
        assert_eq!(t.get(1, &keys[0]), 0);
    }

    #[test]
    fn a_full_table_evicts_and_still_counts_exactly() {
        // Far more distinct pieces than entries, counted twice, in one table.
        let text = words(60_000, 11);
        for vocab in [Vocab::O200k, Vocab::Cl100k] {
            let tok = super::super::reference(vocab);
            let expected = tok.count(text.as_str());
            let mut cache = PieceCache::new();
            for _ in 0..2 {
                let ends = super::super::PieceEnds::new(vocab, tok, &text);
                assert_eq!(
                    cache.count(vocab, &tok.bpe, &text, ends),
                    expected,
                    "{vocab:?}"
                );
            }
        }
    }
}
