//! What [`serve`](crate::serve) takes, named once: [`ConnectionService`], a service that
//! answers one connection's requests, and [`ResponseBody`], the body it answers with. Each has
//! a blanket implementation: any service and body with the bounds is one.

use std::convert::Infallible;

use hyper::body::Body;
use tower_service::Service;

/// A body hyper can send as a response: `Send`, `Unpin`, with `Send` chunks and boxable errors.
pub trait ResponseBody:
    Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + Unpin + 'static
{
}

impl<B> ResponseBody for B where
    B: Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + Unpin
        + 'static
{
}

/// A service that answers the requests `R` of one connection with bodies `B` and never fails
/// (errors are responses), cloned for each connection and run on other tasks.
pub trait ConnectionService<R, B: ResponseBody>:
    Service<R, Response = http::Response<B>, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + 'static
{
}

impl<S, R, B: ResponseBody> ConnectionService<R, B> for S where
    S: Service<R, Response = http::Response<B>, Error = Infallible, Future: Send + 'static>
        + Clone
        + Send
        + 'static
{
}
