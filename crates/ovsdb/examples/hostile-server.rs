//! Measurement: the peak RSS of a client with the agent's session limits
//! (`SessionConfig::default()`, what the controller uses) against a hostile
//! OVSDB server, and against a legitimate 100k-port update decoded while it
//! arrives.
//!
//! `hostile-server` runs every case in turn: this process plays the server
//! on a unix socket (the hostile bytes are generated as they are written,
//! so a 1 GiB message costs the server nothing) and runs itself as
//! `hostile-server measure CASE SOCKET`, a fresh process whose VmHWM
//! (`/proc/self/status`) is the client's alone. The client monitors what the
//! NB driver monitors; each hostile connection answers the monitor request,
//! then sends its case; the client must drop it and resync from the next,
//! well-behaved connection. One line per case: peak RSS, time, and the error
//! the session was dropped with. `hostile-server CASE...` runs only those.

#[path = "support/proc_status.rs"]
mod proc_status;
use proc_status::status_kib;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use obgp_ovsdb::framing::JsonFramer;
use obgp_ovsdb::{Client, ClientConfig, Remote};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::codec::Decoder;

/// The cases, in the order they run.
const CASES: &[&str] = &[
    "string-1g",
    "unterminated-200m",
    "nested-100m",
    "held-whole-1g",
    "streamed-1g",
    "streamed-ints-1g",
    "legit-update-100k",
];

/// The envelope of an update2 of Logical_Switch_Port rows, up to the first
/// row.
const UPDATE_HEAD: &[u8] =
    br#"{"id":null,"method":"update2","params":["obgp-db",{"Logical_Switch_Port":{"#;

/// One Logical_Switch_Port insert shaped like a Neutron VM port.
fn port_row(i: usize) -> String {
    format!(
        r#""{i:08x}-3333-4333-8333-333333333333":{{"insert":{{"name":"{i:08x}-port","type":"","addresses":"fa:16:3e:{:02x}:{:02x}:{:02x} 10.{}.{}.{}","up":true,"external_ids":["map",[["neutron:cidrs","10.0.0.1/16"],["neutron:device_owner","compute:nova"],["neutron:host_id","compute-{}"],["neutron:network_name","neutron-net"],["neutron:security_group_ids","sg-{i}"]]]}}}}"#,
        (i >> 16) & 0xff,
        (i >> 8) & 0xff,
        i & 0xff,
        (i >> 16) & 0xff,
        (i >> 8) & 0xff,
        i & 0xff,
        i % 500,
    )
}

/// Writes `total` bytes of `piece` repeated, in 64 KiB writes, then `tail`;
/// stops quietly when the client hangs up.
async fn write_repeated(sock: &mut UnixStream, piece: &[u8], total: usize, tail: &[u8]) {
    let block: Vec<u8> = piece.iter().copied().cycle().take(64 << 10).collect();
    let mut sent = 0;
    while sent < total {
        if sock.write_all(&block).await.is_err() {
            return;
        }
        sent += block.len();
    }
    let _ = sock.write_all(tail).await;
}

/// What connection `n` of case `case` sends after its monitor reply.
async fn hostile_bytes(case: &str, sock: &mut UnixStream, legit: &[u8]) -> Result<()> {
    const GIB: usize = 1 << 30;
    let string_head =
        br#"{"id":null,"method":"update2","params":["obgp-db",{"Logical_Switch_Port":{"eeeeeeee-0000-4000-8000-000000000004":{"insert":{"name":""#;
    match case {
        "string-1g" => {
            sock.write_all(string_head).await?;
            write_repeated(sock, b"x", GIB, br#""}}}}]}"#).await;
        }
        "unterminated-200m" => {
            sock.write_all(string_head).await?;
            write_repeated(sock, b"x", 200 << 20, b"").await;
        }
        "nested-100m" => {
            sock.write_all(br#"{"id":null,"method":"update2","params":["obgp-db","#)
                .await?;
            write_repeated(sock, b"[", 100 << 20, b"").await;
        }
        "held-whole-1g" => {
            // A reply to no request of ours: never streamed, so held whole.
            sock.write_all(br#"{"id":99,"result":[""#).await?;
            write_repeated(sock, br#"abcdefghijklmnopqrstuvwxyz",""#, GIB, br#""]}"#).await;
        }
        "streamed-1g" => {
            // Valid rows, far more of them than any cloud: decoded while
            // they arrive until the message passes max_streamed.
            sock.write_all(UPDATE_HEAD).await?;
            let mut sent = 0usize;
            let mut i = 0usize;
            let mut chunk = Vec::with_capacity(64 << 10);
            while sent < GIB {
                chunk.clear();
                while chunk.len() < (64 << 10) {
                    if i > 0 {
                        chunk.push(b',');
                    }
                    chunk.extend_from_slice(port_row(i).as_bytes());
                    i += 1;
                }
                if sock.write_all(&chunk).await.is_err() {
                    return Ok(());
                }
                sent += chunk.len();
            }
            let _ = sock.write_all(b"}}]}").await;
        }
        "streamed-ints-1g" => {
            // Rows of small integers: 2 bytes an atom on the wire, 24
            // decoded; what max_decoded bounds.
            sock.write_all(UPDATE_HEAD).await?;
            let ints: String = (0..4000).map(|i| format!("{},", i % 10)).collect();
            let mut sent = 0usize;
            let mut i = 0usize;
            while sent < GIB {
                let row = format!(
                    r#"{}"{i:08x}-3333-4333-8333-333333333333":{{"insert":{{"tag":["set",[{}0]]}}}}"#,
                    if i > 0 { "," } else { "" },
                    ints
                );
                if sock.write_all(row.as_bytes()).await.is_err() {
                    return Ok(());
                }
                sent += row.len();
                i += 1;
            }
            let _ = sock.write_all(b"}}]}").await;
        }
        "legit-update-100k" => sock.write_all(legit).await?,
        other => bail!("unknown case {other}"),
    }
    Ok(())
}

/// Serves one connection: the NB schema, no `_Server`, no
/// `monitor_cond_since`, an empty dump; then, on the first connection, the
/// case's bytes; later connections stay well-behaved.
async fn serve(mut sock: UnixStream, case: String, first: bool, legit: &[u8]) -> Result<()> {
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/schemas/ovn-nb.ovsschema"
    ))?)?;
    let mut framer = JsonFramer::default();
    let mut buf = bytes::BytesMut::new();
    loop {
        let req: Value = loop {
            if let Some(frame) = framer.decode(&mut buf)? {
                break serde_json::from_slice(&frame)?;
            }
            if sock.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        };
        let id = req["id"].clone();
        let reply = match req["method"].as_str() {
            Some("get_schema") if req["params"][0] == "OVN_Northbound" => {
                json!({"id": id, "result": schema, "error": null})
            }
            Some("monitor_cond") => json!({"id": id, "result": {}, "error": null}),
            Some("echo") => json!({"id": id, "result": req["params"], "error": null}),
            _ => json!({"id": id, "result": null, "error": "not here"}),
        };
        sock.write_all(reply.to_string().as_bytes()).await?;
        if req["method"] == "monitor_cond" && first {
            hostile_bytes(&case, &mut sock, legit).await?;
        }
    }
}

/// The legitimate update: one transaction creating 100k VM ports.
fn legit_update(ports: usize) -> Vec<u8> {
    let mut text = UPDATE_HEAD.to_vec();
    for i in 0..ports {
        if i > 0 {
            text.push(b',');
        }
        text.extend_from_slice(port_row(i).as_bytes());
    }
    text.extend_from_slice(b"}}]}");
    text
}

const LEGIT_PORTS: usize = 100_000;

/// The measured process: a client with the agent's limits, until it has
/// synced twice (the hostile connection, then the good one) or, for the
/// legitimate case, holds every port.
async fn measure(case: &str, socket: &str) -> Result<()> {
    let rss_before = status_kib("VmRSS:")?;
    let config = ClientConfig::new(
        vec![Remote::Unix(socket.into())],
        "OVN_Northbound",
        obgp_ovn::nb::monitor_spec(),
    );
    let client = Client::start(config);
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(300);
    loop {
        let done = if case == "legit-update-100k" {
            client.cache().snapshot().table("Logical_Switch_Port").len() == LEGIT_PORTS
        } else {
            *client.cache().resynced().borrow() >= 2
        };
        if done {
            break;
        }
        if Instant::now() > deadline {
            bail!("{case}: the client did not get through within 300 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!(
        "{}",
        json!({
            "wall_s": t0.elapsed().as_secs_f64(),
            "rss_before_kib": rss_before,
            "vm_hwm_kib": status_kib("VmHWM:")?,
            "rss_after_kib": status_kib("VmRSS:")?,
            "ports": client.cache().snapshot().table("Logical_Switch_Port").len(),
        })
    );
    Ok(())
}

async fn run_case(case: &str, legit: &[u8]) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("hostile.sock");
    let listener = UnixListener::bind(&socket)?;
    let server = {
        let case = case.to_string();
        let legit = legit.to_vec();
        tokio::spawn(async move {
            let legit: std::sync::Arc<[u8]> = legit.into();
            let mut first = true;
            loop {
                let (sock, _) = listener.accept().await?;
                let (case, legit) = (case.clone(), legit.clone());
                tokio::spawn(async move { serve(sock, case, first, &legit[..]).await });
                first = false;
            }
            #[allow(unreachable_code)]
            anyhow::Ok(())
        })
    };
    let out = tokio::process::Command::from(Command::new(std::env::current_exe()?))
        .args(["measure", case])
        .arg(&socket)
        .env("RUST_LOG", "warn,obgp_ovsdb::rpc::session=debug")
        .output()
        .await?;
    server.abort();
    if !out.status.success() {
        bail!("{case}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let m: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{case}: {}", String::from_utf8_lossy(&out.stdout)))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let why = stderr
        .lines()
        .filter(|l| l.contains("OVSDB connection lost"))
        .find_map(|l| l.split_once("error=").map(|(_, e)| e.to_string()))
        .unwrap_or_else(|| "-".into());
    let decoded = stderr
        .lines()
        .filter_map(|l| l.split_once("decoded_bytes=")?.1.split_whitespace().next())
        .next_back()
        .unwrap_or("-");
    let mib = |k: &str| m[k].as_u64().unwrap_or(0) as f64 / 1024.0;
    println!(
        "case={case} vm_hwm_mib={:.1} rss_before_mib={:.1} rss_after_mib={:.1} wall_s={:.2} ports={} decoded_bytes={decoded} dropped_with: {why}",
        mib("vm_hwm_kib"),
        mib("rss_before_kib"),
        mib("rss_after_kib"),
        m["wall_s"].as_f64().unwrap_or(0.0),
        m["ports"],
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("measure") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .try_init();
        let (Some(case), Some(socket)) = (args.get(1), args.get(2)) else {
            bail!("usage: hostile-server measure CASE SOCKET");
        };
        return measure(case, socket).await;
    }
    let cases: Vec<&str> = if args.is_empty() {
        CASES.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    let legit = if cases.contains(&"legit-update-100k") {
        let text = legit_update(LEGIT_PORTS);
        println!(
            "legit-update-100k: one update2 of {LEGIT_PORTS} ports, {:.1} MB",
            text.len() as f64 / 1e6
        );
        text
    } else {
        Vec::new()
    };
    for case in cases {
        run_case(case, &legit).await?;
    }
    Ok(())
}
