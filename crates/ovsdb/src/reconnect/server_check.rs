//! The monitor task's checks of the server: `_Server.Database` says
//! whether this server's copy of the database may be used.

use std::sync::Arc;

use serde_json::json;

use super::{Runner, SERVER_MONITOR_ID};
use crate::error::{Error, Result};
use crate::rpc::session::Session;
use crate::server_db;
use obgp_ovsdb_data::{Condition, DbSnapshot, MonitorSpec};

impl Runner {
    /// Reads `_Server.Database` for our database and checks that this
    /// server's copy may be used ([`server_db::check`]). Starts a monitor
    /// on that row so later changes are seen, and returns the row's cache
    /// to apply them to (`None`: a server without `_Server`, nothing to
    /// watch).
    pub(super) async fn check_server(&mut self, session: &Session) -> Result<Option<DbSnapshot>> {
        let server_schema = match session.get_schema("_Server").await {
            Ok(s) => s,
            // Very old servers have no _Server database: nothing to check.
            Err(Error::Rpc { .. }) if !self.config.leader_only => return Ok(None),
            Err(e) => return Err(e),
        };
        let spec = MonitorSpec::default().table(
            "Database",
            obgp_ovsdb_data::TableMonitor {
                columns: Some(server_db::COLUMNS.iter().map(|c| c.to_string()).collect()),
                conditions: Some(vec![Condition::eq(
                    "name",
                    obgp_ovsdb_data::Datum::scalar(obgp_ovsdb_data::Atom::String(
                        self.config.database.as_str().into(),
                    )),
                )]),
                ..Default::default()
            },
        );
        let dump = session
            .monitor_cond("_Server", &json!(SERVER_MONITOR_ID), &spec, &server_schema)
            .await?;
        let empty = DbSnapshot::empty(Arc::new(server_schema), ["Database"]);
        let (server_rows, _) = empty.apply(dump)?;
        self.check_server_db(session, &server_rows)?;
        Ok(Some(server_rows))
    }

    /// Whether the server's `_Server.Database` row (as cached in
    /// `server_rows`) lets us use its copy of the database.
    pub(super) fn check_server_db(
        &mut self,
        session: &Session,
        server_rows: &DbSnapshot,
    ) -> Result<()> {
        let db = &self.config.database;
        let row = server_rows
            .table("Database")
            .values()
            .find(|r| r.str("name") == Some(db.as_str()))
            .ok_or_else(|| {
                Error::NotUsable(format!(
                    "{}: server does not have database {db}",
                    session.remote()
                ))
            })?;
        let status = server_db::DatabaseStatus::from_row(row);
        server_db::check(&status, self.config.leader_only, &mut self.seen_index).map_err(|why| {
            Error::NotUsable(format!(
                "{}: {db}: {why}; trying another server",
                session.remote()
            ))
        })
    }
}
