//! The one way pipelines, presets, templates, config and inbox files are read from disk: refuse anything
//! that is not a regular file before reading (a FIFO would block forever, `/dev/zero` never ends)
//! and read at most the limit plus one byte, so an oversized file costs no more than the limit.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use crumb_core::pipeline::source::ReadError;

/// Read the regular file at `path`, at most `limit` bytes.
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut file = open_regular(path)?;
    let mut bytes = Vec::new();
    (&mut file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// Open `path` for reading only if it is a regular file. The path is checked before opening (so
/// a FIFO's open never blocks), and the opened handle again (so a swap in between is caught).
pub(crate) fn open_regular(path: &Path) -> Result<File, ReadError> {
    refuse_irregular(&std::fs::metadata(path)?)?;
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        /// `O_NONBLOCK` on Linux: a FIFO swapped in after the check still cannot block the open.
        const O_NONBLOCK: i32 = 0o4000;
        options.custom_flags(O_NONBLOCK);
    }
    let file = options.open(path)?;
    refuse_irregular(&file.metadata()?)?;
    Ok(file)
}

fn refuse_irregular(meta: &std::fs::Metadata) -> Result<(), ReadError> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Err(ReadError::NotRegular("FIFO"));
        }
        if kind.is_char_device() || kind.is_block_device() {
            return Err(ReadError::NotRegular("device"));
        }
        if kind.is_socket() {
            return Err(ReadError::NotRegular("socket"));
        }
    }
    if kind.is_dir() {
        return Err(ReadError::NotRegular("directory"));
    }
    Err(ReadError::NotRegular("special file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_folders_are_refused_and_size_is_bounded() {
        assert!(matches!(
            read(Path::new("/dev/zero"), 16),
            Err(ReadError::NotRegular("device"))
        ));
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read(dir.path(), 16),
            Err(ReadError::NotRegular("directory"))
        ));
        let file = dir.path().join("f");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read(&file, 10).unwrap(), b"0123456789");
        assert!(matches!(
            read(&file, 9),
            Err(ReadError::TooLarge { limit: 9 })
        ));
        assert!(
            read(&dir.path().join("none"), 9)
                .unwrap_err()
                .is_not_found()
        );
    }
}
