//! Bounded reading of a body received from outside (a model provider's answer, a key set): a
//! body is taken chunk by chunk and refused as soon as it would pass its bound, so what a
//! server sends can never grow a buffer past the limit the caller names.
//!
//! ```
//! use harmonia_contracts::body::{CappedBody, TooLarge};
//!
//! let mut body = CappedBody::new(None, 6)?;
//! for chunk in [b"abc".as_slice(), b"def"] {
//!     body.push(chunk)?;
//! }
//! assert_eq!(body.finish(), b"abcdef");
//! assert!(CappedBody::new(Some(7), 6).is_err());
//! # Ok::<(), TooLarge>(())
//! ```

use std::fmt;

/// A body longer than its bound (declared so, or found so while reading).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The bound it passed, in bytes.
    pub limit: usize,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the body is longer than its limit of {} bytes", self.limit)
    }
}

impl std::error::Error for TooLarge {}

/// A body being read under a bound: chunks are appended until the total would pass the limit,
/// and the chunk that would is refused without being copied. At most `limit` bytes are ever
/// buffered.
#[derive(Debug)]
pub struct CappedBody {
    limit: usize,
    bytes: Vec<u8>,
}

impl CappedBody {
    /// Start a body of at most `limit` bytes. A `declared` length (`Content-Length`) over the
    /// limit is refused before anything is read; one under it is a hint only (the body is
    /// still counted as it arrives).
    pub fn new(declared: Option<u64>, limit: usize) -> Result<Self, TooLarge> {
        let capacity = match declared.map(usize::try_from) {
            Some(Ok(n)) if n <= limit => n,
            Some(_) => return Err(TooLarge { limit }),
            None => 0,
        };
        Ok(Self { limit, bytes: Vec::with_capacity(capacity) })
    }

    /// Append the next chunk, or refuse it when the body would pass its limit.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), TooLarge> {
        if chunk.len() > self.limit - self.bytes.len() {
            return Err(TooLarge { limit: self.limit });
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// The whole body.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Why a response's body could not be read whole.
#[cfg(feature = "http")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// It is longer than its bound (declared so, or found so while reading).
    TooLarge(TooLarge),
    /// The transfer broke off.
    Broken,
}

/// The body of `response`, read chunk by chunk under `limit` ([`CappedBody`]).
#[cfg(feature = "http")]
pub async fn read(response: &mut reqwest::Response, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut body = CappedBody::new(response.content_length(), limit).map_err(ReadError::TooLarge)?;
    while let Some(chunk) = response.chunk().await.map_err(|_| ReadError::Broken)? {
        body.push(&chunk).map_err(ReadError::TooLarge)?;
    }
    Ok(body.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read `chunks` under `limit`: the body, or the refusal and how many chunks were taken.
    fn read(declared: Option<u64>, limit: usize, chunks: &[&[u8]]) -> Result<Vec<u8>, (TooLarge, usize)> {
        let mut body = CappedBody::new(declared, limit).map_err(|e| (e, 0))?;
        for (taken, chunk) in chunks.iter().enumerate() {
            body.push(chunk).map_err(|e| (e, taken + 1))?;
        }
        Ok(body.finish())
    }

    #[test]
    fn a_body_within_its_limit_is_read_whole_and_one_past_it_is_refused_at_the_chunk_that_passes() {
        assert_eq!(read(None, 6, &[b"abc", b"def"]), Ok(b"abcdef".to_vec()), "exactly the limit is read");
        assert_eq!(read(Some(6), 6, &[b"abc", b"def"]), Ok(b"abcdef".to_vec()));
        assert_eq!(read(None, 6, &[]), Ok(Vec::new()));
        assert_eq!(read(None, 5, &[b"abc", b"def", b"ghi"]), Err((TooLarge { limit: 5 }, 2)));
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused_before_anything_is_read() {
        assert_eq!(read(Some(7), 6, &[b"abc"]), Err((TooLarge { limit: 6 }, 0)));
        assert_eq!(read(Some(u64::MAX), 6, &[b"abc"]), Err((TooLarge { limit: 6 }, 0)));
        // A length declared short is not believed: the body is counted as it comes.
        assert_eq!(read(Some(1), 4, &[b"abc", b"de"]), Err((TooLarge { limit: 4 }, 2)));
        assert_eq!(TooLarge { limit: 4 }.to_string(), "the body is longer than its limit of 4 bytes");
    }
}
