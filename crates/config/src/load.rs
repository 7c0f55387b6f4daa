//! Loads the effective configuration the way oslo.config does for the
//! upstream agent: config files and config dirs in command-line order, then
//! environment variables, then command-line options, layered with figment.
//!
//! Each source becomes one figment layer holding only canonical
//! `[section] option` keys: deprecated names are resolved inside the file
//! that uses them (the current name wins within a file, and a later file
//! wins over an earlier one whichever name it uses, as in oslo). Values stay
//! raw text until every layer is merged, so a value overridden later is
//! never validated, again as in oslo.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};

use crate::error::{ConfigError, InvalidValue, Warning, WarningKind};
use crate::options::{self, OptSpec, AGENT_SECTIONS, OPTIONS};
use crate::{fields, ini, subst, suggest, values, Config};

/// Upstream's oslo project name: default files are `bgp-agent.conf`.
pub const PROJECT: &str = "bgp-agent";
/// Upstream's program name: default files are also `ovn-bgp-agent.conf`.
pub const PROG: &str = "ovn-bgp-agent";

/// The environment prefix of this agent's overrides:
/// `OVN_BGP_AGENT_<SECTION>__<OPTION>`.
pub const ENV_PREFIX: &str = "OVN_BGP_AGENT_";
/// oslo.config's own environment prefix (`OS_<GROUP>__<OPTION>`), read with
/// lower priority than [`ENV_PREFIX`]. Unknown names under it are not
/// reported: every OpenStack service on the host shares it.
pub const OSLO_ENV_PREFIX: &str = "OS_";

/// One place configuration files come from, in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--config-file PATH`: must exist.
    File(PathBuf),
    /// `--config-dir PATH`: its `*.conf` files sorted by name; must exist.
    Dir(PathBuf),
    /// A default config dir found by [`default_sources`]: read like
    /// [`ConfigSource::Dir`], skipped when absent.
    DefaultDir(PathBuf),
}

/// oslo's default sources, used for what the command line does not give:
/// when there is no `--config-file`, the first existing `bgp-agent.conf` and
/// `ovn-bgp-agent.conf` in `~/.bgp-agent/`, `~/`, `/etc/bgp-agent/`, `/etc/`;
/// when there is no `--config-dir`, the first existing `bgp-agent.conf.d`
/// and `ovn-bgp-agent.conf.d` in the same places. `home` is `$HOME`;
/// `etc` is `/etc` outside tests.
pub fn default_sources(
    home: Option<&Path>,
    etc: &Path,
    files: bool,
    dirs: bool,
) -> Vec<ConfigSource> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(h) = home {
        roots.push(h.join(format!(".{PROJECT}")));
        roots.push(h.to_path_buf());
    }
    roots.push(etc.join(PROJECT));
    roots.push(etc.to_path_buf());
    let first = |name: String, want_dir: bool| {
        roots
            .iter()
            .map(|r| r.join(&name))
            .find(|p| if want_dir { p.is_dir() } else { p.exists() })
    };
    let mut out = Vec::new();
    if files {
        for base in [PROJECT, PROG] {
            out.extend(first(format!("{base}.conf"), false).map(ConfigSource::File));
        }
    }
    if dirs {
        for base in [PROJECT, PROG] {
            out.extend(first(format!("{base}.conf.d"), true).map(ConfigSource::DefaultDir));
        }
    }
    out
}

/// The result of a successful load.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The effective configuration: upstream's defaults, overridden by every source.
    pub config: Config,
    /// Deduplicated, in the order found. The caller logs them.
    pub warnings: Vec<Warning>,
    /// Every file read, in the order read.
    pub files: Vec<PathBuf>,
}

/// Builds a [`Loaded`] configuration from files, environment and
/// command-line overrides.
#[derive(Clone, Debug, Default)]
pub struct Loader {
    sources: Vec<ConfigSource>,
    env: Vec<(String, String)>,
    cli: Vec<(String, String, String)>,
}

impl Loader {
    /// A loader with no source: loading it gives upstream's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds sources, read in the order given (later ones win).
    pub fn sources(mut self, sources: impl IntoIterator<Item = ConfigSource>) -> Self {
        self.sources.extend(sources);
        self
    }

    /// The environment to take `OS_*` and `OVN_BGP_AGENT_*` overrides from
    /// (the binary passes the process environment; tests pass their own).
    pub fn env(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env.extend(vars);
        self
    }

    /// A command-line override (`--debug`, `--log-file`...): wins over
    /// files and environment, as in oslo. Takes any registered option, by
    /// its current or a deprecated name; `load` fails on an unknown one.
    /// `value` is raw text, converted and checked like a file's.
    pub fn cli_override(mut self, section: &str, option: &str, value: &str) -> Self {
        self.cli.push((section.into(), option.into(), value.into()));
        self
    }

    /// [`Loader::cli_override`] for each `section.option` (a bare name is
    /// `[DEFAULT]`) of a JSON object, as the golden scenarios write their
    /// configuration: strings as they are, booleans and numbers as text,
    /// arrays as comma-separated lists, `null` skipped. A nested object is
    /// no option value: the key is returned.
    pub fn json_overrides<'a>(
        mut self,
        options: impl IntoIterator<Item = (&'a String, &'a serde_json::Value)>,
    ) -> Result<Self, String> {
        use serde_json::Value as Json;
        for (key, value) in options {
            let (section, option) = key.split_once('.').unwrap_or(("DEFAULT", key));
            let text = match value {
                Json::Null => continue,
                Json::String(s) => s.clone(),
                Json::Bool(b) => b.to_string(),
                Json::Number(n) => n.to_string(),
                Json::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map_or(i.to_string(), String::from))
                    .collect::<Vec<_>>()
                    .join(","),
                Json::Object(_) => return Err(key.clone()),
            };
            self = self.cli_override(section, option, &text);
        }
        Ok(self)
    }

    /// Reads every source, merges, converts and checks. An unreadable file,
    /// a syntax error or any invalid effective value is an error; unknown
    /// or ignored options are warnings.
    pub fn load(&self) -> Result<Loaded, ConfigError> {
        let mut warnings = Vec::new();
        let mut files = Vec::new();
        let mut figment = Figment::new();

        for source in &self.sources {
            for path in expand(source)? {
                let layer = read_file(&path, &mut warnings)?;
                figment = figment.merge(layer);
                files.push(path);
            }
        }
        // Which variable set each option, per environment layer: an
        // invalid value's report names the variable, not just the prefix.
        let mut env_origins = BTreeMap::new();
        for (prefix, report) in [(OSLO_ENV_PREFIX, false), (ENV_PREFIX, true)] {
            let layer = env_layer(prefix, &self.env, report, &mut warnings);
            env_origins.insert(layer.name.clone(), layer.origins.clone());
            figment = figment.merge(layer);
        }
        let mut cli = Layer::new("command line".into());
        for (section, option, value) in &self.cli {
            match options::resolve(&options::normalize_section(section), option) {
                Some((spec, _)) => cli.set(spec, value.clone()),
                None => {
                    return Err(ConfigError::Invalid(vec![InvalidValue {
                        section: section.clone(),
                        option: option.clone(),
                        why: "no such option".into(),
                        value: value.clone(),
                        origin: Some("command line".into()),
                    }]))
                }
            }
        }
        figment = figment.merge(cli);

        let raw: BTreeMap<String, BTreeMap<String, String>> = figment
            .extract()
            .map_err(|e| ConfigError::Layering(e.to_string()))?;
        let origin = |section: &str, option: &str| {
            let layer = &figment.find_metadata(&format!("{section}.{option}"))?.name;
            let variable = env_origins
                .get(layer.as_ref())
                .and_then(|vars| vars.get(&(section.to_string(), option.to_string())));
            Some(match variable {
                Some(name) => format!("environment variable {name}"),
                None => layer.to_string(),
            })
        };
        let config = build(&raw, origin)?;
        warnings.extend(not_acted_on(&config, origin));

        let mut seen = BTreeSet::new();
        warnings.retain(|w| seen.insert(dedup_key(w)));
        Ok(Loaded {
            config,
            warnings,
            files,
        })
    }
}

/// One warning for each option the agent does not act on
/// ([`OptSpec::ignored`]) whose effective value is not its default, naming
/// where it was set and why it has no effect.
fn not_acted_on(config: &Config, origin: impl Fn(&str, &str) -> Option<String>) -> Vec<Warning> {
    OPTIONS
        .iter()
        .filter_map(|spec| {
            let why = spec.ignored?;
            let value = fields::get(config, spec);
            (value != spec.default_value()).then(|| Warning {
                origin: origin(spec.section, spec.name).unwrap_or_else(|| "configuration".into()),
                kind: WarningKind::NotActedOn {
                    section: spec.section.into(),
                    option: spec.name.into(),
                    value: value.map_or_else(String::new, |v| v.to_ini()),
                    why: why.into(),
                },
            })
        })
        .collect()
}

/// Ignored options warn once, whatever file sets them; other warnings once
/// per place.
fn dedup_key(w: &Warning) -> Warning {
    match &w.kind {
        WarningKind::Ignored { .. } => Warning {
            origin: String::new(),
            kind: w.kind.clone(),
        },
        _ => w.clone(),
    }
}

/// Converts and checks every option set in `raw` (canonical sections and
/// names) on top of upstream's defaults. Reports every invalid value, not
/// just the first.
pub fn build(
    raw: &BTreeMap<String, BTreeMap<String, String>>,
    origin: impl Fn(&str, &str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let mut config = Config::default();
    let mut invalid = Vec::new();
    let (substituted, failed) = subst::substitute_all(raw);
    for spec in OPTIONS {
        let Some(text) = raw.get(spec.section).and_then(|s| s.get(spec.name)) else {
            continue;
        };
        let bad = |why: String| InvalidValue {
            section: spec.section.into(),
            option: spec.name.into(),
            why,
            value: text.clone(),
            origin: origin(spec.section, spec.name),
        };
        if let Some((_, why)) = failed.iter().find(|(f, _)| std::ptr::eq(*f, spec)) {
            invalid.push(bad(why.clone()));
            continue;
        }
        let text = &substituted[spec.section][spec.name];
        match values::parse(spec.kind, text) {
            Ok(v) => {
                if let Err(why) = fields::set(&mut config, spec, v) {
                    invalid.push(bad(why));
                }
            }
            Err(why) => invalid.push(bad(why)),
        }
    }
    if invalid.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError::Invalid(invalid))
    }
}

/// The files a source stands for, in reading order.
fn expand(source: &ConfigSource) -> Result<Vec<PathBuf>, ConfigError> {
    match source {
        ConfigSource::File(p) => Ok(vec![p.clone()]),
        ConfigSource::DefaultDir(p) if !p.is_dir() => Ok(Vec::new()),
        ConfigSource::Dir(p) | ConfigSource::DefaultDir(p) => {
            let entries = std::fs::read_dir(p).map_err(|e| ConfigError::Dir {
                path: p.clone(),
                why: e.to_string(),
            })?;
            let mut names: Vec<String> = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| ConfigError::Dir {
                    path: p.clone(),
                    why: e.to_string(),
                })?;
                // Python's glob('*.conf'): hidden files never match.
                if let Some(name) = entry.file_name().to_str() {
                    if name.ends_with(".conf") && !name.starts_with('.') {
                        names.push(name.to_string());
                    }
                }
            }
            names.sort();
            Ok(names.into_iter().map(|n| p.join(n)).collect())
        }
    }
}

/// One figment layer: canonical section → option → raw text.
struct Layer {
    name: String,
    values: BTreeMap<String, BTreeMap<String, String>>,
    /// For an environment layer, the variable that set each
    /// `(section, option)`.
    origins: BTreeMap<(String, String), String>,
}

impl Layer {
    fn new(name: String) -> Self {
        Layer {
            name,
            values: BTreeMap::new(),
            origins: BTreeMap::new(),
        }
    }

    fn set(&mut self, spec: &OptSpec, value: String) {
        self.values
            .entry(spec.section.to_string())
            .or_default()
            .insert(spec.name.to_string(), value);
    }

    fn is_set(&self, spec: &OptSpec) -> bool {
        self.values
            .get(spec.section)
            .is_some_and(|s| s.contains_key(spec.name))
    }
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        Metadata::named(self.name.clone())
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let mut dict = Dict::new();
        for (section, opts) in &self.values {
            let inner: Dict = opts
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect();
            dict.insert(section.clone(), Value::from(inner));
        }
        Ok(Profile::Default.collect(dict))
    }
}

/// Reads one INI file into a layer of canonical options, reporting what it
/// does not know.
fn read_file(path: &Path, warnings: &mut Vec<Warning>) -> Result<Layer, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ConfigError::FileNotFound(path.to_path_buf()),
        _ => ConfigError::Read {
            path: path.to_path_buf(),
            source: e,
        },
    })?;
    let parsed = ini::parse(&text).map_err(|e| ConfigError::Syntax {
        path: path.to_path_buf(),
        source: e,
    })?;
    let mut layer = Layer::new(path.display().to_string());
    let at = |line: usize| format!("{}:{line}", path.display());
    // This file's warnings with their lines: the sections and options come
    // sorted by name, the operator reads the file top to bottom.
    let mut found: Vec<(usize, Warning)> = Vec::new();

    // Current names first, so that within one file they win over the
    // deprecated names whatever order the file has them in.
    let mut deprecated_uses = Vec::new();
    for (section, opts) in &parsed.sections {
        let agent_section = AGENT_SECTIONS.contains(&section.as_str());
        let oslo_options = options::oslo_section_options(section);
        if !agent_section && oslo_options.is_none() {
            let line = parsed.section_lines.get(section).copied().unwrap_or(0);
            found.push((
                line,
                Warning {
                    origin: at(line),
                    kind: WarningKind::UnknownSection {
                        section: section.clone(),
                        suggestion: suggest::section(section),
                    },
                },
            ));
            continue;
        }
        for (option, entry) in opts {
            let origin = at(entry.line);
            match options::resolve(section, option) {
                Some((spec, false)) => layer.set(spec, entry.value.clone()),
                Some((spec, true)) => deprecated_uses.push((spec, section, option, entry)),
                None => {
                    let kind = if section == "DEFAULT"
                        && options::ignored_default_option(option).is_some()
                    {
                        WarningKind::Ignored {
                            section: section.clone(),
                            option: option.clone(),
                        }
                    } else if oslo_options.is_some_and(|known| known.contains(&option.as_str())) {
                        continue;
                    } else {
                        WarningKind::UnknownOption {
                            section: section.clone(),
                            option: option.clone(),
                            suggestion: suggest::option(section, option),
                        }
                    };
                    found.push((entry.line, Warning { origin, kind }));
                }
            }
        }
    }
    for (spec, section, option, entry) in deprecated_uses {
        found.push((
            entry.line,
            Warning {
                origin: at(entry.line),
                kind: WarningKind::Deprecated {
                    section: section.clone(),
                    option: option.clone(),
                    use_section: spec.section.into(),
                    use_option: spec.name.into(),
                },
            },
        ));
        if !layer.is_set(spec) {
            layer.set(spec, entry.value.clone());
        }
    }
    found.sort_by_key(|(line, _)| *line);
    warnings.extend(found.into_iter().map(|(_, w)| w));
    Ok(layer)
}

/// The layer of `<prefix><SECTION>__<OPTION>` environment variables.
/// Section and option match case-insensitively (environment names are
/// upper case; `bgp_AS` is `..._BGP_AS`).
fn env_layer(
    prefix: &str,
    env: &[(String, String)],
    report: bool,
    warnings: &mut Vec<Warning>,
) -> Layer {
    let mut layer = Layer::new(format!("environment {prefix}*"));
    for (name, value) in env {
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let unknown = |warnings: &mut Vec<Warning>, section: &str, option: &str| {
            if report {
                warnings.push(Warning {
                    origin: name.clone(),
                    kind: WarningKind::UnknownOption {
                        section: section.into(),
                        option: option.into(),
                        suggestion: suggest::option(section, option),
                    },
                });
            }
        };
        let Some((section, option)) = rest.split_once("__") else {
            if report {
                warnings.push(Warning {
                    origin: name.clone(),
                    kind: WarningKind::MalformedEnv,
                });
            }
            continue;
        };
        let section = if section.eq_ignore_ascii_case("DEFAULT") {
            "DEFAULT".to_string()
        } else {
            section.to_lowercase()
        };
        let hit = OPTIONS.iter().find_map(|spec| {
            if spec.section == section && spec.name.eq_ignore_ascii_case(option) {
                Some((spec, None))
            } else {
                spec.deprecated
                    .iter()
                    .find(|(s, n)| *s == section && n.eq_ignore_ascii_case(option))
                    .map(|&(s, n)| (spec, Some((s, n))))
            }
        });
        match hit {
            Some((spec, old)) => {
                if let (Some((s, n)), true) = (old, report) {
                    warnings.push(Warning {
                        origin: name.clone(),
                        kind: WarningKind::Deprecated {
                            section: s.into(),
                            option: n.into(),
                            use_section: spec.section.into(),
                            use_option: spec.name.into(),
                        },
                    });
                }
                // The current name wins over a deprecated one, as in a file.
                if old.is_none() || !layer.is_set(spec) {
                    layer.set(spec, value.clone());
                    layer
                        .origins
                        .insert((spec.section.into(), spec.name.into()), name.clone());
                }
            }
            None if section == "DEFAULT"
                && options::ignored_default_option(&option.to_lowercase()).is_some() =>
            {
                if report {
                    warnings.push(Warning {
                        origin: name.clone(),
                        kind: WarningKind::Ignored {
                            section,
                            option: option.to_lowercase(),
                        },
                    });
                }
            }
            None => unknown(warnings, &section, option),
        }
    }
    layer
}
