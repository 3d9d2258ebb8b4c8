//! Semantic ranking by brute force: the dot product of unit vectors (their cosine) against
//! every stored vector a query may reach, keeping the best few. The store streams its rows
//! through [`CosineTop`]; no index, no allocation per row.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::Ranked;

/// Independent partial sums of a dot product: a single running sum is one long chain of
/// dependent additions, which neither pipelines nor vectorises; eight of them do both. The
/// order is fixed, so every caller gets the same float.
const LANES: usize = 8;

/// The dot product of two vectors of the same length (the cosine of two unit vectors); `None`
/// when the lengths differ.
pub fn dot(a: &[f32], b: &[f32]) -> Option<f32> {
    (a.len() == b.len()).then(|| dot_by(a.len(), |i| a[i], |i| b[i]))
}

/// [`dot`] of `query` and a stored vector's bytes (`dim` little-endian f32 values, as
/// [`vector_to_bytes`] writes them), read in place; `None` when the lengths differ.
pub fn dot_bytes(query: &[f32], bytes: &[u8]) -> Option<f32> {
    (bytes.len() == query.len() * 4).then(|| {
        dot_by(
            query.len(),
            |i| query[i],
            |i| {
                let c = &bytes[i * 4..i * 4 + 4];
                f32::from_le_bytes([c[0], c[1], c[2], c[3]])
            },
        )
    })
}

/// The dot product of `n` pairs, in [`LANES`] partial sums added up in order.
#[inline]
fn dot_by(n: usize, a: impl Fn(usize) -> f32, b: impl Fn(usize) -> f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let whole = n - n % LANES;
    let mut i = 0;
    while i < whole {
        for (k, slot) in acc.iter_mut().enumerate() {
            *slot += a(i + k) * b(i + k);
        }
        i += LANES;
    }
    for (k, j) in (whole..n).enumerate() {
        acc[k] += a(j) * b(j);
    }
    acc.iter().sum()
}

/// A heap entry ordered so that the worst kept entry is on top.
#[derive(Debug, Clone, PartialEq)]
struct Entry(Ranked);

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: a lower score (then a newer message) is "greater", so it is popped first.
        other
            .0
            .score
            .total_cmp(&self.0.score)
            .then_with(|| self.0.key().cmp(&other.0.key()))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The `limit` rows most similar to a query vector, fed one at a time.
///
/// ```
/// use recall_core::recall::CosineTop;
/// let mut top = CosineTop::new(vec![1.0, 0.0], 2);
/// top.push(None, 1, &[0.0, 1.0]);
/// top.push(None, 2, &[1.0, 0.0]);
/// top.push(None, 3, &[0.6, 0.8]);
/// let seqs: Vec<i64> = top.finish().iter().map(|r| r.seq).collect();
/// assert_eq!(seqs, [2, 3]);
/// ```
#[derive(Debug, Clone)]
pub struct CosineTop {
    query: Vec<f32>,
    limit: usize,
    heap: BinaryHeap<Entry>,
}

impl CosineTop {
    pub fn new(query: Vec<f32>, limit: usize) -> CosineTop {
        CosineTop {
            query,
            limit,
            heap: BinaryHeap::with_capacity(limit + 1),
        }
    }

    /// Considers one stored vector (one of another length is ignored).
    pub fn push(&mut self, conversation_id: Option<String>, seq: i64, vector: &[f32]) {
        let score = dot(&self.query, vector);
        self.consider(conversation_id, seq, score);
    }

    /// [`CosineTop::push`] of a vector as stored ([`vector_to_bytes`]), read in place: what a
    /// store streams, with no allocation per row.
    pub fn push_bytes(&mut self, conversation_id: Option<String>, seq: i64, bytes: &[u8]) {
        let score = dot_bytes(&self.query, bytes);
        self.consider(conversation_id, seq, score);
    }

    fn consider(&mut self, conversation_id: Option<String>, seq: i64, score: Option<f32>) {
        if self.limit == 0 {
            return;
        }
        let Some(score) = score else {
            return;
        };
        let score = f64::from(score);
        if self.heap.len() == self.limit {
            match self.heap.peek() {
                Some(worst) if worst.0.score >= score => return,
                _ => {}
            }
        }
        self.heap
            .push(Entry(Ranked::new(conversation_id, seq, score)));
        if self.heap.len() > self.limit {
            self.heap.pop();
        }
    }

    /// The kept rows, most similar first (ties: the older first).
    pub fn finish(self) -> Vec<Ranked> {
        let mut v: Vec<Ranked> = self.heap.into_iter().map(|e| e.0).collect();
        v.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.key().cmp(&b.key()))
        });
        v
    }
}

/// A vector as stored: `dim` little-endian f32 values.
pub fn vector_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector read back; `None` when the length is not a whole number of f32 values.
pub fn vector_from_bytes(b: &[u8]) -> Option<Vec<f32>> {
    b.len().is_multiple_of(4).then(|| {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dot_of_bytes_is_the_dot_of_the_vector() {
        for n in [0usize, 1, 7, 8, 9, 384, 385] {
            let a: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let b: Vec<f32> = (0..n)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0)
                .collect();
            let bytes = vector_to_bytes(&b);
            assert_eq!(dot_bytes(&a, &bytes), dot(&a, &b), "{n}");
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            assert!(
                (f64::from(dot(&a, &b).unwrap()) - plain).abs() < 1e-4,
                "{n}"
            );
        }
        assert_eq!(dot_bytes(&[1.0], &[0, 0, 0]), None);
        assert_eq!(dot(&[1.0], &[1.0, 2.0]), None);
    }

    #[test]
    fn keeps_the_best_and_round_trips_bytes() {
        let mut top = CosineTop::new(vec![0.0, 1.0], 3);
        for seq in 0..100 {
            let x = seq as f32 / 100.0;
            top.push(None, seq, &[(1.0 - x * x).sqrt(), x]);
        }
        top.push(None, 500, &[1.0]);
        let seqs: Vec<i64> = top.finish().iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [99, 98, 97]);
        let v = vec![0.5f32, -1.25, 3.0e-8];
        assert_eq!(vector_from_bytes(&vector_to_bytes(&v)), Some(v));
        assert_eq!(vector_from_bytes(&[1, 2, 3]), None);
    }
}
