//! Content hashes as crumb records them: lower-case hex SHA-256.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes`: the form of artifact hashes, pipeline source hashes and
/// project ids, so every writer and every checker agrees on it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_the_well_known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
