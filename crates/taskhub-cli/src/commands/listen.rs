//! What `serve` and `worker` listen on: the HTTP API and dashboard (`--http`) and the Durable
//! Task gRPC endpoint (`--grpc`).

use std::net::SocketAddr;

use anyhow::Context as _;
use tokio::net::TcpListener;

use crate::args::GlobalArgs;
use crate::own_settings::CliSettings;
use crate::settings::{self, Resolved};

use super::announce::Announcements;
use super::grpc::{GrpcListen, GrpcRunning};
use super::http::Listen;
use super::worker::StopSignals;

/// An address to listen on, the token calls to it need and the connection limits it serves
/// under.
pub struct Bind {
    /// Where to listen.
    pub addr: SocketAddr,
    /// From `http_token` / `TASKHUB_HTTP_TOKEN` if one is set (the gRPC endpoint shares it).
    pub token: Option<String>,
    /// The `http_*` connection limits (both endpoints share them).
    pub limits: taskhub_grpc::Limits,
}

impl Bind {
    /// Parses `addr` (`flag` and `example` name it in the error) and reads the token and the
    /// limits.
    pub fn parse(
        addr: &str,
        flag: &str,
        example: &str,
        settings: &CliSettings,
    ) -> anyhow::Result<Self> {
        let addr: SocketAddr = addr
            .parse()
            .with_context(|| format!("{flag} expects IP:PORT such as {example}, got {addr:?}"))?;
        let token = Some(settings.http_token.expose().to_owned()).filter(|t| !t.is_empty());
        Ok(Self {
            addr,
            token,
            limits: settings.limits(),
        })
    }

    /// Binds the address; the listener and the address it is bound to.
    pub async fn listen(&self) -> anyhow::Result<(TcpListener, SocketAddr)> {
        let listener = TcpListener::bind(self.addr)
            .await
            .with_context(|| format!("cannot listen on {}", self.addr))?;
        let local = listener
            .local_addr()
            .context("cannot read the bound address")?;
        Ok((listener, local))
    }
}

/// The `--http` and `--grpc` addresses given, each checked ([`Listen::check`],
/// [`GrpcListen::check`]).
pub fn check(
    http: Option<&str>,
    grpc: Option<&str>,
    settings: &CliSettings,
) -> anyhow::Result<(Option<Listen>, Option<GrpcListen>)> {
    let http = http.map(|a| Listen::check(a, settings)).transpose()?;
    let grpc = grpc.map(|a| GrpcListen::check(a, settings)).transpose()?;
    Ok((http, grpc))
}

/// What `serve` and `worker` open before they serve: the settings, the checked addresses, the
/// stop signals (listened for from here on), the metrics recorder (with `--http`) and the hub.
pub struct Opened {
    /// The resolved settings.
    pub resolved: Resolved,
    /// The `--http` address, checked.
    pub http: Option<Listen>,
    /// The `--grpc` address, checked.
    pub grpc: Option<GrpcListen>,
    /// SIGINT and SIGTERM.
    pub signals: StopSignals,
    /// The Prometheus recorder, installed with `--http`.
    pub metrics: Option<taskhub_http::MetricsRender>,
    /// The hub, opened (created if need be).
    pub hub: taskhub::TaskHub,
}

/// Resolves the settings, checks the addresses ([`check`]), listens for the stop signals,
/// installs the metrics recorder with `--http`, and opens the hub.
pub async fn open(
    global: &GlobalArgs,
    http: Option<&str>,
    grpc: Option<&str>,
) -> anyhow::Result<Opened> {
    let resolved = settings::resolve(global, &[])?;
    let (http, grpc) = check(http, grpc, &resolved.own)?;
    let signals = StopSignals::install()?;
    let metrics = http
        .as_ref()
        .map(|_| crate::metrics::install())
        .transpose()?;
    let hub = resolved.open_hub(false).await?;
    Ok(Opened {
        resolved,
        http,
        grpc,
        signals,
        metrics,
        hub,
    })
}

/// Starts the gRPC endpoint if `--grpc` was given (serving SDK workers with `workers`), then
/// announces this process as `kinds`, with `Grpc` added when the endpoint runs.
pub(crate) async fn start_grpc_and_announce(
    hub: &taskhub::TaskHub,
    grpc: Option<GrpcListen>,
    workers: Option<taskhub_grpc::Dispatcher>,
    mut kinds: Vec<taskhub::ProcessKind>,
) -> anyhow::Result<(Option<GrpcRunning>, Announcements)> {
    if grpc.is_some() {
        kinds.push(taskhub::ProcessKind::Grpc);
    }
    let grpc = match grpc {
        Some(g) => Some(g.start(hub, workers).await?),
        None => None,
    };
    let announced = Announcements::of(hub, &kinds).await?;
    Ok((grpc, announced))
}
