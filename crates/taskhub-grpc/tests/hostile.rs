//! The endpoint under hostile input (issue 33's probes as tests): silent connections closed
//! after the first request's deadline, idle ones after the idle timeout though they answer
//! pings, the connection cap answered at once, a delete aimed at
//! another hub refused with nothing deleted, undecodable requests and foreign continuation
//! tokens answered `INVALID_ARGUMENT`, names and tags over their caps (the tags' are the hub's
//! settings) refused naming them, echoed values
//! cut, starts scheduled weeks ahead accepted and absurd ones refused naming the field.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::time::{Duration, SystemTime};

use common::calls::{assert_names, assert_says, get, start, status, wait_done, Refused};
use common::{Backend, Server, STUCK};
use taskhub_grpc::proto::{
    CreateInstanceRequest, DeleteTaskHubRequest, InstanceQuery, OrchestrationStatus as S,
    QueryInstancesRequest, RaiseEventRequest,
};
use taskhub_grpc::tonic::{Code, Request};
use taskhub_grpc::Limits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The HTTP/2 client preface.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame (length 0, type 4, no flags, stream 0).
const EMPTY_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

/// Reads until the server closes the connection (end of stream or a reset); panics if it is
/// still open after [`STUCK`].
async fn closed_by_server(mut tcp: TcpStream) {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(STUCK, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("the server closes the connection");
}

fn limits(first_request: Duration, max_connections: usize) -> Limits {
    Limits {
        max_connections,
        first_request_timeout: first_request,
        ..Limits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_without_a_request_are_closed_after_the_deadline() {
    let server = Server::start_configured(Backend::Memory, |c| {
        c.with_limits(limits(Duration::from_millis(300), 100))
    })
    .await;
    let silent = TcpStream::connect(server.addr).await.unwrap();
    let mut half = TcpStream::connect(server.addr).await.unwrap();
    half.write_all(&PREFACE[..10]).await.unwrap();
    let mut preface_only = TcpStream::connect(server.addr).await.unwrap();
    preface_only.write_all(PREFACE).await.unwrap();
    preface_only.write_all(EMPTY_SETTINGS).await.unwrap();
    for tcp in [silent, half, preface_only] {
        closed_by_server(tcp).await;
    }
    // A real client is served as before.
    let mut c = server.client().await;
    start(&mut c, "Echo", "after-probes", Some("1")).await;
    assert_eq!(
        status(&wait_done(&mut c, "after-probes").await),
        S::Completed
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_over_the_cap_is_closed_at_once_and_a_freed_slot_serves_again() {
    // A long first-request deadline: only the cap can close the third connection.
    let server = Server::start_configured(Backend::Memory, |c| {
        c.with_limits(limits(Duration::from_secs(600), 2))
    })
    .await;
    let first = TcpStream::connect(server.addr).await.unwrap();
    let _second = TcpStream::connect(server.addr).await.unwrap();
    let third = TcpStream::connect(server.addr).await.unwrap();
    closed_by_server(third).await;
    drop(first);
    // The freed slot takes a client (the server may still be reaping the first).
    let served = tokio::time::timeout(STUCK, async {
        loop {
            if let Ok(mut c) =
                taskhub_grpc::proto::task_hub_sidecar_service_client::TaskHubSidecarServiceClient::connect(
                    server.url(),
                )
                .await
            {
                if c.hello(()).await.is_ok() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(served.is_ok(), "a client is served once a slot is free");
    server.stop().await;
}

taskhub_test_support::backend_matrix!(
    [memory, sqlite]
    a_delete_aimed_at_another_hub_is_refused_and_deletes_nothing
);

async fn a_delete_aimed_at_another_hub_is_refused_and_deletes_nothing(backend: Backend) {
    let server = Server::start(backend).await;
    let served = server.hub.settings().task_hub_name.clone();
    let mut c = server.client().await;
    start(&mut c, "Echo", "kept", Some("1")).await;
    assert_eq!(status(&wait_done(&mut c, "kept").await), S::Completed);

    let mut aimed = Request::new(DeleteTaskHubRequest {});
    aimed
        .metadata_mut()
        .insert("taskhub", "OtherHub".parse().unwrap());
    let e = c.delete_task_hub(aimed).await.refused(Code::NotFound);
    assert!(
        e.message().contains("OtherHub") && e.message().contains(&served),
        "{}",
        e.message()
    );
    assert!(get(&mut c, "kept").await.is_some(), "nothing was deleted");

    // Any call naming another hub is refused, not only the destructive ones.
    let mut raise = Request::new(RaiseEventRequest {
        instance_id: "kept".into(),
        name: "e".into(),
        ..RaiseEventRequest::default()
    });
    raise
        .metadata_mut()
        .insert("taskhub", "OtherHub".parse().unwrap());
    assert_eq!(
        c.raise_event(raise).await.unwrap_err().code(),
        Code::NotFound
    );

    // Naming the served hub (in any case) empties it.
    let mut ours = Request::new(DeleteTaskHubRequest {});
    ours.metadata_mut()
        .insert("taskhub", served.to_lowercase().parse().unwrap());
    c.delete_task_hub(ours).await.unwrap();
    assert!(
        get(&mut c, "kept").await.is_none(),
        "the served hub was emptied"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_continuation_token_is_invalid_argument() {
    let (server, mut c) = Server::with_client(Backend::Sqlite).await;
    let e = c
        .query_instances(QueryInstancesRequest {
            query: Some(InstanceQuery {
                continuation_token: Some(format!("not-a-token-{}", "x".repeat(50_000))),
                max_instance_count: 10,
                ..InstanceQuery::default()
            }),
        })
        .await
        .refused(Code::InvalidArgument);
    assert!(
        e.message().len() < 2_000,
        "the token is not echoed whole: {} bytes",
        e.message().len()
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_over_the_cap_and_huge_tag_keys_are_refused_with_short_messages() {
    let (server, mut c) = Server::with_client(Backend::Memory).await;
    let e = c
        .start_instance(CreateInstanceRequest {
            instance_id: "long-name".into(),
            name: "N".repeat(5_000),
            ..CreateInstanceRequest::default()
        })
        .await
        .refused(Code::InvalidArgument);
    assert_says(&e, "grpc_max_name_bytes");
    let e = c
        .start_instance(CreateInstanceRequest {
            instance_id: "long-version".into(),
            name: "Echo".into(),
            version: Some("v".repeat(5_000)),
            ..CreateInstanceRequest::default()
        })
        .await
        .unwrap_err();
    assert_names(&e, "version");

    let e = c
        .start_instance(CreateInstanceRequest {
            instance_id: "huge-tag".into(),
            name: "Echo".into(),
            tags: [("k".repeat(100_000), "v".to_owned())]
                .into_iter()
                .collect(),
            ..CreateInstanceRequest::default()
        })
        .await
        .refused(Code::InvalidArgument);
    assert!(e.message().len() < 1_000, "{} bytes", e.message().len());
    server.stop().await;
}

/// The tag caps are the hub's settings (`max_tags`, `max_tag_key_chars`,
/// `max_tag_value_chars`): a start over a lowered one is refused with `INVALID_ARGUMENT`
/// naming the setting, and nothing is started; a raised one lets through what the default
/// refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_over_the_hubs_caps_are_refused_naming_the_setting() {
    let server = Server::start_with_hub_settings(
        Backend::Memory,
        |s| taskhub::Settings {
            max_tags: 2,
            max_tag_key_chars: 100,
            max_tag_value_chars: 8,
            ..s
        },
        |c| c,
    )
    .await;
    let mut c = server.client().await;
    let pairs = |p: &[(&str, &str)]| {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<std::collections::HashMap<_, _>>()
    };
    let long_key = "k".repeat(101);
    for (tags, setting) in [
        (
            pairs(&[("a", ""), ("b", ""), ("c", "")]),
            "3 tags, more than 2 (max_tags)",
        ),
        (
            pairs(&[("a", "123456789")]),
            "longer than 8 characters (max_tag_value_chars)",
        ),
        (
            pairs(&[(long_key.as_str(), "")]),
            "longer than 100 characters (max_tag_key_chars)",
        ),
    ] {
        let e = c
            .start_instance(CreateInstanceRequest {
                instance_id: "over-a-cap".into(),
                name: "Echo".into(),
                tags,
                ..CreateInstanceRequest::default()
            })
            .await
            .refused(Code::InvalidArgument);
        assert_says(&e, setting);
    }
    assert!(get(&mut c, "over-a-cap").await.is_none());
    // A key of 100 characters: over the default cap (64), within this hub's.
    c.start_instance(CreateInstanceRequest {
        instance_id: "long-key".into(),
        name: "Echo".into(),
        input: Some("1".into()),
        tags: pairs(&[(&"k".repeat(100), "12345678")]),
        ..CreateInstanceRequest::default()
    })
    .await
    .expect("a tag within the hub's caps");
    let state = wait_done(&mut c, "long-key").await;
    assert_eq!(state.tags[&"k".repeat(100)], "12345678");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_weeks_ahead_is_accepted_and_one_after_the_year_9999_is_refused() {
    for backend in [Backend::Memory, Backend::Sqlite] {
        let (server, mut c) = Server::with_client(backend).await;
        let at = SystemTime::now() + Duration::from_secs(30 * 24 * 3600);
        c.start_instance(CreateInstanceRequest {
            instance_id: "next-month".into(),
            name: "Echo".into(),
            input: Some("1".into()),
            scheduled_start_timestamp: Some(prost_types::Timestamp::from(at)),
            ..CreateInstanceRequest::default()
        })
        .await
        .expect("a start 30 days ahead is accepted");
        let state = get(&mut c, "next-month").await.unwrap();
        assert_eq!(status(&state), S::Pending);
        assert_eq!(
            state.scheduled_start_timestamp.map(|t| t.seconds),
            Some(prost_types::Timestamp::from(at).seconds)
        );

        let e = c
            .start_instance(CreateInstanceRequest {
                instance_id: "absurd".into(),
                name: "Echo".into(),
                scheduled_start_timestamp: Some(prost_types::Timestamp {
                    seconds: 400_000_000_000,
                    nanos: 0,
                }),
                ..CreateInstanceRequest::default()
            })
            .await
            .refused(Code::InvalidArgument);
        assert_says(&e, "scheduledStartTimestamp");
        server.stop().await;
    }
}

/// Sends `body` as a gRPC request to `path`, byte for byte, and returns the status.
async fn raw_call(
    server: &Server,
    path: &'static str,
    body: Vec<u8>,
) -> taskhub_grpc::tonic::Status {
    use taskhub_grpc::tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
    #[derive(Default)]
    struct Raw;
    struct RawEncoder;
    struct RawDecoder;
    impl Encoder for RawEncoder {
        type Item = Vec<u8>;
        type Error = taskhub_grpc::tonic::Status;
        fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
            bytes::BufMut::put_slice(buf, &item);
            Ok(())
        }
    }
    impl Decoder for RawDecoder {
        type Item = Vec<u8>;
        type Error = taskhub_grpc::tonic::Status;
        fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Self::Error> {
            let n = bytes::Buf::remaining(buf);
            Ok(Some(bytes::Buf::copy_to_bytes(buf, n).to_vec()))
        }
    }
    impl Codec for Raw {
        type Encode = Vec<u8>;
        type Decode = Vec<u8>;
        type Encoder = RawEncoder;
        type Decoder = RawDecoder;
        fn encoder(&mut self) -> RawEncoder {
            RawEncoder
        }
        fn decoder(&mut self) -> RawDecoder {
            RawDecoder
        }
    }
    let channel = taskhub_grpc::tonic::transport::Channel::from_shared(server.url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = taskhub_grpc::tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    grpc.unary::<Vec<u8>, Vec<u8>, Raw>(
        Request::new(body),
        taskhub_grpc::tonic::codegen::http::uri::PathAndQuery::from_static(path),
        Raw,
    )
    .await
    .unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_requests_are_invalid_argument() {
    let server = Server::start(Backend::Memory).await;
    // Field 1 (instanceId) as a length-delimited value that claims more bytes than follow.
    let truncated = vec![0x0a, 0x7f, b'x'];
    // A wire type that does not exist (7).
    let bad_wire_type = vec![0x0f, 0x00];
    for (path, body) in [
        ("/TaskHubSidecarService/StartInstance", truncated.clone()),
        ("/TaskHubSidecarService/GetInstance", bad_wire_type),
        ("/TaskHubSidecarService/GetWorkItems", truncated),
    ] {
        let status = raw_call(&server, path, body).await;
        assert_eq!(status.code(), Code::InvalidArgument, "{path}: {status:?}");
        assert!(
            status.message().contains("does not decode"),
            "{path}: {status:?}"
        );
    }
    server.stop().await;
}

/// Frame types of HTTP/2 that the idle test reads or writes.
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;

/// One HTTP/2 frame: its header (length, type, flags, stream) and payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A header block of literal fields, never indexed and not Huffman-coded (RFC 7541 6.2.2).
fn literal_headers(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in fields {
        block.push(0x10);
        block.push(u8::try_from(name.len()).unwrap());
        block.extend_from_slice(name.as_bytes());
        block.push(u8::try_from(value.len()).unwrap());
        block.extend_from_slice(value.as_bytes());
    }
    block
}

/// Opens a raw HTTP/2 connection and sends one `Hello` call on it, so the connection is past
/// its first request and only the idle timeout may close it.
async fn hello_client(addr: std::net::SocketAddr) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(PREFACE).await.unwrap();
    tcp.write_all(EMPTY_SETTINGS).await.unwrap();
    let block = literal_headers(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/TaskHubSidecarService/Hello"),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]);
    const END_STREAM: u8 = 1;
    const END_HEADERS: u8 = 4;
    tcp.write_all(&frame(HEADERS, END_HEADERS, 1, &block))
        .await
        .unwrap();
    // One gRPC message of zero bytes: not compressed, length 0.
    tcp.write_all(&frame(0, END_STREAM, 1, &[0, 0, 0, 0, 0]))
        .await
        .unwrap();
    tcp
}

/// What the server did on an idle connection until it closed it.
#[derive(Debug, Default)]
struct Idle {
    /// The call's response headers arrived.
    answered: bool,
    /// Pings the server sent (each answered at once).
    pings: usize,
    /// The server said GOAWAY before closing.
    goaway: bool,
}

/// Reads frames until the server closes the connection, acknowledging its settings and
/// answering every ping, as a live but idle client does.
async fn serve_idle(mut tcp: TcpStream) -> Idle {
    let mut seen = Idle::default();
    let mut head = [0u8; 9];
    loop {
        if tcp.read_exact(&mut head).await.is_err() {
            return seen;
        }
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let (kind, flags) = (head[3], head[4]);
        let mut payload = vec![0u8; len];
        if tcp.read_exact(&mut payload).await.is_err() {
            return seen;
        }
        const ACK: u8 = 1;
        let answer = match kind {
            HEADERS => {
                seen.answered = true;
                None
            }
            SETTINGS if flags & ACK == 0 => Some(frame(SETTINGS, ACK, 0, &[])),
            PING if flags & ACK == 0 => {
                seen.pings += 1;
                Some(frame(PING, ACK, 0, &payload))
            }
            GOAWAY => {
                seen.goaway = true;
                None
            }
            _ => None,
        };
        if let Some(answer) = answer {
            if tcp.write_all(&answer).await.is_err() {
                return seen;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_is_closed_after_the_idle_timeout_though_it_answers_pings() {
    let idle_timeout = Duration::from_millis(1_500);
    let server = Server::start_configured(Backend::Memory, |c| {
        c.with_limits(Limits {
            idle_timeout,
            keepalive_interval: Duration::from_millis(200),
            ..Limits::default()
        })
    })
    .await;
    let began = std::time::Instant::now();
    let tcp = hello_client(server.addr).await;
    let seen = tokio::time::timeout(STUCK, serve_idle(tcp))
        .await
        .expect("the server closes the idle connection");
    let lasted = began.elapsed();
    assert!(seen.answered, "the call was answered first: {seen:?}");
    assert!(seen.pings >= 1, "the server pinged the idle peer: {seen:?}");
    assert!(
        seen.goaway,
        "the server said GOAWAY before closing: {seen:?}"
    );
    assert!(
        lasted >= idle_timeout,
        "closed after {lasted:?}, before the idle timeout of {idle_timeout:?}"
    );
    server.stop().await;
}
