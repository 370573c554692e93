//! `studio.index`: a long session's line index on disk, beside its transcript, so opening the
//! session (after a restart of Studio too) neither reads the transcript again nor holds every
//! line's entry in memory.
//!
//! The file is a fixed header, a block of interned names and then one fixed-size record per
//! indexed line (offset, length, kind, sender, id: [`RECORD`] bytes), in file order. It is
//! extended in place: new records are written after the last one and the header is rewritten
//! last, so a crash between the two leaves records the header does not count (ignored). The
//! header says what of the transcript it covers — byte offset and line count, with the
//! transcript's device, inode and [`state_snapshot::fingerprint`], checked as `state.snapshot` is
//! ([`state_snapshot::still_holds`]) — and carries a CRC-32 of itself with the names and one of
//! every counted record. Anything that does not match (another format, a damaged or truncated
//! file, a transcript that is not the one it indexed) discards it and the index is rebuilt from
//! the transcript; it is a cache, never trusted blindly.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::runtime::state_snapshot::{self, Prefix};

/// One indexed event line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexedLine {
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length without the line terminator.
    pub len: u32,
    /// Interned kind.
    pub kind: u16,
    /// Interned sender.
    pub from: u16,
    /// The event id (a ULID: 26 ASCII bytes).
    pub id: [u8; 26],
}

impl IndexedLine {
    /// The id as text.
    pub(crate) fn id(&self) -> &str {
        std::str::from_utf8(&self.id).unwrap_or("")
    }
}

/// The file's name in the session folder.
pub(crate) const INDEX_FILE: &str = "studio.index";
const MAGIC: &[u8; 8] = b"CRUMBIDX";
/// Bumped whenever the layout changes.
const FORMAT: u32 = 1;
/// Header bytes (the fields, then zeros).
const HEADER: u64 = 256;
/// Bytes reserved for the interned names (kinds and senders): a session whose names do not fit
/// keeps its index in memory only.
const NAMES: u64 = 64 * 1024;
/// One record: offset (8), length (4), kind (2), sender (2), id (26).
pub(crate) const RECORD: usize = 42;
/// Where the records start.
const RECORDS: u64 = HEADER + NAMES;
/// Records read at once when checking the file.
const CHECK_BATCH: usize = 16 * 1024;

/// What the header says beyond the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Covered {
    /// The transcript's first `prefix.offset` bytes (`prefix.lines` lines) are indexed.
    pub prefix: Prefix,
    /// Lines that were not events.
    pub skipped: u64,
    /// Ids increased strictly in file order.
    pub sorted: bool,
    pub names: Vec<Box<str>>,
}

/// An open index file holding `count` records.
#[derive(Debug)]
pub(crate) struct IndexFile {
    file: File,
    path: PathBuf,
    pub count: usize,
    records_crc: u32,
    names_written: usize,
}

/// Where the index of the transcript at `transcript` lives: next to it.
pub(crate) fn path_for(transcript: &Path) -> PathBuf {
    transcript.with_file_name(INDEX_FILE)
}

pub(crate) fn encode(line: &IndexedLine) -> [u8; RECORD] {
    let mut out = [0u8; RECORD];
    out[..8].copy_from_slice(&line.offset.to_le_bytes());
    out[8..12].copy_from_slice(&line.len.to_le_bytes());
    out[12..14].copy_from_slice(&line.kind.to_le_bytes());
    out[14..16].copy_from_slice(&line.from.to_le_bytes());
    out[16..].copy_from_slice(&line.id);
    out
}

pub(crate) fn decode(bytes: &[u8]) -> IndexedLine {
    let mut offset = [0u8; 8];
    offset.copy_from_slice(&bytes[..8]);
    let mut len = [0u8; 4];
    len.copy_from_slice(&bytes[8..12]);
    let mut id = [0u8; 26];
    id.copy_from_slice(&bytes[16..RECORD]);
    IndexedLine {
        offset: u64::from_le_bytes(offset),
        len: u32::from_le_bytes(len),
        kind: u16::from_le_bytes([bytes[12], bytes[13]]),
        from: u16::from_le_bytes([bytes[14], bytes[15]]),
        id,
    }
}

fn names_block(names: &[Box<str>]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for name in names {
        let len = u16::try_from(name.len()).ok()?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
    }
    (out.len() as u64 <= NAMES).then_some(out)
}

fn header_bytes(count: usize, records_crc: u32, covered: &Covered, names: &[u8]) -> Vec<u8> {
    let prefix = &covered.prefix;
    let mut h = vec![0u8; usize::try_from(HEADER).unwrap_or(256)];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    h[16..24].copy_from_slice(&(count as u64).to_le_bytes());
    h[24..32].copy_from_slice(&prefix.offset.to_le_bytes());
    h[32..40].copy_from_slice(&prefix.lines.to_le_bytes());
    h[40..48].copy_from_slice(&covered.skipped.to_le_bytes());
    h[48] = u8::from(covered.sorted);
    h[56..64].copy_from_slice(&prefix.device.to_le_bytes());
    h[64..72].copy_from_slice(&prefix.inode.to_le_bytes());
    h[72..76].copy_from_slice(&records_crc.to_le_bytes());
    h[80..84].copy_from_slice(&u32::try_from(names.len()).unwrap_or(u32::MAX).to_le_bytes());
    let fingerprint = prefix.fingerprint.as_bytes();
    let n = fingerprint.len().min(96);
    h[84] = u8::try_from(n).unwrap_or(0);
    h[88..88 + n].copy_from_slice(&fingerprint[..n]);
    let mut crc = crc32fast::Hasher::new();
    crc.update(&h[16..]);
    crc.update(names);
    h[12..16].copy_from_slice(&crc.finalize().to_le_bytes());
    h
}

fn u64_at(h: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[at..at + 8]);
    u64::from_le_bytes(b)
}

fn u32_at(h: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&h[at..at + 4]);
    u32::from_le_bytes(b)
}

impl IndexFile {
    /// The index beside `transcript` when it is sound and the transcript still holds what it
    /// covers; otherwise `None` (said with `CRUMB_DEBUG` unless there is no file).
    pub(crate) fn open(transcript: &Path) -> Option<(IndexFile, Covered)> {
        let path = path_for(transcript);
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                state_snapshot::debug(&format!("{} not used: {e}", path.display()));
                return None;
            }
        };
        match Self::check(file, &path, transcript) {
            Ok(found) => Some(found),
            Err(why) => {
                state_snapshot::debug(&format!(
                    "{} not used ({why}); indexing the transcript from its start",
                    path.display()
                ));
                None
            }
        }
    }

    fn check(file: File, path: &Path, transcript: &Path) -> Result<(IndexFile, Covered), String> {
        let mut h = vec![0u8; usize::try_from(HEADER).unwrap_or(256)];
        file.read_exact_at(&mut h, 0)
            .map_err(|e| format!("no header: {e}"))?;
        if &h[..8] != MAGIC || u32_at(&h, 8) != FORMAT {
            return Err("not an index of this format".into());
        }
        let names_len = u32_at(&h, 80);
        if u64::from(names_len) > NAMES || usize::from(h[84]) > 96 {
            return Err("damaged header".into());
        }
        let mut names_bytes = vec![0u8; names_len as usize];
        file.read_exact_at(&mut names_bytes, HEADER)
            .map_err(|e| format!("no names: {e}"))?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&h[16..]);
        crc.update(&names_bytes);
        if crc.finalize() != u32_at(&h, 12) {
            return Err("its header is damaged".into());
        }
        let names = parse_names(&names_bytes).ok_or("its names are damaged")?;
        let count = usize::try_from(u64_at(&h, 16)).map_err(|_| "damaged header")?;
        let fingerprint = std::str::from_utf8(&h[88..88 + usize::from(h[84])])
            .map_err(|_| "damaged header")?
            .to_owned();
        let covered = Covered {
            prefix: Prefix {
                offset: u64_at(&h, 24),
                lines: u64_at(&h, 32),
                device: u64_at(&h, 56),
                inode: u64_at(&h, 64),
                fingerprint,
            },
            skipped: u64_at(&h, 40),
            sorted: h[48] != 0,
            names,
        };
        let transcript_file =
            File::open(transcript).map_err(|e| format!("cannot open the transcript: {e}"))?;
        let len = transcript_file
            .metadata()
            .map_err(|e| format!("cannot stat the transcript: {e}"))?
            .len();
        state_snapshot::still_holds(&covered.prefix, &transcript_file, len)?;
        let index = IndexFile {
            file,
            path: path.to_path_buf(),
            count,
            records_crc: u32_at(&h, 72),
            names_written: covered.names.len(),
        };
        index.check_records(&covered)?;
        Ok((index, covered))
    }

    /// Every counted record is there, matches its CRC and points inside the covered prefix.
    fn check_records(&self, covered: &Covered) -> Result<(), String> {
        let mut crc = crc32fast::Hasher::new();
        let mut at = 0;
        let names = covered.names.len();
        while at < self.count {
            let end = (at + CHECK_BATCH).min(self.count);
            let bytes = self
                .read_bytes(at..end)
                .map_err(|e| format!("records missing: {e}"))?;
            crc.update(&bytes);
            for record in bytes.chunks_exact(RECORD) {
                let line = decode(record);
                if line.offset + u64::from(line.len) > covered.prefix.offset
                    || usize::from(line.kind) >= names
                    || usize::from(line.from) >= names
                {
                    return Err("a record points outside what it covers".into());
                }
            }
            at = end;
        }
        if crc.finalize() != self.records_crc {
            return Err("its records are damaged".into());
        }
        Ok(())
    }

    /// Write a new index of `lines` (replacing any) covering `covered`.
    pub(crate) fn create(
        transcript: &Path,
        lines: &[IndexedLine],
        covered: &Covered,
    ) -> io::Result<IndexFile> {
        let path = path_for(transcript);
        let temp = path.with_extension(format!("index.tmp{}", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)?;
        let mut index = IndexFile {
            file,
            path: path.clone(),
            count: 0,
            records_crc: crc32fast::Hasher::new().finalize(),
            names_written: 0,
        };
        let written = index
            .append(lines, covered)
            .and_then(|()| std::fs::rename(&temp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        Ok(index)
    }

    /// Add `lines` after the counted records, then the names and the header saying `covered`.
    pub(crate) fn append(&mut self, lines: &[IndexedLine], covered: &Covered) -> io::Result<()> {
        let names = names_block(&covered.names)
            .ok_or_else(|| io::Error::other("too many names to keep"))?;
        let mut bytes = Vec::with_capacity(lines.len() * RECORD);
        for line in lines {
            bytes.extend_from_slice(&encode(line));
        }
        let at = RECORDS + (self.count * RECORD) as u64;
        self.file.write_all_at(&bytes, at)?;
        let mut crc = crc32fast::Hasher::new_with_initial(self.records_crc);
        crc.update(&bytes);
        let records_crc = crc.finalize();
        let count = self.count + lines.len();
        if covered.names.len() != self.names_written || self.count == 0 {
            self.file.write_all_at(&names, HEADER)?;
        }
        self.file
            .write_all_at(&header_bytes(count, records_crc, covered, &names), 0)?;
        self.count = count;
        self.records_crc = records_crc;
        self.names_written = covered.names.len();
        Ok(())
    }

    fn read_bytes(&self, range: std::ops::Range<usize>) -> io::Result<Vec<u8>> {
        let mut bytes = vec![0u8; range.len() * RECORD];
        self.file
            .read_exact_at(&mut bytes, RECORDS + (range.start * RECORD) as u64)?;
        Ok(bytes)
    }

    /// The records `range` (within `0..count`).
    pub(crate) fn read(&self, range: std::ops::Range<usize>) -> io::Result<Vec<IndexedLine>> {
        Ok(self
            .read_bytes(range)?
            .chunks_exact(RECORD)
            .map(decode)
            .collect())
    }

    /// Remove the file (the transcript was replaced: the index starts over).
    pub(crate) fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn parse_names(mut bytes: &[u8]) -> Option<Vec<Box<str>>> {
    let mut names = Vec::new();
    while !bytes.is_empty() {
        let len = usize::from(u16::from_le_bytes([*bytes.first()?, *bytes.get(1)?]));
        let name = std::str::from_utf8(bytes.get(2..2 + len)?).ok()?;
        names.push(name.into());
        bytes = &bytes[2 + len..];
    }
    Some(names)
}
