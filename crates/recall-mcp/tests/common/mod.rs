//! What the MCP tests share: calling a tool through the handler and reading its result.

use recall_mcp::RecallMcp;
use serde_json::Value;

/// Calls a tool; `Ok(structured)` or `Err(error text)` for an `isError` result. A success
/// carries its structured result as JSON text too, and an error carries no structured result.
pub async fn call(mcp: &RecallMcp, tool: &str, args: Value) -> Result<Value, String> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object");
    };
    let r = mcp
        .call(tool, Some(args))
        .await
        .expect("not a protocol error");
    let text = r
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    if r.is_error == Some(true) {
        assert!(r.structured_content.is_none());
        Err(text)
    } else {
        let v = r.structured_content.expect("structured content");
        assert_eq!(
            serde_json::from_str::<Value>(&text).expect("text is JSON"),
            v
        );
        Ok(v)
    }
}
