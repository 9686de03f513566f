//! Images sent with chat prompts (docs/data.md, "Images"): synthetic images of random pixels,
//! encoded as PNG or JPEG `data:` URLs on a background thread ahead of the requests (never on
//! the pacer's thread), and images a data file names (a path, read when the record is, or a
//! URL / `data:` URL sent as given).

use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use base64::Engine as _;
use bench_core::{image_size, ImageInput};
use rand::{RngCore, SeedableRng};

use crate::Error;

/// Least and greatest synthetic image side, in pixels.
pub const SIDE: (u32, u32) = (16, 4096);
/// Most images per request.
pub const MAX_IMAGES: u32 = 16;
/// Requests whose synthetic images are encoded ahead of the request that takes them.
pub const AHEAD: usize = 32;

/// An encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// Lossless PNG (RGB, 8 bits).
    Png,
    /// JPEG at a quality of 1 to 100.
    Jpeg {
        /// The encoder's quality.
        quality: u8,
    },
}

/// Synthetic images: how many per request, their size and encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntheticImages {
    /// Images per request, 1 to [`MAX_IMAGES`].
    pub count: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Encoding.
    pub format: ImageFormat,
    /// Send the same images with every request (a server's multimodal cache can then hit);
    /// otherwise every request's images are new random pixels.
    pub repeat: bool,
}

/// Encodes one image of random pixels drawn from `seed`.
pub fn synthetic(spec: &SyntheticImages, seed: u64) -> Result<ImageInput, Error> {
    let (w, h) = (spec.width, spec.height);
    let mut pixels = vec![0u8; (w * h * 3) as usize];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut pixels);
    let mut out = Vec::with_capacity(pixels.len() + 1024);
    let (mime, bad) = match spec.format {
        ImageFormat::Png => {
            let mut enc = png::Encoder::new(&mut out, w, h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let r = enc
                .write_header()
                .and_then(|mut wr| wr.write_image_data(&pixels));
            ("image/png", r.err().map(|e| e.to_string()))
        }
        ImageFormat::Jpeg { quality } => {
            let enc = jpeg_encoder::Encoder::new(&mut out, quality);
            let r = enc.encode(&pixels, w as u16, h as u16, jpeg_encoder::ColorType::Rgb);
            ("image/jpeg", r.err().map(|e| e.to_string()))
        }
    };
    if let Some(e) = bad {
        return Err(Error::Spec(format!("encoding a {w}x{h} image failed: {e}")));
    }
    Ok(data_url(mime, &out, Some((w, h))))
}

fn data_url(mime: &str, bytes: &[u8], size: Option<(u32, u32)>) -> ImageInput {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    ImageInput {
        url: Arc::from(format!("data:{mime};base64,{b64}")),
        size,
        bytes: bytes.len() as u64,
    }
}

/// The images of each request, in order: fixed ones when they repeat, else from a thread that
/// encodes them [`AHEAD`] requests ahead.
#[derive(Debug)]
pub(crate) struct ImageStream {
    fixed: Option<Vec<ImageInput>>,
    ahead: Option<Receiver<Result<Vec<ImageInput>, String>>>,
}

impl ImageStream {
    /// Starts the stream; the first request's images are encoded here, so that a bad option
    /// fails before a run.
    pub(crate) fn new(spec: SyntheticImages, seed: u64) -> Result<ImageStream, Error> {
        let one = move |n: u64| -> Result<Vec<ImageInput>, Error> {
            (0..u64::from(spec.count))
                .map(|k| synthetic(&spec, seed ^ (n << 8) ^ k))
                .collect()
        };
        let first = one(0)?;
        if spec.repeat {
            return Ok(ImageStream {
                fixed: Some(first),
                ahead: None,
            });
        }
        let (tx, rx) = sync_channel(AHEAD);
        let _ = tx.send(Ok(first));
        std::thread::Builder::new()
            .name("bench-images".into())
            .spawn(move || {
                // Ends when the loader (the receiver) is dropped.
                for n in 1u64.. {
                    if tx.send(one(n).map_err(|e| e.to_string())).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Error::Spec(format!("starting the image encoder thread: {e}")))?;
        Ok(ImageStream {
            fixed: None,
            ahead: Some(rx),
        })
    }

    /// The next request's images.
    pub(crate) fn next(&mut self) -> Result<Vec<ImageInput>, Error> {
        if let Some(f) = &self.fixed {
            return Ok(f.clone());
        }
        match self.ahead.as_ref().map(Receiver::recv) {
            Some(Ok(r)) => r.map_err(Error::Spec),
            _ => Err(Error::Spec("the image encoder thread stopped".into())),
        }
    }
}

/// An image a data file names: an `http(s)://` URL (sent as given, size unknown), a `data:`
/// URL (sent as given, its size read from the payload), or a file path (absolute, or relative
/// to the data file's folder) read and sent as a `data:` URL.
pub(crate) fn from_reference(r: &str, base: &Path) -> Result<ImageInput, Error> {
    let r = r.trim();
    if r.starts_with("http://") || r.starts_with("https://") {
        return Ok(ImageInput {
            url: Arc::from(r),
            size: None,
            bytes: 0,
        });
    }
    if let Some(rest) = r.strip_prefix("data:") {
        let payload = rest.split_once(";base64,").map(|(_, p)| p).unwrap_or("");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(payload)
            .map_err(|e| Error::Spec(format!("an image data: URL is not base64: {e}")))?;
        return Ok(ImageInput {
            url: Arc::from(r),
            size: image_size(&bytes),
            bytes: bytes.len() as u64,
        });
    }
    let path = base.join(r);
    let bytes = std::fs::read(&path).map_err(|e| Error::Read {
        path: path.clone(),
        message: format!("reading the image: {e}"),
    })?;
    let mime = if bytes.starts_with(&[0xFF, 0xD8]) {
        "image/jpeg"
    } else if bytes.starts_with(b"\x89PNG") {
        "image/png"
    } else {
        return Err(Error::Read {
            path,
            message: "not a PNG or JPEG image".into(),
        });
    };
    Ok(data_url(mime, &bytes, image_size(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_images_decode_to_their_size_and_differ_by_seed() {
        for format in [ImageFormat::Png, ImageFormat::Jpeg { quality: 80 }] {
            let spec = SyntheticImages {
                count: 1,
                width: 40,
                height: 24,
                format,
                repeat: false,
            };
            let (a, b) = (
                synthetic(&spec, 1).expect("a"),
                synthetic(&spec, 2).expect("b"),
            );
            assert_ne!(a.url, b.url);
            assert_eq!(a.size, Some((40, 24)));
            let back = from_reference(&a.url, Path::new(".")).expect("back");
            assert_eq!((back.size, back.bytes), (Some((40, 24)), a.bytes));
        }
    }
}
