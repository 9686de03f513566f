//! Images sent with chat requests (docs/data.md, "Images"): what a request carries and what
//! reports count, and the one reading of an encoded image's size that the loader and the
//! simulator share.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One image of a request: the URL sent in an `image_url` content part (a `data:` URL, or a
/// URL a dataset gave), with its size when known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageInput {
    /// The `image_url.url` sent.
    pub url: Arc<str>,
    /// Width and height in pixels; `None` for a URL bench did not read.
    pub size: Option<(u32, u32)>,
    /// Bytes of the encoded image (the decoded `data:` payload or the file); 0 when unknown.
    pub bytes: u64,
}

/// What the images of one request amounted to, as reports count them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageCounts {
    /// Images sent.
    pub count: u32,
    /// Their pixels (`width × height`, summed; images of unknown size count 0).
    pub pixels: u64,
    /// Their encoded bytes (not the base64 text, which is 4/3 of it).
    pub bytes: u64,
}

impl ImageCounts {
    /// The counts of `images`; `None` when there are none.
    pub fn of(images: &[ImageInput]) -> Option<ImageCounts> {
        if images.is_empty() {
            return None;
        }
        Some(
            images
                .iter()
                .fold(ImageCounts::default(), |c, i| ImageCounts {
                    count: c.count + 1,
                    pixels: c.pixels + i.size.map_or(0, |(w, h)| u64::from(w) * u64::from(h)),
                    bytes: c.bytes + i.bytes,
                }),
        )
    }
}

/// Width and height of a PNG (its `IHDR`) or a JPEG (its first `SOFn` marker), read from the
/// encoded bytes; `None` for anything else.
pub fn image_size(data: &[u8]) -> Option<(u32, u32)> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") && data.get(12..16) == Some(b"IHDR") {
        let be = |at: usize| {
            data.get(at..at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        return Some((be(16)?, be(20)?));
    }
    if !data.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut i = 2;
    while i + 9 < data.len() {
        if data[i] != 0xFF {
            return None;
        }
        let marker = data[i + 1];
        let len = usize::from(u16::from_be_bytes([data[i + 2], data[i + 3]]));
        // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let h = u16::from_be_bytes([data[i + 5], data[i + 6]]);
            let w = u16::from_be_bytes([data[i + 7], data[i + 8]]);
            return Some((u32::from(w), u32::from(h)));
        }
        i += 2 + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_and_jpeg_headers_give_their_size() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&640u32.to_be_bytes());
        png.extend_from_slice(&480u32.to_be_bytes());
        assert_eq!(image_size(&png), Some((640, 480)));
        // SOI, an APP0 segment of 16 bytes, then SOF0 (precision 8, height 20, width 30).
        let mut jpg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
        jpg.extend_from_slice(&[0; 14]);
        jpg.extend_from_slice(&[0xFF, 0xC0, 0, 17, 8, 0, 20, 0, 30, 3]);
        assert_eq!(image_size(&jpg), Some((30, 20)));
        assert_eq!(image_size(b"GIF89a"), None);
        assert_eq!(image_size(&png[..20]), None);
    }
}
