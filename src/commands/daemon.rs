//! The daemon (no subcommand): the reconcile loop until SIGTERM or SIGINT.

use std::process::ExitCode;

use obgp_config::Config;
use tokio_util::sync::CancellationToken;

use crate::cli::NodeArgs;

/// Runs the agent until stopped. SIGTERM/SIGINT stop it after the op in
/// flight and exit 0, leaving routes in place. Routing-table exhaustion is
/// the one error that stops it (exit 1).
pub fn run(config: &Config, node: &NodeArgs) -> anyhow::Result<ExitCode> {
    let d = &config.default;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        driver = d.driver.as_str(),
        exposing_method = d.exposing_method.as_str(),
        // Some(2): glibc capped by the agent (ADR 0012); None: the
        // environment's MALLOC_ARENA_MAX or glibc's default.
        malloc_arena_cap = ?obgp_controller::ops::arena_cap(),
        "ovn-bgp-agent starting"
    );
    let opts = super::run_options(config, node);
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        let shutdown = CancellationToken::new();
        let signals = shutdown.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
                signal(SignalKind::hangup()),
            ) else {
                tracing::error!("cannot install signal handlers");
                return;
            };
            tracing::debug!("signal handlers installed");
            loop {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM: stopping after the op in flight"),
                    _ = int.recv() => tracing::info!("SIGINT: stopping after the op in flight"),
                    // oslo reloads on SIGHUP; until reload exists, a HUP (e.g. from
                    // a log rotation script) must not kill the agent.
                    _ = hup.recv() => {
                        tracing::warn!("SIGHUP: configuration reload is not supported, restart to apply changes");
                        continue;
                    }
                }
                break;
            }
            signals.cancel();
        });
        obgp_controller::run(config.clone(), opts, shutdown).await
    });
    match result {
        Ok(()) => {
            tracing::info!("ovn-bgp-agent stopped");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // Logged (not only printed) so it lands where the operator's logs go.
            tracing::error!("ovn-bgp-agent cannot run: {e}");
            // A configuration that cannot work here is invalid configuration.
            let code = if e.is_config_error() {
                crate::EXIT_INVALID
            } else {
                crate::EXIT_FAILURE
            };
            Ok(ExitCode::from(code))
        }
    }
}
