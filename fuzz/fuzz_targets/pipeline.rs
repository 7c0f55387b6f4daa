//! libFuzzer entry of the `pipeline` harness (`obgp_fuzz::pipeline::run`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| obgp_fuzz::pipeline::run(data));
