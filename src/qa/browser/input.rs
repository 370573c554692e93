//! Key presses and clicks sent through the `DevTools` input domain, as a person would.
//!
//! Keys are named as in pipeline files: DOM `key` values (`ArrowLeft`, `Enter`, `a`), DOM `code`
//! values (`Space`, `KeyA`), or a literal space.

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    MouseButton,
};
use chromiumoxide::keys::{KeyDefinition, USKEYBOARD_LAYOUT, get_key_definition};

/// The US-layout definition of a key named by its DOM `key` or `code`.
pub(crate) fn resolve_key(name: &str) -> Option<&'static KeyDefinition> {
    let alias = match name {
        "Space" | "Spacebar" | "space" => " ",
        "Esc" => "Escape",
        "Return" => "Enter",
        other => other,
    };
    get_key_definition(alias).or_else(|| USKEYBOARD_LAYOUT.iter().find(|d| d.code == name))
}

/// Press and release `name`.
pub(crate) async fn press_key(page: &Page, name: &str) -> Result<(), String> {
    let def = resolve_key(name).ok_or_else(|| format!("unknown key `{name}`"))?;
    let text = def.text.or((def.key.len() == 1).then_some(def.key));
    let mut down = DispatchKeyEventParams::builder()
        .r#type(if text.is_some() {
            DispatchKeyEventType::KeyDown
        } else {
            DispatchKeyEventType::RawKeyDown
        })
        .key(def.key)
        .code(def.code)
        .windows_virtual_key_code(def.key_code)
        .native_virtual_key_code(def.key_code);
    if let Some(t) = text {
        down = down.text(t);
    }
    let up = DispatchKeyEventParams::builder()
        .r#type(DispatchKeyEventType::KeyUp)
        .key(def.key)
        .code(def.code)
        .windows_virtual_key_code(def.key_code)
        .native_virtual_key_code(def.key_code);
    page.execute(down.build().map_err(|e| e.clone())?)
        .await
        .map_err(|e| e.to_string())?;
    page.execute(up.build().map_err(|e| e.clone())?)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Press and release the left button at (`x`, `y`) in CSS pixels of the viewport.
pub(crate) async fn click(page: &Page, x: f64, y: f64) -> Result<(), String> {
    for kind in [
        DispatchMouseEventType::MouseMoved,
        DispatchMouseEventType::MousePressed,
        DispatchMouseEventType::MouseReleased,
    ] {
        let mut params = DispatchMouseEventParams::builder()
            .r#type(kind.clone())
            .x(x)
            .y(y);
        if kind != DispatchMouseEventType::MouseMoved {
            params = params.button(MouseButton::Left).click_count(1);
        }
        page.execute(params.build().map_err(|e| e.clone())?)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::resolve_key;

    #[test]
    fn names_resolve_by_key_code_or_alias() {
        assert_eq!(resolve_key("Space").unwrap().key, " ");
        assert_eq!(resolve_key(" ").unwrap().code, "Space");
        assert_eq!(resolve_key("ArrowLeft").unwrap().code, "ArrowLeft");
        assert_eq!(resolve_key("KeyA").unwrap().key, "a");
        assert_eq!(resolve_key("Enter").unwrap().code, "Enter");
        assert!(resolve_key("NoSuchKey").is_none());
    }
}
