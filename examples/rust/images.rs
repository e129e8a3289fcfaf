//! A prompt with images, offline on the scripted model: image bytes, an image file beneath the
//! root, and a bad part refused before anything is sent. Run it with
//! `cargo run --example images`.

use contenox::{Client, Error, Image, Part, Prompt, ScriptEntry};
use serde_json::json;

/// A 1x1 PNG. Any PNG, JPEG, GIF or WebP works: the engine reads the type from the bytes.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let png: Vec<u8> = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.decode(PNG)?
    };
    std::fs::write(root.path().join("shot.png"), &png)?;

    let client = Client::builder()
        .script(vec![ScriptEntry::text("Two red pixels.")])
        .builtins(Vec::<String>::new())
        .root(root.path())
        .build()?;
    let prompt = vec![
        Part::text("What is in these pictures?"),
        // Bytes; the media type is read from them when None.
        Part::Image(Image::from_bytes(&png, None)?),
        // Read beneath the root for each request.
        Part::Image(Image::Path {
            path: "shot.png".into(),
        }),
    ];
    let result = client.run(prompt).await?;
    println!("{:?}: {}", result.outcome, result.final_text);
    let kinds: Vec<&str> = result.transcript.messages[0]
        .content()
        .iter()
        .map(|p| match p {
            Part::Text { .. } => "text",
            Part::Image(_) => "image",
            _ => "other",
        })
        .collect();
    println!("sent: {}", kinds.join(", "));

    // Parts given as JSON (what the bindings pass) are checked the same way.
    let bad = Prompt::from_json(&json!([{"type": "image", "data": "bm90IGFuIGltYWdl"}]));
    if let Err(Error::Config(e)) = bad {
        println!("refused: {}", e.option);
    }
    client.close();
    Ok(())
}
