//! A `taskhub` child that listens (`worker --http/--grpc`, `serve`): started until it names its
//! addresses, asked with raw HTTP/1.1 GETs, and stopped with SIGINT.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use super::{taskhub, TempDir};

/// The line that names the HTTP API's address.
pub const HTTP: &str = "dashboard and API on http://";
/// The line that names the gRPC endpoint's address.
pub const GRPC: &str = "Durable Task gRPC endpoint on ";

/// A listening child and what it printed until it listened.
pub struct Listening {
    pub child: Child,
    /// The address each wanted line named, in the order asked for.
    pub addrs: Vec<String>,
    /// The lines printed before the last address.
    pub before: Vec<String>,
}

impl Listening {
    /// The first address named.
    pub fn addr(&self) -> String {
        self.addrs.first().cloned().unwrap()
    }
}

/// `taskhub --db <dir's db> args...`, its stdout piped (stderr too, unless `quiet`).
pub fn on_db(dir: &TempDir, args: &[&str], quiet: bool) -> Command {
    let mut cmd = taskhub(&dir.0);
    cmd.arg("--db")
        .arg(dir.db())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(if quiet { Stdio::null() } else { Stdio::piped() });
    cmd
}

/// Spawns `cmd` (stdout piped) and reads its stdout until each line of `wanted` (a prefix such
/// as [`HTTP`] or [`GRPC`]) named its address; the rest of stdout is drained in the background.
pub fn spawn_listening(mut cmd: Command, wanted: &[&str]) -> Listening {
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addrs: Vec<Option<String>> = vec![None; wanted.len()];
    let mut before = Vec::new();
    while addrs.iter().any(Option::is_none) {
        let line = lines.next().expect("exited before listening").unwrap();
        let named = wanted.iter().position(|w| line.starts_with(w));
        match named {
            Some(i) => {
                let rest = &line[wanted[i].len()..];
                addrs[i] = rest.split(['/', ' ']).next().map(str::to_owned);
            }
            None => before.push(line),
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Listening {
        child,
        addrs: addrs.into_iter().flatten().collect(),
        before,
    }
}

/// A raw HTTP/1.1 GET, with a bearer token if given: the head (status line and headers) and
/// the body.
pub fn http_get(addr: &str, path: &str, token: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

/// Stops the child with SIGINT; it must exit successfully.
pub fn interrupt(mut child: Child) {
    let _ = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// Short leases: a dead process's partitions move in seconds.
pub const FAST_LEASES: [&str; 6] = [
    "--set",
    "lease_interval=2s",
    "--set",
    "lease_renew_interval=500ms",
    "--set",
    "lease_acquire_interval=1s",
];

/// Short visibility timeouts, idle queues polled every 100 ms: the messages a dead process
/// held come back in seconds.
pub const FAST_REDELIVERY: [&str; 6] = [
    "--set",
    "work_item_visibility_timeout=3s",
    "--set",
    "control_queue_visibility_timeout=3s",
    "--set",
    "max_queue_polling_interval=100ms",
];

/// A child killed and reaped on drop (a failing test leaves no process behind).
pub struct Reaped(pub Child);

impl Reaped {
    /// Sends SIGINT and waits for the child to exit, whatever its status.
    pub fn interrupt(mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `taskhub worker --grpc ADDR` (with [`FAST_LEASES`] and [`FAST_REDELIVERY`]) on `dir`'s hub, once its endpoint
/// listens; returns it and the address the endpoint named.
pub fn grpc_worker(dir: &TempDir, addr: &str) -> (Reaped, String) {
    let args = [
        &FAST_LEASES[..],
        &FAST_REDELIVERY[..],
        &["worker", "--grpc", addr],
    ]
    .concat();
    let listening = spawn_listening(on_db(dir, &args, true), &[GRPC]);
    let named = listening.addr();
    (Reaped(listening.child), named)
}

/// Sends each line `child` prints on its (piped) stdout to `lines`, from a thread of its own.
pub fn forward_stdout(child: &mut Child, lines: std::sync::mpsc::Sender<String>) {
    let out = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
}
