//! The project's own system-test bench. Every helper here keeps its state in a
//! temporary directory it owns, starts only what it stops, and stops it on drop,
//! so tests can run in parallel and leave nothing behind.
//!
//! - [`ovsdb`]: ovsdb-server instances (standalone, SSL, RAFT clusters) on the
//!   schemas in `fixtures/schemas`, and ovn-northd between an NB and an SB.
//! - [`netns`]: network namespaces with veth pairs, and running commands in them.
//! - [`frr`]: FRR daemons as a node router and as a fabric peer.
//! - [`evpn`]: a real EVPN fabric (two VTEPs with FRR over a veth underlay)
//!   for the VM tier.
//! - [`heap`]: a counting global allocator for benches (live and peak heap).
//! - [`script`]: executable stand-in scripts, written so that no fork of a
//!   test thread can leave them busy (ETXTBSY).
//! - [`vm`]: the full-kernel VM tier (QEMU TCG) for what this kernel lacks
//!   (vrf, dummy, 802.1q).

pub mod evpn;
pub mod fixture;
pub mod frr;
pub mod heap;
pub mod netns;
pub mod ovsdb;
pub mod script;
pub mod vm;
pub mod vswitchd;

/// The workspace's `fixtures/` directory.
pub fn fixtures_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}
