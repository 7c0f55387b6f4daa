//! Conditional monitors (`monitor_cond`, `monitor_cond_since`,
//! `monitor_cond_change`) on a session, and decoding of their update
//! notifications. What to monitor is a [`MonitorSpec`] (data crate).

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::rpc::reply::notification_params_with;
pub use crate::rpc::session::Update;
use crate::rpc::session::{Notification, Session};
use obgp_ovsdb_data::schema::DatabaseSchema;
use obgp_ovsdb_data::wire::{KeyProjection, TableUpdates, TableUpdatesSeed};
use obgp_ovsdb_data::MonitorSpec;

/// The transaction id meaning "no history": asks for a full initial dump.
pub const ZERO_TXN_ID: &str = "00000000-0000-0000-0000-000000000000";

/// The reply to `monitor_cond_since`.
#[derive(Debug)]
pub struct SinceReply {
    /// The server still had our last transaction: `updates` holds only what
    /// changed since, to apply on top of the cache.
    pub found: bool,
    /// The id of the newest transaction the reply reflects.
    pub last_txn_id: String,
    /// The initial contents, or the changes since `last_txn_id` when `found`.
    pub updates: TableUpdates,
}

/// Decodes an `update2` or `update3` notification frame, keeping only the
/// map keys `projection` keeps.
pub fn decode_update(method: &str, frame: &[u8], projection: &KeyProjection) -> Result<Update> {
    let with_txn_id = match method {
        "update2" => false,
        "update3" => true,
        other => {
            return Err(Error::Protocol(format!(
                "not an update notification: {other}"
            )))
        }
    };
    notification_params_with(
        frame,
        UpdateParams {
            with_txn_id,
            updates: TableUpdatesSeed(projection),
        },
    )
}

impl Notification {
    /// The update this notification carries, decoded with `projection`
    /// when it came as a frame (a large one was decoded as it arrived,
    /// with its monitor's projection); `None` for other methods; the
    /// session's error for [`Notification::Closed`].
    pub fn into_update(self, projection: &KeyProjection) -> Result<Option<Update>> {
        match self {
            Notification::Call { method, frame } if method == "update2" || method == "update3" => {
                decode_update(&method, &frame, projection).map(Some)
            }
            Notification::Call { .. } => Ok(None),
            Notification::Update(update) => Ok(Some(*update)),
            Notification::Closed(e) => Err(e),
        }
    }
}

/// The params of `update2` (`[monitor-id, table-updates2]`) or `update3`
/// (`[monitor-id, last-txn-id, table-updates2]`), the updates decoded with
/// the monitor's key projection.
struct UpdateParams<'p> {
    with_txn_id: bool,
    updates: TableUpdatesSeed<'p>,
}

impl<'de> DeserializeSeed<'de> for UpdateParams<'_> {
    type Value = Update;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Update, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for UpdateParams<'_> {
    type Value = Update;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(if self.with_txn_id {
            "[monitor-id, last-txn-id, table-updates2]"
        } else {
            "[monitor-id, table-updates2]"
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Update, A::Error> {
        let len = if self.with_txn_id { 3 } else { 2 };
        let monitor_id: Value = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let last_txn_id = match self.with_txn_id {
            true => Some(
                seq.next_element::<String>()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?,
            ),
            false => None,
        };
        let updates = seq
            .next_element_seed(self.updates)?
            .ok_or_else(|| de::Error::invalid_length(len - 1, &"the table updates"))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(len + 1, &"no more params"));
        }
        Ok(Update {
            monitor_id,
            last_txn_id,
            updates,
        })
    }
}

impl Session {
    /// `monitor_cond`: starts a monitor and returns the initial contents
    /// (decoded while they arrive when large, see [`Session::call_streamed`]).
    pub async fn monitor_cond(
        &self,
        db: &str,
        monitor_id: &Value,
        spec: &MonitorSpec,
        schema: &DatabaseSchema,
    ) -> Result<TableUpdates> {
        self.register_monitor(monitor_id, &spec.key_projection());
        self.call_streamed(
            "monitor_cond",
            json!([db, monitor_id, spec.requests(schema)]),
            &spec.key_projection(),
        )
        .await
    }

    /// `monitor_cond_since`: like [`Session::monitor_cond`], but when the
    /// server still has transaction `last_txn_id` in its history it sends
    /// only the changes since (`found`). Servers without the method answer
    /// with an [`Error::Rpc`].
    pub async fn monitor_cond_since(
        &self,
        db: &str,
        monitor_id: &Value,
        spec: &MonitorSpec,
        schema: &DatabaseSchema,
        last_txn_id: Option<&str>,
    ) -> Result<SinceReply> {
        self.register_monitor(monitor_id, &spec.key_projection());
        let (found, last_txn_id, updates): (bool, String, TableUpdates) = self
            .call_streamed(
                "monitor_cond_since",
                json!([
                    db,
                    monitor_id,
                    spec.requests(schema),
                    last_txn_id.unwrap_or(ZERO_TXN_ID)
                ]),
                &spec.key_projection(),
            )
            .await?;
        Ok(SinceReply {
            found,
            last_txn_id,
            updates,
        })
    }

    /// `monitor_cond_change`: replaces the conditions of the tables in
    /// `spec` on a running monitor (`None` becomes `[true]`, all rows). The server then sends update
    /// notifications inserting rows that now match and deleting rows that no
    /// longer do.
    pub async fn monitor_cond_change(
        &self,
        monitor_id: &Value,
        spec: &MonitorSpec,
        schema: &DatabaseSchema,
    ) -> Result<()> {
        self.call(
            "monitor_cond_change",
            json!([monitor_id, monitor_id, spec.condition_updates(schema)]),
        )
        .await
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update3_carries_the_transaction_id() {
        let frame = br#"{"id":null,"method":"update3","params":["m","7a3b8c2e-0000-4000-8000-000000000001",{"NB_Global":{"11111111-1111-4111-8111-111111111111":{"delete":null}}}]}"#;
        let u = decode_update("update3", frame, &KeyProjection::default()).unwrap();
        assert_eq!(
            u.last_txn_id.as_deref(),
            Some("7a3b8c2e-0000-4000-8000-000000000001")
        );
        assert_eq!(u.updates.row_count(), 1);
        assert!(
            decode_update("update2", br#"{"params": [1]}"#, &KeyProjection::default()).is_err()
        );
    }
}
