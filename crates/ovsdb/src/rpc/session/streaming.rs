//! The session's large messages, decoded while they arrive: which message
//! is streamed (told from its first member), the decoding thread it is fed
//! to, and how the decoded reply or update is routed.

use super::*;
use crate::framing::FrameError;

/// What the first member of a message says it is.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// `method`, `params` or a null `id`: a notification (or a request,
    /// which no server sends large).
    Notification,
    /// `result`, `error`, or the numeric `id` of our request.
    Reply(Option<u64>),
    /// Not known yet, or not a shape a streamed decoder takes.
    Unknown,
}

/// Tells a message's kind from its first bytes (whitespace allowed where
/// JSON allows it): a member name, and for `id` its value.
fn classify(head: &[u8]) -> Head {
    let mut rest = head;
    let skip_ws = |r: &mut &[u8]| {
        let n = r
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(r.len());
        *r = &r[n..];
    };
    skip_ws(&mut rest);
    let Some(after_brace) = rest.strip_prefix(b"{") else {
        return Head::Unknown;
    };
    rest = after_brace;
    skip_ws(&mut rest);
    let Some(after_quote) = rest.strip_prefix(b"\"") else {
        return Head::Unknown;
    };
    // The names that matter have no escapes.
    let Some(end) = after_quote.iter().position(|&b| b == b'"' || b == b'\\') else {
        return Head::Unknown;
    };
    let (name, mut value) = after_quote.split_at(end);
    value = &value[1..];
    skip_ws(&mut value);
    let Some(after_colon) = value.strip_prefix(b":") else {
        return Head::Unknown;
    };
    value = after_colon;
    skip_ws(&mut value);
    match name {
        b"method" | b"params" => Head::Notification,
        b"result" | b"error" => Head::Reply(None),
        b"id" if value.starts_with(b"null") => Head::Notification,
        b"id" => {
            let digits = value.iter().take_while(|b| b.is_ascii_digit()).count();
            let followed = value.get(digits).is_some_and(|b| !b.is_ascii_digit());
            match std::str::from_utf8(&value[..digits]).ok().map(str::parse) {
                Some(Ok(id)) if followed => Head::Reply(Some(id)),
                _ => Head::Unknown,
            }
        }
        _ => Head::Unknown,
    }
}

impl Task {
    /// Starts decoding the message in progress while it arrives, if it has
    /// outgrown the threshold and is a reply a pending request asked to be
    /// streamed, or a notification. `head` holds the message's bytes so
    /// far. Anything else stays buffered, bounded by `max_message`.
    pub(super) fn start_streaming(&mut self, head: &[u8], pending_len: usize) -> Option<Streaming> {
        let threshold = self.config.stream_above?;
        if pending_len <= threshold {
            return None;
        }
        let (id, decode) = match classify(head) {
            Head::Notification => (None, self.update_decoder()),
            Head::Reply(Some(id)) => (Some(id), self.streamable.remove(&id)?),
            // `result` first: the first request that asked for a streamed
            // reply (the session's users keep it the only one in flight).
            Head::Reply(None) => {
                let (id, decode) = self.streamable.pop_first()?;
                (Some(id), decode)
            }
            Head::Unknown => return None,
        };
        // A few chunks in flight: the socket is read no faster than the
        // decoder goes, so the bytes buffered stay bounded.
        let (tx, rx) = mpsc::channel(8);
        tracing::debug!(remote = %self.remote, ?id, pending_len, "decoding a large message while it arrives");
        self.streamed.fetch_add(1, Ordering::Relaxed);
        let bounds = StreamBounds {
            max_value: self.config.max_message,
            max_decoded: self.config.max_decoded,
        };
        Some(Streaming {
            id,
            chunks: tx,
            decoder: tokio::task::spawn_blocking(move || decode(rx, bounds)),
            bytes: 0,
        })
    }

    /// Whether a message starting with `head` would be decoded while it
    /// arrives once large enough.
    fn streamable(&self, head: &[u8]) -> bool {
        self.config.stream_above.is_some()
            && match classify(head) {
                Head::Notification => true,
                Head::Reply(Some(id)) => self.streamable.contains_key(&id),
                Head::Reply(None) => !self.streamable.is_empty(),
                Head::Unknown => false,
            }
    }

    /// `max_message` for a message held whole, `len` bytes so far, that
    /// starts with `head`. A message that would have been streamed but
    /// arrived in fewer, larger reads than the threshold is let through:
    /// what it holds is bounded by the read size.
    pub(super) fn check_held_whole(&self, head: &[u8], len: usize) -> Result<()> {
        if len > self.config.max_message && !self.streamable(head) {
            return Err(Error::Frame(FrameError::TooLarge {
                limit: self.config.max_message,
            }));
        }
        Ok(())
    }

    /// The decoder of a large notification, with the projections of the
    /// monitors started so far.
    fn update_decoder(&self) -> StreamDecoder {
        let monitors = self
            .monitors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Box::new(move |mut chunks, bounds: StreamBounds| {
            let none = KeyProjection::default();
            let options = StreamOptions {
                reply: &none,
                monitors: &monitors,
                max_value: bounds.max_value,
                max_decoded: bounds.max_decoded,
            };
            decode_streamed_message(&options, || chunks.blocking_recv())
                .map_err(|e| Error::Protocol(format!("notification: {e}")))
        })
    }

    /// Hands the last bytes of a streamed message to its decoder and routes
    /// the decoded reply or update like [`Task::dispatch`] routes a frame.
    pub(super) async fn finish_streaming(&mut self, s: Streaming, tail: Bytes) -> Result<()> {
        let len = s.bytes + tail.len();
        // A send error means the decoder already stopped; its error follows.
        let _ = s.chunks.send(tail).await;
        drop(s.chunks);
        let decoded = match s.decoder.await {
            Ok(r) => r,
            Err(e) => Err(Error::Protocol(format!("message decoder failed: {e}"))),
        };
        let reply = match decoded {
            Ok(reply) => reply,
            Err(e) => {
                if let Some((_, tx)) = s.id.and_then(|id| self.pending.remove(&id)) {
                    let _ = tx.send(Err(Error::Protocol(e.to_string())));
                }
                return Err(e);
            }
        };
        let Some(id) = s.id else {
            return self.route_update(reply, len).await;
        };
        tracing::debug!(remote = %self.remote, id, len, decoded_bytes = reply.decoded_bytes, "streamed reply decoded");
        if reply.id.as_u64() != Some(id) {
            return Err(Error::Protocol(format!(
                "a {len}-byte message with id {} arrived while the reply to request {id} was awaited",
                reply.id
            )));
        }
        let Some((method, tx)) = self.pending.remove(&id) else {
            return Err(Error::Protocol(format!("response with unknown id {id}")));
        };
        let result = match (reply.error.is_null(), reply.result) {
            (true, Some(result)) => Ok(Response {
                frame: Bytes::new(),
                streamed: Some((len, Decoded(result))),
            }),
            (true, None) => Err(Error::Protocol(format!("{method} reply without result"))),
            (false, _) => Err(Error::Rpc {
                method: method.to_string(),
                error: reply.error,
            }),
        };
        let _ = tx.send(result);
        Ok(())
    }

    /// Forwards a large notification decoded while it arrived: only an
    /// `update2` or `update3` may be that large.
    async fn route_update(&mut self, message: StreamedReply, len: usize) -> Result<()> {
        let method = message.method.unwrap_or_default();
        let decoded_bytes = message.decoded_bytes;
        let update = match (method.as_str(), message.params) {
            ("update2", Some(p)) if p.last_txn_id.is_none() && message.id.is_null() => Update {
                monitor_id: p.monitor_id,
                last_txn_id: None,
                updates: p.updates,
            },
            ("update3", Some(p)) if p.last_txn_id.is_some() && message.id.is_null() => Update {
                monitor_id: p.monitor_id,
                last_txn_id: p.last_txn_id,
                updates: p.updates,
            },
            _ => {
                return Err(Error::Protocol(format!(
                    "a {len}-byte message with method {method:?} and id {}: only update2 and update3 notifications may be larger than stream_above",
                    message.id
                )))
            }
        };
        tracing::debug!(remote = %self.remote, %method, len, rows = update.updates.row_count(), decoded_bytes, "large update decoded while it arrived");
        self.notifications
            .send(Notification::Update(Box::new(update)))
            .await
            .map_err(|_| Error::SessionClosed)
    }

    /// The decoder of a streamed message stopped before its end: its error.
    pub(super) async fn failed_streaming(&mut self, s: Streaming) -> Error {
        let e = match s.decoder.await {
            Ok(Err(e)) => e,
            Ok(Ok(_)) => Error::Protocol("a streamed message ended before its last byte".into()),
            Err(e) => Error::Protocol(format!("message decoder failed: {e}")),
        };
        if let Some((_, tx)) = s.id.and_then(|id| self.pending.remove(&id)) {
            let _ = tx.send(Err(Error::Protocol(e.to_string())));
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_told_from_its_first_member() {
        let cases: [(&[u8], Head); 10] = [
            (
                br#"{"id":null,"method":"update3","params":["#,
                Head::Notification,
            ),
            (b" {\n \"method\" : \"update2\"", Head::Notification),
            (br#"{"params":["obgp-db""#, Head::Notification),
            (br#"{"id":12,"result":{"#, Head::Reply(Some(12))),
            (br#"{ "id" : 7 , "#, Head::Reply(Some(7))),
            (br#"{"result":{"Logical_Switch""#, Head::Reply(None)),
            (br#"{"error":null,"#, Head::Reply(None)),
            // Not enough bytes yet, or not an id we can have sent.
            (br#"{"id":12"#, Head::Unknown),
            (br#"{"id":"echo","#, Head::Unknown),
            (br#"{"x\"y":1"#, Head::Unknown),
        ];
        for (head, want) in cases {
            assert_eq!(classify(head), want, "{}", String::from_utf8_lossy(head));
        }
    }
}
