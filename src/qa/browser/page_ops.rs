//! Page calls with a deadline each. chromiumoxide's `goto` ignores its request timeout and
//! `evaluate` can hang forever on a page stuck in JavaScript, so nothing here is awaited unbounded.

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::js_protocol::runtime::TerminateExecutionParams;
use chromiumoxide::error::CdpError;
use serde_json::Value;

/// Why an evaluation produced no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EvalError {
    /// The script threw; the message is the exception's first line.
    Threw(String),
    /// No answer in time (the page's main thread is probably blocked).
    Timeout,
    /// The `DevTools` call itself failed.
    Protocol(String),
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Threw(m) => write!(f, "threw: {m}"),
            EvalError::Timeout => f.write_str("no answer in time (main thread blocked?)"),
            EvalError::Protocol(m) => write!(f, "devtools error: {m}"),
        }
    }
}

/// Evaluate `expression` (promises awaited) and return its JSON value (`null` for undefined).
pub(crate) async fn eval(
    page: &Page,
    expression: &str,
    timeout: Duration,
) -> Result<Value, EvalError> {
    match tokio::time::timeout(timeout, page.evaluate(expression)).await {
        Err(_) => Err(EvalError::Timeout),
        Ok(Err(CdpError::JavascriptException(details))) => {
            let text = details
                .exception
                .as_ref()
                .and_then(|e| e.description.clone())
                .unwrap_or_else(|| details.text.clone());
            Err(EvalError::Threw(
                text.lines().next().unwrap_or_default().to_owned(),
            ))
        }
        Ok(Err(other)) => Err(EvalError::Protocol(other.to_string())),
        Ok(Ok(result)) => Ok(result.value().cloned().unwrap_or(Value::Null)),
    }
}

/// JavaScript truthiness of a JSON value.
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Stop whatever script is running in the page (an infinite loop), so the page answers again.
pub(crate) async fn terminate_scripts(page: &Page) {
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        page.execute(TerminateExecutionParams::default()),
    )
    .await;
}

/// Navigate with a deadline. `Ok(false)` means the load did not finish in time.
pub(crate) async fn goto(page: &Page, url: &str, timeout: Duration) -> Result<bool, String> {
    match tokio::time::timeout(timeout, page.goto(url)).await {
        Err(_) => Ok(false),
        Ok(Ok(_)) => Ok(true),
        Ok(Err(e)) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::truthy;
    use serde_json::json;

    #[test]
    fn truthiness_follows_javascript() {
        for v in [json!(null), json!(false), json!(0), json!(""), json!(0.0)] {
            assert!(!truthy(&v), "{v}");
        }
        for v in [json!(true), json!(1), json!("0"), json!([]), json!({})] {
            assert!(truthy(&v), "{v}");
        }
    }
}
