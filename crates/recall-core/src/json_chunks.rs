//! A JSON document written a piece at a time, as a reader asks for it: a large answer (a
//! context of tens of megabytes) is then never held twice, once as its parts and once
//! serialised. The output is byte for byte what `serde_json::to_vec` writes for the same
//! document, whatever the size of the pieces.
//!
//! ```
//! use recall_core::json_chunks::JsonChunks;
//! use serde_json::json;
//!
//! let value = json!({"messages": [{"role": "user", "content": "hi \"there\"\n"}], "n": 1.5});
//! let mut chunks = JsonChunks::new();
//! chunks.push_raw(b"{\"prompt\":".to_vec());
//! chunks.push_value(value.clone());
//! chunks.push_raw(b"}".to_vec());
//! let mut out = Vec::new();
//! while chunks.fill(&mut out, 7) {}
//! assert_eq!(out, serde_json::to_vec(&json!({"prompt": value})).unwrap());
//! ```

use crate::json_text::push_json_str_inner;
use serde_json::Value;

/// What is left to write, the next piece last.
enum Work {
    /// Bytes written as they are (already JSON).
    Raw(Vec<u8>),
    /// A string literal, escaped from byte `at` on; its opening quote is written at 0.
    Str { text: String, at: usize },
    /// A value not yet started.
    Value(Value),
    /// An array's elements not yet written.
    Array {
        rest: std::vec::IntoIter<Value>,
        first: bool,
    },
    /// An object's members not yet written.
    Object {
        rest: serde_json::map::IntoIter,
        first: bool,
    },
}

/// A JSON document made of raw parts, strings and values, written on demand by
/// [`JsonChunks::fill`]. Each part is dropped as soon as it is written, so what is held is
/// what is left to write, not the whole answer.
#[derive(Default)]
pub struct JsonChunks {
    /// The work left, in reverse order (the next piece is popped from the end).
    stack: Vec<Work>,
    /// The parts pushed, in order, not yet moved onto `stack`.
    queued: Vec<Work>,
}

impl JsonChunks {
    /// An empty document.
    pub fn new() -> JsonChunks {
        JsonChunks::default()
    }

    /// Appends bytes written as they are: they must be valid JSON where they stand.
    pub fn push_raw(&mut self, bytes: Vec<u8>) {
        self.queued.push(Work::Raw(bytes));
    }

    /// Appends `text` as a JSON string literal.
    pub fn push_str(&mut self, text: String) {
        self.queued.push(Work::Str { text, at: 0 });
    }

    /// Appends `value` as serde_json writes it (compact).
    pub fn push_value(&mut self, value: Value) {
        self.queued.push(Work::Value(value));
    }

    /// Writes the next piece onto `out`: at least one byte when any is left, and about `max`
    /// bytes at most (a string is cut on a character boundary, an escape is never cut, and a
    /// single number or raw part is written whole). Returns `false` once everything is
    /// written.
    pub fn fill(&mut self, out: &mut Vec<u8>, max: usize) -> bool {
        if !self.queued.is_empty() {
            self.stack.extend(self.queued.drain(..).rev());
        }
        let start = out.len();
        while out.len() - start < max.max(1) {
            let Some(work) = self.stack.pop() else {
                return out.len() > start;
            };
            let room = max.max(1) - (out.len() - start);
            self.write(work, out, room);
        }
        true
    }

    fn write(&mut self, work: Work, out: &mut Vec<u8>, room: usize) {
        match work {
            Work::Raw(bytes) => out.extend_from_slice(&bytes),
            Work::Str { text, at } => {
                if at == 0 {
                    out.push(b'"');
                }
                // A character escapes to at most six bytes: a cut at `room / 6` past `at`
                // stays near `room`, and always moves on by at least one character.
                let mut end = (at + (room / 6).max(1)).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                push_json_str_inner(out, &text[at..end]);
                if end == text.len() {
                    out.push(b'"');
                } else {
                    self.stack.push(Work::Str { text, at: end });
                }
            }
            Work::Value(value) => match value {
                Value::String(text) => self.write(Work::Str { text, at: 0 }, out, room),
                Value::Array(items) => {
                    out.push(b'[');
                    self.stack.push(Work::Array {
                        rest: items.into_iter(),
                        first: true,
                    });
                }
                Value::Object(members) => {
                    out.push(b'{');
                    self.stack.push(Work::Object {
                        rest: members.into_iter(),
                        first: true,
                    });
                }
                // Null, booleans and numbers: a few bytes, as serde_json writes them.
                scalar => {
                    // Writing to a Vec cannot fail, and a scalar always serialises.
                    let _ = serde_json::to_writer(&mut *out, &scalar);
                }
            },
            Work::Array { mut rest, first } => match rest.next() {
                None => out.push(b']'),
                Some(item) => {
                    if !first {
                        out.push(b',');
                    }
                    self.stack.push(Work::Array { rest, first: false });
                    self.stack.push(Work::Value(item));
                }
            },
            Work::Object { mut rest, first } => match rest.next() {
                None => out.push(b'}'),
                Some((key, item)) => {
                    if !first {
                        out.push(b',');
                    }
                    self.stack.push(Work::Object { rest, first: false });
                    self.stack.push(Work::Value(item));
                    self.stack.push(Work::Raw(b":".to_vec()));
                    self.stack.push(Work::Str { text: key, at: 0 });
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn written(value: &Value, max: usize) -> (Vec<u8>, usize) {
        let mut chunks = JsonChunks::new();
        chunks.push_value(value.clone());
        let mut out = Vec::new();
        let mut pieces = 0;
        loop {
            let before = out.len();
            if !chunks.fill(&mut out, max) {
                assert_eq!(out.len(), before, "a last call writes nothing");
                break;
            }
            assert!(out.len() > before, "a piece is never empty");
            pieces += 1;
        }
        (out, pieces)
    }

    #[test]
    fn a_large_string_comes_in_pieces_near_the_size_asked() {
        let text = "\u{1}é\"plain text ".repeat(100_000);
        let value = Value::String(text);
        let (out, pieces) = written(&value, 64 * 1024);
        assert_eq!(out, serde_json::to_vec(&value).unwrap());
        // Each piece holds between a sixth of the size asked and the size asked.
        assert!(pieces > out.len() / (64 * 1024), "{pieces}");
        assert!(pieces < 6 * out.len() / (64 * 1024) + 2, "{pieces}");
    }

    #[test]
    fn empty_containers_and_scalars() {
        for value in [
            json!([]),
            json!({}),
            json!(null),
            json!(""),
            json!([[], {}, [null, true, false, -0.0, 1e300, u64::MAX, i64::MIN]]),
        ] {
            for max in [0, 1, 3, 1000] {
                assert_eq!(written(&value, max).0, serde_json::to_vec(&value).unwrap());
            }
        }
    }

    fn values() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            "(?s).{0,40}".prop_map(Value::String),
            "[\u{0}-\u{1f}\"\\\\aé😀]{0,20}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("(?s).{0,8}", inner), 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the pieces' size, the whole is serde_json's output.
        #[test]
        fn pieces_make_serde_jsons_output(value in values(), max in 0usize..40) {
            prop_assert_eq!(written(&value, max).0, serde_json::to_vec(&value).unwrap());
        }
    }
}
