//! The tool schemas use only what a standard JSON Schema validator knows: Claude Code warned
//! once per unknown `format` (`uint64`, `uint32`, `uint`: 28 warnings at startup).

use serde_json::Value;

/// JSON Schema 2020-12's formats, written out here independently of the server's list.
const STANDARD: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every `format` in `v`, with where it is.
fn formats(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(o) => {
            for (k, item) in o {
                if k == "format" {
                    if let Value::String(f) = item {
                        out.push((at.to_string(), f.clone()));
                    }
                }
                formats(item, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                formats(item, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn tool_schemas_use_only_standard_formats() {
    let tools = recall_mcp::tool_list().unwrap();
    assert!(tools.len() > 5, "{}", tools.len());
    let mut unknown = Vec::new();
    let mut unsigned = 0;
    for tool in &tools {
        let input = Value::Object((*tool.input_schema).clone());
        let output = Value::Object((*tool.output_schema.clone().unwrap()).clone());
        let mut found = Vec::new();
        formats(&input, &format!("{}/input", tool.name), &mut found);
        formats(&output, &format!("{}/output", tool.name), &mut found);
        unknown.extend(
            found
                .into_iter()
                .filter(|(_, f)| !STANDARD.contains(&f.as_str())),
        );
        // Unsigned integers still say so, without a format.
        let text =
            serde_json::to_string(&input).unwrap() + &serde_json::to_string(&output).unwrap();
        unsigned += text.matches("\"minimum\":0").count();
    }
    assert!(
        unknown.is_empty(),
        "formats a validator does not know: {unknown:?}"
    );
    assert!(
        unsigned > 0,
        "no integer field says it is unsigned any more"
    );
}
