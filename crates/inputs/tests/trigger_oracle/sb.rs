//! The SB drivers' world (filled in below).
