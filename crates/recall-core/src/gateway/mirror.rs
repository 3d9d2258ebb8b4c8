//! The mirror sum: one number that stands for a whole stored history as [`super::same_message`]
//! compares it, so that a client's mirrored history can be checked against every stored
//! message (not only the newest few) at a cost that does not grow with the conversation.
//!
//! Each message contributes a term that depends on its seq and its [`digest`]; a history's sum
//! is the sum of its terms modulo [`MODULUS`] (a prime below 2^61, so that two sums add in a
//! signed 64-bit SQL integer without overflow). A store keeps the running sum with every
//! message (`cum_mirror`) and the conversation's total, as it keeps token totals: the sum
//! over seqs `a+1..=b` is `cum(b) - cum(a)`. A redacted message's term is [`REDACTED`]'s, which
//! says nothing of what was there: a redaction shifts the sums after it by the difference,
//! and the client's copy of the old text is matched by position ([`sum_of`]).
//!
//! The sum is a fast path, not the authority: a request whose sum differs is compared
//! message by message before anything is decided (a tool input's JSON written in another key
//! order has another digest here but is the same message there).

use serde_json::Value;

use super::{compared_blocks, ComparedBlock};
use crate::message::Message;

/// The modulus of every sum: 2^61 − 1 (prime).
pub const MODULUS: i64 = (1 << 61) - 1;

/// The digest standing for a redacted message, whatever it held.
pub const REDACTED: u64 = 0x7265_6461_6374_6564; // "redacted"

/// A message's digest: its role and the blocks [`super::same_message`] compares (a string as
/// one text block; thinking blocks and empty text left out; object keys in sorted order).
pub fn digest(m: &Message) -> u64 {
    let mut h = Hasher::new();
    h.bytes(m.role.as_str().as_bytes());
    h.byte(0xff);
    for b in compared_blocks(&m.content) {
        match b {
            ComparedBlock::Text(t) => {
                h.byte(b'T');
                h.str(t);
            }
            ComparedBlock::Other(block) => {
                h.byte(b'B');
                h.value(&block.to_json());
            }
        }
    }
    h.finish()
}

/// The term of a message of digest `digest` at `seq`, in `0..MODULUS`.
pub fn term(seq: i64, digest: u64) -> i64 {
    let mixed = splitmix(digest ^ splitmix(seq as u64));
    (mixed % MODULUS as u64) as i64
}

/// `a + b` modulo [`MODULUS`] (both in `0..MODULUS`).
pub fn add(a: i64, b: i64) -> i64 {
    (a + b) % MODULUS
}

/// `a - b` modulo [`MODULUS`] (both in `0..MODULUS`).
pub fn sub(a: i64, b: i64) -> i64 {
    (a - b).rem_euclid(MODULUS)
}

/// What replacing a message of digest `old` at `seq` with one of digest `new` adds to every
/// sum that counts it.
pub fn shift(seq: i64, old: u64, new: u64) -> i64 {
    sub(term(seq, new), term(seq, old))
}

/// The sum of `messages` taken as the stored seqs `first`, `first + 1`, …; a seq in
/// `redacted` counts as [`REDACTED`] whatever the message there says.
pub fn sum_of(first: i64, messages: &[Message], redacted: &[i64]) -> i64 {
    messages.iter().zip(first..).fold(0, |acc, (m, seq)| {
        let d = if redacted.contains(&seq) {
            REDACTED
        } else {
            digest(m)
        };
        add(acc, term(seq, d))
    })
}

/// SplitMix64's finaliser: every input bit reaches every output bit.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A 64-bit hash over a length-prefixed encoding (no two different inputs write the same
/// bytes), eight bytes a step: each step, `(rotl(h, 5) ^ word) * K` with `K` odd, is a
/// bijection of the state for a given word, so two inputs of the same length that differ in
/// one word never collide. SplitMix64 spreads the state at the end.
struct Hasher(u64);

impl Hasher {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;

    fn new() -> Hasher {
        Hasher(0xcbf2_9ce4_8422_2325)
    }

    fn word(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(Self::K);
    }

    fn byte(&mut self, b: u8) {
        self.word(u64::from(b));
    }

    fn bytes(&mut self, b: &[u8]) {
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            // The tail's length is in the top byte: "a" and "a\0" differ.
            self.word(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
        }
    }

    fn len(&mut self, n: usize) {
        self.bytes(&(n as u64).to_le_bytes());
    }

    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes(s.as_bytes());
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.byte(b'n'),
            Value::Bool(b) => self.byte(if *b { b't' } else { b'f' }),
            Value::Number(n) => {
                self.byte(b'd');
                self.str(&n.to_string());
            }
            Value::String(s) => {
                self.byte(b's');
                self.str(s);
            }
            Value::Array(a) => {
                self.byte(b'a');
                self.len(a.len());
                for x in a {
                    self.value(x);
                }
            }
            Value::Object(o) => {
                // Key order does not count, as for `Value` equality.
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                self.byte(b'o');
                self.len(keys.len());
                for k in keys {
                    self.str(k);
                    self.value(&o[k]);
                }
            }
        }
    }

    fn finish(&self) -> u64 {
        splitmix(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Block, Role};

    fn text(role: Role, t: &str) -> Message {
        Message::text(role, t)
    }

    #[test]
    fn the_same_message_as_a_client_sends_it_back_has_the_same_digest() {
        let s = text(Role::User, "hi");
        let b = Message::blocks(
            Role::User,
            vec![
                Block::Thinking {
                    thinking: "hm".into(),
                    signature: None,
                },
                Block::Text { text: "hi".into() },
                Block::Text { text: "".into() },
            ],
        );
        assert!(super::super::same_message(&s, &b));
        assert_eq!(digest(&s), digest(&b));
        assert_ne!(digest(&s), digest(&text(Role::Assistant, "hi")));
        assert_ne!(digest(&s), digest(&text(Role::User, "hi ")));
    }

    #[test]
    fn tool_input_key_order_does_not_count() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":[true,null]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":[true,null],"a":1}"#).unwrap();
        let m = |input| {
            Message::blocks(
                Role::Assistant,
                vec![Block::ToolUse {
                    id: "t1".into(),
                    name: "f".into(),
                    input,
                }],
            )
        };
        assert_eq!(digest(&m(a)), digest(&m(b)));
    }

    #[test]
    fn sums_see_order_position_and_redaction() {
        let (x, y) = (text(Role::User, "x"), text(Role::Assistant, "y"));
        let xy = sum_of(1, &[x.clone(), y.clone()], &[]);
        assert_ne!(xy, sum_of(1, &[y.clone(), x.clone()], &[]));
        assert_ne!(xy, sum_of(2, &[x.clone(), y.clone()], &[]));
        // A range is a difference of running sums.
        let z = text(Role::User, "z");
        let xyz = sum_of(1, &[x.clone(), y.clone(), z.clone()], &[]);
        assert_eq!(sub(xyz, xy), sum_of(3, std::slice::from_ref(&z), &[]));
        // Redacting seq 1 shifts the sums by what `shift` says, and then any text there
        // counts as the redacted message.
        let redacted = add(xyz, shift(1, digest(&x), REDACTED));
        assert_eq!(redacted, sum_of(1, &[z.clone(), y.clone(), z], &[1]));
        assert!((0..MODULUS).contains(&redacted));
    }

    #[test]
    fn modular_arithmetic_stays_in_range() {
        let big = MODULUS - 1;
        assert_eq!(add(big, big), MODULUS - 2);
        assert_eq!(sub(0, big), 1);
        assert!((0..MODULUS).contains(&term(i64::MAX, u64::MAX)));
    }
}
