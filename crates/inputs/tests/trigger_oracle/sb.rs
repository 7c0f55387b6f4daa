//! The SB drivers' world (underlay, EVPN, stretched L2): not written yet.
//! The plan: topogen's NB compiled by a real ovn-northd
//! (`obgp_testbed::ovsdb::Northd`) with Gateway_Chassis rows on the
//! gateway ports, SB Chassis rows for the hosts, and ovn-controller's part
//! (Port_Binding `chassis` and `up`) written by the test; each step waits
//! for `SB_Global.nb_cfg` to follow `NB_Global.nb_cfg`.
