//! Generates the protocol's messages, client and server from the vendored
//! `proto/orchestrator_service.proto` with `protox` (a .proto compiler in Rust), so the build
//! needs no `protoc` on the machine. The generated code goes to `OUT_DIR`, never into the tree.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/orchestrator_service.proto");
    let descriptors = protox::compile(["orchestrator_service.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // prost's codec, with a request that does not decode answered INVALID_ARGUMENT.
        .codec_path("crate::codec::StrictCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
