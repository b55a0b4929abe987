//! Reading what only the serving process knows from its HTTP API (`--api ADDR` of
//! `taskhub partitions` and `taskhub scale`): the work its SDK workers' filters leave waiting
//! is held in that process's memory (the gRPC endpoint's dispatcher), not in storage, so a CLI
//! that opens the hub from storage cannot see it. One plain HTTP/1.0 GET, with the
//! `http_token` setting as the bearer token when set.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs as _};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};

/// How long the serving process may take to answer.
const TIMEOUT: Duration = Duration::from_secs(30);

/// `GET path` on the API at `addr` (`IP:PORT` or `HOST:PORT`, as `--http` took it): its JSON
/// body, or an error naming the status and the start of the body.
pub(crate) async fn get_json(
    addr: &str,
    path: &str,
    token: Option<&str>,
) -> anyhow::Result<serde_json::Value> {
    let (addr, path) = (addr.to_owned(), path.to_owned());
    let token = token.map(str::to_owned);
    tokio::task::spawn_blocking(move || get_blocking(&addr, &path, token.as_deref()))
        .await
        .context("the API request stopped")?
}

fn get_blocking(addr: &str, path: &str, token: Option<&str>) -> anyhow::Result<serde_json::Value> {
    let to: SocketAddr = addr
        .to_socket_addrs()
        .with_context(|| format!("--api expects HOST:PORT such as 127.0.0.1:8080, got {addr:?}"))?
        .next()
        .ok_or_else(|| anyhow!("--api {addr:?} names no address"))?;
    let mut s = TcpStream::connect_timeout(&to, TIMEOUT)
        .with_context(|| format!("cannot reach the HTTP API at {addr} (--api)"))?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.set_write_timeout(Some(TIMEOUT))?;
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n{auth}\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("reading the answer of {addr}{path}"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("{addr}{path}: not an HTTP answer"))?;
    let status = head.split(' ').nth(1).unwrap_or("?");
    if status != "200" {
        bail!(
            "{addr}{path} answered {status}: {}",
            body.chars().take(300).collect::<String>()
        );
    }
    serde_json::from_str(body).with_context(|| format!("{addr}{path}: the body is not JSON"))
}
