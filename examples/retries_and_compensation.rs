//! Retries and compensation: a trip is booked in three steps (flight, hotel, car). Each step is
//! retried with back-off on durable timers, but only for failures a predicate calls transient;
//! when a step fails for good, the bookings already made are cancelled in reverse order (a
//! saga), and the orchestration reports what it undid.
//!
//! Run: `cargo run --example retries_and_compensation`

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use taskhub::*;
use taskhub_examples::{wrong, TempDir};
use taskhub_sqlite::{SqliteOptions, SqliteStore};

/// Where to and who for.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Trip {
    traveller: String,
    city: String,
}

/// A confirmed booking, as a cancellation needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Booking {
    kind: String,
    reference: String,
    attempts: u32,
}

/// How a trip ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum TripOutcome {
    /// Every step succeeded.
    Booked(Vec<Booking>),
    /// A step failed for good; the earlier bookings were cancelled (their references, in the
    /// order they were undone).
    Cancelled { reason: String, undone: Vec<String> },
}

const BOOK_FLIGHT: ActivityRef<Trip, Booking> = ActivityRef::new("BookFlight");
const BOOK_HOTEL: ActivityRef<Trip, Booking> = ActivityRef::new("BookHotel");
const BOOK_CAR: ActivityRef<Trip, Booking> = ActivityRef::new("BookCar");
const CANCEL: ActivityRef<Booking, ()> = ActivityRef::new("Cancel");
const BOOK_TRIP: OrchestrationRef<Trip, TripOutcome> = OrchestrationRef::new("BookTrip");

/// The error type our booking services use for failures worth retrying.
const TRANSIENT: &str = "ServiceUnavailable";

/// Up to 5 attempts, 100 ms then 200 ms, 400 ms, ... apart, only for transient failures.
fn transient_retries() -> RetryPolicy {
    RetryPolicy::new(5, Duration::from_millis(100))
        .with_backoff_coefficient(2.0)
        .with_retry_if(|err| err.error_type() == Some(TRANSIENT))
}

async fn book_trip(
    ctx: OrchestrationContext,
    trip: Trip,
) -> Result<TripOutcome, OrchestrationError> {
    let mut booked: Vec<Booking> = Vec::new();
    for step in [BOOK_FLIGHT, BOOK_HOTEL, BOOK_CAR] {
        match ctx
            .call_with_retry(step, trip.clone(), transient_retries())
            .await
        {
            Ok(booking) => booked.push(booking),
            Err(failure) => {
                // Compensate: undo what was done, newest first. Cancellations are retried too.
                let mut undone = Vec::new();
                for booking in booked.into_iter().rev() {
                    let reference = booking.reference.clone();
                    ctx.call_with_retry(CANCEL, booking, transient_retries())
                        .await?;
                    undone.push(reference);
                }
                return Ok(TripOutcome::Cancelled {
                    reason: failure.to_string(),
                    undone,
                });
            }
        }
    }
    Ok(TripOutcome::Booked(booked))
}

/// What the activities did, in order, for the checks at the end.
type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, line: String) {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(line);
}

fn registry(log: &Log) -> Registry {
    let mut registry = Registry::new();
    registry.register_orchestration(BOOK_TRIP, book_trip);
    // The airline answers "unavailable" to the first two attempts of every booking.
    let l = log.clone();
    registry.register_activity(BOOK_FLIGHT, move |ctx: ActivityContext, trip: Trip| {
        let log = l.clone();
        async move {
            note(
                &log,
                format!("BookFlight {} attempt {}", trip.city, ctx.attempt()),
            );
            if ctx.attempt() < 3 {
                return Err(ActivityError::new("the airline is busy").with_type(TRANSIENT));
            }
            Ok(Booking {
                kind: "flight".into(),
                reference: format!("FL-{}-{}", trip.city, trip.traveller),
                attempts: ctx.attempt(),
            })
        }
    });
    // The hotel service knows no hotel in Atlantis: a failure no retry can fix.
    let l = log.clone();
    registry.register_activity(BOOK_HOTEL, move |ctx: ActivityContext, trip: Trip| {
        let log = l.clone();
        async move {
            note(
                &log,
                format!("BookHotel {} attempt {}", trip.city, ctx.attempt()),
            );
            if trip.city == "Atlantis" {
                return Err(ActivityError::new(format!("no hotels in {}", trip.city))
                    .with_type("NoSuchCity"));
            }
            Ok(Booking {
                kind: "hotel".into(),
                reference: format!("HT-{}-{}", trip.city, trip.traveller),
                attempts: ctx.attempt(),
            })
        }
    });
    let l = log.clone();
    registry.register_activity(BOOK_CAR, move |ctx: ActivityContext, trip: Trip| {
        let log = l.clone();
        async move {
            note(
                &log,
                format!("BookCar {} attempt {}", trip.city, ctx.attempt()),
            );
            Ok(Booking {
                kind: "car".into(),
                reference: format!("CR-{}-{}", trip.city, trip.traveller),
                attempts: ctx.attempt(),
            })
        }
    });
    let l = log.clone();
    registry.register_activity(CANCEL, move |_ctx: ActivityContext, booking: Booking| {
        let log = l.clone();
        async move {
            note(&log, format!("Cancel {}", booking.reference));
            Ok(())
        }
    });
    registry
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = TempDir::new("retries")?;
    let store = SqliteStore::open(SqliteOptions::new(dir.path().join("taskhub.db")))?;
    let hub = TaskHub::open(Arc::new(store), Settings::default()).await?;
    let log = Log::default();
    let worker = Worker::start(&hub, registry(&log)).await?;

    let client = hub.client();
    let trip = |city: &str| Trip {
        traveller: "ana".into(),
        city: city.into(),
    };
    let lisbon = client.start_typed(&BOOK_TRIP, trip("Lisbon")).await?;
    let atlantis = client.start_typed(&BOOK_TRIP, trip("Atlantis")).await?;
    let lisbon = lisbon.wait_for_completion(Duration::from_secs(60)).await?;
    let atlantis = atlantis
        .wait_for_completion(Duration::from_secs(60))
        .await?;
    worker.shutdown().await;

    println!("Lisbon:   {lisbon:?}");
    println!("Atlantis: {atlantis:?}");
    let log = log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let ran = |prefix: &str| log.iter().filter(|l| l.starts_with(prefix)).count();

    // Lisbon: the flight took three attempts (two transient failures retried), then the rest.
    let TripOutcome::Booked(bookings) = &lisbon else {
        return Err(wrong(format!("Lisbon was not booked: {lisbon:?}")));
    };
    let summary: Vec<(&str, u32)> = bookings
        .iter()
        .map(|b| (b.kind.as_str(), b.attempts))
        .collect();
    if summary != [("flight", 3), ("hotel", 1), ("car", 1)] {
        return Err(wrong(format!("Lisbon's bookings {summary:?}")));
    }
    // Atlantis: the hotel's failure is not transient, so it was tried once; the flight booked
    // before it was cancelled, and the car never booked.
    let expected = TripOutcome::Cancelled {
        reason: "activity 'BookHotel' failed: no hotels in Atlantis".into(),
        undone: vec!["FL-Atlantis-ana".into()],
    };
    if atlantis != expected {
        return Err(wrong(format!(
            "Atlantis {atlantis:?}, expected {expected:?}"
        )));
    }
    let counts = (
        ran("BookFlight Atlantis"),
        ran("BookHotel Atlantis"),
        ran("BookCar Atlantis"),
        ran("Cancel FL-Atlantis-ana"),
    );
    if counts != (3, 1, 0, 1) {
        return Err(wrong(format!(
            "Atlantis ran (flight, hotel, car, cancel) {counts:?} times, expected (3, 1, 0, 1)"
        )));
    }
    println!("ok");
    Ok(())
}
