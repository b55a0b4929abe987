//! The W3C trace context a queue message carries (`traceparent`), so that the span of the
//! receiver joins the trace of the sender across queues and processes. A turn woken only by
//! messages that carry no context runs in its execution's own trace
//! ([`TraceContext::of_execution`]: the trace ID is the execution ID).

use std::fmt;

use taskhub_core::ExecutionId;

/// A position in a trace: the trace ID and the span that is the parent of what comes next.
/// Written and read as a W3C `traceparent` (`00-{trace id}-{span id}-{flags}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceContext {
    /// The 128-bit trace ID (never 0).
    pub trace_id: u128,
    /// The 64-bit ID of the span (0 only for a trace root that no span stands for).
    pub span_id: u64,
    /// The `sampled` flag.
    pub sampled: bool,
}

impl TraceContext {
    /// Parses a version-00 `traceparent`; `None` if it is not one (a bad header is ignored,
    /// as W3C asks, and a new trace starts).
    #[must_use]
    pub fn parse(traceparent: &str) -> Option<Self> {
        let mut parts = traceparent.trim().split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some()
            || version != "00"
            || trace.len() != 32
            || span.len() != 16
            || flags.len() != 2
        {
            return None;
        }
        let hex = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !(hex(trace) && hex(span) && hex(flags)) {
            return None;
        }
        let trace_id = u128::from_str_radix(trace, 16).ok()?;
        let span_id = u64::from_str_radix(span, 16).ok()?;
        let flags = u8::from_str_radix(flags, 16).ok()?;
        (trace_id != 0 && span_id != 0).then_some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }

    /// The `traceparent` text.
    #[must_use]
    pub fn traceparent(&self) -> String {
        self.to_string()
    }

    /// A new span in the same trace, under this one.
    #[must_use]
    pub fn child(&self) -> Self {
        Self {
            span_id: random_span_id(),
            ..*self
        }
    }

    /// A new trace (random IDs).
    #[must_use]
    pub fn new_root() -> Self {
        Self {
            trace_id: uuid::Uuid::new_v4().as_u128().max(1),
            span_id: random_span_id(),
            sampled: true,
        }
    }

    /// The trace of an orchestration execution that nothing else placed in a trace: its
    /// trace ID is the execution ID (32 hex digits, as the runtime makes them; other IDs are
    /// hashed), so every turn of a root orchestration lands in one trace even when the message
    /// that woke it carried no context (a client's event, after the session left memory). The
    /// span ID is 0: the trace root no span stands for (the turn's span is a root span).
    #[must_use]
    pub fn of_execution(execution: &ExecutionId) -> Self {
        let text = execution.as_str();
        let trace_id = if text.len() == 32 {
            u128::from_str_radix(text, 16).ok()
        } else {
            None
        }
        .unwrap_or_else(|| fnv1a_128(text.as_bytes()))
        .max(1);
        Self {
            trace_id,
            span_id: 0,
            sampled: true,
        }
    }

    /// The trace ID as 32 lower-case hex digits.
    #[must_use]
    pub fn trace_id_hex(&self) -> String {
        format!("{:032x}", self.trace_id)
    }

    /// The span ID as 16 lower-case hex digits.
    #[must_use]
    pub fn span_id_hex(&self) -> String {
        format!("{:016x}", self.span_id)
    }
}

impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{:032x}-{:016x}-{:02x}",
            self.trace_id,
            self.span_id,
            u8::from(self.sampled)
        )
    }
}

fn random_span_id() -> u64 {
    // The low half of a v4 UUID: random bits; never 0 (W3C forbids an all-zero span ID).
    let low = uuid::Uuid::new_v4().as_u64_pair().1;
    low.max(1)
}

fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u128::from(*b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn traceparent_round_trips_and_bad_ones_are_ignored() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let c = TraceContext::parse(tp).unwrap();
        assert_eq!(c.traceparent(), tp);
        assert_eq!(c.span_id, 0x00f0_67aa_0ba9_02b7);
        let child = c.child();
        assert_eq!(child.trace_id, c.trace_id);
        assert_ne!(child.span_id, c.span_id);
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_execution_names_its_trace() {
        let e = ExecutionId::new("0f8fad5bd9cb469fa16570867728950e").unwrap();
        assert_eq!(
            TraceContext::of_execution(&e).trace_id_hex(),
            "0f8fad5bd9cb469fa16570867728950e"
        );
        let short = ExecutionId::new("e1").unwrap();
        let t = TraceContext::of_execution(&short);
        assert_eq!(t, TraceContext::of_execution(&short));
        assert_ne!(t.trace_id, 0);
    }
}
