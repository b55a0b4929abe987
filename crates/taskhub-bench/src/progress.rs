//! A progress bar on stderr while a scenario's future runs (hidden when stderr is no terminal).

use std::future::Future;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Runs `work`, showing `position()` out of `total` under `label` every 100 ms.
pub async fn drive<T>(
    label: &str,
    total: u64,
    work: impl Future<Output = T>,
    position: impl Fn() -> u64,
) -> T {
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} {msg:28} [{elapsed_precise}] {bar:30} {pos}/{len}")
    {
        bar.set_style(style);
    }
    bar.set_message(label.to_owned());
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tokio::pin!(work);
    let out = loop {
        tokio::select! {
            out = &mut work => break out,
            _ = tick.tick() => bar.set_position(position().min(total)),
        }
    };
    bar.finish_and_clear();
    out
}
