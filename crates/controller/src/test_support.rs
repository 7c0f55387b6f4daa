//! What the loop's unit tests share: the triggers they feed the queue and
//! the kinds.

use crate::inputs::Trigger;

/// An OVN event trigger of class `class` on a `Logical_Switch_Port`.
pub(crate) fn lsp_event(class: &'static str) -> Trigger {
    Trigger::Event {
        class,
        table: "Logical_Switch_Port".into(),
    }
}
