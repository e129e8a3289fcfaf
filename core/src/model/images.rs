//! Images as a request carries them: bytes given in the transcript are sent as they are; images
//! given by path are read beneath the root before the body is built (the body is rendered under
//! the conversation's lock, without I/O), and one that cannot be read is sent as a text note
//! saying why, never dropped in silence.

use std::collections::HashMap;

use super::ModelRequest;
use crate::transcript::Image;

/// An image read from a path: its media type and base64 bytes, or why it could not be read.
pub(crate) type ResolvedImages = HashMap<String, Result<ImageBytes, String>>;

/// An image's media type and bytes (base64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageBytes {
    pub media_type: String,
    pub data: String,
}

/// One image as a body writes it.
pub(crate) enum WireImage<'a> {
    /// Its media type and base64 bytes.
    Data { media_type: &'a str, data: &'a str },
    /// It cannot be sent: the text the model gets instead.
    Note(String),
}

/// `image` as this request sends it.
pub(crate) fn wire_image<'a>(image: &'a Image, req: &ModelRequest<'a>) -> WireImage<'a> {
    match image {
        Image::Data { media_type, data } => WireImage::Data { media_type, data },
        Image::Path { path } => match req.images.and_then(|m| m.get(path)) {
            Some(Ok(bytes)) => WireImage::Data {
                media_type: &bytes.media_type,
                data: &bytes.data,
            },
            Some(Err(why)) => WireImage::Note(format!("[image {path} was not sent: {why}]")),
            None => WireImage::Note(format!("[image {path} was not sent: it was not read]")),
        },
    }
}
