//! GGUF header validation in safe Rust, run before a file reaches llama.cpp.
//!
//! llama.cpp rejects most malformed files gracefully, but some corruptions (a truncated tensor
//! area, absurd counts or lengths) make it read out of bounds or abort the whole process. This
//! module walks the header (metadata and tensor table) with bounds checks and verifies that the
//! file is long enough to hold every tensor the header describes.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";

/// Alignment of the tensor data area when the file does not set `general.alignment`.
const DEFAULT_ALIGNMENT: u64 = 32;
/// More tensors than this is not a model we can run (the default model has 272).
const MAX_TENSORS: u64 = 1 << 20;
/// More metadata entries than this is a corrupt count.
const MAX_KV: u64 = 1 << 20;
/// Longest key or string value accepted (chat templates are a few KiB; 64 MiB is generous).
const MAX_STRING: u64 = 64 << 20;
/// The tensor rank limit of ggml.
const MAX_DIMS: u32 = 4;

/// What the header says about a GGUF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufInfo {
    /// Format version (2 or 3).
    pub version: u32,
    /// Number of tensors.
    pub tensor_count: u64,
    /// Number of metadata entries.
    pub metadata_count: u64,
    /// `general.architecture`, if set.
    pub architecture: Option<String>,
    /// Offset of the tensor data area.
    pub data_offset: u64,
    /// Bytes the file needs to hold every tensor (data offset + furthest tensor end).
    pub required_size: u64,
    /// Actual file size.
    pub file_size: u64,
}

/// Why a file is not a usable GGUF model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path} is not a usable GGUF model: {problem}")]
pub struct GgufError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

/// Reads and checks the header of the GGUF file at `path`.
pub fn inspect(path: &Path) -> Result<GgufInfo, GgufError> {
    let fail = |problem: String| GgufError {
        path: path.to_path_buf(),
        problem,
    };
    let file = File::open(path).map_err(|err| fail(format!("cannot open it: {err}")))?;
    let file_size = file
        .metadata()
        .map_err(|err| fail(format!("cannot read its size: {err}")))?
        .len();
    let mut reader = Reader {
        inner: BufReader::with_capacity(1 << 16, file),
        pos: 0,
        len: file_size,
    };
    parse(&mut reader).map_err(fail)
}

struct Reader<R> {
    inner: R,
    pos: u64,
    len: u64,
}

impl<R: Read> Reader<R> {
    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let mut buf = [0u8; N];
        self.inner.read_exact(&mut buf).map_err(|err| {
            if err.kind() == io::ErrorKind::UnexpectedEof {
                format!(
                    "the file is truncated (it ends inside the header, reading {what} at byte {})",
                    self.pos
                )
            } else {
                format!("read error at byte {}: {err}", self.pos)
            }
        })?;
        self.pos += N as u64;
        Ok(buf)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.bytes::<4>(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.bytes::<8>(what)?))
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), String> {
        if n > self.remaining() {
            return Err(format!(
                "the file is truncated ({what} at byte {} needs {n} bytes, {} remain)",
                self.pos,
                self.remaining()
            ));
        }
        let copied = io::copy(&mut (&mut self.inner).take(n), &mut io::sink())
            .map_err(|err| format!("read error at byte {}: {err}", self.pos))?;
        if copied != n {
            return Err(format!("the file is truncated (inside {what})"));
        }
        self.pos += n;
        Ok(())
    }

    fn string_len(&mut self, what: &str) -> Result<u64, String> {
        let len = self.u64(what)?;
        if len > MAX_STRING {
            return Err(format!(
                "{what} claims a length of {len} bytes (corrupt header)"
            ));
        }
        if len > self.remaining() {
            return Err(format!(
                "the file is truncated ({what} of {len} bytes at byte {})",
                self.pos
            ));
        }
        Ok(len)
    }

    fn string(&mut self, what: &str) -> Result<String, String> {
        let len = self.string_len(what)?;
        let mut buf = vec![0u8; usize::try_from(len).map_err(|_| "string too long")?];
        self.inner
            .read_exact(&mut buf)
            .map_err(|err| format!("read error at byte {}: {err}", self.pos))?;
        self.pos += len;
        String::from_utf8(buf).map_err(|_| format!("{what} is not UTF-8 (corrupt header)"))
    }
}

/// Size in bytes of one scalar metadata value of GGUF type `ty`; `None` for strings and arrays.
fn scalar_size(ty: u32) -> Option<u64> {
    match ty {
        0 | 1 | 7 => Some(1), // u8, i8, bool
        2 | 3 => Some(2),     // u16, i16
        4..=6 => Some(4),     // u32, i32, f32
        10..=12 => Some(8),   // u64, i64, f64
        _ => None,
    }
}

const TYPE_STRING: u32 = 8;
const TYPE_ARRAY: u32 = 9;

/// `(block size in elements, bytes per block)` of a ggml tensor type, as in ggml's type table.
fn ggml_type_layout(ty: u32) -> Option<(u64, u64)> {
    Some(match ty {
        0 => (1, 4),     // F32
        1 => (1, 2),     // F16
        2 => (32, 18),   // Q4_0
        3 => (32, 20),   // Q4_1
        6 => (32, 22),   // Q5_0
        7 => (32, 24),   // Q5_1
        8 => (32, 34),   // Q8_0
        9 => (32, 36),   // Q8_1
        10 => (256, 84), // Q2_K
        11 => (256, 110),
        12 => (256, 144),
        13 => (256, 176),
        14 => (256, 210),
        15 => (256, 292),
        16 => (256, 66), // IQ2_XXS
        17 => (256, 74),
        18 => (256, 98),
        19 => (256, 50),
        20 => (32, 18), // IQ4_NL
        21 => (256, 110),
        22 => (256, 82),
        23 => (256, 136),
        24 => (1, 1), // I8
        25 => (1, 2),
        26 => (1, 4),
        27 => (1, 8),
        28 => (1, 8), // F64
        29 => (256, 56),
        30 => (1, 2), // BF16
        34 => (256, 54),
        35 => (256, 66),
        39 => (32, 17), // MXFP4
        40 => (64, 36), // NVFP4
        41 => (128, 18),
        42 => (64, 18),
        _ => return None,
    })
}

fn parse<R: Read>(r: &mut Reader<R>) -> Result<GgufInfo, String> {
    let magic = r.bytes::<4>("the magic number").map_err(|_| {
        format!(
            "the file is only {} bytes long, too short for a GGUF header",
            r.len
        )
    })?;
    if magic != GGUF_MAGIC {
        return Err(format!(
            "it does not start with the GGUF magic bytes (found {magic:02x?})"
        ));
    }
    let version = r.u32("the version")?;
    if !(2..=3).contains(&version) {
        return Err(format!(
            "unsupported GGUF version {version} (expected 2 or 3)"
        ));
    }
    let tensor_count = r.u64("the tensor count")?;
    let metadata_count = r.u64("the metadata count")?;
    if tensor_count == 0 || tensor_count > MAX_TENSORS {
        return Err(format!("implausible tensor count {tensor_count}"));
    }
    if metadata_count > MAX_KV {
        return Err(format!("implausible metadata count {metadata_count}"));
    }

    let mut architecture = None;
    let mut alignment = DEFAULT_ALIGNMENT;
    for index in 0..metadata_count {
        let key = r.string(&format!("metadata key #{index}"))?;
        let ty = r.u32(&format!("the type of {key}"))?;
        match (key.as_str(), ty) {
            ("general.architecture", TYPE_STRING) => {
                architecture = Some(r.string("general.architecture")?);
            }
            ("general.alignment", 4) => {
                let value = r.u32("general.alignment")?;
                if value == 0 || !value.is_power_of_two() {
                    return Err(format!("general.alignment {value} is not a power of two"));
                }
                alignment = u64::from(value);
            }
            _ => skip_value(r, ty, &key, 0)?,
        }
    }

    let mut furthest_end = 0u64;
    for index in 0..tensor_count {
        let name = r.string(&format!("the name of tensor #{index}"))?;
        let n_dims = r.u32(&format!("the rank of tensor {name}"))?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(format!(
                "tensor {name} has rank {n_dims} (at most {MAX_DIMS})"
            ));
        }
        let mut elements = 1u64;
        let mut first_dim = 0u64;
        for d in 0..n_dims {
            let dim = r.u64(&format!("the shape of tensor {name}"))?;
            if d == 0 {
                first_dim = dim;
            }
            elements = elements
                .checked_mul(dim)
                .filter(|e| *e <= i64::MAX as u64)
                .ok_or_else(|| format!("tensor {name} has an overflowing shape"))?;
        }
        let ty = r.u32(&format!("the type of tensor {name}"))?;
        let offset = r.u64(&format!("the offset of tensor {name}"))?;
        let (block, block_bytes) = ggml_type_layout(ty)
            .ok_or_else(|| format!("tensor {name} has an unknown ggml type {ty}"))?;
        if !first_dim.is_multiple_of(block) {
            return Err(format!(
                "tensor {name}: its first dimension {first_dim} is not a multiple of the block size {block}"
            ));
        }
        if !offset.is_multiple_of(alignment) {
            return Err(format!(
                "tensor {name}: offset {offset} is not aligned to {alignment}"
            ));
        }
        let bytes = (elements / block)
            .checked_mul(block_bytes)
            .ok_or_else(|| format!("tensor {name} is too large"))?;
        let end = offset
            .checked_add(bytes)
            .ok_or_else(|| format!("tensor {name} ends beyond any file size"))?;
        furthest_end = furthest_end.max(end);
    }

    let data_offset = r.pos.div_ceil(alignment) * alignment;
    let required_size = data_offset
        .checked_add(furthest_end)
        .ok_or_else(|| "tensor data ends beyond any file size".to_string())?;
    if r.len < required_size {
        return Err(format!(
            "the file is truncated: its tensors need {required_size} bytes but it has {} ({} missing)",
            r.len,
            required_size - r.len
        ));
    }
    Ok(GgufInfo {
        version,
        tensor_count,
        metadata_count,
        architecture,
        data_offset,
        required_size,
        file_size: r.len,
    })
}

fn skip_value<R: Read>(r: &mut Reader<R>, ty: u32, key: &str, depth: u32) -> Result<(), String> {
    if let Some(size) = scalar_size(ty) {
        return r.skip(size, key);
    }
    match ty {
        TYPE_STRING => {
            let len = r.string_len(key)?;
            r.skip(len, key)
        }
        TYPE_ARRAY if depth == 0 => {
            let item_ty = r.u32(key)?;
            let count = r.u64(key)?;
            if let Some(size) = scalar_size(item_ty) {
                let bytes = count
                    .checked_mul(size)
                    .ok_or_else(|| format!("array {key} has an overflowing length"))?;
                return r.skip(bytes, key);
            }
            // Each string item takes at least its 8-byte length prefix.
            if count > r.remaining() / 8 {
                return Err(format!(
                    "the file is truncated or corrupt: array {key} claims {count} items, more \
                     than the rest of the file can hold"
                ));
            }
            for _ in 0..count {
                skip_value(r, item_ty, key, depth + 1)?;
            }
            Ok(())
        }
        _ => Err(format!("metadata {key} has an invalid value type {ty}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_str(buf: &mut Vec<u8>, s: &str) {
        buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
        buf.extend_from_slice(s.as_bytes());
    }

    /// A tiny but complete GGUF file: one F32 tensor of `n` elements.
    fn tiny(n: u64) -> Vec<u8> {
        let mut buf = Vec::new();
        buf.extend_from_slice(b"GGUF");
        buf.extend_from_slice(&3u32.to_le_bytes());
        buf.extend_from_slice(&1u64.to_le_bytes());
        buf.extend_from_slice(&2u64.to_le_bytes());
        push_str(&mut buf, "general.architecture");
        buf.extend_from_slice(&TYPE_STRING.to_le_bytes());
        push_str(&mut buf, "llama");
        push_str(&mut buf, "tokenizer.ggml.tokens");
        buf.extend_from_slice(&TYPE_ARRAY.to_le_bytes());
        buf.extend_from_slice(&TYPE_STRING.to_le_bytes());
        buf.extend_from_slice(&2u64.to_le_bytes());
        push_str(&mut buf, "a");
        push_str(&mut buf, "b");
        push_str(&mut buf, "w");
        buf.extend_from_slice(&1u32.to_le_bytes());
        buf.extend_from_slice(&n.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&0u64.to_le_bytes());
        while buf.len() % 32 != 0 {
            buf.push(0);
        }
        buf.extend(std::iter::repeat_n(0u8, (n * 4) as usize));
        buf
    }

    fn check(bytes: &[u8]) -> Result<GgufInfo, String> {
        let mut reader = Reader {
            inner: bytes,
            pos: 0,
            len: bytes.len() as u64,
        };
        parse(&mut reader)
    }

    #[test]
    fn accepts_a_complete_file() {
        let bytes = tiny(8);
        let info = check(&bytes).unwrap();
        assert_eq!(info.architecture.as_deref(), Some("llama"));
        assert_eq!(info.required_size, bytes.len() as u64);
        assert_eq!(info.tensor_count, 1);
    }

    #[test]
    fn rejects_truncation_anywhere() {
        let bytes = tiny(8);
        for cut in [0, 3, 10, 30, 60, bytes.len() - 1] {
            let err = check(&bytes[..cut]).unwrap_err();
            assert!(
                err.contains("truncated") || err.contains("too short"),
                "cut {cut}: {err}"
            );
        }
    }

    #[test]
    fn rejects_wrong_magic_and_version() {
        let mut bytes = tiny(8);
        bytes[0] = b'X';
        assert!(check(&bytes).unwrap_err().contains("magic"));
        let mut bytes = tiny(8);
        bytes[4] = 9;
        assert!(check(&bytes).unwrap_err().contains("version 9"));
    }

    #[test]
    fn rejects_absurd_lengths() {
        let mut bytes = tiny(8);
        // The first key length: claim 2^40 bytes.
        bytes[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(check(&bytes).unwrap_err().contains("length"));
    }
}
