//! `conformance scenario` over the SB-driver golden scenarios: each must pass,
//! except sb-tenant-host, which differs only by its listed deviations (the
//! IPv6 half upstream never wires).

use std::path::Path;
use std::process::Command;

#[test]
fn sb_scenarios_pass_and_sb_tenant_host_differs_only_by_its_listed_deviations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance/scenarios");
    let names = [
        "sb-gateway-and-tenant-subnet",
        "sb-sync-provider-vm",
        "sb-tenant-host",
        "sb-withdraw-provider-vm",
    ];
    let files: Vec<String> = names
        .iter()
        .map(|n| dir.join(format!("{n}.json")).display().to_string())
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .arg("scenario")
        .args(&files)
        .output()
        .expect("run the conformance binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        verdicts,
        [
            "PASS sb-gateway-and-tenant-subnet",
            "PASS sb-sync-provider-vm",
            "PASS sb-tenant-host, with 6 listed deviation(s)",
            "PASS sb-withdraw-provider-vm",
            "4 passed (1 with listed deviations), 0 failed",
        ],
        "{stdout}"
    );
}
