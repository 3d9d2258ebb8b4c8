//! [`Count`]: a policy's whole numbers, read from integers, whole floats and command-line text
//! without ever truncating.

use std::fmt;
use std::str::FromStr;

/// A count in a policy (turns, characters, tokens): a whole number from 0 to 2^63 − 1, the
/// range both databases store. Deserialises from an integer or from a float with no
/// fractional part (`8000.0`: JSON does not tell the two apart and some encoders write whole
/// numbers that way); parses from the same text on the command line. Anything else is refused
/// with [`InvalidCount`], so no interface can truncate a count silently.
///
/// ```
/// use recall_core::policy::Count;
/// let c: Count = serde_json::from_str("8000.0").unwrap();
/// assert_eq!(c.get(), 8000);
/// assert_eq!("8000".parse::<Count>().unwrap(), c);
/// assert!("-1".parse::<Count>().is_err());
/// assert!(serde_json::from_str::<Count>("9223372036854775808").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Count(u64);

/// A value that is not a [`Count`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value: {0}, expected a count from 0 to 9223372036854775807")]
pub struct InvalidCount(pub String);

impl Count {
    /// The largest count: `i64::MAX`.
    pub const MAX: u64 = i64::MAX as u64;

    /// A count, if `n` is at most [`Count::MAX`].
    pub fn new(n: u64) -> Result<Count, InvalidCount> {
        if n <= Count::MAX {
            Ok(Count(n))
        } else {
            Err(InvalidCount(n.to_string()))
        }
    }

    /// The value.
    pub fn get(self) -> u64 {
        self.0
    }

    /// The value as a `usize` (saturating on 32-bit targets, where such a count means "no
    /// limit" in practice).
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }

    /// A whole float within range (below 2^53 every whole float is exact; above it there is
    /// no integer a client could have meant exactly, so it is refused).
    fn from_f64(f: f64) -> Result<Count, InvalidCount> {
        if f.fract() == 0.0 && (0.0..9.0e15).contains(&f) {
            Ok(Count(f as u64))
        } else {
            Err(InvalidCount(f.to_string()))
        }
    }
}

impl From<u32> for Count {
    fn from(n: u32) -> Count {
        Count(u64::from(n))
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Count {
    type Err = InvalidCount;
    fn from_str(s: &str) -> Result<Count, InvalidCount> {
        let t = s.trim();
        if let Ok(n) = t.parse::<u64>() {
            return Count::new(n);
        }
        match t.parse::<f64>() {
            Ok(f) if t.contains('.') => Count::from_f64(f).map_err(|_| InvalidCount(s.into())),
            _ => Err(InvalidCount(s.to_string())),
        }
    }
}

impl serde::Serialize for Count {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a count from 0 to 9223372036854775807")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Count, E> {
                Count::new(n).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Count, E> {
                u64::try_from(n)
                    .map_err(|_| InvalidCount(n.to_string()))
                    .and_then(Count::new)
                    .map_err(E::custom)
            }
            fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Count, E> {
                Count::from_f64(f).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}
