//! Where and how the node is reached: the namespace, the rt_tables file,
//! the commands and their limits. Its own module because the kernel node,
//! the command runners and the lane all read it.

use std::path::PathBuf;

/// Where and how the node is reached.
#[derive(Clone, Debug)]
pub struct KernelConfig {
    /// A network namespace file ([`Self::NETNS_DIR`]`/NAME`); `None` is the agent's own.
    pub netns: Option<PathBuf>,
    /// The routing table names file ([`Self::DEFAULT_RT_TABLES`]).
    pub rt_tables: PathBuf,
    /// The rtnetlink kind created for [`LinkKind::Dummy`](obgp_netmodel::LinkKind::Dummy): `dummy`, or a
    /// stand-in (`ifb`) on kernels without it.
    pub dummy_kind: String,
    pub ovs_ofctl: PathBuf,
    /// `ovs-vsctl`, for the ports the agent plugs into OVS bridges.
    pub ovs_vsctl: PathBuf,
    /// `ovs-appctl`, for static FDB entries on OVS bridges.
    pub ovs_appctl: PathBuf,
    /// Whether a bridge read includes its static FDB entries (`fdb/show`):
    /// set in the `ovn` exposing method, the one that writes them, so the
    /// other modes spawn no extra command per bridge read.
    pub read_static_fdb: bool,
    /// `OVS_RUNDIR` for `ovs-ofctl` (where `<bridge>.mgmt` lives) and
    /// `ovs-vsctl` (`db.sock`), when not the default `/var/run/openvswitch`.
    pub ovs_rundir: Option<PathBuf>,
    pub vtysh: PathBuf,
    /// `vtysh --vty_socket DIR`.
    pub vty_socket: Option<PathBuf>,
    /// How long one `vtysh` run may take (`vtysh_timeout`).
    pub vtysh_timeout: std::time::Duration,
    /// How long one `ovs-ofctl` or `ovs-vsctl` run may take (`ovs_ofctl_timeout`).
    pub ovs_ofctl_timeout: std::time::Duration,
    /// Where `vtysh -f` files are written.
    pub frr_config_dir: PathBuf,
    /// The netlink mirror's receive buffer in bytes; `None` for its default
    /// (32 MiB). Tests make it tiny to provoke an overrun.
    pub mirror_rcvbuf: Option<usize>,
}

impl KernelConfig {
    /// The routing table names file, where the kernel's tools read it.
    pub const DEFAULT_RT_TABLES: &'static str = "/etc/iproute2/rt_tables";
    /// FRR's vty socket directory of a packaged FRR.
    pub const DEFAULT_VTY_SOCKET: &'static str = "/run/frr";
    /// The link kinds that can stand for a dummy device ([`Self::dummy_kind`]).
    pub const DUMMY_KINDS: [&'static str; 2] = ["dummy", "ifb"];
    /// The directory where `ip netns` keeps the namespaces it names.
    pub const NETNS_DIR: &'static str = "/run/netns";
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            netns: None,
            rt_tables: Self::DEFAULT_RT_TABLES.into(),
            dummy_kind: Self::DUMMY_KINDS[0].into(),
            ovs_ofctl: "ovs-ofctl".into(),
            ovs_vsctl: "ovs-vsctl".into(),
            ovs_appctl: "ovs-appctl".into(),
            read_static_fdb: false,
            ovs_rundir: None,
            vtysh: "vtysh".into(),
            vty_socket: Some(Self::DEFAULT_VTY_SOCKET.into()),
            // For tests and benches; the agent sets both from the
            // configuration (`vtysh_timeout`, `ovs_ofctl_timeout`).
            vtysh_timeout: std::time::Duration::from_secs(5),
            ovs_ofctl_timeout: std::time::Duration::from_secs(5),
            frr_config_dir: std::env::temp_dir(),
            mirror_rcvbuf: None,
        }
    }
}
