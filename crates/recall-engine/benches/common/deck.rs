//! Deterministic draws for the generated conversations: a small seeded generator and a deck
//! of values that never hands the same value to two facts.

use std::collections::BTreeSet;

/// SplitMix64: small, deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() - 1)]
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.range(0, i);
            items.swap(i, j);
        }
    }
}

/// Draws values for one conversation: a value drawn once is not drawn again, so two facts
/// never share a name, a place or a number.
pub struct Deck {
    pub rng: Rng,
    used: BTreeSet<&'static str>,
}

impl Deck {
    pub fn new(rng: Rng) -> Deck {
        Deck {
            rng,
            used: BTreeSet::new(),
        }
    }

    /// An unused value of `pool` (which must hold more values than the kinds draw from it).
    pub fn draw(&mut self, pool: &[&'static str]) -> &'static str {
        let free: Vec<&'static str> = pool
            .iter()
            .copied()
            .filter(|v| !self.used.contains(v))
            .collect();
        assert!(!free.is_empty(), "pool exhausted: {pool:?}");
        let v = *self.rng.pick(&free);
        self.used.insert(v);
        v
    }

    /// Any value of `pool`, used or not (for filler, where repeats are harmless).
    pub fn any(&mut self, pool: &[&'static str]) -> &'static str {
        pool[self.rng.range(0, pool.len() - 1)]
    }
}
