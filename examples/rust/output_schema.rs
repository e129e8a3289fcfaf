//! A typed final answer, offline on the scripted model: the model calls a tool, answers JSON
//! that misses a field (sent back with the validation error), then a valid object, which
//! `result.output` holds (deserialize it into your own type with serde). Run it with
//! `cargo run --example output_schema`.

use std::sync::Arc;

use contenox::{tool_fn, Client, ScriptEntry, ToolOutput, ToolSpec};
use serde_json::json;

#[derive(serde::Deserialize)]
struct Weather {
    city: String,
    temp_c: f64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let weather = tool_fn(
        ToolSpec::new(
            "weather",
            "The weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        |args, _ctx| async move {
            let city = args["city"].as_str().unwrap_or("nowhere").to_string();
            Ok(ToolOutput::text(format!("{city}: 3.5 C, light rain")))
        },
    );
    // The scripted model replays its answers; `.style(Style::Openai).model(...)` to go live.
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("call_1", "weather", json!({"city": "Oslo"})),
            // temp_c missing: sent back with the error.
            ScriptEntry::text(r#"{"city": "Oslo"}"#),
            ScriptEntry::text(r#"{"city": "Oslo", "temp_c": 3.5}"#),
        ])
        .builtins(Vec::<String>::new())
        .tool(Arc::new(weather))
        .output_schema(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
            "required": ["city", "temp_c"],
            "additionalProperties": false
        }))
        .build()?;
    let result = client.run("Weather in Oslo?").await?;
    let weather: Weather = serde_json::from_value(result.output.clone().unwrap_or_default())?;
    println!("{:?}: {} {}", result.outcome, weather.city, weather.temp_c);
    Ok(())
}
