//! Cutting a text short for a message or a preview. Here, at the bottom, because the transcript's
//! own messages (a duplicate's id) clip as the engine's previews do.

/// Cut `text` to at most `max` bytes at a char boundary, marking the cut with `…`.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("", 0), "");
    }
}
