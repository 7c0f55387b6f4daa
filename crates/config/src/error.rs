//! What can go wrong loading the configuration, and the warnings that do
//! not stop the agent.

use std::fmt;
use std::path::PathBuf;

use crate::ini::IniError;

/// One option whose effective value the agent refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidValue {
    pub section: String,
    pub option: String,
    /// Why the value is refused ("must be one of ...").
    pub why: String,
    /// The value as written.
    pub value: String,
    /// Where the effective value came from (a file, an environment
    /// variable, the command line), when known.
    pub origin: Option<String>,
}

impl fmt::Display for InvalidValue {
    /// One line whatever the value holds: control characters (a newline in
    /// an environment override, say) are shown escaped, so a bad value
    /// cannot forge a second line of the report.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}] {}: {} ({})",
            self.section,
            self.option,
            self.why,
            escape_controls(&self.value)
        )
    }
}

/// `s` with each control character written as its Rust escape (`\n`,
/// `\u{1b}`); everything else as it is.
fn escape_controls(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A configuration the agent cannot start with. Every variant is an
/// operator's mistake: the binary exits 2 on any of them.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {}: not found", .0.display())]
    FileNotFound(PathBuf),
    #[error("config file {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config dir {}: {why}", .path.display())]
    Dir { path: PathBuf, why: String },
    #[error("config file {}: {source}", .path.display())]
    Syntax { path: PathBuf, source: IniError },
    /// One or more invalid values; Display gives one `[section] option: why (value)` per line.
    #[error("{}", .0.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<InvalidValue>),
    /// figment could not merge the layers (not expected: every layer is a
    /// two-level map of strings).
    #[error("merging configuration layers: {0}")]
    Layering(String),
}

/// Something in the configuration the agent does not act on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    /// Where it was found: `path:line`, or the environment variable's name.
    pub origin: String,
    pub kind: WarningKind,
}

/// What a [`Warning`] is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum WarningKind {
    /// A section neither the agent nor an oslo library it uses knows;
    /// `suggestion` is the known section it is closest to, if any.
    UnknownSection {
        section: String,
        suggestion: Option<String>,
    },
    /// An option its section does not have; `suggestion` is the
    /// registered name it is closest to, if any (`bgp_AS`, or
    /// `[DEFAULT] bgp_AS` when it is another section's).
    UnknownOption {
        section: String,
        option: String,
        suggestion: Option<String>,
    },
    /// A deprecated name or group that still works.
    Deprecated {
        section: String,
        option: String,
        use_section: String,
        use_option: String,
    },
    /// An oslo option upstream acts on and this agent does not.
    Ignored { section: String, option: String },
    /// An option of the registry set to something but its default, which
    /// the agent accepts and does not act on ([`crate::options::OptSpec::ignored`]).
    NotActedOn {
        section: String,
        option: String,
        value: String,
        why: String,
    },
    /// An `OVN_BGP_AGENT_*` variable not of the form `<SECTION>__<OPTION>`.
    MalformedEnv,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            WarningKind::UnknownSection {
                section,
                suggestion,
            } => {
                write!(f, "{}: unknown section [{section}], ignored", self.origin)?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean [{s}]?"),
                    None => Ok(()),
                }
            }
            WarningKind::UnknownOption {
                section,
                option,
                suggestion,
            } => {
                write!(
                    f,
                    "{}: unknown option [{section}] {option}, ignored",
                    self.origin
                )?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean {s}?"),
                    None => Ok(()),
                }
            }
            WarningKind::Deprecated {
                section,
                option,
                use_section,
                use_option,
            } => write!(
                f,
                "{}: [{section}] {option} is deprecated, use [{use_section}] {use_option}",
                self.origin
            ),
            WarningKind::MalformedEnv => write!(
                f,
                "{}: not of the form OVN_BGP_AGENT_<SECTION>__<OPTION>, ignored",
                self.origin
            ),
            WarningKind::Ignored { section, option } => write!(
                f,
                "{}: [{section}] {option} is set but ignored by this agent",
                self.origin
            ),
            WarningKind::NotActedOn {
                section,
                option,
                value,
                why,
            } => write!(
                f,
                "{}: [{section}] {option} = {} is ignored by this agent: {why}",
                self.origin,
                escape_controls(value)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_value_is_reported_on_one_line_with_controls_escaped() {
        let v = InvalidValue {
            section: "DEFAULT".into(),
            option: "bgp_nic".into(),
            why: "must be a valid interface name".into(),
            value: "bgp\n[DEFAULT] bgp_AS: fine (64999)\u{1b}[2Jé".into(),
            origin: None,
        };
        let text = v.to_string();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.ends_with("(bgp\\n[DEFAULT] bgp_AS: fine (64999)\\u{1b}[2Jé)"),
            "{text}"
        );
    }
}
