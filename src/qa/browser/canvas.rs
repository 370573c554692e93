//! Is the canvas blank? Judged from pixels the compositor produced (a clipped screenshot), which is
//! right for 2D and WebGL canvases alike; reading the canvas from JavaScript is not (a WebGL canvas
//! without `preserveDrawingBuffer` reads back empty).

use std::collections::HashSet;

/// Distinct colours counted before stopping (two already means "not blank").
const ENOUGH_COLOURS: usize = 64;

/// A rectangle of whole pixels: left, top, right and bottom (exclusive).
pub(crate) type Region = (usize, usize, usize, usize);

/// Count distinct RGBA colours in a PNG, sampling at most about 40 000 pixels.
pub(crate) fn distinct_colours(png_bytes: &[u8]) -> Result<usize, String> {
    distinct_colours_in(png_bytes, None)
}

/// [`distinct_colours`] within `region` of the PNG (the whole image for `None`), sampled as a
/// PNG of just that region would be: the browser check judges the canvas from the screenshot it
/// takes anyway instead of capturing the canvas again.
pub(crate) fn distinct_colours_in(
    png_bytes: &[u8],
    region: Option<Region>,
) -> Result<usize, String> {
    let mut decoder = png::Decoder::new(png_bytes);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let info = reader.info();
    let (width, height) = (info.width as usize, info.height as usize);
    if width == 0 || height == 0 || width.saturating_mul(height) > 64_000_000 {
        return Err(format!("unexpected image size {width}x{height}"));
    }
    let mut buf = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    let channels = frame.color_type.samples();
    let line = frame.line_size;
    let (left, top, right, bottom) = region.unwrap_or((0, 0, width, height));
    let (right, bottom) = (right.min(width), bottom.min(height));
    if left >= right || top >= bottom {
        return Err(format!("the region {left},{top}–{right},{bottom} is empty"));
    }
    let step = (((right - left) * (bottom - top)) / 40_000)
        .max(1)
        .isqrt()
        .max(1);
    let mut seen = HashSet::new();
    for y in (top..bottom).step_by(step) {
        for x in (left..right).step_by(step) {
            let at = y * line + x * channels;
            let Some(px) = buf.get(at..at + channels) else {
                continue;
            };
            let mut rgba = [0u8, 0, 0, 255];
            match channels {
                1 => rgba[..3].fill(px[0]),
                2 => {
                    rgba[..3].fill(px[0]);
                    rgba[3] = px[1];
                }
                3 => rgba[..3].copy_from_slice(px),
                _ => rgba.copy_from_slice(&px[..4]),
            }
            seen.insert(rgba);
            if seen.len() >= ENOUGH_COLOURS {
                return Ok(seen.len());
            }
        }
    }
    Ok(seen.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(width: u32, height: u32, pixel: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        let mut w = enc.write_header().unwrap();
        let pixel = &pixel;
        let data: Vec<u8> = (0..height)
            .flat_map(|y| (0..width).flat_map(move |x| pixel(x, y)))
            .collect();
        w.write_image_data(&data).unwrap();
        drop(w);
        out
    }

    #[test]
    fn one_colour_is_blank_and_a_drawing_is_not() {
        assert_eq!(
            distinct_colours(&encode(50, 40, |_, _| [9, 9, 9])).unwrap(),
            1
        );
        assert!(
            distinct_colours(&encode(50, 40, |x, _| if x > 25 {
                [255, 0, 0]
            } else {
                [0, 0, 0]
            }))
            .unwrap()
                >= 2
        );
    }

    #[test]
    fn a_region_is_judged_alone() {
        let png = encode(60, 40, |x, _| if x < 20 { [255, 0, 0] } else { [0, 0, 0] });
        assert_eq!(distinct_colours_in(&png, Some((20, 0, 60, 40))).unwrap(), 1);
        assert_eq!(distinct_colours_in(&png, Some((10, 5, 30, 35))).unwrap(), 2);
        assert!(distinct_colours_in(&png, Some((30, 0, 30, 40))).is_err());
    }

    proptest::proptest! {
        #[test]
        fn garbage_is_an_error_not_a_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = distinct_colours(&bytes);
        }
    }
}
