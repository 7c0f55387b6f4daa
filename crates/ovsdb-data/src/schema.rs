//! The database schema (RFC 7047 § 3.2) and the typed decoding it drives.
//!
//! The schema says what a column may hold: an atomic key type (optionally a
//! value type for maps, and a `refTable` for references), and how many
//! elements (`min`/`max`). Decoding through it turns the server's wire values
//! into canonical [`Datum`]s: integers in real columns become reals, sets and
//! maps are sorted and de-duplicated, and anything of the wrong type is an
//! error naming the value. Numeric ranges and enums are the server's to
//! enforce; they are parsed but not checked here.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::datum::{Atom, Datum, DatumKind, Row};
use crate::error::{DataError, Result};

/// One of the five atomic types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicType {
    /// 64-bit signed integer.
    Integer,
    /// Double-precision real.
    Real,
    /// Boolean.
    Boolean,
    /// UTF-8 string.
    String,
    /// UUID (a reference when `refTable` is set).
    Uuid,
}

impl AtomicType {
    fn parse(s: &str) -> Option<AtomicType> {
        Some(match s {
            "integer" => AtomicType::Integer,
            "real" => AtomicType::Real,
            "boolean" => AtomicType::Boolean,
            "string" => AtomicType::String,
            "uuid" => AtomicType::Uuid,
            _ => return None,
        })
    }

    /// The type's default atom (RFC 7047 § 5.1): 0, 0.0, false, "", all-zero UUID.
    pub fn default_atom(self) -> Atom {
        match self {
            AtomicType::Integer => Atom::Integer(0),
            AtomicType::Real => Atom::Real(0.0),
            AtomicType::Boolean => Atom::Boolean(false),
            AtomicType::String => Atom::String(crate::datum::Str::default()),
            AtomicType::Uuid => Atom::Uuid(crate::Uuid(0)),
        }
    }

    /// Checks `atom` against the type; an integer in a real column is
    /// widened, everything else must match exactly.
    pub fn coerce(self, atom: Atom) -> Result<Atom, String> {
        match (self, atom) {
            (AtomicType::Integer, a @ Atom::Integer(_))
            | (AtomicType::Real, a @ Atom::Real(_))
            | (AtomicType::Boolean, a @ Atom::Boolean(_))
            | (AtomicType::String, a @ Atom::String(_))
            | (AtomicType::Uuid, a @ Atom::Uuid(_)) => Ok(a),
            (AtomicType::Real, Atom::Integer(i)) => Ok(Atom::Real(i as f64)),
            (ty, a) => Err(format!("expected {ty:?}, found {}", a.to_wire())),
        }
    }
}

/// The type of a map key, map value or set element.
#[derive(Clone, Debug, PartialEq)]
pub struct BaseType {
    /// The atomic type.
    pub atomic: AtomicType,
    /// For UUIDs: the table the value refers to.
    pub ref_table: Option<String>,
    /// For references: `true` for strong (the default), `false` for weak.
    pub ref_strong: bool,
}

impl BaseType {
    fn parse(v: &Value) -> Result<BaseType, String> {
        match v {
            Value::String(s) => Ok(BaseType {
                atomic: AtomicType::parse(s).ok_or_else(|| format!("unknown atomic type {s:?}"))?,
                ref_table: None,
                ref_strong: true,
            }),
            Value::Object(o) => {
                let ty = o
                    .get("type")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("base type without \"type\": {v}"))?;
                Ok(BaseType {
                    atomic: AtomicType::parse(ty)
                        .ok_or_else(|| format!("unknown atomic type {ty:?}"))?,
                    ref_table: o.get("refTable").and_then(Value::as_str).map(String::from),
                    ref_strong: o.get("refType").and_then(Value::as_str) != Some("weak"),
                })
            }
            _ => Err(format!("invalid base type {v}")),
        }
    }
}

/// A column's type: a set of `min..=max` keys, or a map when `value` is set.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnType {
    /// Type of set elements or map keys.
    pub key: BaseType,
    /// Type of map values (`None` for sets).
    pub value: Option<BaseType>,
    /// Fewest elements (0 or 1).
    pub min: usize,
    /// `None` means unlimited.
    pub max: Option<usize>,
}

/// Orders atoms of one type the way the server does (strings bytewise,
/// UUIDs as 128-bit numbers, reals totally).
pub fn atom_cmp(a: &Atom, b: &Atom) -> Ordering {
    fn rank(a: &Atom) -> u8 {
        match a {
            Atom::Integer(_) => 0,
            Atom::Real(_) => 1,
            Atom::Boolean(_) => 2,
            Atom::String(_) => 3,
            Atom::Uuid(_) => 4,
            Atom::NamedUuid(_) => 5,
        }
    }
    match (a, b) {
        (Atom::Integer(x), Atom::Integer(y)) => x.cmp(y),
        (Atom::Real(x), Atom::Real(y)) => x.total_cmp(y),
        (Atom::Boolean(x), Atom::Boolean(y)) => x.cmp(y),
        (Atom::String(x), Atom::String(y)) => x.cmp(y),
        (Atom::Uuid(x), Atom::Uuid(y)) => x.cmp(y),
        (Atom::NamedUuid(x), Atom::NamedUuid(y)) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)),
    }
}

impl ColumnType {
    /// Parses the `type` member of a column (RFC 7047 § 3.2 `<type>`).
    pub fn parse(v: &Value) -> Result<ColumnType, String> {
        if let Value::String(_) = v {
            return Ok(ColumnType {
                key: BaseType::parse(v)?,
                value: None,
                min: 1,
                max: Some(1),
            });
        }
        let o = v.as_object().ok_or_else(|| format!("invalid type {v}"))?;
        let key = BaseType::parse(
            o.get("key")
                .ok_or_else(|| format!("type without key: {v}"))?,
        )?;
        let value = o.get("value").map(BaseType::parse).transpose()?;
        let min = match o.get("min") {
            None => 1,
            Some(m) => m
                .as_u64()
                .filter(|m| *m <= 1)
                .ok_or_else(|| format!("invalid min {m}"))? as usize,
        };
        let max = match o.get("max") {
            None => Some(1),
            Some(Value::String(s)) if s == "unlimited" => None,
            Some(m) => Some(
                m.as_u64()
                    .filter(|m| *m >= 1)
                    .ok_or_else(|| format!("invalid max {m}"))? as usize,
            ),
        };
        Ok(ColumnType {
            key,
            value,
            min,
            max,
        })
    }

    /// A map column.
    pub fn is_map(&self) -> bool {
        self.value.is_some()
    }

    /// Exactly one atom (`min` = `max` = 1): written and diffed as a value.
    pub fn is_scalar(&self) -> bool {
        self.value.is_none() && self.min == 1 && self.max == Some(1)
    }

    /// Zero or one atom: read it with [`Datum::as_scalar`] as an `Option`.
    pub fn is_optional(&self) -> bool {
        self.value.is_none() && self.min == 0 && self.max == Some(1)
    }

    /// The value an absent column holds.
    pub fn default_datum(&self) -> Datum {
        if self.is_map() {
            Datum::empty_map()
        } else if self.min == 1 {
            Datum::scalar(self.key.atomic.default_atom())
        } else {
            Datum::empty_set()
        }
    }

    /// Whether `d` equals the column's default (such columns are not stored).
    pub fn is_default(&self, d: &Datum) -> bool {
        match d.kind() {
            DatumKind::Set([]) => true,
            DatumKind::Map(p) => p.is_empty(),
            DatumKind::Set([one]) => {
                self.min == 1 && atom_cmp(one, &self.key.atomic.default_atom()) == Ordering::Equal
            }
            DatumKind::Set(_) => false,
        }
    }

    /// Checks and canonicalises a decoded datum: atom types, set or map
    /// shape, and (unless `diff`, whose sets may exceed `max`) cardinality.
    /// Sets and maps come back sorted with duplicates removed.
    pub fn check(&self, d: Datum, diff: bool) -> Result<Datum, String> {
        let out = match (d.as_scalar(), &self.value) {
            // One atom, most columns: nothing to sort, no vector to build.
            (Some(one), None) => Datum::scalar(self.key.atomic.coerce(one.clone())?),
            _ => self.check_elements(d, diff)?,
        };
        if !diff {
            let n = out.len();
            if n < self.min || self.max.is_some_and(|m| n > m) {
                return Err(format!(
                    "{} elements where the column allows {}..{}",
                    n,
                    self.min,
                    self.max.map_or("unlimited".to_string(), |m| m.to_string())
                ));
            }
        }
        Ok(out)
    }

    /// [`ColumnType::check`]'s atom types and shape of a set or map,
    /// sorted, without the cardinality.
    fn check_elements(&self, d: Datum, diff: bool) -> Result<Datum, String> {
        Ok(match (d.into_kind(), &self.value) {
            (DatumKind::Set(atoms), None) => {
                let mut atoms = atoms
                    .into_iter()
                    .map(|a| self.key.atomic.coerce(a))
                    .collect::<Result<Vec<_>, _>>()?;
                atoms.sort_by(atom_cmp);
                atoms.dedup_by(|a, b| atom_cmp(a, b) == Ordering::Equal);
                // Cached rows live long: the boxed slice drops the
                // decoder's growth slack.
                Datum::set(atoms)
            }
            // An empty set is how some writers spell an empty map.
            (DatumKind::Set(atoms), Some(_)) if atoms.is_empty() => Datum::empty_map(),
            (DatumKind::Map(pairs), Some(vt)) => {
                let mut pairs = pairs
                    .into_iter()
                    .map(|(k, v)| Ok((self.key.atomic.coerce(k)?, vt.atomic.coerce(v)?)))
                    .collect::<Result<Vec<_>, String>>()?;
                pairs.sort_by(|a, b| atom_cmp(&a.0, &b.0));
                if !diff {
                    if let Some(w) = pairs
                        .windows(2)
                        .find(|w| atom_cmp(&w[0].0, &w[1].0) == Ordering::Equal)
                    {
                        return Err(format!("duplicate map key {}", w[0].0.to_wire()));
                    }
                }
                Datum::map(pairs)
            }
            (DatumKind::Set(atoms), Some(_)) => {
                let found = Datum::set(atoms).to_wire();
                return Err(format!("expected a map, found {found}"));
            }
            (DatumKind::Map(pairs), None) => {
                let found = Datum::map(pairs).to_wire();
                return Err(format!("expected a set, found {found}"));
            }
        })
    }

    /// Decodes a wire value (RFC 7047 § 5.1) into a canonical datum of this type.
    pub fn decode(&self, v: &Value) -> Result<Datum, String> {
        let d = Datum::from_wire(v).map_err(|e| e.to_string())?;
        self.check(d, false)
    }

    /// Applies an `update2` "modify" diff (ovsdb-server(7)): a column of at
    /// most one element (scalar or optional) is replaced by the diff, as
    /// ovsdb-server only diffs "composite" types (`max` > 1); a set toggles
    /// each element of the diff (present elements are removed, absent ones
    /// added); a map removes a key whose diff pair equals the current pair,
    /// replaces a key whose value differs, and adds a missing key. `old`
    /// and `diff` must already be [`check`]ed.
    ///
    /// [`check`]: ColumnType::check
    pub fn apply_diff(&self, old: Option<&Datum>, diff: Datum) -> Result<Datum, String> {
        if self.max == Some(1) {
            return self.check(diff, false);
        }
        let old = old.cloned().unwrap_or_else(|| self.default_datum());
        let result = match (old.into_kind(), diff.into_kind()) {
            (DatumKind::Set(mut cur), DatumKind::Set(toggles)) => {
                for atom in toggles {
                    match cur.binary_search_by(|x| atom_cmp(x, &atom)) {
                        Ok(i) => {
                            cur.remove(i);
                        }
                        Err(i) => cur.insert(i, atom),
                    }
                }
                Datum::set(cur)
            }
            (DatumKind::Map(mut cur), DatumKind::Map(changes)) => {
                for (k, v) in changes {
                    match cur.binary_search_by(|x| atom_cmp(&x.0, &k)) {
                        Ok(i) if atom_cmp(&cur[i].1, &v) == Ordering::Equal => {
                            cur.remove(i);
                        }
                        Ok(i) => cur[i].1 = v,
                        Err(i) => cur.insert(i, (k, v)),
                    }
                }
                Datum::map(cur)
            }
            (_, DatumKind::Set(atoms)) => {
                let diff = Datum::set(atoms).to_wire();
                return Err(format!("diff {diff} does not fit the column"));
            }
            (_, DatumKind::Map(pairs)) => {
                let diff = Datum::map(pairs).to_wire();
                return Err(format!("diff {diff} does not fit the column"));
            }
        };
        // The result must be a valid value of the column.
        self.check(result, false)
    }
}

/// One column of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnSchema {
    /// Column name.
    pub name: String,
    /// Column type.
    pub ty: ColumnType,
    /// Not persisted by the server.
    pub ephemeral: bool,
    /// May be changed after insertion.
    pub mutable: bool,
}

/// One table: its columns (plus the implicit `_uuid`/`_version`, which are
/// never stored in a [`Row`]) and whether it is a root table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSchema {
    /// Table name.
    pub name: String,
    /// Columns by name.
    pub columns: BTreeMap<String, ColumnSchema>,
    /// Root table (rows are not garbage-collected).
    pub is_root: bool,
    /// Column sets whose values are unique.
    pub indexes: Vec<Vec<String>>,
}

impl TableSchema {
    /// The schema of `column`, or `None` for a column the table lacks.
    pub fn column(&self, column: &str) -> Option<&ColumnSchema> {
        self.columns.get(column)
    }

    /// Decodes a whole row in wire notation (`{"col": value, ...}`), every
    /// column typed by the schema. Errors name the table, row and column.
    pub fn decode_row(&self, uuid: &str, v: &Value) -> Result<Row> {
        let bad = |reason: String| DataError::BadRow {
            table: self.name.clone(),
            uuid: uuid.to_string(),
            reason,
        };
        let obj = v
            .as_object()
            .ok_or_else(|| bad(format!("row is not a JSON object: {v}")))?;
        let mut row = Row::default();
        for (name, value) in obj {
            if name == "_uuid" || name == "_version" {
                continue;
            }
            let col = self
                .column(name)
                .ok_or_else(|| bad(format!("unknown column {name:?}")))?;
            let d = col
                .ty
                .decode(value)
                .map_err(|e| bad(format!("column {name}: {e}")))?;
            if !col.ty.is_default(&d) {
                row.columns.insert(name.clone(), d);
            }
        }
        Ok(row)
    }
}

/// A database schema as returned by `get_schema` or read from `.ovsschema`.
#[derive(Clone, Debug, PartialEq)]
pub struct DatabaseSchema {
    /// Database name.
    pub name: String,
    /// Schema version.
    pub version: String,
    /// Tables by name.
    pub tables: BTreeMap<String, TableSchema>,
}

impl DatabaseSchema {
    /// Parses a schema document; every table and column type must be valid.
    pub fn from_json(v: &Value) -> Result<DatabaseSchema> {
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>")
            .to_string();
        let bad = |reason: String| DataError::Schema {
            schema: name.clone(),
            reason,
        };
        let version = v
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let tables_v = v
            .get("tables")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("no \"tables\" object".into()))?;
        let mut tables = BTreeMap::new();
        for (tname, t) in tables_v {
            let cols = t
                .get("columns")
                .and_then(Value::as_object)
                .ok_or_else(|| bad(format!("table {tname} has no columns object")))?;
            let mut columns = BTreeMap::new();
            for (cname, c) in cols {
                let ty = c
                    .get("type")
                    .ok_or_else(|| bad(format!("{tname}.{cname} has no type")))
                    .and_then(|t| {
                        ColumnType::parse(t).map_err(|e| bad(format!("{tname}.{cname}: {e}")))
                    })?;
                columns.insert(
                    cname.clone(),
                    ColumnSchema {
                        name: cname.clone(),
                        ty,
                        ephemeral: c.get("ephemeral").and_then(Value::as_bool).unwrap_or(false),
                        mutable: c.get("mutable").and_then(Value::as_bool).unwrap_or(true),
                    },
                );
            }
            let indexes = t
                .get("indexes")
                .and_then(Value::as_array)
                .map(|ix| {
                    ix.iter()
                        .filter_map(Value::as_array)
                        .map(|cols| {
                            cols.iter()
                                .filter_map(Value::as_str)
                                .map(String::from)
                                .collect()
                        })
                        .collect()
                })
                .unwrap_or_default();
            tables.insert(
                tname.clone(),
                TableSchema {
                    name: tname.clone(),
                    columns,
                    is_root: t.get("isRoot").and_then(Value::as_bool).unwrap_or(false),
                    indexes,
                },
            );
        }
        Ok(DatabaseSchema {
            name,
            version,
            tables,
        })
    }

    /// A schema without tables, standing in until the server's is known.
    pub fn empty(name: &str) -> DatabaseSchema {
        DatabaseSchema {
            name: name.to_string(),
            version: String::new(),
            tables: BTreeMap::new(),
        }
    }

    /// Reads and parses a `.ovsschema` file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<DatabaseSchema> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| DataError::Schema {
            schema: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let v: Value = serde_json::from_str(&text).map_err(|e| DataError::Schema {
            schema: path.display().to_string(),
            reason: e.to_string(),
        })?;
        DatabaseSchema::from_json(&v)
    }

    /// The schema of `table`, or `None` for a table the database lacks.
    pub fn table(&self, table: &str) -> Option<&TableSchema> {
        self.tables.get(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Uuid;
    use serde_json::json;

    fn nb() -> DatabaseSchema {
        DatabaseSchema::from_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schemas/ovn-nb.ovsschema"
        ))
        .unwrap()
    }

    #[test]
    fn fixture_schemas_parse_with_their_column_types() {
        let nb = nb();
        assert_eq!(nb.name, "OVN_Northbound");
        let lsp = nb.table("Logical_Switch_Port").unwrap();
        assert!(lsp.column("name").unwrap().ty.is_scalar());
        assert!(lsp.column("up").unwrap().ty.is_optional());
        assert!(lsp.column("external_ids").unwrap().ty.is_map());
        let dhcp = &lsp.column("dhcpv4_options").unwrap().ty.key;
        assert_eq!(dhcp.ref_table.as_deref(), Some("DHCP_Options"));
        assert!(!dhcp.ref_strong);
        for f in ["ovn-sb.ovsschema", "vswitch.ovsschema"] {
            let p = format!("{}/../../fixtures/schemas/{f}", env!("CARGO_MANIFEST_DIR"));
            assert!(!DatabaseSchema::from_file(&p).unwrap().tables.is_empty());
        }
    }

    #[test]
    fn one_element_set_reads_as_optional_scalar() {
        let nb = nb();
        let lsp = nb.table("Logical_Switch_Port").unwrap();
        let row = lsp
            .decode_row(
                "u",
                &json!({"up": ["set", [true]], "tag": 7, "enabled": ["set", []]}),
            )
            .unwrap();
        assert_eq!(row.bool("up"), Some(true));
        assert_eq!(row.int("tag"), Some(7));
        // An empty optional is the default and is not stored.
        assert_eq!(row.get("enabled"), None);
    }

    #[test]
    fn wrong_types_are_errors_naming_row_and_column() {
        let nb = nb();
        let lsp = nb.table("Logical_Switch_Port").unwrap();
        let err = lsp
            .decode_row("1234", &json!({"up": "yes"}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Logical_Switch_Port row 1234") && err.contains("column up"),
            "{err}"
        );
        let err = lsp.decode_row("1", &json!({"external_ids": ["set", ["a"]]}));
        assert!(err.is_err());
        let err = lsp
            .decode_row("1", &json!({"bogus": 1}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown column \"bogus\""), "{err}");
        let err = lsp.decode_row("1", &json!({"up": ["set", [true, false]]}));
        assert!(err.is_err(), "two elements in a max-1 column");
        let err = lsp.decode_row("1", &json!({"dhcpv4_options": "not-a-uuid"}));
        assert!(err.is_err());
    }

    #[test]
    fn integers_widen_to_reals() {
        let ty = ColumnType::parse(&json!("real")).unwrap();
        assert_eq!(
            ty.decode(&json!(3)).unwrap(),
            Datum::scalar(Atom::Real(3.0))
        );
        assert!(ColumnType::parse(&json!("integer"))
            .unwrap()
            .decode(&json!(3.5))
            .is_err());
    }

    #[test]
    fn set_diff_toggles_elements() {
        let ty =
            ColumnType::parse(&json!({"key": "string", "min": 0, "max": "unlimited"})).unwrap();
        let old = ty.decode(&json!(["set", ["a", "b"]])).unwrap();
        let diff = ty
            .check(Datum::from_wire(&json!(["set", ["b", "c"]])).unwrap(), true)
            .unwrap();
        assert_eq!(
            ty.apply_diff(Some(&old), diff).unwrap(),
            ty.decode(&json!(["set", ["a", "c"]])).unwrap()
        );
    }

    #[test]
    fn optional_diff_replaces_the_value() {
        let ty = ColumnType::parse(&json!({"key": "string", "min": 0, "max": 1})).unwrap();
        let old = ty.decode(&json!("x")).unwrap();
        let diff = ty
            .check(Datum::from_wire(&json!("y")).unwrap(), true)
            .unwrap();
        assert_eq!(
            ty.apply_diff(Some(&old), diff).unwrap(),
            ty.decode(&json!("y")).unwrap()
        );
        let cleared = ty.check(Datum::empty_set(), true).unwrap();
        assert_eq!(
            ty.apply_diff(Some(&old), cleared).unwrap(),
            Datum::empty_set()
        );
    }

    #[test]
    fn map_diff_removes_replaces_and_adds_keys() {
        let ty = ColumnType::parse(
            &json!({"key": "string", "value": "string", "min": 0, "max": "unlimited"}),
        )
        .unwrap();
        let old = ty
            .decode(&json!([
                "map",
                [["del", "1"], ["chg", "old"], ["keep", "k"]]
            ]))
            .unwrap();
        let diff = ty
            .check(
                Datum::from_wire(&json!([
                    "map",
                    [["del", "1"], ["chg", "new"], ["add", "a"]]
                ]))
                .unwrap(),
                true,
            )
            .unwrap();
        let new = ty.apply_diff(Some(&old), diff).unwrap();
        assert_eq!(
            new,
            ty.decode(&json!([
                "map",
                [["add", "a"], ["chg", "new"], ["keep", "k"]]
            ]))
            .unwrap()
        );
    }

    #[test]
    fn scalar_diff_replaces_the_value() {
        let ty = ColumnType::parse(&json!("uuid")).unwrap();
        let u = Uuid(7);
        let new = ty.apply_diff(None, Datum::scalar(Atom::Uuid(u))).unwrap();
        assert_eq!(new.as_scalar().and_then(Atom::as_uuid), Some(u));
    }
}
