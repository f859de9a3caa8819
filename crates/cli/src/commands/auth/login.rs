//! `braincode auth login <provider>`: a subscription login (GitHub Copilot, ChatGPT
//! Plus/Pro through Codex). Tokens go to auth.json (0600) only when the login succeeds;
//! Ctrl-C cancels it and writes nothing.

use std::io::BufRead;
use std::process::{Command, ExitCode, Stdio};

use braincode_config::{Home, load_settings};
use braincode_llm::oauth::{LOGIN_TIMEOUT, LoginEvent};
use braincode_protocol::OauthProvider;
use braincode_runtime::{LoginChannels, LoginRequest, subscription_login};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Arguments of `braincode auth login`.
#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// `github-copilot` or `openai-codex` (ChatGPT Plus/Pro).
    pub provider: String,
    /// GitHub Enterprise domain (github-copilot only), e.g. `company.ghe.com`.
    #[arg(long, value_name = "DOMAIN")]
    pub enterprise_domain: Option<String>,
    /// Print the login URL without trying to open a browser.
    #[arg(long)]
    pub no_browser: bool,
}

/// The provider of a login, or why there is none.
fn provider_of(name: &str) -> anyhow::Result<OauthProvider> {
    let name = name.trim();
    if let Some(provider) = OauthProvider::from_id(name) {
        return Ok(provider);
    }
    if name == "anthropic" || name == "claude" {
        anyhow::bail!(
            "Anthropic does not allow its Claude Pro/Max subscription in third-party clients, so Braincode offers no login for it; use an API key instead: `braincode auth set anthropic`"
        );
    }
    let offered: Vec<&str> = OauthProvider::ALL.iter().map(|p| p.id()).collect();
    anyhow::bail!(
        "{name:?} has no subscription login; logins exist for {}. For other providers store an API key: `braincode auth set {name}`",
        offered.join(", ")
    )
}

/// Runs the login.
pub fn login(home: &Home, args: &LoginArgs) -> anyhow::Result<ExitCode> {
    let provider = provider_of(&args.provider)?;
    let enterprise_domain = args.enterprise_domain.clone().unwrap_or_default();
    if !enterprise_domain.trim().is_empty() && provider != OauthProvider::GithubCopilot {
        anyhow::bail!("--enterprise-domain is for github-copilot only");
    }
    let settings = load_settings(home)?;
    let open_browser = !args.no_browser;
    let runtime = super::super::tokio_runtime()?;
    let result = runtime.block_on(async {
        let (events, mut shown) = mpsc::unbounded_channel();
        let (paste, pasted) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let printer = tokio::spawn(async move {
            while let Some(event) = shown.recv().await {
                show(provider, &event, open_browser);
            }
        });
        if provider.uses_callback_server() {
            // A plain thread: it may block on standard input until the process ends.
            std::thread::spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    let Ok(line) = line else { break };
                    if paste.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        // Registered before the login starts, so an early Ctrl-C cancels it too.
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let interrupt = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                if sigint.recv().await.is_some() {
                    cancel.cancel();
                }
            }
        });
        let result = subscription_login(
            home,
            &settings.auth.oauth,
            LoginRequest {
                provider,
                enterprise_domain,
                timeout: LOGIN_TIMEOUT,
            },
            LoginChannels {
                events,
                pasted,
                cancel,
            },
        )
        .await;
        interrupt.abort();
        let _ = printer.await;
        anyhow::Ok(result)
    });
    let credentials = result??;
    println!(
        "Logged in to {}; saved in {} (mode 0600). The access token expires {} and is renewed automatically.",
        provider.display_name(),
        braincode_config::AuthStore::new(home).path().display(),
        super::expiry_text(credentials.expires)
    );
    println!(
        "Models with \"provider\": \"{}\" in models.json now use this login (an API key for the same provider wins).",
        provider.id()
    );
    Ok(ExitCode::SUCCESS)
}

fn show(provider: OauthProvider, event: &LoginEvent, open_browser: bool) {
    match event {
        LoginEvent::DeviceCode {
            user_code,
            verification_uri,
        } => {
            eprintln!(
                "To log in to {}, open {verification_uri} and enter the code {user_code}",
                provider.display_name()
            );
            eprintln!("Waiting for the authorization (Ctrl-C cancels)…");
        }
        LoginEvent::AuthUrl { url } => {
            eprintln!(
                "To log in to {}, open this URL in a browser:\n\n  {url}\n",
                provider.display_name()
            );
            eprintln!(
                "After you authorize, the browser comes back here by itself. If it cannot (a browser on another machine), paste the redirect URL from its address bar (or the code) here and press Enter. Ctrl-C cancels."
            );
            if open_browser {
                try_open_browser(url);
            }
        }
        LoginEvent::Progress(line) => eprintln!("{line}"),
    }
}

/// Opens `url` with `$BROWSER`, or `xdg-open` when a display is there; silent when neither
/// is (a server, a test): the URL is printed anyway.
fn try_open_browser(url: &str) {
    let program = match std::env::var("BROWSER") {
        Ok(browser) if !browser.trim().is_empty() => browser,
        _ if std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some() =>
        {
            "xdg-open".to_string()
        }
        _ if cfg!(target_os = "macos") => "open".to_string(),
        _ => return,
    };
    let _ = Command::new(program)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}
