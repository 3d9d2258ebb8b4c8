//! Reading a whole input (`render`, `import`) from a file or stdin in bounded chunks, under a
//! size limit: too large and out of memory are the same bad-input failure (exit status 2,
//! naming the limit) whichever the source.

use std::io::Read;
use std::path::Path;

use crate::exit::bad_input;

/// The default of `--max-input-bytes`.
pub const DEFAULT_MAX_INPUT_BYTES: usize = 256 << 20;

/// Bytes read at a time.
const CHUNK: usize = 64 << 10;

/// Where an input comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    Stdin,
    File(&'a Path),
}

impl Source<'_> {
    fn name(&self) -> String {
        match self {
            Source::Stdin => "stdin".to_string(),
            Source::File(p) => p.display().to_string(),
        }
    }
}

/// The whole input as UTF-8 text, at most `limit` bytes.
pub fn read_text(source: Source<'_>, limit: usize) -> anyhow::Result<String> {
    let name = source.name();
    let bytes = match source {
        Source::Stdin => {
            read_limited(std::io::stdin().lock(), limit, None).map_err(|e| e.into_error(&name))?
        }
        Source::File(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| bad_input(format!("cannot read {name}: {e}")))?;
            // A regular file says its size: one over the limit is refused before reading.
            let size = file
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            read_limited(file, limit, size).map_err(|e| e.into_error(&name))?
        }
    };
    String::from_utf8(bytes).map_err(|e| {
        bad_input(format!(
            "{name} is not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Why an input could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// Over the limit (`read` bytes seen so far, or the file's size).
    TooLarge {
        seen: u64,
        limit: usize,
    },
    /// Memory for the input could not be had.
    OutOfMemory {
        read: usize,
        limit: usize,
    },
    Io(std::io::Error),
}

impl ReadError {
    /// Too large and out of memory are bad input (exit status 2); a failing read is not the
    /// input's fault, except for a file (a path that cannot be read is a bad argument).
    fn into_error(self, name: &str) -> anyhow::Error {
        match self {
            ReadError::TooLarge { seen, limit } => bad_input(format!(
                "{name} is over the input limit of {limit} bytes ({seen} bytes or more); \
                 raise it with --max-input-bytes"
            )),
            ReadError::OutOfMemory { read, limit } => bad_input(format!(
                "out of memory reading {name} after {read} bytes (the input limit is {limit} \
                 bytes, --max-input-bytes)"
            )),
            ReadError::Io(e) if name == "stdin" => {
                anyhow::Error::new(e).context(format!("cannot read {name}"))
            }
            ReadError::Io(e) => bad_input(format!("cannot read {name}: {e}")),
        }
    }
}

/// Reads `r` to its end in chunks of [`CHUNK`] bytes, refusing more than `limit` bytes and
/// reporting a failed allocation instead of aborting. `size_hint` (a file's size) is refused
/// at once when over the limit and sizes the buffer otherwise.
pub fn read_limited(
    mut r: impl Read,
    limit: usize,
    size_hint: Option<u64>,
) -> Result<Vec<u8>, ReadError> {
    if let Some(size) = size_hint.filter(|&s| s > limit as u64) {
        return Err(ReadError::TooLarge { seen: size, limit });
    }
    let mut buf: Vec<u8> = Vec::new();
    if let Some(size) = size_hint {
        // The size may change while reading; this only spares the regrowth.
        buf.try_reserve_exact(size as usize)
            .map_err(|_| ReadError::OutOfMemory { read: 0, limit })?;
    }
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => return Ok(buf),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::OutOfMemory => {
                return Err(ReadError::OutOfMemory {
                    read: buf.len(),
                    limit,
                })
            }
            Err(e) => return Err(ReadError::Io(e)),
        };
        let len = buf.len() + n;
        if len > limit {
            return Err(ReadError::TooLarge {
                seen: len as u64,
                limit,
            });
        }
        if len > buf.capacity() {
            // Doubling, but never past the limit.
            let target = (buf.capacity() * 2).max(len).min(limit);
            buf.try_reserve_exact(target - buf.len())
                .map_err(|_| ReadError::OutOfMemory {
                    read: buf.len(),
                    limit,
                })?;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_limit_and_refuses_more() {
        let data = vec![b'a'; 3 * CHUNK + 17];
        let got = read_limited(&data[..], data.len(), None).unwrap();
        assert_eq!(got, data);
        match read_limited(&data[..], data.len() - 1, None) {
            Err(ReadError::TooLarge { limit, .. }) => assert_eq!(limit, data.len() - 1),
            other => panic!("expected too large, got {other:?}"),
        }
        match read_limited(&data[..], 10, Some(data.len() as u64)) {
            Err(ReadError::TooLarge { seen, .. }) => assert_eq!(seen, data.len() as u64),
            other => panic!("expected too large, got {other:?}"),
        }
    }

    #[test]
    fn an_allocation_failure_is_reported() {
        // No allocator gives this much; the reservation fails instead of aborting.
        match read_limited(&b"abc"[..], usize::MAX, Some(u64::MAX / 2)) {
            Err(ReadError::OutOfMemory { read: 0, .. }) => {}
            other => panic!("expected out of memory, got {other:?}"),
        }
    }
}
