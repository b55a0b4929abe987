//! Bytes from a hostile peer, decoded as every request the endpoint takes and converted as it
//! converts them: nothing may panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    taskhub_grpc::fuzzing::decode_and_convert(data);
});
