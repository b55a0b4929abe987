//! The endpoint's codec: prost's, except that a request whose bytes do not decode as its
//! message is the caller's fault, `INVALID_ARGUMENT`, not `INTERNAL` (prost's codec follows
//! grpc-core's table, where `INTERNAL` covers a parse error; the Durable Task SDKs read
//! `INTERNAL` as a server fault and retry, so a malformed request would be retried for ever).

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::{Code, Status};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Encodes `T` and decodes `U` as prost does, refusing undecodable input as the caller's.
#[derive(Debug, Clone)]
pub struct StrictCodec<T, U> {
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for StrictCodec<T, U> {
    fn default() -> Self {
        Self {
            _types: PhantomData,
        }
    }
}

impl<T, U> Codec for StrictCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = StrictDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        StrictDecoder(ProstCodec::<T, U>::raw_decoder(BufferSettings::default()))
    }
}

/// prost's decoder with its parse errors turned into `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct StrictDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default> Decoder for StrictDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|e| {
            if e.code() == Code::Internal {
                Status::invalid_argument(format!(
                    "the request does not decode as a {}: {}",
                    short_type_name::<U>(),
                    e.message()
                ))
            } else {
                e
            }
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}

/// The message's type name without its module path.
fn short_type_name<U>() -> &'static str {
    let full = std::any::type_name::<U>();
    full.rsplit("::").next().unwrap_or(full)
}
