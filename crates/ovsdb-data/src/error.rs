//! The data crate's error type: a schema, row or datum that does not fit.

use crate::datum::DatumError;

/// Why a schema, an update or a value could not be used. Every variant
/// names the offending value and, where there is one, the table and row.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The schema document is not a valid OVSDB schema.
    #[error("schema {schema}: {reason}")]
    Schema {
        /// The schema's name or file.
        schema: String,
        /// What is wrong.
        reason: String,
    },
    /// A value in an update does not fit the schema.
    #[error("{table} row {uuid}: {reason}")]
    BadRow {
        /// The table of the row.
        table: String,
        /// The row's UUID.
        uuid: String,
        /// What is wrong, naming the column.
        reason: String,
    },
    /// A modify or delete of a row the cache does not have: the cache and
    /// the server are out of step (a resync mends it).
    #[error("{table} row {uuid}: {op} of a row the cache does not have")]
    MissingRow {
        /// The table of the row.
        table: String,
        /// The row's UUID.
        uuid: String,
        /// `modify` or `delete`.
        op: &'static str,
    },
    /// An update names a table the schema does not have.
    #[error("update for unknown table {0:?}")]
    UnknownTable(String),
    /// A datum that could not be decoded at all.
    #[error(transparent)]
    Datum(#[from] DatumError),
}

/// Short alias used throughout the crate.
pub type Result<T, E = DataError> = std::result::Result<T, E>;
