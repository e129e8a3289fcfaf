//! Images read from files beneath the root: a prompt's `{"type": "image", "path": ...}` (checked
//! when the turn starts, read again for each request) and, later, `read` of an image file.
//! The bytes must be PNG, JPEG, GIF or WebP by their signature (never by the extension), and
//! at most [`MAX_IMAGE_BYTES`](crate::MAX_IMAGE_BYTES).

use std::collections::HashMap;
use std::path::Path;

use base64::Engine as _;

use crate::builtin::load::load_bytes;
use crate::builtin::RootDir;
use crate::error::Result;
use crate::model::{ImageBytes, ResolvedImages};
use crate::prompt::{prompt_error, Prompt};
use crate::tool_output::ToolOutput;
use crate::transcript::{sniff_media_type, Image, Message, Part, MAX_IMAGE_BYTES};

/// The image file `path` beneath `root`: its media type (from its bytes) and base64 bytes, or
/// why it cannot be an image (outside the root, missing, not a regular file, over the cap, not
/// PNG/JPEG/GIF/WebP).
pub(crate) fn load_image(root: &Path, path: &str) -> Result<ImageBytes, String> {
    let dir = RootDir::for_call(root).map_err(|e| e.to_string())?;
    let bytes = load_bytes(&dir, path, MAX_IMAGE_BYTES).map_err(|e| {
        let why = e.to_string();
        // load_bytes speaks for the editing tools ("use bash ..."): say the image cap instead.
        if why.contains(" bytes, over the ") {
            format!("{path} is over the {MAX_IMAGE_BYTES} bytes an image may have")
        } else {
            why
        }
    })?;
    let Some(media_type) = sniff_media_type(&bytes) else {
        return Err(format!("{path} is not a PNG, JPEG, GIF or WebP image"));
    };
    Ok(ImageBytes {
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}

/// A prompt's images given by path, each read beneath `root` now, so that one outside the root,
/// missing or not an image is the caller's configuration error (naming the part) before
/// anything is sent.
pub(crate) fn check_prompt_paths(prompt: &Prompt, root: &Path) -> Result<()> {
    for (i, part) in prompt.parts().iter().enumerate() {
        if let Part::Image(Image::Path { path }) = part {
            load_image(root, path)
                .map_err(|why| prompt_error(format!("prompt[{i}].path"), None, why))?;
        }
    }
    Ok(())
}

/// The paths of the images of `messages` given by path, each once, in order.
pub(crate) fn image_paths(messages: &[Message]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for message in messages {
        for image in message.images() {
            if let Image::Path { path } = image {
                if !paths.contains(path) {
                    paths.push(path.clone());
                }
            }
        }
    }
    paths
}

/// `paths`, each read beneath `root` (`None` when there are none). An image that cannot be read
/// is kept as the reason, which the request sends as a note instead of the image.
pub(crate) fn resolve_images(root: &Path, paths: Vec<String>) -> Option<ResolvedImages> {
    if paths.is_empty() {
        return None;
    }
    let mut resolved: ResolvedImages = HashMap::with_capacity(paths.len());
    for path in paths {
        let image = load_image(root, &path);
        resolved.insert(path, image);
    }
    Some(resolved)
}

/// A tool's result with its images checked as a prompt's are: each image's bytes must be
/// base64 of a PNG, JPEG, GIF or WebP of at most [`MAX_IMAGE_BYTES`], whose signature is the
/// media type given. A host tool's image that is not is the call's error result naming why,
/// never sent for the provider to refuse the whole request. (Images given by path are read per
/// request; one that cannot be is a note to the model.)
pub(crate) fn check_result_images(tool: &str, out: ToolOutput) -> ToolOutput {
    let why = out.images.iter().enumerate().find_map(|(i, image)| {
        let Image::Data { media_type, data } = image else {
            return None;
        };
        let clean: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let bytes = match base64::engine::general_purpose::STANDARD.decode(clean) {
            Ok(b) => b,
            Err(e) => return Some(format!("image {i}'s data is not base64: {e}")),
        };
        if bytes.len() as u64 > MAX_IMAGE_BYTES {
            return Some(format!(
                "image {i} is {} bytes, over the {MAX_IMAGE_BYTES} bytes an image may have",
                bytes.len()
            ));
        }
        match sniff_media_type(&bytes) {
            None => Some(format!(
                "image {i}'s bytes are not a PNG, JPEG, GIF or WebP image"
            )),
            Some(sniffed) if sniffed != media_type => {
                Some(format!("image {i}'s bytes are {sniffed}, not {media_type}"))
            }
            Some(_) => None,
        }
    });
    match why {
        None => out,
        Some(why) => ToolOutput::error(format!(
            "{tool} returned an image that cannot be sent ({why}); its text was: {}",
            out.model_text()
        )),
    }
}
