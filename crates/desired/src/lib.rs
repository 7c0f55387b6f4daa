//! `desired_state`: what must exist on this node, computed from OVN and the configuration.
