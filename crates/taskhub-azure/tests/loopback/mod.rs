//! A real HTTP/1.1 server on 127.0.0.1 for tests of the client side (HTTPS, Entra ID tokens):
//! plain TCP or TLS, keep-alive, every request recorded, answers chosen by a handler. And a
//! proxy in front of a real service that stalls chosen requests (`proxy`).

#![allow(dead_code, reason = "not every test binary uses every helper")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test support")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub mod proxy;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query as sent.
    pub target: String,
    /// Lower-cased header names.
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

/// An answer: status, extra headers, body.
pub type Answer = (u16, Vec<(String, String)>, String);

type Handler = Arc<dyn Fn(&Recorded) -> Answer + Send + Sync>;

/// A running server.
pub struct Server {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// Starts a plain-HTTP server.
    pub async fn plain(handler: impl Fn(&Recorded) -> Answer + Send + Sync + 'static) -> Self {
        Self::start(None, Arc::new(handler)).await
    }

    /// Starts an HTTPS server presenting `config`'s certificate.
    pub async fn tls(
        config: Arc<rustls::ServerConfig>,
        handler: impl Fn(&Recorded) -> Answer + Send + Sync + 'static,
    ) -> Self {
        Self::start(
            Some(tokio_rustls::TlsAcceptor::from(config)),
            Arc::new(handler),
        )
        .await
    }

    async fn start(tls: Option<tokio_rustls::TlsAcceptor>, handler: Handler) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let handler = handler.clone();
                let log = log.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        Some(acceptor) => {
                            // A client that refuses the certificate ends the handshake.
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                serve(stream, &handler, &log).await;
                            }
                        }
                        None => serve(tcp, &handler, &log).await,
                    }
                });
            }
        });
        Self { port, requests }
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    handler: &Handler,
    log: &Mutex<Vec<Recorded>>,
) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let target = parts.next().unwrap_or_default().to_owned();
        let mut headers = BTreeMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).await.unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let request = Recorded {
            method,
            target,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        let (status, extra, text) = handler(&request);
        log.lock().unwrap().push(request);
        let mut out = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", text.len());
        for (k, v) in extra {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("\r\n");
        out.push_str(&text);
        let stream = reader.get_mut();
        if stream.write_all(out.as_bytes()).await.is_err() || stream.flush().await.is_err() {
            return;
        }
    }
}

/// A self-signed certificate for `localhost` and 127.0.0.1: the server config presenting it,
/// and the certificate (DER) a client must trust.
pub fn self_signed() -> (Arc<rustls::ServerConfig>, Vec<u8>) {
    let cert =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let der = cert.cert.der().to_vec();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        cert.key_pair.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls::pki_types::CertificateDer::from(der.clone())],
            key,
        )
        .unwrap();
    (Arc::new(config), der)
}

/// What a fake storage service answers: 201 to creates (PUT/POST), 404 with an error code to
/// reads (so `hub_info` finds no hub), 202 to deletes.
pub fn storage_answer(r: &Recorded) -> Answer {
    let request_id = vec![("x-ms-request-id".to_owned(), "1".to_owned())];
    match r.method.as_str() {
        "GET" => {
            let mut h = request_id;
            h.push(("x-ms-error-code".to_owned(), "ResourceNotFound".to_owned()));
            (404, h, String::new())
        }
        "DELETE" => (202, request_id, String::new()),
        _ => (201, request_id, String::new()),
    }
}
