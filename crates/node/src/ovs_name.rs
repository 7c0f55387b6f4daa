//! The one rule for putting a device name on an OVS command line, shared
//! by the command runners (`ovs-ofctl`, `ovs-vsctl`) and the static FDB
//! entries (`ovs-appctl`).

use obgp_netmodel::DevName;

use crate::error::IoError;

/// A bridge or port name as an `ovs-ofctl` / `ovs-vsctl` argument: a
/// [`DevName`] of plain characters that no command can read as an option
/// (a leading `-`) or as more than a name (`=`, quotes, brackets, commas).
pub(crate) fn ovs_name(name: &DevName) -> Result<&str, IoError> {
    let s = name.as_str();
    let ok = !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@+".contains(&b));
    if ok {
        Ok(s)
    } else {
        Err(IoError::Invalid(s.to_string()))
    }
}
