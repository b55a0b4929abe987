//! Entra ID tokens for Azure Storage: fetched over the store's own HTTP client (client
//! credentials grant, or the managed identity endpoint), cached, and fetched again before they
//! expire (at the later of 5 minutes before expiry and half their lifetime), timed by the
//! store's `Clock`. A refresh that fails while the cached token is still valid keeps using it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use serde::Deserialize;
use taskhub_core::Timestamp;
use taskhub_storage::{Clock, StorageError, StorageResult};
use tokio::sync::Mutex;

use crate::credential::{
    ClientSecretCredential, Credential, ManagedIdentityCredential, STORAGE_SCOPE,
};
use crate::http::encode;
use crate::tls::Connector;

/// How long before expiry a token is replaced (at most half its lifetime).
const REFRESH_MARGIN: Duration = Duration::from_secs(300);
/// One token request's time limit.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The resource managed identity endpoints take (the scope without `/.default`).
const STORAGE_RESOURCE: &str = "https://storage.azure.com/";

#[derive(Debug, Clone)]
struct Cached {
    token: String,
    refresh_at: Timestamp,
    expires_at: Timestamp,
}

/// A token credential with its cache.
pub(crate) struct TokenSource {
    credential: Credential,
    clock: Arc<dyn Clock>,
    cache: Mutex<Option<Cached>>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("credential", &self.credential)
            .finish_non_exhaustive()
    }
}

/// A token endpoint's answer (`expires_in` is a number from Entra ID, a string from IMDS).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
    #[serde(default)]
    expires_on: Option<serde_json::Value>,
}

fn as_u64(v: &serde_json::Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

impl TokenSource {
    pub(crate) fn new(credential: Credential, clock: Arc<dyn Clock>) -> Self {
        Self {
            credential,
            clock,
            cache: Mutex::new(None),
        }
    }

    /// A valid token, fetched if none is cached or the cached one is due for refresh.
    pub(crate) async fn token(
        &self,
        client: &Client<Connector, Full<Bytes>>,
    ) -> StorageResult<String> {
        let mut cache = self.cache.lock().await;
        let now = self.clock.now();
        if let Some(c) = cache.as_ref().filter(|c| now < c.refresh_at) {
            return Ok(c.token.clone());
        }
        match self.fetch(client).await {
            Ok(fresh) => {
                let token = fresh.token.clone();
                *cache = Some(fresh);
                Ok(token)
            }
            Err(e) => match cache.as_ref().filter(|c| now < c.expires_at) {
                Some(c) => {
                    tracing::warn!(error = %e, "could not refresh the Entra ID token; using the cached one until it expires");
                    Ok(c.token.clone())
                }
                None => Err(e),
            },
        }
    }

    async fn fetch(&self, client: &Client<Connector, Full<Bytes>>) -> StorageResult<Cached> {
        let (request, endpoint) = match &self.credential {
            Credential::ClientSecret(c) => client_secret_request(c)?,
            Credential::ManagedIdentity(m) => managed_identity_request(m)?,
            Credential::SharedKey(_) => {
                return Err(StorageError::InvalidArgument(
                    "a Shared Key credential has no token".to_owned(),
                ))
            }
        };
        let fetched_at = self.clock.now();
        let unavailable = |why: String| {
            StorageError::Unavailable(format!("Entra ID token from {endpoint}: {why}"))
        };
        let response = tokio::time::timeout(TOKEN_TIMEOUT, client.request(request))
            .await
            .map_err(|_| unavailable(format!("no answer within {TOKEN_TIMEOUT:?}")))?
            .map_err(|e| unavailable(crate::http::chain(&e)))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| unavailable(e.to_string()))?
            .to_bytes();
        if !(200..300).contains(&status) {
            let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            let what = format!("Entra ID token from {endpoint}: HTTP {status} {text}");
            return Err(if status == 429 || status >= 500 {
                StorageError::Unavailable(what)
            } else {
                StorageError::Backend(format!(
                    "{what}; check the Azure credential settings (tenant, client ID, secret or managed identity)"
                ))
            });
        }
        let parsed: TokenResponse = serde_json::from_slice(&body).map_err(|e| {
            StorageError::Backend(format!(
                "Entra ID token from {endpoint}: unreadable answer: {e}"
            ))
        })?;
        let lifetime_secs = parsed
            .expires_in
            .as_ref()
            .and_then(as_u64)
            .or_else(|| {
                let on = parsed.expires_on.as_ref().and_then(as_u64)?;
                Some(on.saturating_sub(fetched_at.as_millis() / 1000))
            })
            .unwrap_or(3600);
        let lifetime = Duration::from_secs(lifetime_secs);
        let margin = REFRESH_MARGIN.min(lifetime / 2);
        Ok(Cached {
            token: parsed.access_token,
            refresh_at: after(fetched_at, lifetime - margin),
            expires_at: after(fetched_at, lifetime),
        })
    }
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    Timestamp::from_millis(
        t.as_millis()
            .saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
    )
}

type TokenRequest = (hyper::Request<Full<Bytes>>, String);

fn bad_request(e: &hyper::http::Error) -> StorageError {
    StorageError::InvalidArgument(format!("Entra ID token request: {e}"))
}

fn client_secret_request(c: &ClientSecretCredential) -> StorageResult<TokenRequest> {
    let endpoint = format!(
        "{}/{}/oauth2/v2.0/token",
        c.authority_host.trim_end_matches('/'),
        encode(&c.tenant_id)
    );
    let body = format!(
        "grant_type=client_credentials&client_id={}&client_secret={}&scope={}",
        encode(&c.client_id),
        encode(c.secret.expose()),
        encode(STORAGE_SCOPE)
    );
    let request = hyper::Request::builder()
        .method("POST")
        .uri(&endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("content-length", body.len().to_string())
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| bad_request(&e))?;
    Ok((request, endpoint))
}

fn managed_identity_request(m: &ManagedIdentityCredential) -> StorageResult<TokenRequest> {
    let version = if m.identity_header.is_some() {
        "2019-08-01"
    } else {
        "2018-02-01"
    };
    let mut url = format!(
        "{}?api-version={version}&resource={}",
        m.endpoint,
        encode(STORAGE_RESOURCE)
    );
    if let Some(id) = &m.client_id {
        url.push_str(&format!("&client_id={}", encode(id)));
    }
    let mut builder = hyper::Request::builder().method("GET").uri(&url);
    builder = match &m.identity_header {
        Some(h) => builder.header("x-identity-header", h.expose()),
        None => builder.header("metadata", "true"),
    };
    let request = builder
        .body(Full::new(Bytes::new()))
        .map_err(|e| bad_request(&e))?;
    Ok((request, m.endpoint.clone()))
}
