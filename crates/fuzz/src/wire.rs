//! The wire harness (structure-aware): an initial dump and an update of one
//! database, drawn as plausible `table-updates2` messages (the schema's
//! tables and columns, pool strings and nonsense atoms, sets and maps, a
//! scenario's real rows as the start), optionally corrupted, go through
//! the buffered and the streamed decoder (row scanner, reply framer), the
//! schema checks of the cache's snapshot, and the OVN snapshot builder,
//! both from scratch and patched row by row.
//!
//! Checked: nothing panics; the streamed decode of a reply equals the
//! buffered one; the live snapshot patched with the update's changes
//! equals a snapshot built from the updated database.

use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use obgp_ovn::{LiveSnapshot, Snapshot, Tables};
use obgp_ovsdb_data::schema::DatabaseSchema;
use obgp_ovsdb_data::wire::{
    decode_streamed_reply, decode_table_updates, KeyProjection, MonitorResultSeed,
};
use obgp_ovsdb_data::{DbSnapshot, Uuid};
use serde::de::DeserializeSeed;
use serde_json::{json, Map, Value};

use crate::mutate::{Pools, NONSENSE};
use crate::seeds;

const DBS: [&str; 3] = [obgp_ovn::NB_DB, obgp_ovn::SB_DB, obgp_ovn::OVS_DB];

/// A string atom.
#[derive(Arbitrary, Debug)]
enum StrModel {
    /// One of the scenarios' strings (names, uuids, addresses, ...).
    Pool(u16),
    Nonsense(u8),
    Any(String),
}

#[derive(Arbitrary, Debug)]
enum AtomModel {
    Str(StrModel),
    Int(i64),
    Real(f64),
    Bool(bool),
    Uuid(u8),
    NamedUuid(u8),
}

/// A column value in wire notation, or something that is not one.
#[derive(Arbitrary, Debug)]
enum ValueModel {
    Atom(AtomModel),
    Set(Vec<AtomModel>),
    Map(Vec<(AtomModel, AtomModel)>),
    /// `["set", x]` / `["map", x]` / `["uuid", x]` with a wrong inner value.
    BadTagged(u8, AtomModel),
    Null,
    Object,
    /// A pair of sets (what a nested wrong type looks like).
    Nested(Vec<AtomModel>, Vec<AtomModel>),
}

#[derive(Arbitrary, Debug)]
enum OpModel {
    Initial,
    Insert,
    Modify,
    Delete,
    /// An op name the decoder does not know.
    Unknown,
    /// A row update that is not an object.
    NotAnObject,
}

#[derive(Arbitrary, Debug)]
struct RowModel {
    /// Into the uuid pool (the base dump's rows, then a few fixed ones).
    uuid: u8,
    op: OpModel,
    /// (column index into the table's schema columns, value).
    columns: Vec<(u8, ValueModel)>,
}

#[derive(Arbitrary, Debug)]
struct TableModel {
    /// Into the schema's tables; past them, a table the schema lacks.
    table: u8,
    rows: Vec<RowModel>,
}

#[derive(Arbitrary, Debug)]
enum Corruption {
    Truncate(u16),
    Insert(u16, u8),
    Replace(u16, u8),
}

/// One input of the wire target.
#[derive(Arbitrary, Debug)]
pub struct WireInput {
    /// Which database (NB, SB, Open_vSwitch).
    db: u8,
    /// Start from this scenario's rows of the database as the initial dump.
    base: Option<u8>,
    initial: Vec<TableModel>,
    update: Vec<TableModel>,
    /// `monitor_cond_since`'s reply form instead of `monitor_cond`'s.
    since: bool,
    /// Keep only the monitored map keys (the NB driver's projection).
    projected: bool,
    /// Sizes of the reads the streamed decoder is fed.
    chunks: Vec<u16>,
    /// A byte-level fault in the initial dump (`true`) or the update.
    corruption: Option<(bool, Corruption)>,
}

struct Db {
    schema: Arc<DatabaseSchema>,
    /// Table names, then per table its column names (sorted).
    tables: Vec<(String, Vec<String>)>,
}

fn dbs() -> &'static [Option<Db>] {
    static DBS_PARSED: OnceLock<Vec<Option<Db>>> = OnceLock::new();
    DBS_PARSED.get_or_init(|| {
        seeds::schema_values()
            .iter()
            .map(|v| {
                let schema = DatabaseSchema::from_json(v).ok()?;
                let tables = v["tables"]
                    .as_object()?
                    .iter()
                    .map(|(t, def)| {
                        let cols = def["columns"]
                            .as_object()
                            .map(|c| c.keys().cloned().collect())
                            .unwrap_or_default();
                        (t.clone(), cols)
                    })
                    .collect();
                Some(Db {
                    schema: Arc::new(schema),
                    tables,
                })
            })
            .collect()
    })
}

fn pools() -> &'static Pools {
    static POOLS: OnceLock<Pools> = OnceLock::new();
    POOLS.get_or_init(|| Pools::harvest(seeds::scenarios().iter().map(|(_, v)| &v["ovn"])))
}

struct Render<'a> {
    uuids: &'a [String],
    pools: &'a Pools,
}

impl Render<'_> {
    fn uuid(&self, i: u8) -> String {
        let i = usize::from(i);
        match self.uuids.get(i) {
            Some(u) => u.clone(),
            None => Uuid(0x0f00_0000_0000_4000_8000_0000_0000_0000 | (i as u128 % 24)).to_string(),
        }
    }

    fn string(&self, s: &StrModel) -> String {
        match s {
            StrModel::Pool(i) => self
                .pools
                .strings
                .get(usize::from(*i) % self.pools.strings.len().max(1))
                .cloned()
                .unwrap_or_default(),
            StrModel::Nonsense(i) => NONSENSE[usize::from(*i) % NONSENSE.len()].to_string(),
            StrModel::Any(s) => s.clone(),
        }
    }

    fn atom(&self, a: &AtomModel) -> Value {
        match a {
            AtomModel::Str(s) => Value::String(self.string(s)),
            AtomModel::Int(i) => json!(i),
            AtomModel::Real(f) => {
                serde_json::Number::from_f64(*f).map_or(json!(0.5), Value::Number)
            }
            AtomModel::Bool(b) => json!(b),
            AtomModel::Uuid(u) => json!(["uuid", self.uuid(*u)]),
            AtomModel::NamedUuid(u) => json!(["named-uuid", format!("row{u}")]),
        }
    }

    fn value(&self, v: &ValueModel) -> Value {
        match v {
            ValueModel::Atom(a) => self.atom(a),
            ValueModel::Set(atoms) => {
                json!([
                    "set",
                    atoms.iter().map(|a| self.atom(a)).collect::<Vec<_>>()
                ])
            }
            ValueModel::Map(pairs) => json!([
                "map",
                pairs
                    .iter()
                    .map(|(k, v)| json!([self.atom(k), self.atom(v)]))
                    .collect::<Vec<_>>()
            ]),
            ValueModel::BadTagged(tag, a) => {
                let tag = ["set", "map", "uuid", "named-uuid"][usize::from(*tag) % 4];
                json!([tag, self.atom(a)])
            }
            ValueModel::Null => Value::Null,
            ValueModel::Object => json!({"set": []}),
            ValueModel::Nested(a, b) => json!([
                "set",
                [
                    ["set", a.iter().map(|x| self.atom(x)).collect::<Vec<_>>()],
                    ["set", b.iter().map(|x| self.atom(x)).collect::<Vec<_>>()]
                ]
            ]),
        }
    }

    /// `tables` as a `table-updates2` object, added to `out`.
    fn updates(&self, db: &Db, tables: &[TableModel], out: &mut Map<String, Value>) {
        for t in tables {
            let (name, columns) = match db.tables.get(usize::from(t.table)) {
                Some((name, cols)) => (name.clone(), cols.as_slice()),
                None => (format!("No_Such_Table_{}", t.table), &[][..]),
            };
            let rows = out.entry(name).or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(rows) = rows else { continue };
            for r in &t.rows {
                let mut cols = Map::new();
                for (c, v) in &r.columns {
                    let col = columns.get(usize::from(*c)).cloned().unwrap_or_else(|| {
                        ["_uuid", "_version", "no_such_column"][usize::from(*c) % 3].into()
                    });
                    cols.insert(col, self.value(v));
                }
                let update = match r.op {
                    OpModel::Initial => json!({ "initial": cols }),
                    OpModel::Insert => json!({ "insert": cols }),
                    OpModel::Modify => json!({ "modify": cols }),
                    OpModel::Delete => json!({ "delete": null }),
                    OpModel::Unknown => json!({ "replace": cols }),
                    OpModel::NotAnObject => json!([cols]),
                };
                rows.insert(self.uuid(r.uuid), update);
            }
        }
    }
}

fn corrupt(text: &mut Vec<u8>, c: &Corruption) {
    let at = |i: u16, len: usize| usize::from(i) % len.max(1);
    match *c {
        Corruption::Truncate(i) => {
            let n = at(i, text.len());
            text.truncate(n);
        }
        Corruption::Insert(i, b) => {
            let n = at(i, text.len());
            text.insert(n.min(text.len()), b);
        }
        Corruption::Replace(i, b) => {
            let n = at(i, text.len());
            if let Some(x) = text.get_mut(n) {
                *x = b;
            }
        }
    }
}

/// The rows of database `name` of a scenario, as an initial dump.
fn base_dump(scenario: &Value, name: &str) -> (Map<String, Value>, Vec<String>) {
    let mut out = Map::new();
    let mut uuids = Vec::new();
    if let Some(tables) = scenario["ovn"][name].as_object() {
        for (table, rows) in tables {
            let Some(rows) = rows.as_object() else {
                continue;
            };
            let mut t = Map::new();
            for (uuid, row) in rows {
                uuids.push(uuid.clone());
                t.insert(uuid.clone(), json!({ "initial": row }));
            }
            out.insert(table.clone(), Value::Object(t));
        }
    }
    (out, uuids)
}

/// Each scenario's NB, SB and OVS databases as tables (empty when absent
/// or invalid), parsed once.
fn fixture_tables() -> &'static [[Tables; 3]] {
    static TABLES: OnceLock<Vec<[Tables; 3]>> = OnceLock::new();
    TABLES.get_or_init(|| {
        seeds::scenarios()
            .iter()
            .map(|(_, s)| {
                let mut db = obgp_ovn::fixture::FixtureDb::from_wire(&s["ovn"]).unwrap_or_default();
                DBS.map(|name| db.dbs.remove(name).unwrap_or_default())
            })
            .collect()
    })
}

/// Decodes `reply` streamed in reads of `chunks`' sizes, and checks it
/// against the buffered decode of its `result`.
fn check_streamed(reply: &[u8], result: &[u8], projection: &KeyProjection, chunks: &[u16]) {
    // To see what a failing input decodes: OBGP_FUZZ_DUMP=1 (docs/fuzzing.md).
    if std::env::var_os("OBGP_FUZZ_DUMP").is_some() {
        eprintln!("REPLY {}", String::from_utf8_lossy(reply));
    }
    let mut rest = reply;
    let mut sizes = chunks.iter().cycle();
    let next = || {
        if rest.is_empty() {
            return None;
        }
        let n = sizes
            .next()
            .map_or(rest.len(), |&c| usize::from(c % 4096) + 1)
            .min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        Some(bytes::Bytes::copy_from_slice(chunk))
    };
    let streamed = decode_streamed_reply(projection, next);
    let mut de = serde_json::Deserializer::from_slice(result);
    let buffered = MonitorResultSeed(projection)
        .deserialize(&mut de)
        .and_then(|r| de.end().map(|()| r));
    if let (Ok(s), Ok(b)) = (&streamed, &buffered) {
        assert_eq!(
            s.result.as_ref(),
            Some(b),
            "the streamed decode of a reply differs from the buffered decode"
        );
    }
    assert_eq!(
        streamed.is_ok(),
        buffered.is_ok(),
        "streamed {:?} / buffered {:?} disagree on whether the reply decodes",
        streamed.as_ref().err(),
        buffered.as_ref().err()
    );
}

/// How far an input went (the seeds must reach the OVN snapshot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// The bytes do not make a [`WireInput`].
    Rejected,
    /// Decoded (or refused) by both decoders; the cache refused it.
    Decoded,
    /// Both messages passed the schema checks into the cache.
    Cached,
    /// The OVN snapshot was built and patched.
    Snapshot,
}

/// The harness: `data` drawn as a [`WireInput`].
pub fn run(data: &[u8]) {
    run_to(data);
}

/// [`run`], saying how far the input went.
pub fn run_to(data: &[u8]) -> Stage {
    let Ok(input) = WireInput::arbitrary_take_rest(Unstructured::new(data)) else {
        return Stage::Rejected;
    };
    run_input(&input)
}

fn run_input(input: &WireInput) -> Stage {
    let which = usize::from(input.db) % DBS.len();
    let Some(db) = dbs().get(which).and_then(Option::as_ref) else {
        return Stage::Rejected;
    };
    let name = DBS[which];
    let scenarios = seeds::scenarios();
    let base = input.base.map(|b| usize::from(b) % scenarios.len().max(1));
    let scenario = base.and_then(|b| scenarios.get(b)).map(|(_, v)| v);
    let (mut first, uuids) =
        scenario.map_or_else(|| (Map::new(), Vec::new()), |s| base_dump(s, name));
    let render = Render {
        uuids: &uuids,
        pools: pools(),
    };
    render.updates(db, &input.initial, &mut first);
    let mut second = Map::new();
    render.updates(db, &input.update, &mut second);
    let mut first = Value::Object(first).to_string().into_bytes();
    let mut second = Value::Object(second).to_string().into_bytes();
    if let Some((in_first, c)) = &input.corruption {
        corrupt(if *in_first { &mut first } else { &mut second }, c);
    }
    let projection = if input.projected && which == 0 {
        obgp_ovn::nb::monitor_spec().key_projection()
    } else {
        KeyProjection::default()
    };

    // The monitor reply, streamed and buffered.
    let mut result = Vec::new();
    if input.since {
        result.extend_from_slice(b"[false,\"00000000-0000-0000-0000-000000000000\",");
        result.extend_from_slice(&first);
        result.push(b']');
    } else {
        result.extend_from_slice(&first);
    }
    let mut reply = b"{\"id\":7,\"result\":".to_vec();
    reply.extend_from_slice(&result);
    reply.extend_from_slice(b",\"error\":null}");
    check_streamed(&reply, &result, &projection, &input.chunks);

    // The cache: the dump, then the update, through the schema checks.
    let Ok(dump) = decode_table_updates(&first, &projection) else {
        return Stage::Decoded;
    };
    let empty = DbSnapshot::empty(db.schema.clone(), db.tables.iter().map(|(t, _)| t.as_str()));
    let Ok((cache, _)) = empty.apply(dump) else {
        return Stage::Decoded;
    };
    let Ok(update) = decode_table_updates(&second, &projection) else {
        return Stage::Cached;
    };
    let Ok((updated, changes)) = cache.apply(update) else {
        return Stage::Cached;
    };

    // The OVN snapshot, from scratch and patched with the changes; the
    // other two databases come from the base scenario.
    let none: [Tables; 3] = Default::default();
    let [nb, sb, ovs] = base.and_then(|b| fixture_tables().get(b)).unwrap_or(&none);
    let mut live = LiveSnapshot::default();
    let rows = changes
        .iter()
        .map(|c| (&*c.table, c.uuid, c.new.as_deref()));
    let built = match which {
        0 => {
            live.reset_nb(&cache);
            live.reset_sb(sb);
            live.reset_ovs(ovs);
            live.apply_nb(rows);
            Snapshot::build_with_sb(&updated, sb, ovs)
        }
        1 => {
            live.reset_nb(nb);
            live.reset_sb(&cache);
            live.reset_ovs(ovs);
            live.apply_sb(rows);
            Snapshot::build_with_sb(nb, &updated, ovs)
        }
        _ => {
            live.reset_nb(nb);
            live.reset_sb(sb);
            live.reset_ovs(&updated);
            Snapshot::build_with_sb(nb, sb, &updated)
        }
    };
    assert!(
        live.snapshot() == built,
        "the live snapshot patched with the update differs from a fresh build"
    );
    Stage::Snapshot
}

/// One input per (database, scenario): the scenario's real rows of that
/// database as the initial dump, nothing else; the fuzzer grows updates
/// and corruptions from there.
pub fn seed_inputs() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for db in 0..DBS.len() as u8 {
        for base in 0..seeds::scenarios().len() as u8 {
            // `db`, `Some(base)`, then empty vectors and `false`s.
            let bytes = vec![db, 1, base, 0, 0, 0, 0, 0, 0, 0, 0];
            let decoded = WireInput::arbitrary_take_rest(Unstructured::new(&bytes));
            if decoded.is_ok_and(|w| w.db == db && w.base == Some(base)) {
                out.push(bytes);
            }
        }
    }
    out
}
