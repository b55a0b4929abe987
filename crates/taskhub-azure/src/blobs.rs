//! The blob container of a hub: put, get, delete and list by prefix.

use taskhub_storage::{StorageError, StorageResult};

use crate::http::{encode, status_error, Http, Req, Service, PROBE};
use crate::xml;

/// The container metadata that records the hub's name as it was created.
const HUB_META: &str = "x-ms-meta-taskhub";

/// One container.
#[derive(Debug, Clone)]
pub(crate) struct Container {
    pub(crate) http: Http,
    pub(crate) name: String,
}

fn blob_path(container: &str, blob: &str) -> String {
    let encoded: Vec<String> = blob.split('/').map(encode).collect();
    format!("/{container}/{}", encoded.join("/"))
}

impl Container {
    /// Creates the container, recording the hub's name as given in its metadata; an existing
    /// one is fine (one still being deleted is waited for). Returns whether it was created.
    pub(crate) async fn create(&self, hub: &str) -> StorageResult<bool> {
        let req = Req::new(Service::Blob, "PUT", format!("/{}", self.name))
            .query("restype", "container")
            .header(HUB_META, hub);
        self.http
            .create(&req, &format!("container {}", self.name))
            .await
    }

    /// The hub name the container's metadata records: `None` if the container does not
    /// exist, `Some("")` if it records none. The first request of opening a hub: an endpoint
    /// that does not answer fails within seconds ([`PROBE`]).
    pub(crate) async fn hub_name(&self) -> StorageResult<Option<String>> {
        let req = Req::new(Service::Blob, "GET", format!("/{}", self.name))
            .query("restype", "container")
            .query("comp", "metadata");
        let resp = self.http.send_with(&req, PROBE).await?;
        match resp.status {
            404 => Ok(None),
            s if (200..300).contains(&s) => {
                Ok(Some(resp.header(HUB_META).unwrap_or_default().to_owned()))
            }
            _ => Err(status_error(&resp, &format!("container {}", self.name))),
        }
    }

    /// Writes a block blob (overwriting).
    pub(crate) async fn put(&self, blob: &str, data: Vec<u8>) -> StorageResult<()> {
        let req = Req::new(Service::Blob, "PUT", blob_path(&self.name, blob))
            .header("x-ms-blob-type", "BlockBlob")
            .header("content-type", "application/octet-stream")
            .body(data);
        let resp = self.http.send(&req).await?;
        if resp.ok() {
            Ok(())
        } else {
            Err(status_error(&resp, &format!("blob {blob}")))
        }
    }

    /// Reads a blob, `None` if missing.
    pub(crate) async fn get(&self, blob: &str) -> StorageResult<Option<Vec<u8>>> {
        let req = Req::new(Service::Blob, "GET", blob_path(&self.name, blob));
        let resp = self.http.send(&req).await?;
        match resp.status {
            404 => Ok(None),
            s if (200..300).contains(&s) => Ok(Some(resp.body.to_vec())),
            _ => Err(status_error(&resp, &format!("blob {blob}"))),
        }
    }

    /// Deletes a blob; returns whether it existed.
    pub(crate) async fn delete(&self, blob: &str) -> StorageResult<bool> {
        let req = Req::new(Service::Blob, "DELETE", blob_path(&self.name, blob));
        let resp = self.http.send(&req).await?;
        match resp.status {
            404 => Ok(false),
            s if (200..300).contains(&s) => Ok(true),
            _ => Err(status_error(&resp, &format!("blob {blob}"))),
        }
    }

    /// Names of every blob starting with `prefix`, following continuation markers.
    pub(crate) async fn list(&self, prefix: &str) -> StorageResult<Vec<String>> {
        let mut names = Vec::new();
        let mut marker = None;
        loop {
            let (page, next) = self.list_page(prefix, marker.as_deref()).await?;
            names.extend(page);
            match next {
                Some(next) => marker = Some(next),
                None => return Ok(names),
            }
        }
    }

    /// One page (up to 5,000 names, the service's cap) of the blobs starting with `prefix`,
    /// from `marker`; the marker of the next page, if any.
    pub(crate) async fn list_page(
        &self,
        prefix: &str,
        marker: Option<&str>,
    ) -> StorageResult<(Vec<String>, Option<String>)> {
        let mut req = Req::new(Service::Blob, "GET", format!("/{}", self.name))
            .query("restype", "container")
            .query("comp", "list")
            .query("prefix", prefix);
        if let Some(marker) = marker.filter(|m| !m.is_empty()) {
            req = req.query("marker", marker.to_owned());
        }
        let resp = self.http.send(&req).await?;
        if resp.status == 404 {
            return Ok((Vec::new(), None));
        }
        if !resp.ok() {
            return Err(status_error(
                &resp,
                &format!("listing container {}", self.name),
            ));
        }
        let text = resp.text();
        let names = xml::elements(&text, "Blob")
            .into_iter()
            .filter_map(|blob| xml::first(blob, "Name"))
            .collect();
        let next = xml::first(&text, "NextMarker").filter(|n| !n.is_empty());
        Ok((names, next))
    }

    /// Deletes every blob starting with `prefix`; returns how many.
    pub(crate) async fn delete_prefix(&self, prefix: &str) -> StorageResult<u64> {
        let mut deleted = 0;
        for name in self.list(prefix).await? {
            if self.delete(&name).await? {
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

/// A blob that must exist but is missing.
pub(crate) fn missing(blob: &str) -> StorageError {
    StorageError::Corrupt {
        what: format!("blob {blob}"),
        detail: "referenced by a row but missing".to_owned(),
    }
}
