//! libFuzzer entry of the `wire` harness (`obgp_fuzz::wire::run`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| obgp_fuzz::wire::run(data));
