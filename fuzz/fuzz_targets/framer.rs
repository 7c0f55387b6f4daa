//! libFuzzer entry of the `framer` harness (`obgp_fuzz::framer::run`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| obgp_fuzz::framer::run(data));
