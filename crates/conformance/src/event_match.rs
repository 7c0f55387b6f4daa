//! `conformance event-match FILE...`: replays upstream's recorded
//! `match_fn` calls against the rewrite's predicates.
//!
//! Each case (format: the file's `CASES_NOTE`) is rebuilt into real
//! predicate inputs: rows keep identity through `__id__`/`__ref__` (they
//! become UUID references resolved by the agent view), columns not listed do
//! not exist ([`RowView::listed`]), a bare mock becomes [`RowView::opaque`],
//! `mock.ANY` and `mock.Mock` as `old` have no columns, a bare-mock or
//! `None` event equals no kind and `mock.ANY` every kind. The agent view
//! answers from the recorded reads and fails the case when the predicate
//! reads something upstream's did not, or queries with other arguments.
//!
//! Cases listed in `deviations-event-match.json` (next to the case file)
//! are quirks the rewrite drops on purpose: they must disagree with the
//! recording and are reported as skipped; one that agrees is a failure (the
//! list is stale).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{anyhow, bail, Context};
use obgp_events::{filter, AgentView, Event, EventKind, RowView};
use obgp_ovsdb_data::datum::{Atom, Datum, Row, Uuid};
use serde_json::Value;

use crate::Summary;

/// Runs every case of every file; prints one line per failure.
pub fn run(files: &[String]) -> anyhow::Result<Summary> {
    if files.is_empty() {
        bail!("usage: conformance event-match FILE...");
    }
    let mut summary = Summary::default();
    for file in files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
        let doc: Value = serde_json::from_str(&text).with_context(|| format!("parsing {file}"))?;
        let cases = doc
            .get("cases")
            .and_then(Value::as_array)
            .ok_or_else(|| anyhow!("{file}: no \"cases\" array"))?;
        let deviations = load_deviations(Path::new(file))?;
        for case in cases {
            let id = CaseId::of(case);
            let deviation = deviations.get(&id);
            match check(case) {
                Ok(()) if deviation.is_some() => {
                    summary.failed += 1;
                    println!(
                        "FAIL {id}: listed as deviation {} but agrees with upstream (stale list)",
                        deviation.unwrap_or(&String::new())
                    );
                }
                Ok(()) => summary.passed += 1,
                Err(_) if deviation.is_some() => summary.skipped += 1,
                Err(why) => {
                    summary.failed += 1;
                    println!("FAIL {id}: {why}");
                }
            }
        }
    }
    Ok(summary)
}

/// A case's identity: upstream's test id and the call's index in it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct CaseId {
    test: String,
    call_index: u64,
}

impl CaseId {
    fn of(case: &Value) -> CaseId {
        CaseId {
            test: case["test"].as_str().unwrap_or("?").to_string(),
            call_index: case["call_index"].as_u64().unwrap_or(0),
        }
    }
}

impl std::fmt::Display for CaseId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [call_index {}]", self.test, self.call_index)
    }
}

/// The cases each deviation covers, mapped to the deviation's id.
fn load_deviations(case_file: &Path) -> anyhow::Result<HashMap<CaseId, String>> {
    let path = case_file
        .parent()
        .unwrap_or(Path::new("."))
        .join("deviations-event-match.json");
    let mut out = HashMap::new();
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(out);
    };
    let doc: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    for dev in doc["deviations"].as_array().into_iter().flatten() {
        let name = dev["id"].as_str().unwrap_or("?").to_string();
        for case in dev["cases"].as_array().into_iter().flatten() {
            out.insert(CaseId::of(case), name.clone());
        }
    }
    Ok(out)
}

/// Replays one case: `Ok` when the rewrite decides as upstream did.
fn check(case: &Value) -> Result<(), String> {
    let module = case["module"].as_str().unwrap_or("");
    let class = case["event_class"].as_str().unwrap_or("");
    let filter =
        filter(module, class).ok_or_else(|| format!("no predicate for {module}.{class}"))?;
    let mut store = Store::default();
    let event = store
        .event(&case["event"])
        .map_err(|e| format!("event: {e:#}"))?;
    let row = store
        .object(&case["row"])
        .map_err(|e| format!("row: {e:#}"))?;
    let old = store
        .object(&case["old"])
        .map_err(|e| format!("old: {e:#}"))?;
    let lsp_calls = lsp_calls(&case["agent"], &mut store).map_err(|e| format!("agent: {e:#}"))?;
    let agent = Recorded::new(&case["agent"], &store, lsp_calls);
    let outcome = (filter.predicate)(event, store.view(row), store.view(old), &agent);
    let problems = agent.problems.into_inner();
    if !problems.is_empty() {
        return Err(format!(
            "{class}: agent reads differ from upstream's: {}",
            problems.join("; ")
        ));
    }
    match (&case["error"], outcome) {
        (Value::String(err), Err(raised)) => {
            let expected = err.split(':').next().unwrap_or("");
            if expected == raised.python_type() {
                Ok(())
            } else {
                Err(format!(
                    "{class}: upstream raised {err}, rewrite raised {raised}"
                ))
            }
        }
        (Value::String(err), Ok(m)) => Err(format!(
            "{class}: upstream raised {err}, rewrite returned {m}"
        )),
        (_, Err(raised)) => Err(format!(
            "{class}: upstream returned {}, rewrite raised {raised}",
            case["matches"]
        )),
        (_, Ok(m)) => match case["matches"].as_bool() {
            Some(expected) if expected == m => Ok(()),
            _ => Err(format!(
                "{class}: expected matches={}, got {m}",
                case["matches"]
            )),
        },
    }
}

/// What a decoded object stands for.
#[derive(Clone, Copy, Debug)]
enum Obj {
    /// Python `None`.
    Null,
    /// A stored row or mock, by identity.
    Stored(Uuid),
    /// `mock.ANY` or the class `mock.Mock`: no attributes.
    NoAttributes,
}

#[derive(Debug)]
enum Stored {
    /// A `create_row` row: only its listed columns exist.
    Row(Row),
    /// A bare mock.
    Opaque,
    /// A configured mock: its recorded attributes, every other one opaque.
    Mocked(Row),
}

/// The objects of one case, keyed by identity.
#[derive(Default)]
struct Store {
    objects: BTreeMap<Uuid, Stored>,
    ids: HashMap<u64, Uuid>,
    next: u128,
}

impl Store {
    fn identity(&mut self, v: &Value) -> Uuid {
        self.next += 1;
        let uuid = Uuid(0xe0e0_0000_0000_4000_8000_0000_0000_0000 | self.next);
        if let Some(id) = v.get("__id__").and_then(Value::as_u64) {
            self.ids.insert(id, uuid);
        }
        uuid
    }

    fn event(&mut self, v: &Value) -> anyhow::Result<Event> {
        Ok(match v {
            Value::String(s) => match s.as_str() {
                "create" => Event::Is(EventKind::Create),
                "update" => Event::Is(EventKind::Update),
                "delete" => Event::Is(EventKind::Delete),
                _ => Event::Neither,
            },
            Value::Object(o) if o.contains_key("__any__") => Event::Any,
            Value::Null => Event::Neither,
            Value::Object(o) if o.contains_key("__mock__") => {
                self.object(v)?;
                Event::Neither
            }
            other => bail!("unsupported event {other}"),
        })
    }

    /// Decodes `row`, `old`, a row in a column, or a mocked query's return.
    fn object(&mut self, v: &Value) -> anyhow::Result<Obj> {
        let Value::Object(o) = v else {
            return match v {
                Value::Null => Ok(Obj::Null),
                other => bail!("unsupported object {other}"),
            };
        };
        if let Some(id) = o.get("__ref__").and_then(Value::as_u64) {
            return self
                .ids
                .get(&id)
                .map(|u| Obj::Stored(*u))
                .ok_or_else(|| anyhow!("__ref__ {id} before its __id__"));
        }
        if o.contains_key("__any__") || o.contains_key("__mock_class__") {
            return Ok(Obj::NoAttributes);
        }
        if let Some(cols) = o.get("__row__") {
            let uuid = self.identity(v);
            let row = self.row(cols)?;
            self.objects.insert(uuid, Stored::Row(row));
            return Ok(Obj::Stored(uuid));
        }
        if let Some(mock) = o.get("__mock__") {
            let uuid = self.identity(v);
            let stored = if mock["bare"].as_bool() == Some(true) {
                Stored::Opaque
            } else {
                Stored::Mocked(self.row(&mock["reads"])?)
            };
            self.objects.insert(uuid, stored);
            return Ok(Obj::Stored(uuid));
        }
        bail!("unsupported object {v}")
    }

    fn row(&mut self, cols: &Value) -> anyhow::Result<Row> {
        let mut row = Row::default();
        let Some(cols) = cols.as_object() else {
            return Ok(row);
        };
        for (name, value) in cols {
            // create_row's Python-side uuid: the predicates only log it.
            if name == "uuid" {
                continue;
            }
            let datum = self
                .datum(value)
                .with_context(|| format!("column {name}"))?;
            row.columns.insert(name.clone(), datum);
        }
        Ok(row)
    }

    fn datum(&mut self, v: &Value) -> anyhow::Result<Datum> {
        Ok(match v {
            // Python's '' is falsy and has no [0], like an empty list.
            Value::String(s) if s.is_empty() => Datum::empty_set(),
            Value::Null => Datum::empty_set(),
            Value::Array(items) => Datum::set(
                items
                    .iter()
                    .map(|i| self.atom(i))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(o)
                if o.contains_key("__row__")
                    || o.contains_key("__ref__")
                    || o.contains_key("__mock__")
                    || o.contains_key("__uuid__") =>
            {
                Datum::scalar(self.atom(v)?)
            }
            Value::Object(o) => Datum::map(
                o.iter()
                    .map(|(k, x)| Ok((Atom::String(k.into()), self.atom(x)?)))
                    .collect::<anyhow::Result<_>>()?,
            ),
            other => Datum::scalar(self.atom(other)?),
        })
    }

    fn atom(&mut self, v: &Value) -> anyhow::Result<Atom> {
        Ok(match v {
            Value::String(s) => Atom::String(s.into()),
            Value::Bool(b) => Atom::Boolean(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Atom::Integer(i),
                None => Atom::Real(n.as_f64().ok_or_else(|| anyhow!("bad number {n}"))?),
            },
            Value::Object(o) if o.contains_key("__uuid__") => {
                Atom::String(o["__uuid__"].as_str().unwrap_or("").into())
            }
            Value::Object(_) => match self.object(v)? {
                Obj::Stored(u) => Atom::Uuid(u),
                other => bail!("unsupported element {other:?}"),
            },
            other => bail!("unsupported atom {other}"),
        })
    }

    fn view(&self, obj: Obj) -> RowView<'_> {
        match obj {
            Obj::Null | Obj::NoAttributes => RowView::none(),
            Obj::Stored(u) => self.stored_view(u).unwrap_or_else(RowView::none),
        }
    }

    fn stored_view(&self, uuid: Uuid) -> Option<RowView<'_>> {
        Some(match self.objects.get(&uuid)? {
            Stored::Row(r) => RowView::listed(r),
            Stored::Opaque => RowView::opaque(),
            Stored::Mocked(r) => RowView::mocked(r),
        })
    }
}

/// One recorded mocked query: its arguments and what it returned.
struct Call {
    args: Vec<Value>,
    returned: Value,
}

/// The agent stub: answers from the recorded reads and notes every read
/// upstream's predicate did not make.
struct Recorded<'s> {
    attrs: serde_json::Map<String, Value>,
    store: &'s Store,
    /// `nb_idl.lsp_get(arg).execute()` calls: argument and returned object.
    lsp_calls: Vec<(Value, Obj)>,
    used: RefCell<HashMap<&'static str, usize>>,
    problems: RefCell<Vec<String>>,
}

/// Decodes the recorded `nb_idl.lsp_get(arg).execute()` calls: argument and
/// returned object (a falsy mock counts as `None`).
fn lsp_calls(agent: &Value, store: &mut Store) -> anyhow::Result<Vec<(Value, Obj)>> {
    let mut out = Vec::new();
    let calls = agent
        .get("nb_idl")
        .map(|m| &m["__mock__"]["reads"]["lsp_get"]["__mock__"]["calls"]);
    for call in calls.and_then(Value::as_array).into_iter().flatten() {
        let arg = call["args"].get(0).cloned().unwrap_or(Value::Null);
        let executed =
            &call["return"]["__mock__"]["reads"]["execute"]["__mock__"]["calls"][0]["return"];
        let falsy = executed["__mock__"]["ops"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|op| op["op"] == "bool" && op["result"] == false);
        let obj = if falsy {
            Obj::Null
        } else {
            store.object(executed)?
        };
        out.push((arg, obj));
    }
    Ok(out)
}

impl<'s> Recorded<'s> {
    fn new(agent: &Value, store: &'s Store, lsp_calls: Vec<(Value, Obj)>) -> Recorded<'s> {
        Recorded {
            attrs: agent.as_object().cloned().unwrap_or_default(),
            store,
            lsp_calls,
            used: RefCell::default(),
            problems: RefCell::default(),
        }
    }

    fn problem(&self, p: String) {
        self.problems.borrow_mut().push(p);
    }

    fn attr(&self, name: &'static str) -> Option<&Value> {
        let v = self.attrs.get(name);
        if v.is_none() {
            self.problem(format!("read agent.{name}, which upstream did not read"));
        }
        v
    }

    fn text(&self, name: &'static str) -> &str {
        self.attr(name)
            .and_then(Value::as_str)
            .unwrap_or("\u{0}unrecorded")
    }

    fn contains(&self, name: &'static str, key: Option<&str>) -> bool {
        match (self.attr(name), key) {
            (Some(Value::Object(m)), Some(k)) => m.contains_key(k),
            (Some(Value::Array(l)), Some(k)) => l.iter().any(|x| x.as_str() == Some(k)),
            _ => false,
        }
    }

    /// The next recorded call of mocked method `name`, checked against `args`.
    fn call(&self, name: &'static str, args: Vec<Value>) -> Option<Call> {
        let calls = self.attr(name)?["__mock__"]["calls"].as_array()?;
        let n = {
            let mut used = self.used.borrow_mut();
            let n = used.entry(name).or_default();
            *n += 1;
            *n - 1
        };
        let Some(rec) = calls.get(n) else {
            self.problem(format!("called agent.{name} more often than upstream"));
            return None;
        };
        let rec = Call {
            args: rec["args"].as_array().cloned().unwrap_or_default(),
            returned: rec["return"].clone(),
        };
        if !same_args(&rec.args, &args) {
            self.problem(format!(
                "agent.{name}{args:?}, upstream called it with {:?}",
                rec.args
            ));
        }
        Some(rec)
    }
}

/// Arguments are equal; an IP list of one equals that IP as a string
/// (upstream's `is_ip_exposed` accepts both).
fn same_args(recorded: &[Value], ours: &[Value]) -> bool {
    recorded.len() == ours.len()
        && recorded.iter().zip(ours).all(|(r, o)| match (r, o) {
            (Value::String(s), Value::Array(l)) => l.len() == 1 && l[0].as_str() == Some(s),
            _ => r == o,
        })
}

fn opt(s: Option<&str>) -> Value {
    s.map_or(Value::Null, Value::from)
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

impl AgentView for Recorded<'_> {
    fn chassis(&self) -> &str {
        self.text("chassis")
    }
    fn chassis_id(&self) -> &str {
        self.text("chassis_id")
    }
    fn has_local_cr_lrps(&self) -> bool {
        self.attr("ovn_local_cr_lrps").is_some_and(truthy)
    }
    fn is_local_cr_lrp(&self, router: Option<&str>) -> bool {
        self.contains("ovn_local_cr_lrps", router)
    }
    fn is_local_lrp_network(&self, logical_switch: Option<&str>) -> bool {
        self.contains("ovn_local_lrps", logical_switch)
    }
    fn is_ip_exposed(&self, logical_switch: Option<&str>, ips: &[&str]) -> bool {
        let ips = Value::from(ips.iter().map(|s| Value::from(*s)).collect::<Vec<_>>());
        self.call("is_ip_exposed", vec![opt(logical_switch), ips])
            .is_some_and(|c| truthy(&c.returned))
    }
    fn is_ls_provider(&self, logical_switch: Option<&str>) -> bool {
        self.call("is_ls_provider", vec![opt(logical_switch)])
            .is_some_and(|c| truthy(&c.returned))
    }
    fn distributed(&self) -> bool {
        self.attr("distributed").is_some_and(truthy)
    }
    fn is_provider_ovn_lb(&self, name: Option<&str>) -> bool {
        match (self.attr("provider_ovn_lbs"), name) {
            (Some(Value::Object(m)), Some(n)) => m.get(n).is_some_and(truthy),
            _ => false,
        }
    }
    fn lsp(&self, name_or_uuid: &str) -> Option<RowView<'_>> {
        let n = {
            let mut used = self.used.borrow_mut();
            let n = used.entry("nb_idl.lsp_get").or_default();
            *n += 1;
            *n - 1
        };
        let Some((arg, obj)) = self.lsp_calls.get(n) else {
            self.problem(format!(
                "agent.nb_idl.lsp_get({name_or_uuid:?}), which upstream did not call"
            ));
            return None;
        };
        if arg.as_str() != Some(name_or_uuid) {
            self.problem(format!(
                "agent.nb_idl.lsp_get({name_or_uuid:?}), upstream asked for {arg}"
            ));
        }
        match obj {
            Obj::Null => None,
            other => Some(self.store.view(*other)),
        }
    }
    fn row(&self, uuid: Uuid) -> Option<RowView<'_>> {
        self.store.stored_view(uuid)
    }
}
