//! [`ScriptedServer`]: `braincode_scripted::ScriptedServer`, started the way a test wants it
//! (a port that cannot be bound fails the test).

use std::ops::Deref;

use braincode_scripted::Script;

/// The scripted HTTP model server (every method of [`braincode_scripted::ScriptedServer`]
/// through `Deref`); it stops when dropped.
pub struct ScriptedServer(braincode_scripted::ScriptedServer);

impl ScriptedServer {
    /// Binds 127.0.0.1 on a random port and starts serving `script`.
    ///
    /// # Panics
    /// When the port cannot be bound (a test fixture fails loudly).
    pub async fn start(script: Script) -> Self {
        Self(
            braincode_scripted::ScriptedServer::bind(script)
                .await
                .expect("bind 127.0.0.1 for the scripted server"),
        )
    }

    /// Serves `script` on `addr` (`127.0.0.1:11434`, where Ollama listens); `Err` when it
    /// cannot be bound (taken).
    pub async fn start_at(addr: &str, script: Script) -> std::io::Result<Self> {
        braincode_scripted::ScriptedServer::start_at(addr, script)
            .await
            .map(Self)
    }
}

impl Deref for ScriptedServer {
    type Target = braincode_scripted::ScriptedServer;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}
