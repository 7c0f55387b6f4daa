//! Typed views of OVN rows and the indexed `Snapshot` the drivers read.
