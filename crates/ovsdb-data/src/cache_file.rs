//! The on-disk form of a monitored database's cache, so that a restarted
//! client can ask `monitor_cond_since` from where it stopped instead of
//! taking a full dump. Pure: bytes in, bytes out; the file I/O is the
//! client's (`obgp-ovsdb`'s `state_file`).
//!
//! Layout (one file):
//!
//! ```text
//! OBGP-OVSDB-CACHE\n          magic: anything else is a foreign file
//! {"format":1,...}\n          header, one line of JSON (CacheHeader)
//! {"Table":{"<uuid>":{"initial":{...}},...},...}
//!                             body: the rows, a `table-updates2` object
//! ```
//!
//! The body is written in the monitor reply's own notation and read back
//! by the same decoder ([`decode_table_updates`]) and schema checks as a
//! dump, so a row loads exactly as the server's would. The header names
//! what the rows depend on: the schema (whole, with a checksum that the
//! client compares with the server's), the cluster, the last transaction
//! id and the monitor request (tables, columns, conditions, map keys) the
//! cache was filled with, and the body's length and checksum. A truncated
//! or altered body fails the checksum before a row is trusted: a corrupt
//! cache resumed from would be wrong for as long as the rows it got wrong
//! do not change.

use std::io::Write as _;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::datum::{Atom, Datum, DatumKind};
use crate::monitor_spec::{Condition, MonitorSpec};
use crate::schema::DatabaseSchema;
use crate::snapshot::DbSnapshot;
use crate::wire::{decode_table_updates, KeyProjection};

/// The first line of every cache file.
pub const MAGIC: &[u8] = b"OBGP-OVSDB-CACHE\n";
/// The layout version this code writes and reads.
pub const FORMAT: u64 = 1;

/// Why a cache file cannot be used. Each says which part and with what
/// value, for the one log line that explains the full dump.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CacheFileError {
    /// The file does not start with [`MAGIC`].
    #[error("not an OVSDB cache file (no {:?} first line)", String::from_utf8_lossy(MAGIC).trim_end())]
    Foreign,
    /// Written by another layout version.
    #[error("cache file format {found}, this agent reads {FORMAT}")]
    Format {
        /// The version the file says.
        found: u64,
    },
    /// The header line is missing or not the expected JSON.
    #[error("cache file header: {0}")]
    Header(String),
    /// Fewer or more body bytes than the header says (a write cut short).
    #[error(
        "cache file body is {found} bytes, its header says {expected}: truncated or appended to"
    )]
    Length {
        /// Bytes the header announces.
        expected: u64,
        /// Bytes present.
        found: u64,
    },
    /// The body's checksum differs from the header's (altered on disk).
    #[error("cache file body checksum {found:016x}, its header says {expected:016x}: corrupt")]
    Checksum {
        /// The header's.
        expected: u64,
        /// The body's.
        found: u64,
    },
    /// The stored schema does not parse.
    #[error("cache file schema: {0}")]
    Schema(String),
    /// The rows do not decode or do not fit the stored schema.
    #[error("cache file rows: {0}")]
    Rows(String),
}

/// What a cache file says about its rows (the header line).
#[derive(Clone, Debug, PartialEq)]
pub struct CacheHeader {
    /// The database (`OVN_Northbound`).
    pub database: String,
    /// The schema's `get_schema` document, whole.
    pub schema: Arc<Value>,
    /// The remote cluster's id (`_Server.Database.cid`), `None` for a
    /// standalone server.
    pub cluster_id: Option<String>,
    /// The transaction the rows reflect (`monitor_cond_since`'s argument).
    pub last_txn_id: String,
    /// The monitor request the rows were selected with
    /// ([`monitor_identity`]).
    pub monitor: Value,
}

impl CacheHeader {
    /// The schema's name, version and checksum, as the log names it.
    pub fn schema_identity(&self) -> SchemaIdentity {
        SchemaIdentity::of(&self.schema)
    }
}

/// A schema's name, version and a checksum of its JSON: equal identities
/// mean the same schema (a server upgraded to another schema, or a cache of
/// another database, differs here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaIdentity {
    /// `name` of the schema.
    pub name: String,
    /// `version` of the schema.
    pub version: String,
    /// checksum64 of the schema's canonical JSON (keys sorted).
    pub checksum: u64,
}

impl SchemaIdentity {
    /// The identity of a `get_schema` document.
    pub fn of(schema: &Value) -> SchemaIdentity {
        let text = |k: &str| {
            schema
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        // serde_json's map is sorted (no `preserve_order`): the bytes do
        // not depend on the order the server wrote the members in.
        let canonical = serde_json::to_vec(schema).unwrap_or_default();
        SchemaIdentity {
            name: text("name"),
            version: text("version"),
            checksum: checksum64(&canonical),
        }
    }
}

impl std::fmt::Display for SchemaIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({:016x})", self.name, self.version, self.checksum)
    }
}

/// A cache file read back: its header and its rows, decoded and checked
/// with the stored schema.
#[derive(Clone, Debug)]
pub struct LoadedCache {
    /// What the rows depend on.
    pub header: CacheHeader,
    /// The rows.
    pub snapshot: DbSnapshot,
}

/// The canonical JSON of a monitor request: tables, columns, conditions
/// and kept map keys. Two requests with equal identities select the same
/// rows and columns and project them alike, so a cache filled by one can be
/// resumed by the other.
pub fn monitor_identity(spec: &MonitorSpec) -> Value {
    let tables: serde_json::Map<String, Value> = spec
        .tables
        .iter()
        .map(|(name, tm)| {
            let conditions = tm
                .conditions
                .as_ref()
                .map(|c| Value::Array(c.iter().map(Condition::to_wire).collect()));
            (
                name.clone(),
                json!({
                    "columns": tm.columns,
                    "where": conditions,
                    "map_keys": tm.map_keys,
                }),
            )
        })
        .collect();
    Value::Object(tables)
}

/// The file's bytes for `snapshot` as `header` describes it.
pub fn encode(header: &CacheHeader, snapshot: &DbSnapshot) -> Vec<u8> {
    let body = encode_rows(snapshot);
    let head = json!({
        "format": FORMAT,
        "database": header.database,
        "schema": &*header.schema,
        "cluster_id": header.cluster_id,
        "last_txn_id": header.last_txn_id,
        "monitor": header.monitor,
        "body_length": body.len(),
        "body_checksum": format!("{:016x}", checksum64(&body)),
    });
    let mut out = Vec::with_capacity(body.len() + 64 * 1024);
    out.extend_from_slice(MAGIC);
    serde_json::to_writer(&mut out, &head).expect("writing JSON to a Vec cannot fail");
    out.push(b'\n');
    out.extend_from_slice(&body);
    out
}

/// Reads a cache file's bytes back: checks the magic, format, length and
/// checksum, parses the schema and decodes the rows with it (strictly: one
/// row that does not fit makes the file unusable). `projection` is the
/// monitor's map-key projection (the stored rows are already projected;
/// it only keeps decoding consistent with the live monitor).
pub fn decode(bytes: &[u8], projection: &KeyProjection) -> Result<LoadedCache, CacheFileError> {
    let (header, sizes, body) = split(bytes)?;
    if body.len() as u64 != sizes.length {
        return Err(CacheFileError::Length {
            expected: sizes.length,
            found: body.len() as u64,
        });
    }
    let found = checksum64(body);
    if found != sizes.checksum {
        return Err(CacheFileError::Checksum {
            expected: sizes.checksum,
            found,
        });
    }
    let schema = DatabaseSchema::from_json(&header.schema)
        .map_err(|e| CacheFileError::Schema(e.to_string()))?;
    let updates =
        decode_table_updates(body, projection).map_err(|e| CacheFileError::Rows(e.to_string()))?;
    if let Some(fault) = updates.skipped().next() {
        return Err(CacheFileError::Rows(fault.to_string()));
    }
    let tables: Vec<String> = updates.0.iter().map(|t| t.table.clone()).collect();
    let empty = DbSnapshot::empty(Arc::new(schema), tables.iter().map(String::as_str));
    let (snapshot, _) = empty
        .apply(updates)
        .map_err(|e| CacheFileError::Rows(e.to_string()))?;
    Ok(LoadedCache { header, snapshot })
}

/// The header of a cache file from its first bytes (at least through the
/// header line): what the rows depend on, without reading them.
pub fn decode_header(bytes: &[u8]) -> Result<CacheHeader, CacheFileError> {
    split(bytes).map(|(header, _, _)| header)
}

/// The body's announced length and checksum.
struct BodySizes {
    length: u64,
    checksum: u64,
}

/// The header, the body's announced sizes and the bytes after the header
/// line.
fn split(bytes: &[u8]) -> Result<(CacheHeader, BodySizes, &[u8]), CacheFileError> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(CacheFileError::Foreign)?;
    let eol = memchr::memchr(b'\n', rest)
        .ok_or_else(|| CacheFileError::Header("no end of line".into()))?;
    let (head, body) = (&rest[..eol], &rest[eol + 1..]);
    let head: Value =
        serde_json::from_slice(head).map_err(|e| CacheFileError::Header(e.to_string()))?;
    let format = head.get("format").and_then(Value::as_u64).unwrap_or(0);
    if format != FORMAT {
        return Err(CacheFileError::Format { found: format });
    }
    let field = |k: &str| {
        head.get(k)
            .ok_or_else(|| CacheFileError::Header(format!("no {k:?}")))
    };
    let text = |k: &str| {
        field(k)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| CacheFileError::Header(format!("{k:?} is not a string")))
    };
    let length = field("body_length")?
        .as_u64()
        .ok_or_else(|| CacheFileError::Header("\"body_length\" is not a count".into()))?;
    let sum = text("body_checksum")?;
    let checksum = u64::from_str_radix(&sum, 16)
        .map_err(|_| CacheFileError::Header(format!("\"body_checksum\" {sum:?} is not hex")))?;
    let cluster_id = match field("cluster_id")? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        v => return Err(CacheFileError::Header(format!("\"cluster_id\" {v}"))),
    };
    let header = CacheHeader {
        database: text("database")?,
        schema: Arc::new(field("schema")?.clone()),
        cluster_id,
        last_txn_id: text("last_txn_id")?,
        monitor: field("monitor")?.clone(),
    };
    Ok((header, BodySizes { length, checksum }, body))
}

/// The row conditions of `table` in a [`monitor_identity`]: `Some(None)`
/// for every row, `None` when the table is not in it or its conditions do
/// not decode. Lets a client start from the conditions a cache file was
/// filled with, so that the file can be resumed.
pub fn monitor_conditions(identity: &Value, table: &str) -> Option<Option<Vec<Condition>>> {
    match identity.get(table)?.get("where")? {
        Value::Null => Some(None),
        Value::Array(clauses) => clauses
            .iter()
            .map(|c| Condition::from_wire(c).ok())
            .collect::<Option<Vec<_>>>()
            .map(Some),
        _ => None,
    }
}

/// The rows of `snapshot` as a `table-updates2` object of `initial` rows,
/// every table named (an empty one as `{}`), written straight to bytes.
fn encode_rows(snapshot: &DbSnapshot) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(b'{');
    for (t, name) in snapshot.tables().enumerate() {
        if t > 0 {
            out.push(b',');
        }
        write_str(&mut out, name);
        out.extend_from_slice(b":{");
        for (r, (uuid, row)) in snapshot.table(name).iter().enumerate() {
            if r > 0 {
                out.push(b',');
            }
            write!(out, "\"{uuid}\":{{\"initial\":{{").expect("Vec write");
            for (c, (column, datum)) in row.columns.iter().enumerate() {
                if c > 0 {
                    out.push(b',');
                }
                write_str(&mut out, column);
                out.push(b':');
                write_datum(&mut out, datum);
            }
            out.extend_from_slice(b"}}");
        }
        out.push(b'}');
    }
    out.push(b'}');
    out
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing JSON to a Vec cannot fail");
}

fn write_atom(out: &mut Vec<u8>, atom: &Atom) {
    match atom {
        Atom::Integer(i) => write!(out, "{i}").expect("Vec write"),
        Atom::Real(r) => serde_json::to_writer(&mut *out, r).expect("Vec write"),
        Atom::Boolean(b) => write!(out, "{b}").expect("Vec write"),
        Atom::String(s) => write_str(out, s.as_str()),
        Atom::Uuid(u) => write!(out, "[\"uuid\",\"{u}\"]").expect("Vec write"),
        Atom::NamedUuid(n) => {
            out.extend_from_slice(b"[\"named-uuid\",");
            write_str(out, n.as_str());
            out.push(b']');
        }
    }
}

/// Wire notation, as [`Datum::to_wire`] writes it, without building a
/// JSON tree.
fn write_datum(out: &mut Vec<u8>, datum: &Datum) {
    match datum.kind() {
        DatumKind::Set([one]) => write_atom(out, one),
        DatumKind::Set(items) => {
            out.extend_from_slice(b"[\"set\",[");
            for (i, a) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_atom(out, a);
            }
            out.extend_from_slice(b"]]");
        }
        DatumKind::Map(pairs) => {
            out.extend_from_slice(b"[\"map\",[");
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.push(b'[');
                write_atom(out, k);
                out.push(b',');
                write_atom(out, v);
                out.push(b']');
            }
            out.extend_from_slice(b"]]");
        }
    }
}

/// FNV-1a, 64 bits, eight bytes a step (each step folds a little-endian
/// word): a checksum against a cut or altered file, not against an
/// adversary, and fast enough for a 50 MB body. Stable across versions,
/// unlike the std and foldhash hashers.
pub fn checksum64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().expect("8 bytes"))).wrapping_mul(PRIME);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    h
}

#[cfg(test)]
mod tests;
