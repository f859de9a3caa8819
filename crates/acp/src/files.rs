//! The editor's files: when the client offers `fs/read_text_file` and `fs/write_text_file`,
//! the run's reads of project files see the editor's buffers (unsaved changes included) and
//! its edits land in the editor (its undo history, its open tabs). Braincode checks the path
//! first as for any read or write (inside the project, no link followed); a request the
//! editor fails or does not answer in [`FS_TIMEOUT`] falls back to the file on disk.

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, SessionId, WriteTextFileRequest};
use async_trait::async_trait;
use braincode_tools::EditorFiles;

/// How long one file request waits for the editor.
pub const FS_TIMEOUT: Duration = Duration::from_secs(30);

/// What the client said it serves (`clientCapabilities.fs` at `initialize`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsOffer {
    /// `fs.readTextFile`.
    pub read: bool,
    /// `fs.writeTextFile`.
    pub write: bool,
}

/// One session's files through its editor.
pub struct ClientFiles {
    pub(crate) connection: ConnectionTo<Client>,
    pub(crate) session_id: SessionId,
    pub(crate) offer: FsOffer,
}

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles")
            .field("session_id", &self.session_id)
            .field("offer", &self.offer)
            .finish()
    }
}

#[async_trait]
impl EditorFiles for ClientFiles {
    async fn read(&self, path: &Path) -> Result<String, String> {
        if !self.offer.read {
            return Err("the editor does not serve reads".into());
        }
        let request = ReadTextFileRequest::new(self.session_id.clone(), path.to_path_buf());
        match tokio::time::timeout(
            FS_TIMEOUT,
            self.connection.send_request(request).block_task(),
        )
        .await
        {
            Ok(Ok(response)) => Ok(response.content),
            Ok(Err(err)) => Err(format!(
                "the editor could not read {}: {}",
                path.display(),
                err.message
            )),
            Err(_) => Err(format!(
                "the editor did not answer a read of {}",
                path.display()
            )),
        }
    }

    async fn write(&self, path: &Path, text: &str) -> Result<(), String> {
        if !self.offer.write {
            return Err("the editor does not serve writes".into());
        }
        let request = WriteTextFileRequest::new(
            self.session_id.clone(),
            path.to_path_buf(),
            text.to_string(),
        );
        match tokio::time::timeout(
            FS_TIMEOUT,
            self.connection.send_request(request).block_task(),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(err)) => Err(format!(
                "the editor could not write {}: {}",
                path.display(),
                err.message
            )),
            Err(_) => Err(format!(
                "the editor did not answer a write of {}",
                path.display()
            )),
        }
    }
}
