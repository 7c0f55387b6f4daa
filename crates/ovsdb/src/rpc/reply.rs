//! What a session hands back: a response, decoded in one pass over its
//! frame (or already decoded while it arrived), and the `params` of a
//! notification.

use bytes::Bytes;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use obgp_ovsdb_data::wire::{MonitorResult, TableUpdates};

/// A successful response: its raw bytes, or its result already decoded
/// (a streamed reply, see [`Session::call_streamed`](crate::Session::call_streamed)).
#[derive(Debug)]
pub struct Response {
    pub(crate) frame: Bytes,
    /// The length of a streamed reply and its decoded result.
    pub(crate) streamed: Option<(usize, Decoded)>,
}

/// A result decoded while it arrived.
pub(crate) struct Decoded(pub(crate) MonitorResult);

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decoded(..)")
    }
}

/// A result [`Session::call_streamed`](crate::Session::call_streamed) returns: the `result` of
/// `monitor_cond` or of `monitor_cond_since`.
pub trait MonitorReply: Sized + Send + 'static {
    /// This result from a decoded monitor result of the right shape.
    fn from_monitor(result: MonitorResult) -> Option<Self>;
}

impl MonitorReply for TableUpdates {
    fn from_monitor(result: MonitorResult) -> Option<Self> {
        match result {
            MonitorResult::Updates(u) => Some(u),
            MonitorResult::Since(..) => None,
        }
    }
}

impl MonitorReply for (bool, String, TableUpdates) {
    fn from_monitor(result: MonitorResult) -> Option<Self> {
        match result {
            MonitorResult::Since(found, last, u) => Some((found, last, u)),
            MonitorResult::Updates(_) => None,
        }
    }
}

/// A response's `result` member, decoded with the seed `.0` in the same
/// pass that walks the message (the other members are skipped).
struct ResultOf<S>(S);

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for ResultOf<S> {
    type Value = S::Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON-RPC response object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<S::Value, A::Error> {
        let mut seed = Some(self.0);
        let mut result = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match (key.as_ref(), seed.take()) {
                ("result", Some(s)) => result = Some(map.next_value_seed(s)?),
                ("result", None) => return Err(de::Error::duplicate_field("result")),
                (_, s) => {
                    seed = s;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        result.ok_or_else(|| de::Error::missing_field("result"))
    }
}

#[derive(Deserialize)]
struct ParamsOnly<'a> {
    #[serde(borrow)]
    params: &'a RawValue,
}

impl Response {
    /// Size of the whole response message in bytes.
    pub fn len(&self) -> usize {
        self.streamed
            .as_ref()
            .map_or(self.frame.len(), |(len, _)| *len)
    }

    /// Whether the message is empty (never, for a parsed response).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Decodes the `result` member as `T`.
    pub fn result<T: DeserializeOwned>(&self) -> Result<T> {
        self.result_with(std::marker::PhantomData::<T>)
    }

    /// Decodes the `result` member with `seed`.
    pub fn result_with<T, S>(&self, seed: S) -> Result<T>
    where
        S: for<'de> DeserializeSeed<'de, Value = T>,
    {
        if self.streamed.is_some() {
            return Err(Error::Protocol(
                "a streamed reply is decoded by call_streamed".into(),
            ));
        }
        // One pass over the message: a large monitor reply is not first
        // scanned for the bounds of `result` and then decoded.
        let mut de = serde_json::Deserializer::from_slice(&self.frame);
        de.deserialize_map(ResultOf(seed))
            .and_then(|result| de.end().map(|()| result))
            .map_err(|e| Error::Protocol(format!("unexpected result: {e}")))
    }
}

/// Decodes the `params` member of a notification frame as `T`.
pub fn notification_params<T: DeserializeOwned>(frame: &[u8]) -> Result<T> {
    notification_params_with(frame, std::marker::PhantomData::<T>)
}

/// Decodes the `params` member of a notification frame with `seed`.
pub fn notification_params_with<T, S>(frame: &[u8], seed: S) -> Result<T>
where
    S: for<'de> DeserializeSeed<'de, Value = T>,
{
    let p: ParamsOnly = serde_json::from_slice(frame)
        .map_err(|e| Error::Protocol(format!("notification without params: {e}")))?;
    let mut de = serde_json::Deserializer::from_str(p.params.get());
    seed.deserialize(&mut de)
        .and_then(|params| de.end().map(|()| params))
        .map_err(|e| Error::Protocol(format!("notification params: {e}")))
}
