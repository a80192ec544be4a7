//! A cell's value as a family stores it: as given in a family without
//! compression; in a compressed family (HBase's `COMPRESSION`) one tag byte,
//! then the bytes. The one owner of that layout:
//!
//! ```text
//! compression none:   value
//! compression lz4/zstd: 00 value            (stored as is: compressing did not pay)
//!                       01 lz4 block        (lz4_flex, uncompressed size prepended)
//!                       02 zstd frame
//!                       03 zstd frame made with the family's dictionary (format 9)
//! ```
//!
//! Each cell is compressed alone, so a point read decodes one value; a value
//! that compression would not shrink is kept as it is. A zstd family gets a
//! dictionary trained from its first values (`meta` `dict/<table>/<family>`,
//! [`Dictionary`]): short values such as mail bodies share most of their
//! words with each other, which a frame of one value alone cannot use
//! (Enron's bodies: 43% of their size in plain frames, 35% with one).

use std::borrow::Cow;
use std::cell::RefCell;

use zstd::bulk::{Compressor, Decompressor};
use zstd::zstd_safe::{CCtx, CDict, DCtx, DDict};

use crate::error::{ErrorKind, Result};
use crate::schema::Compression;

const RAW: u8 = 0;
const LZ4: u8 = 1;
const ZSTD: u8 = 2;
const ZSTD_DICT: u8 = 3;
/// zstd's level: fast, most of the gain on mail bodies.
const ZSTD_LEVEL: i32 = 3;
/// Values shorter than this are stored as they are: the frame overhead
/// eats the gain.
const MIN_COMPRESS: usize = 64;

/// The most bytes a family's dictionary takes (zstd's own default size).
pub(crate) const DICTIONARY_BYTES: usize = 110 << 10;

/// A zstd dictionary of one family, ready to compress and decompress with.
pub(crate) struct Dictionary {
    cdict: CDict<'static>,
    ddict: DDict<'static>,
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dictionary").field("id", &self.ddict.get_dict_id()).finish()
    }
}

impl Dictionary {
    /// The dictionary of `bytes` (as `train` made them); `None` when zstd
    /// does not take them.
    pub fn new(bytes: &[u8]) -> Option<Dictionary> {
        Some(Dictionary { cdict: CDict::try_create(bytes, ZSTD_LEVEL)?, ddict: DDict::try_create(bytes)? })
    }

    /// A dictionary trained from `samples` (values of one family), at most
    /// `max_bytes`; `None` when zstd cannot make one of them (too few).
    pub fn train(samples: &[&[u8]], max_bytes: usize) -> Option<Vec<u8>> {
        zstd::dict::from_samples(samples, max_bytes).ok()
    }
}

/// `value` as a family with `compression` (and its dictionary, if it has
/// one) stores it.
pub(crate) fn encode<'v>(
    compression: Compression,
    dict: Option<&Dictionary>,
    value: &'v [u8],
) -> Cow<'v, [u8]> {
    let packed = match compression {
        Compression::None => return Cow::Borrowed(value),
        _ if value.len() < MIN_COMPRESS => None,
        Compression::Lz4 => Some((LZ4, lz4_flex::compress_prepend_size(value))),
        Compression::Zstd => match dict {
            Some(dict) => with_dict_contexts(|c, _| {
                let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(value.len()));
                c.compress_using_cdict(&mut out, value, &dict.cdict).map(|_| out).map_err(zstd_error)
            })
            .ok()
            .map(|z| (ZSTD_DICT, z)),
            None => zstd_compress(value).map(|z| (ZSTD, z)),
        },
    };
    let mut out = Vec::with_capacity(1 + value.len());
    match packed {
        Some((tag, bytes)) if bytes.len() + 1 < value.len() => {
            out.push(tag);
            out.extend_from_slice(&bytes);
        }
        _ => {
            out.push(RAW);
            out.extend_from_slice(value);
        }
    }
    Cow::Owned(out)
}

/// The value a family with `compression` (and its dictionary, if it has
/// one) stored as `stored`; `db` names the family's database in errors.
pub(crate) fn decode<'v>(
    compression: Compression,
    dict: Option<&Dictionary>,
    db: &str,
    stored: &'v [u8],
) -> Result<Cow<'v, [u8]>> {
    if compression == Compression::None {
        return Ok(Cow::Borrowed(stored));
    }
    let corrupted = |detail: String| ErrorKind::Corrupted { db: db.to_owned(), key: String::new(), detail };
    match stored.split_first() {
        Some((&RAW, rest)) => Ok(Cow::Borrowed(rest)),
        Some((&LZ4, rest)) => lz4_flex::decompress_size_prepended(rest)
            .map(Cow::Owned)
            .map_err(|e| corrupted(format!("lz4 value: {e}")).into()),
        Some((&ZSTD, rest)) => {
            // A frame records its size; values are at most what a request body holds.
            let size = zstd::zstd_safe::get_frame_content_size(rest).ok().flatten().unwrap_or(0);
            zstd_decompress(rest, usize::try_from(size).unwrap_or(0).max(1))
                .map(Cow::Owned)
                .map_err(|e| corrupted(format!("zstd value: {e}")).into())
        }
        Some((&ZSTD_DICT, rest)) => {
            let dict =
                dict.ok_or_else(|| corrupted("a value made with a dictionary the family lacks".into()))?;
            let size = zstd::zstd_safe::get_frame_content_size(rest).ok().flatten().unwrap_or(0);
            let size = usize::try_from(size).unwrap_or(0);
            with_dict_contexts(|_, d| {
                let mut out = Vec::with_capacity(size);
                d.decompress_using_ddict(&mut out, rest, &dict.ddict).map(|_| out).map_err(zstd_error)
            })
            .map(Cow::Owned)
            .map_err(|e| corrupted(format!("zstd value: {e}")).into())
        }
        Some((tag, _)) => Err(corrupted(format!("value tag {tag}")).into()),
        None => Err(corrupted("empty value in a compressed family".into()).into()),
    }
}

thread_local! {
    /// A zstd context per thread: creating one costs more than
    /// compressing a short value.
    static ZSTD_CONTEXTS: RefCell<Option<(Compressor<'static>, Decompressor<'static>)>> =
        const { RefCell::new(None) };
}

/// Runs `f` with this thread's zstd contexts (made on first use).
fn with_zstd<T>(
    f: impl FnOnce(&mut Compressor<'static>, &mut Decompressor<'static>) -> std::io::Result<T>,
) -> std::io::Result<T> {
    ZSTD_CONTEXTS.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(std::io::Error::other)?;
        let (c, d) = match &mut *slot {
            Some(contexts) => contexts,
            empty => empty.insert((Compressor::new(ZSTD_LEVEL)?, Decompressor::new()?)),
        };
        f(c, d)
    })
}

thread_local! {
    /// The contexts values with a dictionary are made and read with.
    static DICT_CONTEXTS: RefCell<Option<(CCtx<'static>, DCtx<'static>)>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's contexts for dictionaries (made on first use).
fn with_dict_contexts<T>(
    f: impl FnOnce(&mut CCtx<'static>, &mut DCtx<'static>) -> std::io::Result<T>,
) -> std::io::Result<T> {
    DICT_CONTEXTS.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(std::io::Error::other)?;
        let (c, d) = match &mut *slot {
            Some(contexts) => contexts,
            empty => empty.insert((
                CCtx::try_create().ok_or_else(|| std::io::Error::other("zstd context"))?,
                DCtx::try_create().ok_or_else(|| std::io::Error::other("zstd context"))?,
            )),
        };
        f(c, d)
    })
}

fn zstd_error(code: usize) -> std::io::Error {
    std::io::Error::other(zstd::zstd_safe::get_error_name(code))
}

fn zstd_compress(value: &[u8]) -> Option<Vec<u8>> {
    with_zstd(|c, _| c.compress(value)).ok()
}

fn zstd_decompress(frame: &[u8], size: usize) -> std::io::Result<Vec<u8>> {
    with_zstd(|_, d| d.decompress(frame, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes are pinned: a store written by one build reads in the next.
    #[test]
    fn stored_values_are_pinned_and_round_trip() {
        assert_eq!(&*encode(Compression::None, None, b"abc"), b"abc");
        assert_eq!(&*encode(Compression::Zstd, None, b"abc"), b"\x00abc", "short: as is, tagged");
        let text = "the quick brown fox jumps over the lazy dog. ".repeat(20);
        let z = encode(Compression::Zstd, None, text.as_bytes());
        assert_eq!(z[0], 2);
        assert!(z.len() < text.len() / 4, "{}", z.len());
        let l = encode(Compression::Lz4, None, text.as_bytes());
        assert_eq!(l[0], 1);
        assert_eq!(&l[1..5], &(text.len() as u32).to_le_bytes(), "lz4_flex prepends the size, LE");
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            for value in [&b""[..], b"x", text.as_bytes(), &[0xff; 200]] {
                let stored = encode(c, None, value);
                assert_eq!(&*decode(c, None, "d", &stored).unwrap(), value, "{c:?}");
            }
        }
        // Random bytes do not shrink: stored as they are.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let noise: Vec<u8> = (0..500)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_be_bytes()[0]
            })
            .collect();
        assert_eq!(encode(Compression::Zstd, None, &noise)[0], 0);
        // With a dictionary trained from values like it: tag 03, smaller
        // than a frame alone, and only read with the dictionary.
        let samples: Vec<String> = (0..400)
            .map(|i| format!("Dear team, the gas price report {i} for the California market is attached. Regards, Vince {}", i * 7))
            .collect();
        let refs: Vec<&[u8]> = samples.iter().map(|s| s.as_bytes()).collect();
        let dict = Dictionary::new(&Dictionary::train(&refs, DICTIONARY_BYTES).expect("trained")).unwrap();
        let value =
            b"Dear team, the gas price report 9999 for the California market is attached. Regards, Vince 3";
        let with = encode(Compression::Zstd, Some(&dict), value);
        let without = encode(Compression::Zstd, None, value);
        assert_eq!(with[0], 3);
        assert!(with.len() < without.len(), "{} vs {}", with.len(), without.len());
        assert_eq!(&*decode(Compression::Zstd, Some(&dict), "d", &with).unwrap(), value);
        assert_eq!(
            &*decode(Compression::Zstd, Some(&dict), "d", &without).unwrap(),
            value,
            "older values read"
        );
        let err = decode(Compression::Zstd, None, "d", &with).unwrap_err().to_string();
        assert!(err.contains("dictionary the family lacks"), "{err}");
        assert!(decode(Compression::Zstd, None, "d", b"\x07x").is_err());
    }
}
